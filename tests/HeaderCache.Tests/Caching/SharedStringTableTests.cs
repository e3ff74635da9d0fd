using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

public class SharedStringTableTests
{
    private const int K = SharedAdmission.ConnectionsToAdmit;

    [Fact]
    public void A_value_offered_by_fewer_than_k_connections_any_number_of_times_is_never_served()
    {
        var table = new SharedStringTable(64, 256);
        byte[] bytes = TestBytes.Bytes("Mozilla/5.0 (X11; Linux x86_64; rv:147.0) Gecko/20100101 Firefox/147.0");
        long[] connections = Enumerable.Range(0, K - 1).Select(_ => SharedAdmission.NewConnectionId()).ToArray();
        for (int round = 0; round < 50; round++)
        {
            foreach (long connection in connections)
            {
                Assert.False(table.TryFind(bytes, out _, out uint fingerprint));
                Assert.False(table.Offer(fingerprint, TestBytes.Text(bytes), connection));
            }
        }

        Assert.Equal(0, table.Count);
        Assert.False(table.TryFind(bytes, out _, out _));
    }

    [Fact]
    public void A_value_offered_by_k_distinct_connections_is_served_as_the_kth_ones_string()
    {
        var table = new SharedStringTable(64, 256);
        byte[] bytes = TestBytes.Bytes("en-US,en;q=0.9");
        string? offered = null;
        for (int i = 0; i < K; i++)
        {
            Assert.False(table.TryFind(bytes, out _, out uint fingerprint));
            offered = TestBytes.Text(bytes);
            Assert.Equal(i == K - 1, table.Offer(fingerprint, offered, SharedAdmission.NewConnectionId()));
        }

        Assert.True(table.TryFind(bytes, out string? served, out _));
        Assert.Same(offered, served);
        Assert.Equal(1, table.Count);
    }

    [Fact]
    public void Connections_count_once_per_value_in_any_order()
    {
        var table = new SharedStringTable(64, 256);
        byte[] bytes = TestBytes.Bytes("?0");
        long a = SharedAdmission.NewConnectionId(), b = SharedAdmission.NewConnectionId(), c = SharedAdmission.NewConnectionId();
        foreach (long connection in new[] { a, b, a, c, b, c, a, a, b })
        {
            table.TryFind(bytes, out _, out uint fingerprint);
            Assert.False(table.Offer(fingerprint, TestBytes.Text(bytes), connection));
        }

        Assert.Equal(K, 4);
        table.TryFind(bytes, out _, out uint last);
        Assert.True(table.Offer(last, TestBytes.Text(bytes), SharedAdmission.NewConnectionId()));
        Assert.True(table.TryFind(bytes, out _, out _));
    }

    [Fact]
    public void With_every_fingerprint_equal_only_exactly_equal_bytes_get_a_string()
    {
        // Every value lands in the same set and the same candidate set: only the exact compare tells them apart.
        var table = new SharedStringTable(64, 256) { FingerprintOverride = (_, _) => 7 };
        var random = new Random(3);
        var admitted = new List<byte[]>();
        for (int v = 0; v < 40; v++)
        {
            // Same length and same first, middle and last bytes: the real fingerprint would collide too.
            byte[] bytes = TestBytes.Bytes("same-start-" + v.ToString("D4", System.Globalization.CultureInfo.InvariantCulture) + "-same-end");
            Admit(table, bytes);
            admitted.Add(bytes);
            foreach (byte[] probe in admitted)
            {
                if (table.TryFind(probe, out string? served, out _))
                {
                    Assert.Equal(TestBytes.Text(probe), served);
                }
            }

            byte[] other = TestBytes.Valid(random, bytes.Length);
            Assert.False(table.TryFind(other, out _, out _));
        }

        Assert.True(table.Count <= SharedStringTable.Ways);
        Assert.True(table.TryFind(admitted[^1], out _, out _));
    }

    [Fact]
    public void Bytes_equal_but_for_one_invalid_byte_are_not_served()
    {
        var table = new SharedStringTable(64, 256) { FingerprintOverride = (_, _) => 1 };
        byte[] bytes = TestBytes.Bytes("gzip, deflate, br, zstd");
        Admit(table, bytes);
        foreach (byte invalid in TestBytes.InvalidBytes)
        {
            byte[] probe = (byte[])bytes.Clone();
            probe[10] = invalid;
            Assert.False(table.TryFind(probe, out _, out _));
        }

        Assert.True(table.TryFind(bytes, out _, out _));
    }

    [Fact]
    public void The_table_holds_at_most_its_capacity_and_nothing_longer_than_its_limit()
    {
        var table = new SharedStringTable(16, 32);
        var random = new Random(5);
        for (int v = 0; v < 500; v++)
        {
            Admit(table, TestBytes.Valid(random, random.Next(1, 33)));
            Assert.True(table.Count <= table.Capacity);
        }

        Assert.Equal(table.Capacity, table.Count);
        byte[] tooLong = TestBytes.Valid(random, 33);
        for (int i = 0; i < K; i++)
        {
            table.TryFind(tooLong, out _, out uint fingerprint);
            Assert.False(table.Offer(fingerprint, TestBytes.Text(tooLong), SharedAdmission.NewConnectionId()));
        }

        Assert.False(table.TryFind(tooLong, out _, out _));
    }

    [Fact]
    public void The_worst_case_memory_of_the_shared_tier_is_stated()
    {
        // docs/security.md and SharedStrings state this number.
        Assert.Equal(1_165_248, new SharedStrings().MaxRetainedBytes);
    }

    [Fact]
    public void Readers_racing_writers_only_ever_get_strings_equal_to_their_bytes()
    {
        // A small table with forced collisions, so admissions replace entries while others read them.
        var table = new SharedStringTable(8, 64) { FingerprintOverride = (bytes, _) => (uint)(bytes.Length & 1) };
        byte[][] values = Enumerable.Range(0, 64).Select(i => TestBytes.Bytes("value-" + new string('x', i % 7) + i.ToString(System.Globalization.CultureInfo.InvariantCulture))).ToArray();
        long served = 0;
        int failures = 0;
        Parallel.For(0, 4, worker =>
        {
            var random = new Random(worker);
            for (int n = 0; n < 20_000; n++)
            {
                byte[] bytes = values[random.Next(values.Length)];
                if (table.TryFind(bytes, out string? found, out uint fingerprint))
                {
                    Interlocked.Increment(ref served);
                    if (found != TestBytes.Text(bytes))
                    {
                        Interlocked.Increment(ref failures);
                    }
                }
                else
                {
                    table.Offer(fingerprint, TestBytes.Text(bytes), SharedAdmission.NewConnectionId());
                }
            }
        });

        Assert.Equal(0, failures);
        Assert.True(served > 0);
    }

    [Fact]
    public void An_offer_while_another_connection_writes_is_dropped_without_waiting()
    {
        var table = new SharedStringTable(64, 256);
        byte[] bytes = TestBytes.Bytes("max-age=0");
        using var holding = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        var writer = new Thread(() => table.WhileWriting(() =>
        {
            holding.Set();
            release.Wait();
        }));
        writer.Start();
        holding.Wait();
        for (int i = 0; i < K; i++)
        {
            table.TryFind(bytes, out _, out uint fingerprint);
            Assert.False(table.Offer(fingerprint, TestBytes.Text(bytes), SharedAdmission.NewConnectionId()));
        }

        release.Set();
        writer.Join();
        Assert.False(table.TryFind(bytes, out _, out _));
    }

    [Fact]
    public void Behind_a_connections_cache_a_shared_hit_is_admitted_there_so_the_next_lookup_is_a_local_hit()
    {
        var table = new SharedStringTable(64, 256);
        byte[] bytes = TestBytes.Bytes("text/css,*/*;q=0.1");
        string? offered = null;
        for (int i = 0; i < K; i++)
        {
            var earlier = new HeaderStringCache();
            Assert.True(earlier.TryGetOrAdd(bytes, out offered, out _, table, SharedAdmission.NewConnectionId()));
            Assert.Equal((0, 1), (earlier.Counters.SharedHits, earlier.Counters.Misses));
        }

        var cache = new HeaderStringCache();
        long connection = SharedAdmission.NewConnectionId();
        Assert.True(cache.TryGetOrAdd(bytes, out string? first, out int slot, table, connection));
        Assert.Same(offered, first);
        Assert.Same(first, cache.StringAt(slot));
        Assert.Equal((1L, 0L, 0L), (cache.Counters.SharedHits, cache.Counters.Hits, cache.Counters.Misses));
        Assert.Equal(HeaderStringCache.StringSize(bytes.Length), cache.Counters.BytesSaved);

        Assert.True(cache.TryGetOrAdd(bytes, out string? second, out _, table, connection));
        Assert.Same(first, second);
        Assert.Equal((1L, 1L, 0L), (cache.Counters.SharedHits, cache.Counters.Hits, cache.Counters.Misses));
    }

    [Fact]
    public void Bytes_a_connections_cache_refuses_are_neither_served_nor_offered()
    {
        var table = new SharedStringTable(64, 256) { FingerprintOverride = (_, _) => 3 };
        foreach (byte invalid in TestBytes.InvalidBytes)
        {
            byte[] bytes = TestBytes.Bytes("en-US,en;q=0.9");
            bytes[5] = invalid;
            for (int i = 0; i < K + 1; i++)
            {
                Assert.False(new HeaderStringCache().TryGetOrAdd(bytes, out _, out _, table, SharedAdmission.NewConnectionId()));
            }
        }

        Assert.Equal(0, table.Count);
    }

    private static void Admit(SharedStringTable table, byte[] bytes)
    {
        for (int i = 0; i < K; i++)
        {
            table.TryFind(bytes, out _, out uint fingerprint);
            table.Offer(fingerprint, TestBytes.Text(bytes), SharedAdmission.NewConnectionId());
        }
    }
}
