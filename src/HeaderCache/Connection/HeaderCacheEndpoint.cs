using HeaderCache.Diagnostics;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Connection;

/// <summary>One endpoint as HeaderCache reads its connections: Kestrel's limits and string reuse, what Kestrel does with
/// an h2c preface there, the meter and the logger. Every connection HeaderCache reads is set up here, whether its
/// endpoint's connection middleware or the listener of Kestrel's transport gave it HeaderCache. The endpoint is named in
/// the log as <paramref name="name"/> names it when the log is written (its <see cref="ListenOptions"/>, whose address
/// has its port once bound, or the listener's <see cref="System.Net.EndPoint"/>).</summary>
internal sealed class HeaderCacheEndpoint(object name, KestrelServerOptions kestrel, CleartextHttp2 cleartextHttp2, HeaderCacheMetrics metrics, ILogger logger)
{
    private int _h2cRefusedLogged;
    private volatile bool _readsHttp2FromFirstByte;

    /// <summary>Kestrel's limits, as the readers check them.</summary>
    public KestrelLimits Limits { get; } = KestrelLimits.From(kestrel.Limits);

    /// <summary>Whether Kestrel hands back its previous string for a known header's repeated value
    /// (<c>DisableStringReuse</c> off).</summary>
    public bool KestrelReusesValues { get; } = !kestrel.DisableStringReuse;

    /// <summary>The endpoint's idle reading states, lent to its new connections.</summary>
    public ReadingStatePool States { get; } = new();

    /// <summary>What Kestrel does with a cleartext connection that begins with the HTTP/2 preface.</summary>
    public CleartextHttp2 CleartextHttp2 => cleartextHttp2;

    /// <summary>Kestrel read as HTTP/2 an h2c preface that HeaderCache read in cleartext on this endpoint: nothing after
    /// HeaderCache decrypts its connections and its Protocols are Http2 alone, so Kestrel reads every connection here as
    /// HTTP/2 from its first byte, and HeaderCache reads them so too, with no HTTP/1.1 reader to find the preface.</summary>
    public bool ReadsHttp2FromFirstByte => _readsHttp2FromFirstByte;

    /// <summary>Kestrel created a request on a connection whose h2c preface HeaderCache read in cleartext.</summary>
    public void KestrelServedH2c() => _readsHttp2FromFirstByte = true;

    /// <summary>The meter's instruments.</summary>
    public HeaderCacheMetrics Metrics => metrics;

    /// <summary>The HeaderCache logger.</summary>
    public ILogger Logger => logger;

    /// <summary>Gives <paramref name="context"/>, which HeaderCache reads with <paramref name="options"/>, its state:
    /// published as its feature and its requests' way to their headers, and called on Kestrel's heartbeat.</summary>
    public HeaderCacheConnection Start(ConnectionContext context, HeaderCacheOptions options)
    {
        var connection = new HeaderCacheConnection(this, options, context.ConnectionId);
        context.Features.Set<IHeaderStringCacheFeature>(connection);
        context.Features.Set(connection.Requests);

        // Kestrel adds its own handler to the same list, so this allocates nothing more.
        context.Features.Get<IConnectionHeartbeatFeature>()?.OnHeartbeat(static state => ((HeaderCacheConnection)state).OnHeartbeat(), connection);
        return connection;
    }

    /// <summary>A client sent the h2c preface where Kestrel answers it as HTTP/1.1: said once per endpoint, with why.</summary>
    public void ReportH2cRefused()
    {
        if (Interlocked.Exchange(ref _h2cRefusedLogged, 1) == 0)
        {
            Log.H2cNotServed(logger, name.ToString() ?? string.Empty);
        }
    }
}
