using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>
/// Hand-worked lookup traces per policy. A step is a key followed by <c>+</c> (expected hit) or
/// <c>-</c> (expected miss, which admits the key). The comments give the state after the
/// interesting steps, oldest entry first; <c>*</c> marks a visited (CLOCK/SIEVE) entry.
/// </summary>
public class EvictionPolicyTests
{
    public static TheoryData<string, int, string> Traces => new()
    {
        // LRU: the least recently used entry goes, whether its last use was an insert or a hit.
        { "Lru", 1, "A- A+ B- A- B- B+" },
        { "Lru", 2, "A- B- A+ C- A+ B- C- B+ A-" },   // C- evicts B (A was just used); B- evicts C; C- evicts A.

        // After A+: B C A. D- evicts B: C A D. A+ C+: D A C. B- evicts D: A C B. D- evicts A: C B D.
        { "Lru", 3, "A- B- C- A+ D- A+ C+ B- D- C+ A-" },

        // CLOCK: the hand spares a visited entry once, clearing its bit.
        { "Clock", 1, "A- A+ B- B+ A- A+ B-" },
        { "Clock", 2, "A- B- A+ C- A+ B- A+ C-" },

        // D- spares A* and evicts B (hand now past D): A D C. A+ C+ hit; B- spares C* and A*, evicts D.
        { "Clock", 3, "A- B- C- A+ D- A+ C+ B-" },

        // D- spares A* and clears it; E- evicts C, then F- reaches A again and, unvisited now, evicts it.
        { "Clock", 3, "A- B- C- A+ D- E- F- D+ E+ A-" },

        // Every entry visited: the hand clears all three and evicts the first, A.
        { "Clock", 3, "A- B- C- A+ B+ C+ D- B+ C+ A-" },

        // SIEVE: the hand moves from the oldest entry toward the newest, keeps visited entries in place.
        { "Sieve", 1, "A- A+ B- B+ A- A+ B-" },

        // C- spares A* and evicts B, the newest, so the hand wraps: A C. A+ B- spares A*, evicts C: A B.
        // C- evicts A (its visit was cleared); the hand rests on B, so A- evicts B.
        { "Sieve", 2, "A- B- A+ C- A+ B- C- A-" },

        // D- spares A* and evicts B, hand on C: A C D. E- evicts C: A D E. F- evicts D: A E F.
        // A stays while the hand keeps clearing newer entries (CLOCK would have evicted A at F-).
        { "Sieve", 3, "A- B- C- A+ D- E- F- A+ G- A+ E- F- A+" },

        // D- spares A* and B*, evicts C, the newest, so the hand wraps: A B D. E- evicts A: B D E.
        // B+ D+, then A- spares B* and D*, evicts E (newest, wrap): B D A. E- evicts B: D A E.
        { "Sieve", 3, "A- B- C- A+ B+ D- E- B+ D+ A- E- D+ A+ B-" },

        // The default policy is SIEVE: the trace that tells SIEVE from CLOCK.
        { "Default", 3, "A- B- C- A+ D- E- F- A+" },
        { "Clock", 3, "A- B- C- A+ D- E- F- A-" },
    };

    [Theory]
    [MemberData(nameof(Traces))]
    public void Follows_the_hand_worked_trace(string policy, int slotCount, string trace)
    {
        RunTrace(policy, slotCount, trace, collide: false);
    }

    [Theory]
    [MemberData(nameof(Traces))]
    public void Follows_the_hand_worked_trace_when_every_hash_collides(string policy, int slotCount, string trace)
    {
        RunTrace(policy, slotCount, trace, collide: true);
    }

    /// <summary>The reference models used by the model-based test agree with the hand-worked traces.</summary>
    [Theory]
    [MemberData(nameof(Traces))]
    public void Reference_model_follows_the_hand_worked_trace(string policy, int slotCount, string trace)
    {
        PolicyModel model = PolicyModel.Create(policy == "Default" ? EvictionPolicy.Sieve : Enum.Parse<EvictionPolicy>(policy), slotCount);
        string[] steps = trace.Split(' ');
        for (int i = 0; i < steps.Length; i++)
        {
            bool hit = model.Access(steps[i][..^1]);
            Assert.True(hit == (steps[i][^1] == '+'), $"step {i + 1} ({steps[i]}) was a {(hit ? "hit" : "miss")}");
            Assert.True(model.Count <= slotCount);
        }
    }

    [Fact]
    public void Lru_keeps_a_frequently_used_entry_through_a_long_scan()
    {
        var cache = new HeaderStringCache(slotCount: 3, seed: 1, policy: EvictionPolicy.Lru);
        Assert.True(cache.TryGetOrAdd("hot"u8, out string? hot));
        for (int i = 0; i < 200; i++)
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes($"cold-{i}"), out _));
            Assert.True(cache.TryGetOrAdd("hot"u8, out string? again));
            Assert.Same(hot, again);
        }

        Assert.Equal(200, cache.Counters.Hits);
        Assert.Equal(201, cache.Counters.Misses);
        Assert.Equal(198, cache.Counters.Evictions);
    }

    [Theory]
    [InlineData("Clock")]
    [InlineData("Sieve")]
    public void A_visited_entry_survives_a_scan_of_one_hit_wonders(string policyName)
    {
        // One visit between sweeps of the hand is enough to stay.
        var cache = new HeaderStringCache(slotCount: 4, seed: 1, policy: Enum.Parse<EvictionPolicy>(policyName));
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

    private static void RunTrace(string policyName, int slotCount, string trace, bool collide)
    {
        var cache = policyName == "Default"
            ? new HeaderStringCache(slotCount, seed: 1)
            : new HeaderStringCache(slotCount, seed: 1, policy: Enum.Parse<EvictionPolicy>(policyName));
        if (collide)
        {
            cache.HashOverride = static (bytes, seed) => (AsciiHash.TryHash(bytes, seed, out _), 0u);
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
