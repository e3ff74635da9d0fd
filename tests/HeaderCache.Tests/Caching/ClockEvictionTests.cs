using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>
/// Hand-worked lookup traces of the engine's CLOCK eviction. A step is a key followed by <c>+</c> (expected hit) or
/// <c>-</c> (expected miss, which admits the key). The comments give the ring after the interesting steps, in slot
/// order; brackets mark the entry the hand rests on, <c>*</c> a visited entry.
/// </summary>
public class ClockEvictionTests
{
    public static TheoryData<int, string> Traces => new()
    {
        // One slot: the hand clears A*'s bit, comes round to A and evicts it.
        { 1, "A- A+ B- B+ A- A+ B-" },

        // C- clears A*, evicts B; C takes B's slot and the hand moves past it: [A] C. A+ B- clears A*, evicts C: [A] B.
        // C- evicts A (its visit was cleared): C [B], so A- evicts B: [C] A.
        { 2, "A- B- A+ C- A+ B- C- A-" },

        // D- clears A*, evicts B: A D [C]. E- evicts C: [A] D E. F- evicts A, whose visit D- cleared: F [D] E (SIEVE
        // keeps A here: its hand goes on from D to the newer entries). A- evicts D, not F, which the hand just passed:
        // F A [E]. E+ D- clears E*, evicts F: D [A] E. E+ F- evicts A: D F [E*]. A- clears E*, evicts D: A [F] E.
        { 3, "A- B- C- A+ D- E- F- A- E+ D- E+ F- A- E+" },

        // All visited: D- clears A*, B* and C* in a whole turn and evicts A, where it started: D [B] C. E- evicts B:
        // D E [C]. C+ A- clears C*, evicts D: A [E] C. C+ D- evicts E: A D [C*]. B- clears C*, evicts A: B [D] C.
        { 3, "A- B- C- A+ B+ C+ D- E- C+ A- C+ D- B- C+" },
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
        var model = new ClockModel(slotCount);
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

    [Fact]
    public void Colliding_bytes_share_one_fingerprint()
    {
        // Else the trace "when every fingerprint collides" would test nothing.
        uint first = HeaderStringCache.Fingerprint(TestBytes.Colliding("A"), 1);
        Assert.All(["B", "C", "D", "E", "F"], key => Assert.Equal(first, HeaderStringCache.Fingerprint(TestBytes.Colliding(key), 1)));
        var random = new Random(1);
        uint long64 = HeaderStringCache.Fingerprint(TestBytes.Colliding(random, 64), 1);
        Assert.Equal(long64, HeaderStringCache.Fingerprint(TestBytes.Colliding(random, 64), 1));
    }

    private static void RunTrace(int slotCount, string trace, bool collide)
    {
        var cache = new HeaderStringCache(slotCount, seed: 1);

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

            byte[] bytes = collide ? TestBytes.Colliding(key) : TestBytes.Bytes(key);
            Assert.True(cache.TryGetOrAdd(bytes, out string? value));

            bool hit = cache.Counters.Hits == hits + 1;
            Assert.True(hit == expectHit, $"step {i + 1} ({steps[i]}) was a {(hit ? "hit" : "miss")}");
            Assert.Equal(TestBytes.Text(bytes), value);
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
