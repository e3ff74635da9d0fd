using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

public class HeaderStringCacheTests
{
    [Fact]
    public void Defaults_match_the_design()
    {
        var cache = new HeaderStringCache();
        Assert.Equal(25, HeaderStringCache.DefaultSlotCount);
        Assert.Equal(256, HeaderStringCache.DefaultMaxLength);
        Assert.Equal(HeaderStringCache.DefaultSlotCount, cache.SlotCount);
        Assert.Equal(HeaderStringCache.DefaultMaxLength, cache.MaxLength);
        Assert.Equal(0, cache.Count);
        Assert.False(cache.IsAllocated);
        Assert.Equal(default, cache.Counters);
    }

    [Theory]
    [InlineData(0, 256)]
    [InlineData(-1, 256)]
    [InlineData(257, 256)]
    [InlineData(25, -1)]
    [InlineData(25, 8193)]
    public void Constructor_rejects_out_of_range_sizes(int slotCount, int maxLength)
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new HeaderStringCache(slotCount, maxLength));
    }

    [Theory]
    [InlineData(1, 0)]
    [InlineData(256, 8192)]
    public void Constructor_accepts_the_extreme_sizes(int slotCount, int maxLength)
    {
        var cache = new HeaderStringCache(slotCount, maxLength);
        Assert.Equal(slotCount, cache.SlotCount);
        Assert.Equal(maxLength, cache.MaxLength);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(15)]
    [InlineData(16)]
    [InlineData(31)]
    [InlineData(32)]
    [InlineData(33)]
    [InlineData(255)]
    [InlineData(256)]
    public void Lengths_up_to_MaxLength_are_cached(int length)
    {
        byte[] bytes = TestBytes.Valid(new Random(length), length);
        var cache = new HeaderStringCache(seed: 11);

        Assert.True(cache.TryGetOrAdd(bytes, out string? first));
        Assert.Equal(TestBytes.Text(bytes), first);
        Assert.True(cache.IsAllocated);
        Assert.Equal(1, cache.Count);
        Assert.Equal(1, cache.Counters.Misses);
        Assert.Equal(0, cache.Counters.Hits);

        Assert.True(cache.TryGetOrAdd(bytes.ToArray(), out string? second));
        Assert.Same(first, second);
        Assert.Equal(1, cache.Counters.Hits);
        Assert.Equal(1, cache.Counters.Misses);
    }

    [Fact]
    public void Longer_than_MaxLength_is_refused_and_allocates_nothing()
    {
        byte[] bytes = TestBytes.Valid(new Random(257), 257);
        var cache = new HeaderStringCache(seed: 11);

        Assert.False(cache.TryGetOrAdd(bytes, out string? value));
        Assert.Null(value);
        Assert.False(cache.IsAllocated);
        Assert.Equal(0, cache.Count);
        Assert.Equal(default, cache.Counters);

        // Also once the cache holds strings: its 256-byte prefix is cached, the 257 bytes are not.
        Assert.True(cache.TryGetOrAdd(bytes.AsSpan(0, 256), out string? prefix));
        Assert.False(cache.TryGetOrAdd(bytes, out value));
        Assert.Null(value);
        Assert.Equal(1, cache.Count);
        Assert.Equal(1, cache.Counters.Misses);
        Assert.Equal(0, cache.Counters.Hits);
        Assert.True(cache.TryGetOrAdd(bytes.AsSpan(0, 256), out string? again));
        Assert.Same(prefix, again);
    }

    [Theory]
    [InlineData(0, 0, true)]
    [InlineData(0, 1, false)]
    [InlineData(10, 10, true)]
    [InlineData(10, 11, false)]
    [InlineData(8192, 8192, true)]
    [InlineData(8192, 8193, false)]
    public void MaxLength_is_configurable(int maxLength, int length, bool cached)
    {
        byte[] bytes = TestBytes.Valid(new Random(length), length);
        var cache = new HeaderStringCache(maxLength: maxLength, seed: 5);

        Assert.Equal(cached, cache.TryGetOrAdd(bytes, out string? value));
        Assert.Equal(cached, cache.IsAllocated);
        Assert.Equal(cached ? TestBytes.Text(bytes) : null, value);
        Assert.Equal(cached ? 1 : 0, cache.Counters.Misses);
    }

    [Fact]
    public void Every_refused_byte_is_refused_at_any_position_without_allocating()
    {
        var random = new Random(3);
        var cache = new HeaderStringCache(seed: 3);
        var failures = new List<string>();
        foreach (int length in new[] { 1, 2, 31, 32, 33, 64, 200, 256 })
        {
            byte[] bytes = TestBytes.Valid(random, length);
            foreach (int position in new[] { 0, length / 2, length - 1 })
            {
                byte original = bytes[position];
                foreach (byte invalid in TestBytes.InvalidBytes)
                {
                    bytes[position] = invalid;
                    if (cache.TryGetOrAdd(bytes, out string? value) || value is not null)
                    {
                        failures.Add($"byte 0x{invalid:X2} at {position} of {length}");
                    }
                }

                bytes[position] = original;
            }
        }

        Assert.Empty(failures);
        Assert.False(cache.IsAllocated);
        Assert.Equal(default, cache.Counters);
        Assert.Equal(160, TestBytes.InvalidBytes.Length);
    }

    [Fact]
    public void A_refused_byte_never_matches_a_cached_string()
    {
        var cache = new HeaderStringCache(seed: 3);
        Assert.True(cache.TryGetOrAdd("abc"u8, out string? abc));

        Assert.False(cache.TryGetOrAdd([(byte)'a', (byte)'b', 0xC3], out _));
        Assert.False(cache.TryGetOrAdd([(byte)'a', (byte)'b', (byte)('c' | 0x80)], out _));
        Assert.False(cache.TryGetOrAdd([(byte)'a', (byte)'b', (byte)('c' - 0x60)], out _)); // 0x03
        Assert.False(cache.TryGetOrAdd([(byte)'a', (byte)'b', 0x7F], out _));
        Assert.Equal(1, cache.Counters.Misses);
        Assert.Equal(0, cache.Counters.Hits);

        Assert.True(cache.TryGetOrAdd("abc"u8, out string? again));
        Assert.Same(abc, again);
    }

    [Fact]
    public void HTAB_SP_and_every_visible_character_are_cached()
    {
        byte[] all = [0x09, .. Enumerable.Range(0x20, 0x5F).Select(b => (byte)b)];
        var cache = new HeaderStringCache(seed: 4);

        Assert.True(cache.TryGetOrAdd(all, out string? value));
        Assert.Equal("\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~", value);
        Assert.True(cache.TryGetOrAdd(all, out string? again));
        Assert.Same(value, again);
    }

    [Fact]
    public void Storage_is_allocated_on_the_first_insert_only()
    {
        var cache = new HeaderStringCache(seed: 9);
        Assert.False(cache.IsAllocated);

        Assert.False(cache.TryGetOrAdd([0x00], out _));
        Assert.False(cache.TryGetOrAdd([(byte)'a', 0x80], out _));
        Assert.False(cache.TryGetOrAdd(new byte[257], out _));
        Assert.False(cache.IsAllocated);
        Assert.Equal(0, cache.Count);
        Assert.Equal(default, cache.Counters);

        Assert.True(cache.TryGetOrAdd("gzip"u8, out _));
        Assert.True(cache.IsAllocated);
        Assert.Equal(1, cache.Count);
    }

    [Fact]
    public void Refused_lookups_and_hits_allocate_nothing_and_a_miss_allocates_only_its_string()
    {
        var cache = new HeaderStringCache(slotCount: 4, seed: 10);
        byte[] cached = TestBytes.Bytes("application/json");
        byte[] fresh = TestBytes.Bytes("text/plain; charset=utf-8");
        byte[] invalid = TestBytes.Bytes("caf\u00e9");
        byte[] tooLong = TestBytes.Valid(new Random(1), 300);

        // Warm up every path so that nothing but the lookups is measured.
        Assert.True(cache.TryGetOrAdd(cached, out _));
        Assert.True(cache.TryGetOrAdd(cached, out _));
        Assert.True(cache.TryGetOrAdd("warm-up"u8, out _));
        Assert.False(cache.TryGetOrAdd(invalid, out _));
        Assert.False(cache.TryGetOrAdd(tooLong, out _));

        long start = GC.GetAllocatedBytesForCurrentThread();
        bool hit = cache.TryGetOrAdd(cached, out _);
        bool refusedInvalid = !cache.TryGetOrAdd(invalid, out _);
        bool refusedLong = !cache.TryGetOrAdd(tooLong, out _);
        long afterHitAndRefusals = GC.GetAllocatedBytesForCurrentThread();
        bool miss = cache.TryGetOrAdd(fresh, out string? created);
        long afterMiss = GC.GetAllocatedBytesForCurrentThread();

        Assert.True(hit && refusedInvalid && refusedLong && miss);
        Assert.Equal(0, afterHitAndRefusals - start);
        Assert.Equal(HeaderStringCache.StringSize(fresh.Length), afterMiss - afterHitAndRefusals);
        Assert.Equal("text/plain; charset=utf-8", created);
    }

    [Theory]
    [InlineData(25)]
    [InlineData(7)]
    [InlineData(256)]
    public void RetainedBytes_after_the_first_insert_is_the_slot_arrays_and_the_string_and_a_later_cache_reuses_the_arrays(int slotCount)
    {
        // Slot arrays come from the shared pool: the first cache of this size on the thread may have to make them.
        var first = new HeaderStringCache(slotCount, seed: 3);
        Assert.Equal(0, first.RetainedBytes);
        long start = GC.GetAllocatedBytesForCurrentThread();
        Assert.True(first.TryGetOrAdd("text/html; charset=utf-8"u8, out _));
        long allocated = GC.GetAllocatedBytesForCurrentThread() - start;
        Assert.InRange(allocated, HeaderStringCache.StringSize(24), first.RetainedBytes);
        Assert.Equal(first.RetainedBytes - HeaderStringCache.StringSize(24), HeaderStringCache.MaxRetainedBytes(Math.Min(slotCount, HeaderStringCache.InitialSlots), 0));

        // A connection that ends gives them back, emptied; the next cache's first insert makes only its string.
        first.Release();
        var second = new HeaderStringCache(slotCount, seed: 3);
        start = GC.GetAllocatedBytesForCurrentThread();
        Assert.True(second.TryGetOrAdd("text/html; charset=utf-8"u8, out string? value));
        Assert.Equal(HeaderStringCache.StringSize(24), GC.GetAllocatedBytesForCurrentThread() - start);
        Assert.Equal(1, second.Count);
        Assert.Equal("text/html; charset=utf-8", value);
    }

    [Theory]
    [InlineData(25)]
    [InlineData(32)]
    [InlineData(256)]
    public void Storage_grows_from_the_pools_smallest_arrays_as_strings_fill_it_and_keeps_every_string_in_its_slot(int slotCount)
    {
        var cache = new HeaderStringCache(slotCount, seed: 12);
        var strings = new List<string>();
        for (int i = 0; i < slotCount; i++)
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes($"value-{i}"), out string? value, out int slot));
            Assert.Equal(i, slot);
            strings.Add(value);

            // Arrays as long as the shared pool makes them for the slots in use, at least its smallest, at most the slot count's.
            int inUse = Math.Max(HeaderStringCache.InitialSlots, (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)(i + 1)));
            Assert.Equal(HeaderStringCache.MaxRetainedBytes(Math.Min(inUse, slotCount), 0) + strings.Sum(x => (long)HeaderStringCache.StringSize(x.Length)), cache.RetainedBytes);
        }

        for (int i = 0; i < slotCount; i++)
        {
            Assert.Same(strings[i], cache.StringAt(i));
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes($"value-{i}"), out string? again, out int slot));
            Assert.Same(strings[i], again);
            Assert.Equal(i, slot);
        }

        Assert.Equal(slotCount, cache.Counters.Hits);
        Assert.Equal(slotCount, cache.Counters.Misses);
        Assert.Equal(0, cache.Counters.Evictions);

        // Full: the next new value evicts by CLOCK, as a cache whose storage was whole from the start would.
        Assert.True(cache.TryGetOrAdd("one more"u8, out _, out int evicted));
        Assert.Equal(0, evicted);
        Assert.Equal(1, cache.Counters.Evictions);
    }

    [Theory]
    [InlineData(25, 256)]
    [InlineData(4, 8192)]
    public void Churn_never_takes_RetainedBytes_past_its_bound_and_max_length_values_reach_it(int slotCount, int maxLength)
    {
        var cache = new HeaderStringCache(slotCount, maxLength, seed: 5);
        var random = new Random(slotCount + maxLength);
        long bound = HeaderStringCache.MaxRetainedBytes(slotCount, maxLength);
        for (int i = 0; i < 2000; i++)
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Valid(random, random.Next(maxLength + 1)), out _));
            Assert.InRange(cache.RetainedBytes, 1, bound);
        }

        // The bound is reached, not just respected: a cache full of values of the maximum length.
        var full = new HeaderStringCache(slotCount, maxLength, seed: 6);
        for (int i = 0; i < slotCount; i++)
        {
            Assert.True(full.TryGetOrAdd(TestBytes.Valid(random, maxLength), out _));
        }

        Assert.Equal(bound, full.RetainedBytes);
        if (slotCount == HeaderStringCache.DefaultSlotCount && maxLength == HeaderStringCache.DefaultMaxLength)
        {
            Assert.Equal(13_888, bound); // the figure docs/hardening.md states
        }
    }

    [Fact]
    public void A_refused_first_lookup_allocates_nothing()
    {
        byte[] invalid = [(byte)'x', 0x0A];
        Assert.False(new HeaderStringCache(seed: 1).TryGetOrAdd(invalid, out _)); // warm-up

        var cache = new HeaderStringCache(seed: 1);
        long start = GC.GetAllocatedBytesForCurrentThread();
        bool refused = !cache.TryGetOrAdd(invalid, out _);
        long allocated = GC.GetAllocatedBytesForCurrentThread() - start;

        Assert.True(refused);
        Assert.Equal(0, allocated);
        Assert.False(cache.IsAllocated);
    }

    [Fact]
    public void Forced_collisions_never_return_a_string_for_other_bytes()
    {
        var cache = new HeaderStringCache(slotCount: 4, seed: 7);
        string[] keys = ["abc", "abd", "abc ", "ab", "", "bbc", "ABC"];
        string[] inputs = [.. keys.Select(key => TestBytes.Text(TestBytes.Colliding(key)))];
        var first = new Dictionary<string, string>(StringComparer.Ordinal);

        foreach (string input in inputs.Take(4))
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes(input), out string? value));
            Assert.Equal(input, value);
            first[input] = value;
        }

        Assert.Equal(4, cache.Counters.Misses);
        Assert.Equal(0, cache.Counters.Hits);

        // Every slot now has the same fingerprint: each of the four is found by its bytes, not by its fingerprint.
        foreach (string input in inputs.Take(4))
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes(input), out string? value));
            Assert.Same(first[input], value);
        }

        Assert.Equal(4, cache.Counters.Hits);

        // Colliding bytes that are not cached are misses that create their own string.
        foreach (string input in inputs.Skip(4))
        {
            long misses = cache.Counters.Misses;
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes(input), out string? value));
            Assert.Equal(input, value);
            Assert.Equal(misses + 1, cache.Counters.Misses);
        }

        Assert.Equal(4, cache.Count);
        Assert.Equal(3, cache.Counters.Evictions);
    }

    [Fact]
    public void Same_length_collisions_compare_every_byte()
    {
        // Strings of one length that differ in a single byte, all with the same fingerprint.
        var cache = new HeaderStringCache(slotCount: 64, seed: 8);
        var random = new Random(8);
        byte[] template = TestBytes.Colliding(random, 100);

        // The bytes the fingerprint does not read: 8 to 45 and 54 to 91 of 100.
        int[] positions = [.. Enumerable.Range(8, 38).Concat(Enumerable.Range(54, 38)).Where(position => position % 3 == 0)];
        Assert.Equal(
            HeaderStringCache.Fingerprint(template, 8),
            HeaderStringCache.Fingerprint([.. template[..positions[^1]], (byte)(template[positions[^1]] ^ 1), .. template[(positions[^1] + 1)..]], 8));
        var created = new Dictionary<string, string>(StringComparer.Ordinal);
        for (int round = 0; round < 2; round++)
        {
            foreach (int position in positions)
            {
                byte[] variant = (byte[])template.Clone();
                variant[position] = variant[position] == (byte)'~' ? (byte)'!' : (byte)'~';
                string expected = TestBytes.Text(variant);
                Assert.True(cache.TryGetOrAdd(variant, out string? value));
                Assert.Equal(expected, value);
                if (round == 1)
                {
                    Assert.Same(created[expected], value);
                }

                created[expected] = value;
            }
        }

        Assert.Equal(positions.Length, cache.Counters.Misses);
        Assert.Equal(positions.Length, cache.Counters.Hits);
    }

    [Fact]
    public void Caches_with_other_seeds_are_independent()
    {
        var a = new HeaderStringCache(seed: 1);
        var b = new HeaderStringCache(seed: 2);
        byte[] bytes = TestBytes.Bytes("text/html,application/xhtml+xml");

        Assert.True(a.TryGetOrAdd(bytes, out string? fromA));
        Assert.False(b.IsAllocated);

        Assert.True(b.TryGetOrAdd(bytes, out string? fromB));
        Assert.Equal(fromA, fromB);
        Assert.NotSame(fromA, fromB);
        Assert.Equal(1, b.Counters.Misses);
        Assert.Equal(0, b.Counters.Hits);

        Assert.True(a.TryGetOrAdd(bytes, out string? againA));
        Assert.True(b.TryGetOrAdd(bytes, out string? againB));
        Assert.Same(fromA, againA);
        Assert.Same(fromB, againB);
        Assert.Equal(1, a.Counters.Hits);
        Assert.Equal(1, a.Counters.Misses);
        Assert.Equal(1, b.Counters.Hits);
        Assert.Equal(1, b.Counters.Misses);
    }

    [Fact]
    public void Values_that_differ_only_in_bytes_the_fingerprint_does_not_read_are_told_apart()
    {
        // A 40-byte value: the fingerprint reads bytes 0-7, 16-23 and 32-39, so these request ids, which differ only
        // in bytes 8-15, really collide (no override), as ids of one format from a proxy would.
        var cache = new HeaderStringCache(seed: 9);
        string[] ids = Enumerable.Range(0, 10).Select(i => $"req-0000{i:D4}abcd-000000000000000000-tail").ToArray();
        Assert.All(ids, id => Assert.Equal(40, id.Length));
        uint first = HeaderStringCache.Fingerprint(TestBytes.Bytes(ids[0]), 9);
        Assert.All(ids, id => Assert.Equal(first, HeaderStringCache.Fingerprint(TestBytes.Bytes(id), 9)));

        var created = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (string id in ids)
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes(id), out string? value));
            Assert.Equal(id, value);
            created[id] = value;
        }

        Assert.Equal(ids.Length, cache.Counters.Misses);
        foreach (string id in ids.Reverse())
        {
            Assert.True(cache.TryGetOrAdd(TestBytes.Bytes(id), out string? value));
            Assert.Same(created[id], value);
        }

        Assert.Equal(ids.Length, cache.Counters.Hits);
    }

    [Fact]
    public void Bytes_that_differ_from_a_cached_value_only_by_an_invalid_byte_are_refused_not_served()
    {
        // Same length and same fingerprint (the changed byte is one the fingerprint does not read): only the compare,
        // which also validates, tells them apart.
        var cache = new HeaderStringCache(seed: 10);
        byte[] valid = TestBytes.Bytes("text/html,application/xhtml+xml,application/xml");
        Assert.True(cache.TryGetOrAdd(valid, out _));
        foreach (byte invalid in new byte[] { 0x00, 0x0A, 0x0D, 0x7F, 0x80, 0xE9, 0xFF })
        {
            byte[] variant = (byte[])valid.Clone();
            variant[12] = invalid;
            Assert.Equal(HeaderStringCache.Fingerprint(valid, 10), HeaderStringCache.Fingerprint(variant, 10));
            Assert.False(cache.TryGetOrAdd(variant, out string? value));
            Assert.Null(value);
        }

        Assert.Equal(1, cache.Counters.Misses);
        Assert.Equal(0, cache.Counters.Hits);
        Assert.Equal(1, cache.Count);
    }

    [Fact]
    public void Caches_with_the_same_seed_share_nothing_either()
    {
        var a = new HeaderStringCache(seed: 1);
        var b = new HeaderStringCache(seed: 1);
        Assert.True(a.TryGetOrAdd("keep-alive"u8, out string? fromA));
        Assert.True(b.TryGetOrAdd("keep-alive"u8, out string? fromB));
        Assert.NotSame(fromA, fromB);
        Assert.Equal(0, b.Counters.Hits);
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(5)]
    [InlineData(7)]
    [InlineData(8)]
    [InlineData(16)]
    [InlineData(33)]
    [InlineData(100)]
    [InlineData(256)]
    [InlineData(8192)]
    public void StringSize_is_what_creating_a_string_allocates(int length)
    {
        _ = new string('a', length); // warm-up
        long start = GC.GetAllocatedBytesForCurrentThread();
        string created = new('a', length);
        long allocated = GC.GetAllocatedBytesForCurrentThread() - start;

        Assert.Equal(length, created.Length);
        Assert.Equal(allocated, HeaderStringCache.StringSize(length));
    }

    [Fact]
    public void StringSize_of_the_empty_string_is_zero_because_it_is_never_allocated()
    {
        var cache = new HeaderStringCache(seed: 1);
        Assert.True(cache.TryGetOrAdd("x"u8, out _)); // allocate the slots first
        Assert.True(cache.TryGetOrAdd([], out string? warmUp));

        var other = new HeaderStringCache(seed: 1);
        Assert.True(other.TryGetOrAdd("x"u8, out _));
        long start = GC.GetAllocatedBytesForCurrentThread();
        bool created = other.TryGetOrAdd([], out string? empty);
        long allocated = GC.GetAllocatedBytesForCurrentThread() - start;

        Assert.True(created);
        Assert.Same(string.Empty, warmUp);
        Assert.Same(string.Empty, empty);
        Assert.Equal(0, allocated);
        Assert.Equal(0, HeaderStringCache.StringSize(0));
    }
}
