using System.Net;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Http2;

/// <summary><c>HeaderCache:Protocols</c> without HTTP/2 on an h2c endpoint: HTTP/2 connections answer exactly as with
/// Kestrel alone, since Kestrel reads their bytes unchanged, and say why.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2SwitchedOffTests(Http2ServerPair servers)
{
    [Fact]
    public async Task H2c_with_HTTP2_switched_off_answers_as_Kestrel_alone_and_says_why()
    {
        await using SampleServer on = await SampleServer.StartAsync(CacheMode.On, null, Http2ServerPair.Http2Only, "--HeaderCache:Protocols=Http1");
        using var activity = new CacheActivity(on);

        List<string> alone = await Http2DifferentialTests.HttpClientAsync(servers.Alone.EndPoint, requests: 8, parallel: 4);
        List<string> off = await Http2DifferentialTests.HttpClientAsync(on.EndPoint, requests: 8, parallel: 4);

        Assert.Equal(alone, off);
        Assert.All(off, answer => Assert.StartsWith("200 ", answer, StringComparison.Ordinal));
        Assert.Equal(1, await activity.ConnectionsAsync("passed_through", "http2_disabled"));
        Assert.Equal(0, activity.LinesTaken);

        using HttpClient client = Http2DifferentialTests.Client();
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri($"http://{on.EndPoint}/headercache"))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        Assert.StartsWith(
            "200 application/json; charset=utf-8\n{\"present\":true,\"active\":false,\"reason\":\"http2_disabled\",\"hits\":0,\"misses\":0}",
            await Http2DifferentialTests.SendAsync(client, request),
            StringComparison.Ordinal);
    }
}
