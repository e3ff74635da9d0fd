namespace HeaderCache.Caching;

/// <summary>What one cache has done since it was created. Plain fields: a cache belongs to one connection.</summary>
internal struct CacheCounters
{
    public long Hits;

    // Lookups that made a new string: admitting a well-known string is neither a hit nor a miss.
    public long Misses;

    public long Evictions;
}
