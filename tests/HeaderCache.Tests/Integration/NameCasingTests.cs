using System.Text;

namespace HeaderCache.Tests.Integration;

/// <summary>The application sees every header name with the same casing as with Kestrel alone.</summary>
[Collection(ServerPairGroup.Name)]
public sealed class NameCasingTests(ServerPair servers)
{
    [Theory]
    [InlineData("dnt", "x-requested-with", "content-encoding", "sec-websocket-version", "etag")]
    [InlineData("DNT", "X-REQUESTED-WITH", "Content-ENCODING", "Sec-WebSocket-Version", "ETag")]
    [InlineData("x-forwarded-for", "X-Forwarded-Proto", "sec-fetch-site", "Priority", "x-custom-Thing")]
    [InlineData("accept", "USER-AGENT", "referer", "Cookie", "traceparent")]
    public async Task Names_keep_the_casing_Kestrel_would_give_them(params string[] names)
    {
        string head = "GET /casing HTTP/1.1\r\nHost: x\r\n" + string.Concat(names.Select((n, i) => $"{n}: v{i}\r\n")) + "\r\n";
        byte[] request = Encoding.ASCII.GetBytes(head);

        // Twice on one connection, so the second request is served from the cache.
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [[request], [request]], RawHttp.Whole));
        Differential.AssertAnswers(request, transcript[1]);
    }
}
