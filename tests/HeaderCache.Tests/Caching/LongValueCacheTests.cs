using System.Reflection;
using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>The cache of long values: the exact string or none, at most its slots, never more characters than its budget,
/// and a value sent on every request kept while others come and go.</summary>
public class LongValueCacheTests
{
    [Fact]
    public void A_value_sent_again_is_the_same_string_and_other_bytes_never_get_it()
    {
        var cache = new LongValueCache(LongValueCache.DefaultBudget, seed: 7);
        byte[] token = Bytes('t', 1024);
        byte[] other = [.. token];
        other[512] = (byte)'A';
        bool created = false;

        string first = cache.GetOrAdd(token, out bool firstHit, ref created)!;
        created = false;
        string again = cache.GetOrAdd(token, out bool hit, ref created)!;
        string different = cache.GetOrAdd(other, out bool otherHit, ref created)!;

        Assert.False(firstHit);
        Assert.True(hit);
        Assert.Same(first, again);
        Assert.False(otherHit);
        Assert.Equal(Encoding.ASCII.GetString(other), different);
        Assert.Equal((1, 2, 0L), (cache.Counters.Hits, cache.Counters.Misses, cache.Counters.Evictions));
    }

    [Fact]
    public void Bytes_longer_than_the_budget_or_not_field_content_get_no_string()
    {
        var cache = new LongValueCache(1000);
        bool created = false;
        byte[] invalid = Bytes('v', 600);
        invalid[300] = 0x80;

        Assert.Null(cache.GetOrAdd(Bytes('v', 1001), out _, ref created));
        Assert.Null(cache.GetOrAdd(invalid, out _, ref created));
        Assert.False(created);
        Assert.Null(new LongValueCache(0).GetOrAdd(Bytes('v', 1), out _, ref created));
    }

    [Fact]
    public void The_strings_held_stay_within_the_budget_and_the_slots_and_a_value_visited_every_time_stays()
    {
        const int budget = 4000;
        var cache = new LongValueCache(budget, seed: 3);
        byte[] token = Bytes('t', 1200);
        var random = new Random(5);
        string? tokenString = null;
        for (int i = 0; i < 500; i++)
        {
            bool created = false;
            string value = cache.GetOrAdd(token, out _, ref created)!;
            Assert.True(i == 0 || !created, $"the token was let go of at request {i}");
            tokenString ??= value;
            Assert.Same(tokenString, value);

            // A new cookie of 300 to 2000 bytes on every request.
            byte[] cookie = Bytes((char)('a' + random.Next(20)), random.Next(300, 2001));
            cookie[^1] = (byte)('0' + (i % 10));
            cookie[^2] = (byte)('0' + (i / 10 % 10));
            Assert.NotNull(cache.GetOrAdd(cookie, out _, ref created));

            string[] held = Held(cache);
            Assert.InRange(held.Length, 1, LongValueCache.SlotCount);
            Assert.InRange(held.Sum(s => s.Length), 1, budget);
        }

        Assert.True(cache.Counters.Evictions > 0);
    }

    [Fact]
    public void Release_lets_go_of_the_strings_and_keeps_the_counters()
    {
        var cache = new LongValueCache(LongValueCache.DefaultBudget);
        bool created = false;
        string first = cache.GetOrAdd(Bytes('r', 2000), out _, ref created)!;

        cache.Release();
        string after = cache.GetOrAdd(Bytes('r', 2000), out bool hit, ref created)!;

        Assert.False(hit);
        Assert.NotSame(first, after);
        Assert.Equal(2, cache.Counters.Misses);
    }

    // The strings the cache holds now, read without a lookup (which would admit).
    private static string[] Held(LongValueCache cache) =>
        [.. ((string?[])typeof(LongValueCache).GetField("_strings", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(cache)!)
            .Take(LongValueCache.SlotCount).OfType<string>()];

    private static byte[] Bytes(char c, int length)
    {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = (byte)(c + (i % 7));
        }

        return bytes;
    }
}
