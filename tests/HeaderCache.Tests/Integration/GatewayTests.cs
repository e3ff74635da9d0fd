using System.Net;
using System.Text;
using System.Text.RegularExpressions;
using HeaderCache.Gateway;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// The YARP gateway sample (samples/HeaderCache.Gateway) with HeaderCache and as Kestrel alone, both in front of the
/// same backend (the main sample as Kestrel alone, which echoes the headers it received in enumeration order): the same
/// keep-alive requests through each gateway reach the backend as the same headers and give the client the same
/// responses, and HeaderCache served lines on the gateway's connection.
/// </summary>
public sealed partial class GatewayTests
{
    [Fact]
    public async Task The_gateway_forwards_the_same_headers_with_and_without_HeaderCache()
    {
        await using SampleServer backend = await SampleServer.StartAsync(CacheMode.KestrelAlone);
        await using Gateway cached = await Gateway.StartAsync(backend.EndPoint, kestrelOnly: false);
        await using Gateway alone = await Gateway.StartAsync(backend.EndPoint, kestrelOnly: true);

        // Two rounds of a load balancer's pooled traffic and of a browser's (their values repeat from request to
        // request), a request whose head has one name twice and a body, and the gateway's own /headercache last.
        byte[] post = Encoding.ASCII.GetBytes("POST /orders HTTP/1.1\r\nHost: shop.example.test\r\nX-Tag: one\r\nsec-ch-ua-mobile: ?0\r\nX-Tag: two\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
        byte[][] requests =
        [
            .. Render("proxy-pool", rounds: 2),
            .. Render("chrome", rounds: 2),
            post,
            .. Render("proxy-pool", rounds: 1),
            "GET /headercache HTTP/1.1\r\nHost: shop.example.test\r\n\r\n"u8.ToArray(),
        ];
        IReadOnlyList<IReadOnlyList<byte[]>> batches = requests.Select(r => (IReadOnlyList<byte[]>)[r]).ToList();

        List<string> throughCache = await RawHttp.ExchangeAsync(cached.EndPoint, batches, RawHttp.Whole);
        List<string> throughAlone = await RawHttp.ExchangeAsync(alone.EndPoint, batches, RawHttp.Whole);

        // Every request answered on the one connection, then the client's half-close ended it.
        Assert.Equal(requests.Length + 1, throughCache.Count);
        Assert.Equal(RawHttp.Closed, throughCache[^1]);
        int proxied = requests.Length - 1;
        for (int i = 0; i < proxied; i++)
        {
            Assert.Equal(200, RawHttp.Status(throughCache[i]));
            string seen = Normalize(RawHttp.Body(throughCache[i]));
            // What the backend saw: headers in its enumeration order, the forwarded ones included.
            Assert.Equal(Normalize(RawHttp.Body(throughAlone[i])), seen);
            Assert.Contains("\nX-Forwarded-For: 127.0.0.1", seen, StringComparison.Ordinal);
            // What the client got back (Date removed by RawHttp, the gateway's span id in the echo normalized).
            Assert.Equal(Normalize(throughAlone[i]), Normalize(throughCache[i]));
        }

        // The proxy's HttpClient joins a name's two lines into one, in their order.
        Assert.Contains("\nX-Tag: one, two\n", RawHttp.Body(throughCache[Array.IndexOf(requests, post)]), StringComparison.Ordinal);

        // HeaderCache read the client's connection to the gateway and served lines from it; the baseline had none.
        GatewayApp.CacheState state = Parse(throughCache[proxied]);
        Assert.True(state.Active, $"HeaderCache inactive on the gateway: {state.Reason}");
        Assert.True(state.Hits > 0, $"no line served: hits {state.Hits}, misses {state.Misses}");
        Assert.False(Parse(throughAlone[proxied]).Present);
    }

    private static byte[][] Render(string profile, int rounds)
    {
        TrafficProfile traffic = TrafficProfile.Load(profile);
        TrafficProfile.Connection connection = traffic.Connect(seed: 7);
        return Enumerable.Range(0, traffic.Count * rounds).Select(connection.Render).ToArray();
    }

    // The gateway starts a span for each request and sends its id in traceparent (the trace id is the client's).
    private static string Normalize(string text) => SpanId().Replace(text, "${trace}-<span>-");

    private static GatewayApp.CacheState Parse(string response) =>
        System.Text.Json.JsonSerializer.Deserialize<GatewayApp.CacheState>(RawHttp.Body(response), System.Text.Json.JsonSerializerOptions.Web)!;

    [GeneratedRegex("(?<trace>traceparent: 00-[0-9a-f]{32})-[0-9a-f]{16}-")]
    private static partial Regex SpanId();

    /// <summary>The gateway sample on 127.0.0.1 with port 0, in front of <c>backend</c>.</summary>
    private sealed class Gateway(WebApplication app, IPEndPoint endPoint) : IAsyncDisposable
    {
        public IPEndPoint EndPoint { get; } = endPoint;

        public static async Task<Gateway> StartAsync(IPEndPoint backend, bool kestrelOnly)
        {
            WebApplication app = GatewayApp.Build(
                [
                    "--urls", "http://127.0.0.1:0",
                    $"--Gateway:Backend=http://{backend}",
                    $"--Gateway:KestrelOnly={kestrelOnly}",
                ],
                builder => builder.Logging.ClearProviders());
            await app.StartAsync();
            var address = new Uri(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First());
            return new Gateway(app, new IPEndPoint(IPAddress.Loopback, address.Port));
        }

        public async ValueTask DisposeAsync()
        {
            await app.StopAsync();
            await app.DisposeAsync();
        }
    }
}
