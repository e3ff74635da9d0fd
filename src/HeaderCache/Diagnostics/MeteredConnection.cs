namespace HeaderCache.Diagnostics;

/// <summary>A connection's entry in the registry the observable instruments read while it is open
/// (<see cref="ConnectionCounters"/>): its links make the registry an intrusive list, so opening and closing a connection
/// takes no object of its own: the connection is its entry.</summary>
internal abstract class MeteredConnection
{
    // The neighbours in the registry, guarded by its lock.
    internal MeteredConnection? Previous;
    internal MeteredConnection? Next;

    /// <summary>The connection's counts now, read by the thread that observes the instruments while the connection's
    /// own thread writes them.</summary>
    public abstract MeteredCounts Counters { get; }
}
