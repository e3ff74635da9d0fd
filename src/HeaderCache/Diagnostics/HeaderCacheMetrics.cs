using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace HeaderCache.Diagnostics;

/// <summary>The <c>HeaderCache</c> meter, named as ASP.NET Core names Kestrel's (lowercase, dotted; the unit in the
/// unit, not the name; an outcome as a tag of one instrument). What each counts is in the README's table.</summary>
/// <remarks>What the caches do is counted in plain fields of each connection and only read when a listener observes the
/// instruments, so a request does no metrics work at all. The instruments count header lines and the bytes they did
/// not cost, what a user asks about, not hits and misses of name and value strings mixed.</remarks>
internal sealed class HeaderCacheMetrics
{
    private static readonly KeyValuePair<string, object?> LinesServed = new("headercache.line.outcome", "served");
    private static readonly KeyValuePair<string, object?> LinesCreated = new("headercache.line.outcome", "created");
    private static readonly KeyValuePair<string, object?> ValuesEvicted = new("headercache.string.kind", "value");
    private static readonly KeyValuePair<string, object?> NamesEvicted = new("headercache.string.kind", "name");

    private readonly ConnectionCounters _counters = new();
    private readonly Counter<long> _connections;

    public HeaderCacheMetrics(IMeterFactory meterFactory)
    {
        Meter meter = meterFactory.Create(HeaderCacheOptions.MeterName);
        meter.CreateObservableCounter(
            "headercache.lines",
            ObserveLines,
            "{line}",
            "Header lines taken out of request heads and put back, by outcome: served (no string made for the line) or created (a new name or value string, as Kestrel alone makes).");
        meter.CreateObservableCounter(
            "headercache.allocation.avoided",
            () => _counters.Totals().AvoidedBytes,
            "By",
            "Managed bytes of the header strings Kestrel alone would have allocated for the lines served: the value, unless Kestrel reuses its previous string, and the name, unless Kestrel has a constant for it.");
        meter.CreateObservableCounter(
            "headercache.evictions",
            ObserveEvictions,
            "{string}",
            "Strings dropped from a connection's cache to make room for another, by kind: value (the SlotCount value slots) or name (the slots of names Kestrel has no constant for).");
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
        MeteredCounts totals = _counters.Totals();
        return [new(totals.LinesServed, LinesServed), new(totals.LinesCreated, LinesCreated)];
    }

    private IEnumerable<Measurement<long>> ObserveEvictions()
    {
        MeteredCounts totals = _counters.Totals();
        return [new(totals.ValueEvictions, ValuesEvicted), new(totals.NameEvictions, NamesEvicted)];
    }
}
