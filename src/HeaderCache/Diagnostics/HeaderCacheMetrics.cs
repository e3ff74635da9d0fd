using System.Diagnostics.Metrics;
using HeaderCache.Caching;
using HeaderCache.Compaction;

namespace HeaderCache.Diagnostics;

/// <summary>
/// The <c>HeaderCache</c> meter. Instruments are named in Kestrel's style (lowercase, dotted).
/// </summary>
internal sealed class HeaderCacheMetrics
{
    /// <summary>Name of the meter, for <c>dotnet-counters</c> and OpenTelemetry.</summary>
    public const string MeterName = "HeaderCache";

    private readonly Counter<long> _hits;
    private readonly Counter<long> _misses;
    private readonly Counter<long> _evictions;
    private readonly Counter<long> _bytesSaved;
    private readonly Counter<long> _passThrough;
    private readonly Counter<long> _connections;

    /// <summary>Creates the instruments on a meter from <paramref name="meterFactory"/>.</summary>
    public HeaderCacheMetrics(IMeterFactory meterFactory)
    {
        Meter meter = meterFactory.Create(MeterName);
        _hits = meter.CreateCounter<long>("headercache.hits", "{string}", "Header names and values served from a connection's cache: strings not allocated.");
        _misses = meter.CreateCounter<long>("headercache.misses", "{string}", "Header names and values that were created and admitted to a connection's cache.");
        _evictions = meter.CreateCounter<long>("headercache.evictions", "{string}", "Strings dropped from a connection's cache to make room.");
        _bytesSaved = meter.CreateCounter<long>("headercache.saved_bytes", "By", "Managed bytes of the strings that hits did not allocate.");
        _connections = meter.CreateCounter<long>("headercache.connections", "{connection}", "Connections whose bytes went through HeaderCache's reader, counted when they close.");
        _passThrough = meter.CreateCounter<long>("headercache.passthrough_connections", "{connection}", "Connections that stopped compacting and pass every byte to Kestrel, by reason.");
    }

    /// <summary>Adds what the cache did since <paramref name="published"/> and remembers the new totals.</summary>
    public void Publish(in CacheCounters current, ref CacheCounters published)
    {
        Add(_hits, current.Hits - published.Hits);
        Add(_misses, current.Misses - published.Misses);
        Add(_evictions, current.Evictions - published.Evictions);
        Add(_bytesSaved, current.BytesSaved - published.BytesSaved);
        published = current;
    }

    /// <summary>Counts a connection that went through the reader and closed.</summary>
    public void ConnectionClosed() => _connections.Add(1);

    /// <summary>Counts a connection that switched to pass-through.</summary>
    public void PassThrough(PassThroughReason reason) =>
        _passThrough.Add(1, new KeyValuePair<string, object?>("headercache.passthrough.reason", ReasonTag(reason)));

    private static void Add(Counter<long> counter, long delta)
    {
        if (delta != 0)
        {
            counter.Add(delta);
        }
    }

    private static string ReasonTag(PassThroughReason reason) => reason switch
    {
        PassThroughReason.Tls => "tls",
        PassThroughReason.Http2 => "http2",
        PassThroughReason.Version => "version",
        PassThroughReason.Connect => "connect",
        PassThroughReason.Upgrade => "upgrade",
        PassThroughReason.TransferEncoding => "transfer_encoding",
        PassThroughReason.Malformed => "malformed",
        PassThroughReason.OverLimit => "over_limit",
        _ => "none",
    };
}
