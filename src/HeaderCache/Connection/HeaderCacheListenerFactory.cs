using System.Net;
using HeaderCache.Hosting;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Options;

namespace HeaderCache.Connection;

/// <summary>
/// One of Kestrel's connection listener factories (the sockets transport's, or any other registered one), decorated so
/// that, once <c>KestrelServerOptions.UseHeaderStringCache()</c> asked for every endpoint, each connection its listeners
/// accept gets HeaderCache before any of the endpoint's connection middleware runs. Nothing of the application's endpoint
/// configuration is replaced: its defaults, <c>UseHttps()</c>, protocols and middleware run as they would without it.
/// </summary>
internal class HeaderCacheListenerFactory : IConnectionListenerFactory
{
    private readonly HeaderCacheRuntime _runtime;
    private readonly IOptions<KestrelServerOptions> _kestrel;

    private HeaderCacheListenerFactory(IConnectionListenerFactory inner, HeaderCacheRuntime runtime, IOptions<KestrelServerOptions> kestrel)
    {
        Inner = inner;
        _runtime = runtime;
        _kestrel = kestrel;
    }

    /// <summary>The decorated factory.</summary>
    public IConnectionListenerFactory Inner { get; }

    /// <summary>
    /// <paramref name="inner"/>, decorated. Kestrel asks a factory that implements <see cref="IConnectionListenerFactorySelector"/>
    /// which endpoints it binds, and lets one that does not bind any: the decorator answers as the factory it decorates.
    /// </summary>
    public static IConnectionListenerFactory Decorate(IConnectionListenerFactory inner, HeaderCacheRuntime runtime, IOptions<KestrelServerOptions> kestrel) => inner switch
    {
        HeaderCacheListenerFactory => inner,
        IConnectionListenerFactorySelector => new Selecting(inner, runtime, kestrel),
        _ => new HeaderCacheListenerFactory(inner, runtime, kestrel),
    };

    /// <inheritdoc />
    public async ValueTask<IConnectionListener> BindAsync(EndPoint endpoint, CancellationToken cancellationToken = default)
    {
        IConnectionListener listener = await Inner.BindAsync(endpoint, cancellationToken).ConfigureAwait(false);

        // Kestrel binds after it ran every ConfigureKestrel callback, so whether HeaderCache is on every endpoint is known.
        if (!_runtime.EveryEndpoint)
        {
            return listener;
        }

        _runtime.OnListenerBound(listener.EndPoint);
        KestrelServerOptions kestrel = _kestrel.Value;
        return new HeaderCacheListener(listener, _runtime, KestrelLimits.From(kestrel.Limits), !kestrel.DisableStringReuse);
    }

    private sealed class Selecting(IConnectionListenerFactory inner, HeaderCacheRuntime runtime, IOptions<KestrelServerOptions> kestrel)
        : HeaderCacheListenerFactory(inner, runtime, kestrel), IConnectionListenerFactorySelector
    {
        public bool CanBind(EndPoint endpoint) => ((IConnectionListenerFactorySelector)Inner).CanBind(endpoint);
    }
}
