using System.Runtime.CompilerServices;
using HeaderCache.Connection;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>
/// Puts HeaderCache's connection middleware on Kestrel endpoints.
/// </summary>
public static class HeaderCacheKestrelExtensions
{
    private static readonly ConditionalWeakTable<ListenOptions, HeaderCacheConnectionMiddleware.Registration> Registrations = [];

    /// <summary>
    /// Gives every HTTP/1.1 connection on every endpoint a header string cache (through
    /// <see cref="KestrelServerOptions.ConfigureEndpointDefaults"/>, which keeps only its last callback: an
    /// application that sets its own endpoint defaults afterwards calls <see cref="UseHeaderStringCache(ListenOptions)"/>
    /// in them). On TLS endpoints the cache reads the decrypted side.
    /// Needs the request-level part: <c>builder.WebHost.UseHeaderStringCache()</c> registers both.
    /// </summary>
    /// <param name="options">The Kestrel options.</param>
    /// <returns>The <see cref="KestrelServerOptions"/>.</returns>
    public static KestrelServerOptions UseHeaderStringCache(this KestrelServerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.ConfigureEndpointDefaults(listenOptions => listenOptions.UseHeaderStringCache());
        return options;
    }

    /// <summary>
    /// Gives every HTTP/1.1 connection on this endpoint a header string cache. On a TLS endpoint the cache
    /// reads the decrypted side, before or after <c>UseHttps()</c>. Calling it again on the same endpoint
    /// replaces the earlier placement.
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
