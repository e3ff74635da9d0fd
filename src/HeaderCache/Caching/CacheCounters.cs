namespace HeaderCache.Caching;

/// <summary>What one cache has done since it was created. Plain fields: a cache belongs to one connection.</summary>
internal struct CacheCounters
{
    /// <summary>Lookups answered with a string already in the cache.</summary>
    public long Hits;

    /// <summary>Lookups that created a new string.</summary>
    public long Misses;

    /// <summary>Strings dropped to make room for a new one.</summary>
    public long Evictions;
}
