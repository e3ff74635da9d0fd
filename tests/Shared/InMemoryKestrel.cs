using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.InMemory;

/// <summary>
/// A real Kestrel on an <see cref="InMemoryTransport"/>, with HeaderCache or alone, and the client ends of its
/// connections: the in-memory server of the fuzzer, the differential tests and the connection-path benchmarks.
/// </summary>
internal sealed class InMemoryKestrel : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly InMemoryTransport _transport;

    private InMemoryKestrel(WebApplication app, InMemoryTransport transport)
    {
        _app = app;
        _transport = transport;
    }

    /// <summary>The app's services (for its meter).</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>
    /// Starts a slim app, HeaderCache registered with its defaults when <paramref name="headerCache"/> (otherwise
    /// Kestrel alone), that answers every request with <paramref name="app"/>. <paramref name="configure"/> sees the
    /// builder last.
    /// </summary>
    public static Task<InMemoryKestrel> StartAsync(bool headerCache, RequestDelegate app, Action<WebApplicationBuilder>? configure = null) =>
        StartAsync(onTransport =>
        {
            WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();
            if (headerCache)
            {
                builder.WebHost.UseHeaderStringCache();
            }

            onTransport(builder);
            configure?.Invoke(builder);
            WebApplication built = builder.Build();
            built.Run(app);
            return built;
        });

    /// <summary>
    /// Starts a slim app as <see cref="StartAsync(bool, RequestDelegate, Action{WebApplicationBuilder}?)"/> does, whose
    /// endpoint speaks only HTTP/2 (h2c with prior knowledge): endpoint defaults apply to an endpoint as it is declared,
    /// so they are set before the transport's endpoint. <paramref name="configure"/> sees the builder last.
    /// </summary>
    public static Task<InMemoryKestrel> StartHttp2Async(bool headerCache, RequestDelegate app, Action<WebApplicationBuilder>? configure = null) =>
        StartAsync(onTransport =>
        {
            WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();
            builder.WebHost.ConfigureKestrel(kestrel => kestrel.ConfigureEndpointDefaults(listen => listen.Protocols = HttpProtocols.Http2));
            if (headerCache)
            {
                builder.WebHost.UseHeaderStringCache();
            }

            onTransport(builder);
            configure?.Invoke(builder);
            WebApplication built = builder.Build();
            built.Run(app);
            return built;
        });

    /// <summary>
    /// Starts the app <paramref name="build"/> makes. It must pass its builder to the action it is given, which puts
    /// Kestrel on the transport, after anything that configures Kestrel's endpoint defaults (HeaderCache does).
    /// </summary>
    public static async Task<InMemoryKestrel> StartAsync(Func<Action<WebApplicationBuilder>, WebApplication> build)
    {
        var transport = new InMemoryTransport();
        WebApplication app = build(builder =>
        {
            builder.Services.AddSingleton<IConnectionListenerFactory>(transport);

            // One endpoint, so that Kestrel binds the transport once (its default binds localhost twice, IPv4 and
            // IPv6); endpoint defaults apply to it as it is declared.
            builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 5999));
        });
        await app.StartAsync();
        return new InMemoryKestrel(app, transport);
    }

    /// <summary>Opens a connection and returns the client's end of it.</summary>
    public InMemoryClient Connect() => _transport.Connect();

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
