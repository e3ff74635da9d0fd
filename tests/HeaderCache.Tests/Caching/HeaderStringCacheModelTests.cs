using System.Diagnostics.CodeAnalysis;
using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>
/// Long random lookup sequences checked step by step against a <see cref="Dictionary{TKey, TValue}"/>
/// oracle (content and instance identity) and a reference model of the eviction policy (hit or miss).
/// </summary>
public class HeaderStringCacheModelTests
{
    private const int Lookups = 50_000;
    private const int CollidingLookups = 20_000; // every lookup then compares against many slots
    private const int PoolSeed = 42;

    private static readonly int[] SlotCounts = [1, 2, 25, 64, 128];
    private static readonly string[] Fingerprints = ["Real", "Colliding"];

    private sealed record PoolEntry(byte[] Bytes, string Key, bool Cacheable);

    public static TheoryData<int, string> Cases()
    {
        var data = new TheoryData<int, string>();
        foreach (int slotCount in SlotCounts)
        {
            foreach (string fingerprint in Fingerprints)
            {
                data.Add(slotCount, fingerprint);
            }
        }

        return data;
    }

    /// <param name="slotCount">Slots in the cache.</param>
    /// <param name="fingerprint">"Real": a pool of varied lengths and near duplicates; "Colliding": a pool whose
    /// cacheable inputs all share one fingerprint (<see cref="TestBytes.Colliding(Random, int)"/>), so every lookup
    /// compares against many slots.</param>
    [Theory]
    [MemberData(nameof(Cases))]
    public void Matches_the_oracle_and_the_CLOCK_model_over_a_long_random_sequence(int slotCount, string fingerprint)
    {
        PoolEntry[] pool = fingerprint == "Real" ? BuildPool(new Random(PoolSeed)) : BuildCollidingPool(new Random(PoolSeed));
        int lookups = fingerprint == "Real" ? Lookups : CollidingLookups;
        int[] sequence = ZipfSequence(new Random(slotCount * 7), pool.Length, lookups);
        var cache = new HeaderStringCache(slotCount, seed: 0xA5A5_0001);
        var model = new ClockModel(slotCount);
        var returned = new Dictionary<string, string>(StringComparer.Ordinal); // bytes -> last instance returned
        long hits = 0;
        long misses = 0;
        long refused = 0;

        for (int step = 0; step < sequence.Length; step++)
        {
            PoolEntry entry = pool[sequence[step]];
            CacheCounters before = cache.Counters;
            int countBefore = cache.Count;

            bool accepted = cache.TryGetOrAdd(entry.Bytes, out string? value);

            if (!entry.Cacheable)
            {
                if (accepted || value is not null)
                {
                    Fail(step, entry, "refused input was accepted");
                }

                if (!SameCounters(before, cache.Counters) || cache.Count != countBefore)
                {
                    Fail(step, entry, "refused input changed the cache");
                }

                refused++;
                continue;
            }

            if (!accepted || value is null)
            {
                Fail(step, entry, "cacheable input was refused");
            }

            long hitDelta = cache.Counters.Hits - before.Hits;
            long missDelta = cache.Counters.Misses - before.Misses;
            if (hitDelta + missDelta != 1 || hitDelta < 0 || missDelta < 0)
            {
                Fail(step, entry, $"hits +{hitDelta}, misses +{missDelta}");
            }

            bool hit = hitDelta == 1;
            bool expectedHit = model.Access(entry.Key);
            if (hit != expectedHit)
            {
                Fail(step, entry, $"{(hit ? "hit" : "miss")}, the CLOCK model expects a {(expectedHit ? "hit" : "miss")}");
            }

            if (!string.Equals(value, entry.Key, StringComparison.Ordinal))
            {
                Fail(step, entry, $"returned a string with other content: \"{value}\"");
            }

            returned.TryGetValue(entry.Key, out string? previous);
            if (hit)
            {
                if (!ReferenceEquals(value, previous))
                {
                    Fail(step, entry, "a hit returned another instance than the one returned before");
                }

                hits++;
            }
            else
            {
                // A miss creates the string anew (the one exception: the empty string is string.Empty).
                if (entry.Bytes.Length > 0 && ReferenceEquals(value, previous))
                {
                    Fail(step, entry, "a miss returned the old instance");
                }

                misses++;
            }

            returned[entry.Key] = value;
            if (cache.Count != model.Count || cache.Count > cache.SlotCount)
            {
                Fail(step, entry, $"Count {cache.Count}, model {model.Count}, slots {cache.SlotCount}");
            }

            if (cache.Counters.Evictions != cache.Counters.Misses - cache.Count)
            {
                Fail(step, entry, $"evictions {cache.Counters.Evictions}, misses {cache.Counters.Misses}, Count {cache.Count}");
            }

        }

        Assert.Equal(hits, cache.Counters.Hits);
        Assert.Equal(misses, cache.Counters.Misses);
        Assert.Equal(lookups, hits + misses + refused);
        Assert.Equal(slotCount, cache.Count);

        // The sequence really exercised hits, evictions and refusals.
        Assert.InRange(hits, 500, lookups);
        Assert.InRange(cache.Counters.Evictions, 500, lookups);
        Assert.InRange(refused, 100, lookups);
    }

    [Fact]
    public void The_pool_covers_boundary_lengths_near_duplicates_and_refusals()
    {
        PoolEntry[] pool = BuildPool(new Random(PoolSeed));
        int[] lengths = pool.Where(e => e.Cacheable).Select(e => e.Bytes.Length).ToArray();
        foreach (int length in new[] { 0, 1, 15, 16, 31, 32, 33, 63, 64, 255, 256 })
        {
            Assert.Contains(length, lengths);
        }

        Assert.Contains(pool, e => !e.Cacheable && e.Bytes.Length > HeaderStringCache.DefaultMaxLength);
        Assert.Contains(pool, e => !e.Cacheable && e.Bytes.Length <= HeaderStringCache.DefaultMaxLength);
        Assert.Contains(pool, e => e.Cacheable && pool.Any(o => o.Cacheable && o.Key == e.Key + " "));
        Assert.Equal(pool.Length, pool.Select(e => e.Key).Distinct(StringComparer.Ordinal).Count());
    }

    [DoesNotReturn]
    private static void Fail(int step, PoolEntry entry, string message) =>
        Assert.Fail($"Step {step}, length {entry.Bytes.Length} (\"{entry.Key}\"): {message}");

    private static bool SameCounters(CacheCounters a, CacheCounters b) =>
        a.Hits == b.Hits && a.Misses == b.Misses && a.Evictions == b.Evictions;

    /// <summary>
    /// About 240 distinct byte strings: three of each boundary length, random lengths up to 256,
    /// near duplicates (one byte apart, one SP longer, one byte shorter), and 20 refused inputs
    /// (longer than 256, or holding a refused byte), shuffled so that popularity is random.
    /// </summary>
    private static PoolEntry[] BuildPool(Random random)
    {
        var distinct = new Dictionary<string, byte[]>(StringComparer.Ordinal);
        void Add(byte[] bytes) => distinct.TryAdd(TestBytes.Text(bytes), bytes);

        foreach (int length in new[] { 0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256 })
        {
            for (int i = 0; i < 3; i++)
            {
                Add(TestBytes.Valid(random, length));
            }
        }

        while (distinct.Count < 160)
        {
            Add(TestBytes.Valid(random, random.Next(1, 257)));
        }

        foreach (byte[] bytes in distinct.Values.Where(b => b.Length > 0).Take(40).ToList())
        {
            byte[] changed = (byte[])bytes.Clone();
            int position = random.Next(changed.Length);
            byte replacement;
            do
            {
                replacement = (byte)random.Next(0x21, 0x7F);
            }
            while (replacement == changed[position]);
            changed[position] = replacement;
            Add(changed);
            Add(bytes[..^1]);
            if (bytes.Length < HeaderStringCache.DefaultMaxLength)
            {
                Add([.. bytes, (byte)' ']);
            }
        }

        var entries = distinct.Values.Select(b => new PoolEntry(b, TestBytes.Text(b), Cacheable: true)).ToList();
        for (int i = 0; i < 10; i++)
        {
            byte[] tooLong = TestBytes.Valid(random, HeaderStringCache.DefaultMaxLength + 1 + random.Next(3));
            entries.Add(new PoolEntry(tooLong, TestBytes.Text(tooLong), Cacheable: false));
            byte[] invalid = TestBytes.Valid(random, random.Next(1, 100));
            invalid[random.Next(invalid.Length)] = TestBytes.Invalid(random);
            entries.Add(new PoolEntry(invalid, TestBytes.Text(invalid), Cacheable: false));
        }

        PoolEntry[] pool = [.. entries];
        random.Shuffle(pool);
        return pool;
    }

    /// <summary>160 distinct inputs of 64 bytes that share one fingerprint, and 20 refused ones.</summary>
    private static PoolEntry[] BuildCollidingPool(Random random)
    {
        var distinct = new Dictionary<string, byte[]>(StringComparer.Ordinal);
        while (distinct.Count < 160)
        {
            byte[] bytes = TestBytes.Colliding(random, 64);
            distinct.TryAdd(TestBytes.Text(bytes), bytes);
        }

        var entries = distinct.Values.Select(b => new PoolEntry(b, TestBytes.Text(b), Cacheable: true)).ToList();
        for (int i = 0; i < 20; i++)
        {
            byte[] invalid = TestBytes.Colliding(random, 64);
            invalid[8 + random.Next(20)] = TestBytes.Invalid(random);
            entries.Add(new PoolEntry(invalid, TestBytes.Text(invalid), Cacheable: false));
        }

        PoolEntry[] pool = [.. entries];
        random.Shuffle(pool);
        return pool;
    }

    /// <summary>Indexes into a pool drawn with probability proportional to 1/(rank+1).</summary>
    private static int[] ZipfSequence(Random random, int poolSize, int count)
    {
        double[] cumulative = new double[poolSize];
        double total = 0;
        for (int i = 0; i < poolSize; i++)
        {
            total += 1.0 / (i + 1);
            cumulative[i] = total;
        }

        int[] sequence = new int[count];
        for (int i = 0; i < count; i++)
        {
            int index = Array.BinarySearch(cumulative, random.NextDouble() * total);
            sequence[i] = Math.Min(index >= 0 ? index : ~index, poolSize - 1);
        }

        return sequence;
    }
}
