namespace HeaderCache.Diagnostics;

/// <summary>A connection's entry in the registry the observable instruments read while it is open
/// (<see cref="ConnectionCounters"/>): its links make the registry an intrusive list, so opening and closing a connection
/// takes one entry and nothing more; its counts are read from the connection it stands for.</summary>
internal sealed class MeteredConnection(MeteredConnection.ISource source)
{
    // The neighbours in the registry, guarded by its lock.
    internal MeteredConnection? Previous;
    internal MeteredConnection? Next;

    /// <summary>What a metered connection counts.</summary>
    public interface ISource
    {
        /// <summary>Read by the thread that observes the instruments while the connection's own thread writes them.</summary>
        MeteredCounts Counters { get; }
    }

    /// <summary>The connection's counts now.</summary>
    public MeteredCounts Counters => source.Counters;
}
