namespace HeaderCache.Caching;

/// <summary>
/// How a full cache chooses the slot a new string takes. The default was chosen by the hit-rate
/// study in <c>docs/eviction.md</c>; the others stay for that study to be re-run.
/// </summary>
internal enum EvictionPolicy
{
    /// <summary>Least recently used: evict the slot with the oldest hit or insert.</summary>
    Lru,

    /// <summary>CLOCK (FIFO with reinsertion): a hand sweeps the slots, sparing and clearing visited ones.</summary>
    Clock,

    /// <summary>SIEVE: a hand moves from the oldest insert to the newest, evicting the first unvisited
    /// entry and clearing visited bits on the way; survivors keep their place in insertion order.</summary>
    Sieve,
}
