using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>
/// Hand-worked lookup traces of the engine's SIEVE eviction. A step is a key followed by <c>+</c> (expected hit) or
/// <c>-</c> (expected miss, which admits the key). The comments give the state after the
/// interesting steps, oldest entry first; <c>*</c> marks a visited entry.
/// </summary>
public class SieveEvictionTests
{
    public static TheoryData<int, string> Traces => new()
    {
        // The hand moves from the oldest entry toward the newest, keeps visited entries in place.
        { 1, "A- A+ B- B+ A- A+ B-" },

        // C- spares A* and evicts B, the newest, so the hand wraps: A C. A+ B- spares A*, evicts C: A B.
        // C- evicts A (its visit was cleared); the hand rests on B, so A- evicts B.
        { 2, "A- B- A+ C- A+ B- C- A-" },

        // D- spares A* and evicts B, hand on C: A C D. E- evicts C: A D E. F- evicts D: A E F.
        // A stays while the hand keeps clearing newer entries (CLOCK would have evicted A at F-).
        { 3, "A- B- C- A+ D- E- F- A+ G- A+ E- F- A+" },

        // D- spares A* and B*, evicts C, the newest, so the hand wraps: A B D. E- evicts A: B D E.
        // B+ D+, then A- spares B* and D*, evicts E (newest, wrap): B D A. E- evicts B: D A E.
        { 3, "A- B- C- A+ B+ D- E- B+ D+ A- E- D+ A+ B-" },
    };

    [Theory]
    [MemberData(nameof(Traces))]
    public void Follows_the_hand_worked_trace(int slotCount, string trace)
    {
        RunTrace(slotCount, trace, collide: false);
    }

    [Theory]
    [MemberData(nameof(Traces))]
    public void Follows_the_hand_worked_trace_when_every_fingerprint_collides(int slotCount, string trace)
    {
        RunTrace(slotCount, trace, collide: true);
    }

    /// <summary>The reference models used by the model-based test agree with the hand-worked traces.</summary>
    [Theory]
    [MemberData(nameof(Traces))]
    public void Reference_model_follows_the_hand_worked_trace(int slotCount, string trace)
    {
        var model = new SieveModel(slotCount);
        string[] steps = trace.Split(' ');
        for (int i = 0; i < steps.Length; i++)
        {
            bool hit = model.Access(steps[i][..^1]);
            Assert.True(hit == (steps[i][^1] == '+'), $"step {i + 1} ({steps[i]}) was a {(hit ? "hit" : "miss")}");
            Assert.True(model.Count <= slotCount);
        }
    }

    [Fact]
    public void A_visited_entry_survives_a_scan_of_one_hit_wonders()
    {
        // One visit between sweeps of the hand is enough to stay.
        var cache = new HeaderStringCache(slotCount: 4, seed: 1);
        Assert.True(cache.TryGetOrAdd("hot"u8, out string? hot));
        for (int i = 0; i < 300; i++)
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes($"cold-{i}"), out _));
            if (i % 3 == 0)
            {
                Assert.True(cache.TryGetOrAdd("hot"u8, out string? again));
                Assert.Same(hot, again);
            }
        }

        Assert.Equal(100, cache.Counters.Hits);
        Assert.Equal(301, cache.Counters.Misses);
    }

    private static void RunTrace(int slotCount, string trace, bool collide)
    {
        var cache = new HeaderStringCache(slotCount, seed: 1);
        if (collide)
        {
            cache.FingerprintOverride = static (_, _) => 0u;
        }

        var instances = new Dictionary<string, string>(StringComparer.Ordinal);
        string[] steps = trace.Split(' ');
        for (int i = 0; i < steps.Length; i++)
        {
            string key = steps[i][..^1];
            bool expectHit = steps[i][^1] switch
            {
                '+' => true,
                '-' => false,
                _ => throw new ArgumentException($"bad step {steps[i]}", nameof(trace)),
            };
            long hits = cache.Counters.Hits;

            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes(key), out string? value));

            bool hit = cache.Counters.Hits == hits + 1;
            Assert.True(hit == expectHit, $"step {i + 1} ({steps[i]}) was a {(hit ? "hit" : "miss")}");
            Assert.Equal(key, value);
            if (hit)
            {
                Assert.Same(instances[key], value);
            }

            instances[key] = value;
            Assert.InRange(cache.Count, 1, slotCount);
        }

        Assert.Equal(cache.Counters.Misses - cache.Count, cache.Counters.Evictions);
    }
}
