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
        byte[] request = Head("v");

        // Three times on one connection, the second with other values: Kestrel alone reuses a known header's string only
        // when the value repeats the previous request's, so on the third it makes them again, and the cache serves them.
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [[request], [Head("w")], [request]], RawHttp.Whole));
        Differential.AssertAnswers(request, transcript[2]);

        byte[] Head(string value) =>
            Encoding.ASCII.GetBytes("GET /casing HTTP/1.1\r\nHost: x\r\n" + string.Concat(names.Select((n, i) => $"{n}: {value}{i}\r\n")) + "\r\n");
    }
}
