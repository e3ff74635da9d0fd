namespace HeaderCache.Diagnostics;

/// <summary>A connection whose counts the observable instruments read while it is open. Its links make the registry
/// (<see cref="ConnectionCounters"/>) an intrusive list: opening and closing a connection allocates nothing.</summary>
internal abstract class MeteredConnection
{
    // The neighbours in the registry, guarded by its lock.
    internal MeteredConnection? Previous;
    internal MeteredConnection? Next;

    /// <summary>Read by the thread that observes the instruments while the connection's own thread writes them.</summary>
    public abstract MeteredCounts Counters { get; }
}
