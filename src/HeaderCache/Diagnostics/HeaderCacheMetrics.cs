using System.Diagnostics;
using System.Diagnostics.Metrics;
using HeaderCache.Caching;

namespace HeaderCache.Diagnostics;

/// <summary>
/// The <c>HeaderCache</c> meter. Instruments are named in Kestrel's style (lowercase, dotted).
/// </summary>
internal sealed class HeaderCacheMetrics
{
    private readonly Counter<long> _hits;
    private readonly Counter<long> _misses;
    private readonly Counter<long> _evictions;
    private readonly Counter<long> _bytesSaved;
    private readonly Counter<long> _connections;
    private readonly Counter<long> _lines;

    /// <summary>Creates the instruments on a meter from <paramref name="meterFactory"/>.</summary>
    public HeaderCacheMetrics(IMeterFactory meterFactory)
    {
        Meter meter = meterFactory.Create(HeaderCacheOptions.MeterName);
        _hits = meter.CreateCounter<long>("headercache.hits", "{string}", "Header names and values served from a connection's cache: strings not allocated.");
        _misses = meter.CreateCounter<long>("headercache.misses", "{string}", "Header names and values that were created and admitted to a connection's cache.");
        _evictions = meter.CreateCounter<long>("headercache.evictions", "{string}", "Strings dropped from a connection's cache to make room.");
        _bytesSaved = meter.CreateCounter<long>("headercache.saved_bytes", "By", "Managed bytes of the strings that hits did not allocate.");
        _lines = meter.CreateCounter<long>(
            "headercache.lines",
            "{line}",
            "Header lines taken out of request heads and put back, by outcome: served (no string made for the line) or created (a new name or value string, as Kestrel alone makes).");
        _connections = meter.CreateCounter<long>(
            "headercache.connections",
            "{connection}",
            "Connections on endpoints with HeaderCache, by what happened to them: counted when they end, or when they start for those it does not read.");
    }

    /// <summary>Adds what the cache did since <paramref name="published"/> and remembers the new totals.</summary>
    public void Publish(in CacheCounters current, ref CacheCounters published)
    {
        Add(_hits, current.Hits - published.Hits);
        Add(_misses, current.Misses - published.Misses);
        Add(_evictions, current.Evictions - published.Evictions);
        Add(_bytesSaved, current.BytesSaved - published.BytesSaved);
        Add(_lines, current.LinesServed - published.LinesServed, "served");
        Add(_lines, current.LinesCreated - published.LinesCreated, "created");
        published = current;
    }

    /// <summary>Counts a connection by <paramref name="outcome"/> and, unless it was cached, <paramref name="reason"/>.</summary>
    public void ConnectionEnded(string outcome, string? reason)
    {
        var tags = new TagList { { "headercache.connection.outcome", outcome } };
        if (reason is not null)
        {
            tags.Add("headercache.connection.reason", reason);
        }

        _connections.Add(1, tags);
    }

    private static void Add(Counter<long> counter, long delta)
    {
        if (delta != 0)
        {
            counter.Add(delta);
        }
    }

    private static void Add(Counter<long> counter, long delta, string outcome)
    {
        if (delta != 0)
        {
            counter.Add(delta, new KeyValuePair<string, object?>("headercache.line.outcome", outcome));
        }
    }
}
