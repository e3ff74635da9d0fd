using System.Text;

namespace HeaderCache.Tests.Integration;

/// <summary>The sample's small web site answers at the address the README gives a browser, as on Kestrel alone.</summary>
[Collection(ServerPairGroup.Name)]
public sealed class SampleSiteTests(ServerPair servers)
{
    [Theory]
    [InlineData("/site/")]
    [InlineData("/site")]
    [InlineData("/site/page1")]
    public async Task The_site_answers_with_its_first_page(string target)
    {
        byte[] request = Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: localhost\r\nAccept: text/html\r\nsec-fetch-dest: document\r\n\r\n");
        IReadOnlyList<IReadOnlyList<byte[]>> batches = [[request], [request]];

        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint => RawHttp.ExchangeAsync(endPoint, batches, RawHttp.Whole));

        Assert.All(transcript.Take(2), response =>
        {
            Assert.Equal(200, RawHttp.Status(response));
            Assert.Contains("Content-Type: text/html; charset=utf-8\r\n", response, StringComparison.Ordinal);
            Assert.Contains("<title>page1</title>", RawHttp.Body(response), StringComparison.Ordinal);
        });
    }

    [Fact]
    public async Task A_page_the_site_does_not_have_is_still_not_found()
    {
        // After a page, on the same connection, so that the missing page's head is served from the cache.
        byte[] page = "GET /site/page1 HTTP/1.1\r\nHost: localhost\r\nsec-fetch-dest: document\r\n\r\n"u8.ToArray();
        byte[] request = "GET /site/nothing HTTP/1.1\r\nHost: localhost\r\nsec-fetch-dest: document\r\n\r\n"u8.ToArray();
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint => RawHttp.ExchangeAsync(endPoint, [[page], [request]], RawHttp.Whole));
        Assert.Equal([200, 404], transcript.Take(2).Select(RawHttp.Status));
    }
}
