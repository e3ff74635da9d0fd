
namespace HeaderCache.Diagnostics;

/// <summary>
/// A connection whose counts the observable instruments read while it is open. It lives in Diagnostics so
/// that the registry (<see cref="ConnectionCounters"/>) needs nothing from the Connection folder, and its links make
/// the registry an intrusive list: opening and closing a connection allocates nothing and costs O(1).
/// </summary>
internal abstract class MeteredConnection
{
    /// <summary>The connection before this one in the registry; guarded by the registry's lock.</summary>
    internal MeteredConnection? Previous;

    /// <summary>The connection after this one in the registry; guarded by the registry's lock.</summary>
    internal MeteredConnection? Next;

    /// <summary>
    /// What the connection's caches and compactor have done so far. Read by the thread that observes the instruments
    /// while the connection's own thread writes them.
    /// </summary>
    public abstract MeteredCounts Counters { get; }
}
