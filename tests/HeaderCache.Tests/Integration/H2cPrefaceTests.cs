using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// Kestrel speaks h2c only on an endpoint whose Protocols is Http2. On the default Http1AndHttp2 endpoint a client with
/// prior knowledge (<c>curl --http2-prior-knowledge</c>: the preface, SETTINGS and a HEADERS frame in one write) gets
/// what Kestrel alone gives it, a GOAWAY with HTTP_1_1_REQUIRED, and HeaderCache counts the connection passed through
/// with reason <c>http2</c>, serves nothing, and says why once per endpoint, whichever way it was put on the endpoint.
/// </summary>
public sealed class H2cPrefaceTests
{
    private static readonly byte[] Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8.ToArray();
    private static readonly byte[] Settings = [0, 0, 0, 0x4, 0, 0, 0, 0, 0];

    // GET / on stream 1 (END_STREAM | END_HEADERS): :method GET, :scheme http, :path / from the static table, the
    // authority with incremental indexing, and x-a: bbb without indexing.
    private static readonly byte[] Headers =
        [0, 0, 23, 0x1, 0x5, 0, 0, 0, 1, 0x82, 0x86, 0x84, 0x41, 9, .. "127.0.0.1"u8, 0x00, 3, .. "x-a"u8, 3, .. "bbb"u8];

    /// <summary>How HeaderCache is put on the endpoint.</summary>
    public enum Wiring
    {
        EveryEndpoint,        // builder.WebHost.UseHeaderStringCache(): the listener of Kestrel's transport
        EndpointMiddleware,   // listenOptions.UseHeaderStringCache(): the endpoint's connection middleware
    }

    [Theory]
    [InlineData(Wiring.EveryEndpoint)]
    [InlineData(Wiring.EndpointMiddleware)]
    public async Task A_prior_knowledge_client_on_an_http1_and_http2_endpoint_is_passed_through_as_http2(Wiring wiring)
    {
        await using H2cServer alone = await H2cServer.StartAsync(wiring: null);
        await using H2cServer on = await H2cServer.StartAsync(wiring);
        using var activity = new CacheActivity(on.App.Services);
        byte[] bytes = [.. Preface, .. Settings, .. Headers];

        for (int connection = 1; connection <= 2; connection++)
        {
            List<string> aloneTranscript = await RawHttp.SendAllAsync(alone.EndPoint, bytes, RawHttp.Whole, halfClose: false);
            List<string> onTranscript = await RawHttp.SendAllAsync(on.EndPoint, bytes, RawHttp.Whole, halfClose: false);
            Assert.Equal(aloneTranscript, onTranscript);
            Assert.Equal([RawHttp.Raw([0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0d]), RawHttp.Closed], onTranscript);
        }

        Assert.Equal(2, await activity.ConnectionsAsync("passed_through", "http2", ended: 2));
        Assert.Equal(0, activity.Get("headercache.connections|cached"));
        Assert.Equal(0, activity.LinesTaken);

        // Why, at Information, once for the endpoint however many clients try.
        var said = on.Logs.HeaderCache.Where(e => e.Level == LogLevel.Information && e.Message.Contains("HTTP/2 prior-knowledge preface", StringComparison.Ordinal)).ToList();
        var why = Assert.Single(said);
        Assert.Contains("only on an endpoint whose Protocols is Http2", why.Message, StringComparison.Ordinal);
        Assert.Contains($"127.0.0.1:{on.EndPoint.Port}", why.Message, StringComparison.Ordinal);
    }

    /// <summary>A prior-knowledge client on an endpoint whose Protocols is Http2 is served. Once Kestrel read an h2c
    /// preface as HTTP/2 there, HeaderCache reads the endpoint's later connections as HTTP/2 from their first byte: a
    /// later h2c client is served by that reader, and HTTP/1.1 bytes stop it at its first byte and reach Kestrel as they
    /// are.</summary>
    [Theory]
    [InlineData(Wiring.EveryEndpoint)]
    [InlineData(Wiring.EndpointMiddleware)]
    public async Task A_prior_knowledge_client_on_an_http2_endpoint_is_served_and_later_connections_are_read_as_http2_from_their_first_byte(Wiring wiring)
    {
        await using H2cServer alone = await H2cServer.StartAsync(wiring: null, HttpProtocols.Http2);
        await using H2cServer on = await H2cServer.StartAsync(wiring, HttpProtocols.Http2);
        using var activity = new CacheActivity(on.App.Services);

        Assert.Equal(await GetTwiceAsync(alone.EndPoint), await GetTwiceAsync(on.EndPoint));
        Assert.Equal(1, await activity.ConnectionsAsync("cached"));
        Assert.Equal(0, activity.Get("headercache.connections|passed_through|http2"));
        long taken = activity.LinesTaken;
        Assert.True(taken > 0, activity.ToString());
        Assert.DoesNotContain(on.Logs.HeaderCache, e => e.Message.Contains("HTTP/2 prior-knowledge preface", StringComparison.Ordinal));

        (byte[] Bytes, Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> Split)[] heads =
        [
            ("GET / HTTP/1.1\r\nx-aaaaaaaaaaaaa: b\r\n\r\n"u8.ToArray(), RawHttp.Whole),
            ("GET / HTTP/1.1\r\nHost: a\r\nx-a: bbbbbbbbbbbbbbbbbbbb\r\n\r\n"u8.ToArray(), RawHttp.Whole),

            // Byte by byte, so that the reader stops at a first read shorter than the preface. Exactly the preface's
            // length, as a client that ends the connection before Kestrel has read 24 bytes gets Kestrel alone's GOAWAY
            // or not, as its preface check and its handling of the transport's end race.
            ("GET / HTTP/1.1\r\nHost:a\r\n"u8.ToArray(), RawHttp.Bytewise),
        ];
        foreach ((byte[] head, Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split) in heads)
        {
            string aloneBytes = await RawHttp.SendAllRawAsync(alone.EndPoint, head, split, TimeSpan.FromSeconds(1));
            string onBytes = await RawHttp.SendAllRawAsync(on.EndPoint, head, split, TimeSpan.FromSeconds(1));
            Assert.Equal(aloneBytes, onBytes);
        }

        Assert.Equal(heads.Length, await activity.ConnectionsAsync("passed_through", "http2_stopped", ended: 1 + heads.Length));
        Assert.Equal(await GetTwiceAsync(alone.EndPoint), await GetTwiceAsync(on.EndPoint));
        Assert.Equal(2, await activity.ConnectionsAsync("cached", ended: 2 + heads.Length));
        Assert.True(activity.LinesTaken > taken, activity.ToString());
    }

    // Two requests with a custom header over one h2c connection with prior knowledge, as HttpClient sends them.
    private static async Task<string[]> GetTwiceAsync(IPEndPoint endPoint)
    {
        using var client = new HttpClient
        {
            BaseAddress = new Uri($"http://{endPoint}"),
            DefaultRequestVersion = HttpVersion.Version20,
            DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        client.DefaultRequestHeaders.Add("x-a", "bbb");
        string[] bodies = [await client.GetStringAsync("/one"), await client.GetStringAsync("/two")];
        return bodies;
    }

    /// <summary>A slim app answering every request with its protocol, path and <c>x-a</c> header, on one endpoint of
    /// 127.0.0.1 (Kestrel's default protocols unless told): HeaderCache on it as the <see cref="Wiring"/> given says, or
    /// Kestrel alone.</summary>
    private sealed class H2cServer : IAsyncDisposable
    {
        private H2cServer(WebApplication app, CapturingLoggerProvider logs)
        {
            App = app;
            Logs = logs;
        }

        public WebApplication App { get; }

        public CapturingLoggerProvider Logs { get; }

        public IPEndPoint EndPoint { get; private set; } = null!;

        public static async Task<H2cServer> StartAsync(Wiring? wiring, HttpProtocols protocols = HttpProtocols.Http1AndHttp2)
        {
            var logs = new CapturingLoggerProvider();
            WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();
            builder.Logging.AddProvider(logs);
            builder.Logging.SetMinimumLevel(LogLevel.Debug);
            if (wiring == Wiring.EveryEndpoint)
            {
                builder.WebHost.UseHeaderStringCache();
            }
            else if (wiring == Wiring.EndpointMiddleware)
            {
                builder.Services.AddHeaderStringCache();
            }

            builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
            {
                Assert.Equal(HttpProtocols.Http1AndHttp2, listen.Protocols);
                listen.Protocols = protocols;
                if (wiring == Wiring.EndpointMiddleware)
                {
                    listen.UseHeaderStringCache();
                }
            }));
            WebApplication app = builder.Build();
            app.Run(context => context.Response.WriteAsync($"{context.Request.Protocol} {context.Request.Path} x-a: {context.Request.Headers["x-a"]}"));
            await app.StartAsync();
            string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
            var server = new H2cServer(app, logs) { EndPoint = new IPEndPoint(IPAddress.Loopback, new Uri(address).Port) };
            Assert.Equal(wiring is not null, server.Logs.HeaderCache.Any(e => e.Id.Id == 6));   // "HeaderCache reads the connections of ..."
            return server;
        }

        public async ValueTask DisposeAsync()
        {
            await App.StopAsync();
            await App.DisposeAsync();
        }
    }
}
