using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using HeaderCache.Sample;
using HeaderCache.Traffic;
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
/// The one line takes nothing away from the application's own endpoint configuration: endpoint defaults set before or
/// after it (HTTP/1.1 only, connection logging, TLS) hold on endpoints from code, from <c>--urls</c> and from
/// <c>Kestrel:Endpoints</c>, exactly as on Kestrel alone with the same defaults, and every endpoint is cached.
/// </summary>
public sealed class EndpointDefaultsTests : IDisposable
{
    private const string ConnectionLogging = "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.LoggingConnectionMiddleware";

    private readonly X509Certificate2 _certificate = TestCertificate.Create();

    /// <summary>Where the endpoint comes from.</summary>
    public enum Source
    {
        Code,
        Urls,
        KestrelEndpoints,
    }

    /// <summary>Where the application sets its endpoint defaults relative to <c>builder.WebHost.UseHeaderStringCache()</c>.</summary>
    public enum Order
    {
        DefaultsBeforeTheLine,
        DefaultsAfterTheLine,
    }

    [Theory]
    [InlineData(Source.Code, Order.DefaultsBeforeTheLine)]
    [InlineData(Source.Code, Order.DefaultsAfterTheLine)]
    [InlineData(Source.Urls, Order.DefaultsBeforeTheLine)]
    [InlineData(Source.Urls, Order.DefaultsAfterTheLine)]
    [InlineData(Source.KestrelEndpoints, Order.DefaultsBeforeTheLine)]
    [InlineData(Source.KestrelEndpoints, Order.DefaultsAfterTheLine)]
    public async Task The_applications_endpoint_defaults_hold_and_the_endpoint_is_cached(Source source, Order order)
    {
        await using DefaultsServer alone = await DefaultsServer.StartAsync(source, order, withHeaderCache: false, Defaults);
        await using DefaultsServer cached = await DefaultsServer.StartAsync(source, order, withHeaderCache: true, Defaults);

        Exchange onAlone = await ExchangeAsync(alone.EndPoint);
        Exchange onCached = await ExchangeAsync(cached.EndPoint);

        // The application said HTTP/1.1 only: a client that offers h2 first still gets HTTP/1.1, as on Kestrel alone.
        Assert.Equal(SslApplicationProtocol.Http11, onAlone.Protocol);
        Assert.Equal(onAlone.Protocol, onCached.Protocol);
        Assert.Equal(onAlone.Echoes, onCached.Echoes);
        Assert.All(onCached.Echoes, echo => Assert.Equal(200, RawHttp.Status(echo)));

        // Its connection logging logs on both.
        Assert.NotEmpty(alone.ConnectionLogLines);
        Assert.NotEmpty(cached.ConnectionLogLines);

        Assert.Equal("""{"present":false,"active":false,"reason":null,"hits":0,"misses":0}""", RawHttp.Body(onAlone.State));
        Assert.Matches("""^\{"present":true,"active":true,"reason":null,"hits":[1-9][0-9]*,""", RawHttp.Body(onCached.State));
        Assert.DoesNotContain(cached.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
        Assert.Contains(cached.Logs.HeaderCache, e => e.Id.Id == 6 && e.Message.Contains(cached.Address, StringComparison.Ordinal));
    }

    // What the README advised before HeaderCache decorated Kestrel's listeners: the endpoint's own call in the
    // application's defaults. With the one line as well, a connection still gets one layer, not two.
    [Fact]
    public async Task An_endpoints_own_call_beside_the_one_line_adds_no_second_layer()
    {
        await using DefaultsServer cached = await DefaultsServer.StartAsync(Source.Code, Order.DefaultsAfterTheLine, withHeaderCache: true, listen =>
        {
            Defaults(listen);
            listen.UseHeaderStringCache();
        });
        using var activity = new CacheActivity(cached.Services);

        Exchange exchange = await ExchangeAsync(cached.EndPoint);

        Assert.Matches("""^\{"present":true,"active":true,"reason":null,"hits":[1-9]""", RawHttp.Body(exchange.State));
        Assert.Equal(1, await activity.ConnectionsAsync("cached"));
        Assert.True(activity.LinesServed > 0);
    }

    public void Dispose() => _certificate.Dispose();

    private void Defaults(ListenOptions listen)
    {
        listen.Protocols = HttpProtocols.Http1;
        listen.UseConnectionLogging();
        listen.UseHttps(_certificate);
    }

    /// <summary>Browser requests on one TLS connection that offers h2 and HTTP/1.1, then what the connection feature says.</summary>
    private async Task<Exchange> ExchangeAsync(IPEndPoint endPoint)
    {
        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(seed: 5);
        byte[][] requests = [.. Enumerable.Range(0, 4).Select(traffic.Render)];
        byte[] state = "GET /headercache HTTP/1.1\r\nHost: localhost\r\n\r\n"u8.ToArray();
        SslApplicationProtocol negotiated = default;
        List<string> transcript = await RawHttp.ExchangeAsync(
            endPoint,
            [.. requests.Select(request => (IReadOnlyList<byte[]>)[request]), [state]],
            RawHttp.Whole,
            async stream =>
            {
                var tls = new SslStream(stream);
                await tls.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
                {
                    TargetHost = "localhost",
                    ApplicationProtocols = [SslApplicationProtocol.Http2, SslApplicationProtocol.Http11],
                    RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(_certificate.RawData),
                });
                negotiated = tls.NegotiatedApplicationProtocol;
                return tls;
            });

        Assert.Equal(requests.Length + 2, transcript.Count);
        return new Exchange(negotiated, transcript[..requests.Length], transcript[requests.Length]);
    }

    private sealed record Exchange(SslApplicationProtocol Protocol, List<string> Echoes, string State);

    /// <summary>An application with its own endpoint defaults, with or without the one line, on a real Kestrel at port 0.</summary>
    private sealed class DefaultsServer : IAsyncDisposable
    {
        private readonly WebApplication _app;

        private DefaultsServer(WebApplication app, CapturingLoggerProvider logs, string address)
        {
            _app = app;
            Logs = logs;
            Address = address;
            EndPoint = new IPEndPoint(IPAddress.Loopback, new Uri(address).Port);
        }

        public CapturingLoggerProvider Logs { get; }

        public string Address { get; }

        public IPEndPoint EndPoint { get; }

        public IServiceProvider Services => _app.Services;

        public IReadOnlyList<string> ConnectionLogLines =>
            [.. Logs.Entries.Where(e => e.Category == ConnectionLogging).Select(e => e.Message)];

        public static async Task<DefaultsServer> StartAsync(Source source, Order order, bool withHeaderCache, Action<ListenOptions> defaults)
        {
            string[] args = source switch
            {
                Source.Urls => ["--urls", "http://127.0.0.1:0"],
                Source.KestrelEndpoints => ["--Kestrel:Endpoints:Main:Url=http://127.0.0.1:0"],
                _ => [],
            };
            var logs = new CapturingLoggerProvider();
            var builder = WebApplication.CreateBuilder(args);
            builder.Logging.ClearProviders();
            builder.Logging.AddProvider(logs);
            builder.Logging.AddFilter(ConnectionLogging, LogLevel.Debug);

            if (order == Order.DefaultsBeforeTheLine)
            {
                ApplicationDefaults();
                TheLine();
            }
            else
            {
                TheLine();
                ApplicationDefaults();
            }

            WebApplication app = builder.Build();
            app.Run(HandleAsync);
            await app.StartAsync();
            string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single();
            return new DefaultsServer(app, logs, address);

            void TheLine()
            {
                if (withHeaderCache)
                {
                    builder.WebHost.UseHeaderStringCache();
                }
            }

            // Kestrel applies the defaults when an endpoint is made: code endpoints after them, in the same callback.
            void ApplicationDefaults() => builder.WebHost.ConfigureKestrel(kestrel =>
            {
                kestrel.ConfigureEndpointDefaults(defaults);
                if (source == Source.Code)
                {
                    kestrel.Listen(IPAddress.Loopback, 0);
                }
            });
        }

        public async ValueTask DisposeAsync()
        {
            await _app.StopAsync();
            await _app.DisposeAsync();
        }

        private static async Task HandleAsync(HttpContext context)
        {
            if (context.Request.Path == "/headercache")
            {
                IHeaderStringCacheFeature? cache = context.Features.Get<IHeaderStringCacheFeature>();
                await context.Response.WriteAsJsonAsync(new { present = cache is not null, active = cache?.IsActive ?? false, reason = cache?.InactiveReason, hits = cache?.Hits ?? 0, misses = cache?.Misses ?? 0 });
                return;
            }

            using var body = new MemoryStream();
            await context.Request.Body.CopyToAsync(body);
            byte[] view = Encoding.UTF8.GetBytes(SampleApp.Describe(context, body.ToArray()));
            context.Response.ContentLength = view.Length;
            await context.Response.Body.WriteAsync(view);
        }
    }
}
