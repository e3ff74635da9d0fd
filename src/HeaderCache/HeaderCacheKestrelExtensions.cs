using System.Runtime.CompilerServices;
using HeaderCache.Diagnostics;
using HeaderCache.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>
/// Puts HeaderCache's connection part on Kestrel endpoints.
/// </summary>
public static class HeaderCacheKestrelExtensions
{
    private static readonly ConditionalWeakTable<ListenOptions, HeaderCacheConnectionMiddleware.Registration> Registrations = [];

    /// <summary>
    /// Gives every HTTP/1.1 and HTTP/2 connection on every endpoint a header string cache, whatever the endpoint's
    /// configuration (<c>--urls</c>, <c>Kestrel:Endpoints</c>, <c>Listen*</c> in code) and whenever it is defined. HeaderCache
    /// decorates Kestrel's connection listener factories, so it replaces nothing of the application's: its
    /// <see cref="KestrelServerOptions.ConfigureEndpointDefaults"/>, <c>UseHttps()</c>, protocols and connection middleware
    /// all run as they would without it. On TLS endpoints the cache reads the decrypted side, whether the connection
    /// negotiates HTTP/1.1 or HTTP/2 (ALPN <c>h2</c>); h2c (HTTP/2 with prior knowledge, no TLS) is served on endpoints whose
    /// <see cref="ListenOptions.Protocols"/> is <see cref="HttpProtocols.Http2"/>, as Kestrel serves it only there. HTTP/3
    /// (QUIC) is left to Kestrel. Needs the request-level part: <c>builder.WebHost.UseHeaderStringCache()</c> registers both
    /// and calls this.
    /// </summary>
    /// <param name="options">The Kestrel options.</param>
    /// <returns>The <see cref="KestrelServerOptions"/>.</returns>
    public static KestrelServerOptions UseHeaderStringCache(this KestrelServerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);

        // Kestrel runs this in its options' configuration, from the application's services.
        IServiceProvider? services = options.ApplicationServices;
        if (services?.GetService<HeaderCacheRuntime>() is { } runtime)
        {
            runtime.CoverEveryEndpoint();
        }
        else if (services?.GetService<ILoggerFactory>() is { } loggers)
        {
            Log.RequestPartMissing(loggers.CreateLogger(Log.Category));
        }

        return options;
    }

    /// <summary>
    /// Gives every HTTP/1.1 and HTTP/2 connection on this endpoint a header string cache (h2c when the endpoint's
    /// <see cref="ListenOptions.Protocols"/> is <see cref="HttpProtocols.Http2"/>). On a TLS endpoint the cache
    /// reads the decrypted side, before or after <c>UseHttps()</c>. Calling it again on the same endpoint
    /// replaces the earlier placement. Not needed when HeaderCache is on every endpoint
    /// (<see cref="UseHeaderStringCache(KestrelServerOptions)"/>): the endpoint's connections then already have it.
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <returns>The <see cref="ListenOptions"/>.</returns>
    public static ListenOptions UseHeaderStringCache(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        HeaderCacheConnectionMiddleware.Registration registration = Registrations.GetValue(listenOptions, static _ => new());
        int index = registration.Count++;
        listenOptions.Use(next => new HeaderCacheConnectionMiddleware(next, listenOptions, registration, index).OnConnectionAsync);
        return listenOptions;
    }
}
