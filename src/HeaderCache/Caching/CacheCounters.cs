namespace HeaderCache.Caching;

/// <summary>What one cache (or both caches of a connection) has done since it was created. Plain fields: a cache
/// belongs to one connection.</summary>
internal struct CacheCounters
{
    /// <summary>Lookups answered with a string already in the cache.</summary>
    public long Hits;

    /// <summary>Lookups that created a new string.</summary>
    public long Misses;

    /// <summary>Lookups this cache missed that the process-wide shared tier answered: strings not allocated either.</summary>
    public long SharedHits;

    /// <summary>Lookups this cache missed that a string of the process's fixed list (<see cref="WellKnownStrings"/>)
    /// answered: strings not allocated either.</summary>
    public long WellKnownHits;

    /// <summary>Strings dropped to make room for a new one.</summary>
    public long Evictions;

    /// <summary>Managed bytes of the strings that hits did not allocate: the cache's own measure, for the eviction study.
    /// It is not what a connection saves against Kestrel alone, which reuses some values on its own
    /// (<see cref="Compaction.HeadCompactor.AvoidedBytes"/>).</summary>
    public long BytesSaved;

    /// <summary>The counts of two caches together.</summary>
    public static CacheCounters operator +(CacheCounters left, CacheCounters right) => new()
    {
        Hits = left.Hits + right.Hits,
        Misses = left.Misses + right.Misses,
        SharedHits = left.SharedHits + right.SharedHits,
        WellKnownHits = left.WellKnownHits + right.WellKnownHits,
        Evictions = left.Evictions + right.Evictions,
        BytesSaved = left.BytesSaved + right.BytesSaved,
    };
}
