using System.Runtime.CompilerServices;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Testing;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Http1;

/// <summary>The memo of lines only saves work: the caches, the counters and what Kestrel and the request get are
/// exactly what the long way gives.</summary>
public sealed class LineMemoTests
{
    [Theory]
    [InlineData("chrome", 0.95)]
    [InlineData("firefox", 0.75)]
    [InlineData("safari", 0.75)]
    [InlineData("proxy-pool", 0.40)]
    [InlineData("churn", 0.0)]
    public void Serves_lines_sent_again_and_changes_nothing_the_long_way_would_do(string profileName, double minRemembered)
    {
        TrafficProfile profile = TrafficProfile.Load(profileName);
        TrafficProfile.Connection connection = profile.Connect(seed: 7);
        using var withMemo = new ReaderDriver(new HeaderStringCache(seed: 1));
        using var without = new ReaderDriver(new HeaderStringCache(seed: 1), recallLines: false);
        byte[] request = [];
        for (int i = 0; i < 400; i++)
        {
            request = connection.Render(i);
            AssertSameAsLongWay(withMemo, without, request);
        }

        Assert.Equal(Summary(without), Summary(withMemo));

        // The memo was in use: the last head's lines (but the request line) are in it, as far as the profile repeats.
        string[] lines = Encoding.ASCII.GetString(request).Split("\r\n", StringSplitOptions.RemoveEmptyEntries)[1..];
        int found = lines.Count(line => withMemo.Memo!.Find(Encoding.ASCII.GetBytes(line)) >= 0);
        Assert.InRange(found, (int)(minRemembered * lines.Length), lines.Length);
    }

    [Fact]
    public void A_line_whose_value_was_evicted_since_is_found_and_its_value_looked_up_again()
    {
        using var driver = new ReaderDriver(new HeaderStringCache(slotCount: 1, seed: 1));
        string Head(string value) => $"GET / HTTP/1.1\r\nHost: h\r\nX-A: {value}\r\n\r\n";
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        string first = TakenValue(driver);
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        Assert.Same(first, TakenValue(driver));
        Assert.True(driver.Memo!.Find("X-A: one"u8) >= 0);
        long created = driver.Compactor.LinesCreated;

        // "two" takes the only slot.
        driver.Send(Encoding.ASCII.GetBytes(Head("two")));
        TakenValue(driver);

        // "one" is found, but its string is no longer in the cache: the value is looked up again and created.
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        string again = TakenValue(driver);
        Assert.NotSame(first, again);
        Assert.Equal(created + 2, driver.Compactor.LinesCreated);

        // Then the cache serves the new string, and the memo remembers it in place of the old one.
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        Assert.Same(again, TakenValue(driver));
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        Assert.Same(again, TakenValue(driver));
        Assert.Equal(created + 2, driver.Compactor.LinesCreated);
        int entry = driver.Memo.Find("X-A: one"u8);
        Assert.Same(again, driver.Memo[entry].Value);
    }

    [Fact]
    public void Only_the_plain_layout_is_remembered_and_a_line_that_differs_in_one_byte_is_not_served()
    {
        using var driver = new ReaderDriver();
        string[] sent = ["X-A:  a", "X-A: a ", "X-A:a", "x-a: a", "X-A: b", "X-A: a"];

        // Twice each: a line is remembered once its strings were served, not when they were just made.
        foreach (string line in sent.SelectMany(line => new[] { line, line }))
        {
            driver.Send(Encoding.ASCII.GetBytes($"GET / HTTP/1.1\r\n{line}\r\n\r\n"));
            Assert.True(driver.Queue.TryTake());
        }

        LineMemo memo = driver.Memo!;
        Assert.Equal(["x-a: a", "X-A: b", "X-A: a"], sent.Where(line => memo.Find(Encoding.ASCII.GetBytes(line)) >= 0));
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nX-A: a\r\n\r\n"));
        Assert.True(driver.Queue.TryTake());
        Assert.Equal(("X-A", "a"), (driver.Queue.Taken[0].Name, driver.Queue.Taken[0].Value));
    }

    [Fact]
    public void A_remembered_line_takes_32_bytes()
    {
        // Every active connection holds 64 entries: two to a cache line.
        Assert.Equal(32, Unsafe.SizeOf<LineMemo.Entry>());
    }

    [Fact]
    public void Lines_that_act_on_framing_are_never_served_from_the_memo()
    {
        using var driver = new ReaderDriver();
        for (int i = 0; i < 3; i++)
        {
            driver.Send(Encoding.ASCII.GetBytes("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx"));
        }

        LineMemo memo = driver.Memo!;
        Assert.True(memo.Find("Host: h"u8) >= 0);
        Assert.Equal(-1, memo.Find("Content-Length: 1"u8));
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
        Assert.Equal(PassThroughReason.Upgrade, driver.Reader.PassThroughReason);
    }

    [Fact]
    public void Values_that_take_turns_in_a_small_cache_change_nothing_the_long_way_would_do()
    {
        // A proxy's client addresses, more than the cache of values holds: most heads miss the value.
        using var withMemo = new ReaderDriver(new HeaderStringCache(slotCount: 2, seed: 1));
        using var without = new ReaderDriver(new HeaderStringCache(slotCount: 2, seed: 1), recallLines: false);
        var random = new Random(5);
        for (int i = 0; i < 200; i++)
        {
            string address = $"10.0.{random.Next(4)}.{random.Next(3)}";
            string head = $"GET / HTTP/1.1\r\nHost: h\r\nX-Real-IP: {address}\r\nX-Forwarded-For: {address}\r\nX-B: b\r\n\r\n";
            AssertSameAsLongWay(withMemo, without, Encoding.ASCII.GetBytes(head));
        }

        Assert.Equal(Summary(without), Summary(withMemo));
        Assert.True(withMemo.Compactor.LinesCreated > 100, Summary(withMemo));
        Assert.True(withMemo.Memo!.Find("X-B: b"u8) >= 0);
    }

    [Fact]
    public void Values_created_each_time_change_nothing_the_long_way_would_do()
    {
        using var withMemo = new ReaderDriver(new HeaderStringCache(seed: 1));
        using var without = new ReaderDriver(new HeaderStringCache(seed: 1), recallLines: false);
        var random = new Random(3);
        string Id() => Convert.ToHexString(BitConverter.GetBytes(random.NextInt64())).ToLowerInvariant();
        for (int i = 0; i < 120; i++)
        {
            // Some values are not in the plain layout, and one has a byte Kestrel rejects: the long way decides.
            string id = i % 29 == 5 ? Id() + " " : i % 29 == 11 ? "\t" + Id() : Id();
            string head = $"GET / HTTP/1.1\r\nHost: h\r\nX-Request-ID: {id}\r\ntraceparent: 00-{Id()}{Id()}-{Id()}-01\r\nX-B: b\r\n\r\n";
            AssertSameAsLongWay(withMemo, without, Encoding.ASCII.GetBytes(head));
        }

        Assert.Equal(Summary(without), Summary(withMemo));
        byte[] invalid = Encoding.Latin1.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nX-Request-ID: \u00ff\r\nX-B: b\r\n\r\n");
        AssertSameAsLongWay(withMemo, without, invalid);
        Assert.Equal(PassThroughReason.Malformed, withMemo.Reader.PassThroughReason);
        Assert.Equal(PassThroughReason.Malformed, without.Reader.PassThroughReason);
    }

    [Fact]
    public void Lines_keep_their_own_bytes_and_strings_through_a_long_run_of_replacements()
    {
        // 2,000 lines of up to 100 bytes, of which a memo's worth always fits: their bytes are moved together again and
        // again. Each line is found after every replacement, so the hand takes the oldest: the last lines are always there.
        var memo = new LineMemo();
        var random = new Random(7);
        var lines = new List<string>();
        for (int i = 0; i < 2000; i++)
        {
            string line = $"X-{random.Next(100)}: {new string((char)('a' + random.Next(26)), random.Next(1, 80))}{i}";
            byte[] bytes = Encoding.ASCII.GetBytes(line);
            Assert.Equal(-1, memo.Find(bytes));
            memo.Remember(Entry(line), bytes);
            lines.Add(line);
            foreach (string remembered in lines.TakeLast(LineMemo.Size))
            {
                AssertFoundAs(memo, remembered);
            }
        }
    }

    [Fact]
    public void A_line_longer_than_the_limit_is_not_remembered()
    {
        var memo = new LineMemo();
        string longest = "X-A: " + new string('v', LineMemo.MaxLineLength - 5);
        string tooLong = "X-B: " + new string('v', LineMemo.MaxLineLength - 4);
        foreach (string line in new[] { longest, tooLong })
        {
            byte[] bytes = Encoding.ASCII.GetBytes(line);
            Assert.Equal(-1, memo.Find(bytes));
            memo.Remember(Entry(line), bytes);
        }

        AssertFoundAs(memo, longest);
        Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(tooLong)));
    }

    private static void AssertFoundAs(LineMemo memo, string line)
    {
        int found = memo.Find(Encoding.ASCII.GetBytes(line));
        Assert.True(found >= 0, line);
        Assert.Equal(line, memo[found].Name + ": " + memo[found].Value);
        Assert.Equal(memo[found].Name.Length, memo[found].NameLength);
    }

    private static LineMemo.Entry Entry(string line)
    {
        string[] parts = line.Split(": ");
        return new LineMemo.Entry { Name = parts[0], Value = parts[1], Kind = FieldNames.Kept, ValueSlot = -1 };
    }

    private static string TakenValue(ReaderDriver driver)
    {
        Assert.True(driver.Queue.TryTake());
        return driver.Queue.Taken[0].Value!;
    }

    /// <summary>Sends one head to both readers: Kestrel sees the same bytes from each, and the request gets the same
    /// lines.</summary>
    internal static void AssertSameAsLongWay(ReaderDriver withMemo, ReaderDriver without, byte[] head)
    {
        withMemo.Clear();
        without.Clear();
        withMemo.Send(head);
        without.Send(head);
        Assert.Equal(Encoding.Latin1.GetString(without.Seen), Encoding.Latin1.GetString(withMemo.Seen));
        Assert.Equal(Taken(without), Taken(withMemo));
    }

    private static string[] Taken(ReaderDriver driver)
    {
        var headers = new HeaderDictionary();
        var taken = new List<string>();
        while (driver.Queue.TryApply(headers))
        {
            // Each value apart: joined with commas, two values would read as one value with a comma.
            taken.AddRange(headers.Select(h => $"{h.Key}={string.Join('|', h.Value.ToArray())}"));
            headers.Clear();
        }

        return [.. taken];
    }

    private static string Summary(ReaderDriver driver) =>
        $"values {driver.Cache.Counters.Hits}/{driver.Cache.Counters.Misses}/{driver.Cache.Counters.Evictions}, " +
        $"names {driver.Names.Counters.Hits}/{driver.Names.Counters.Misses}/{driver.Names.Counters.Evictions}, " +
        $"lines {driver.Compactor.LinesServed}/{driver.Compactor.LinesCreated}, avoided {driver.Compactor.AvoidedBytes} B, passes through: {driver.Reader.PassThroughReason}";
}
