using System.Diagnostics;
using System.Diagnostics.Metrics;
using HeaderCache.Caching;

namespace HeaderCache.Diagnostics;

/// <summary>
/// The <c>HeaderCache</c> meter. Instruments are named in Kestrel's style (lowercase, dotted).
/// </summary>
/// <remarks>
/// What the caches do is counted in plain fields of each connection and only read when a listener observes the
/// instruments, so a request does no metrics work at all.
/// </remarks>
internal sealed class HeaderCacheMetrics
{
    private static readonly KeyValuePair<string, object?> LinesServed = new("headercache.line.outcome", "served");
    private static readonly KeyValuePair<string, object?> LinesCreated = new("headercache.line.outcome", "created");

    private readonly ConnectionCounters _counters = new();
    private readonly Counter<long> _connections;

    /// <summary>Creates the instruments on a meter from <paramref name="meterFactory"/>.</summary>
    public HeaderCacheMetrics(IMeterFactory meterFactory)
    {
        Meter meter = meterFactory.Create(HeaderCacheOptions.MeterName);
        meter.CreateObservableCounter(
            "headercache.hits", () => _counters.Totals().Hits, "{string}", "Header names and values served from a connection's cache: strings not allocated.");
        meter.CreateObservableCounter(
            "headercache.misses", () => _counters.Totals().Misses, "{string}", "Header names and values that were created and admitted to a connection's cache.");
        meter.CreateObservableCounter(
            "headercache.evictions", () => _counters.Totals().Evictions, "{string}", "Strings dropped from a connection's cache to make room.");
        meter.CreateObservableCounter(
            "headercache.saved_bytes", () => _counters.Totals().BytesSaved, "By", "Managed bytes of the strings that hits did not allocate.");
        meter.CreateObservableCounter(
            "headercache.lines",
            ObserveLines,
            "{line}",
            "Header lines taken out of request heads and put back, by outcome: served (no string made for the line) or created (a new name or value string, as Kestrel alone makes).");
        _connections = meter.CreateCounter<long>(
            "headercache.connections",
            "{connection}",
            "Connections on endpoints with HeaderCache, by what happened to them: counted when they end, or when they start for those it does not read.");
    }

    /// <summary>Counts what <paramref name="connection"/>'s cache does from now until <see cref="Unregister"/>.</summary>
    public void Register(MeteredConnection connection) => _counters.Add(connection);

    /// <summary>Keeps what <paramref name="connection"/>'s cache did, now that it has ended.</summary>
    public void Unregister(MeteredConnection connection) => _counters.Remove(connection);

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

    private IEnumerable<Measurement<long>> ObserveLines()
    {
        CacheCounters totals = _counters.Totals();
        return [new(totals.LinesServed, LinesServed), new(totals.LinesCreated, LinesCreated)];
    }
}
