using System.Runtime.CompilerServices;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Compaction;
using HeaderCache.Testing;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Compaction;

/// <summary>The memo of lines only saves work: the caches, the counters and what Kestrel and the request get are
/// exactly what the long way gives.</summary>
public sealed class LineMemoTests
{
    [Theory]
    [InlineData("chrome", 0.99)]
    [InlineData("firefox", 0.75)]
    [InlineData("safari", 0.75)]
    [InlineData("proxy-pool", 0.30)]
    [InlineData("plaintext", 0.90)]
    [InlineData("churn", 0.0)]
    public void Serves_lines_sent_again_and_changes_nothing_the_long_way_would_do(string profileName, double minRecalled)
    {
        TrafficProfile profile = TrafficProfile.Load(profileName);
        TrafficProfile.Connection connection = profile.Connect(seed: 7);
        using var withMemo = new ReaderDriver(new HeaderStringCache(seed: 1));
        using var without = new ReaderDriver(new HeaderStringCache(seed: 1));
        without.Compactor.RecallsLines = false;

        long lines = 0;
        for (int i = 0; i < 400; i++)
        {
            byte[] request = connection.Render(i);
            if (withMemo.Reader.PassThroughReason == PassThroughReason.None)
            {
                // Plaintext's heads have nothing to take from the second on: after 16 of them the connection is
                // Kestrel's, and its lines are not looked at.
                lines += request.Count(b => b == (byte)'\n') - 2;
            }

            AssertSameAsLongWay(withMemo, without, request);
        }

        Assert.Equal(Summary(without), Summary(withMemo));
        Assert.Equal(0, without.Compactor.LinesRecalled);
        Assert.InRange(withMemo.Compactor.LinesRecalled, (long)(minRecalled * lines), lines);
    }

    [Fact]
    public void A_name_whose_values_are_created_each_time_is_found_by_name_and_changes_nothing_the_long_way_would_do()
    {
        using var withMemo = new ReaderDriver(new HeaderStringCache(seed: 1));
        using var without = new ReaderDriver(new HeaderStringCache(seed: 1));
        without.Compactor.RecallsLines = false;
        var random = new Random(3);
        string Id() => Convert.ToHexString(BitConverter.GetBytes(random.NextInt64())).ToLowerInvariant();

        // Every 16th head a probe looks the values up again, and some values are not in the plain layout: those go
        // the long way, and the lines after them are still found in order.
        long recalledBefore = 0;
        for (int i = 0; i < 120; i++)
        {
            string id = i % 29 == 5 || i == 110 ? Id() + " " : i % 29 == 11 ? "\t" + Id() : Id();
            string head = $"GET / HTTP/1.1\r\nHost: h\r\nX-Request-ID: {id}\r\ntraceparent: 00-{Id()}{Id()}-{Id()}-01\r\nX-B: b\r\n\r\n";
            if (i == 100)
            {
                recalledBefore = withMemo.Compactor.LinesRecalled;
            }

            AssertSameAsLongWay(withMemo, without, Encoding.ASCII.GetBytes(head));
        }

        // From the 17th miss of a name on, all four lines of a head are found, but for a value not in the plain layout.
        Assert.Equal(Summary(without), Summary(withMemo));
        Assert.Equal((20 * 4) - 1, withMemo.Compactor.LinesRecalled - recalledBefore);

        // A byte Kestrel rejects in a value found by its name: the long way says so, as without the memo.
        byte[] bad = Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nX-Request-ID: a\u0001b\r\nX-B: b\r\n\r\n");
        withMemo.Clear();
        without.Clear();
        withMemo.Send(bad);
        without.Send(bad);
        Assert.Equal(PassThroughReason.Malformed, withMemo.Reader.PassThroughReason);
        Assert.Equal(PassThroughReason.Malformed, without.Reader.PassThroughReason);
        Assert.Equal(Encoding.Latin1.GetString(without.Seen), Encoding.Latin1.GetString(withMemo.Seen));
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
        long recalled = driver.Compactor.LinesRecalled;
        long created = driver.Compactor.LinesCreated;

        // "two" takes the only slot (its line is found by the name of the line expected there).
        driver.Send(Encoding.ASCII.GetBytes(Head("two")));
        TakenValue(driver);
        Assert.Equal(recalled + 2, driver.Compactor.LinesRecalled);   // Host; X-A by its name

        // "one" is found, but its string is no longer in the cache: the value is looked up again and created.
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        string again = TakenValue(driver);
        Assert.NotSame(first, again);
        Assert.Equal(recalled + 4, driver.Compactor.LinesRecalled);
        Assert.Equal(created + 2, driver.Compactor.LinesCreated);

        // Then the cache serves the new string, and the memo remembers it in place of the old one.
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        Assert.Same(again, TakenValue(driver));
        driver.Send(Encoding.ASCII.GetBytes(Head("one")));
        Assert.Same(again, TakenValue(driver));
        Assert.Equal(recalled + 8, driver.Compactor.LinesRecalled);
        Assert.Equal(created + 2, driver.Compactor.LinesCreated);
    }

    [Fact]
    public void Only_the_plain_layout_is_remembered_and_a_line_that_differs_in_one_byte_is_not_served()
    {
        using var driver = new ReaderDriver();
        foreach (string line in new[] { "X-A:  a", "X-A: a ", "X-A:a", "x-a: a", "X-A: b", "X-A: a" })
        {
            driver.Send(Encoding.ASCII.GetBytes($"GET / HTTP/1.1\r\n{line}\r\n\r\n"));
            Assert.True(driver.Queue.TryTake());
        }

        // Only the last line repeats a plain line ("X-A: a" was never sent before in that layout).
        Assert.Equal(0, driver.Compactor.LinesRecalled);
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nX-A: a\r\n\r\n"));
        Assert.True(driver.Queue.TryTake());
        Assert.Equal(1, driver.Compactor.LinesRecalled);
        Assert.Equal(("X-A", "a"), (driver.Queue.Taken[0].Name, driver.Queue.Taken[0].Value));
    }

    [Fact]
    public void A_remembered_line_takes_32_bytes()
    {
        // Every active connection holds 32 or 64 entries: at 40 bytes they held 256 or 512 bytes more. (The array's
        // elements start 16 bytes into the object, so entries are not aligned to cache lines either way.)
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

        // Host is served from the second head on; Content-Length never is.
        Assert.Equal(2, driver.Compactor.LinesRecalled);
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
        Assert.Equal(3, driver.Compactor.LinesRecalled);
        Assert.Equal(PassThroughReason.Upgrade, driver.Reader.PassThroughReason);
    }

    [Fact]
    public void Lines_sent_in_the_order_of_the_last_head_are_found_where_they_end_without_a_search()
    {
        var memo = new LineMemo();
        string[] lines = ["Host: h", "X-A: 1", "X-B: two"];
        foreach (string line in lines)
        {
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(line)));
            memo.Remember(Entry(line), Encoding.ASCII.GetBytes(line));
        }

        memo.Begin();
        byte[] head = Encoding.ASCII.GetBytes("Host: h\r\nX-A: 1\r\nX-B: two\r\n\r\n");
        int at = 0;
        foreach (string line in lines)
        {
            Assert.Equal(line.Length, memo.FindNext(head.AsSpan(at)));
            Assert.Equal(line, memo[memo.Found].Name + ": " + memo[memo.Found].Value);
            at += line.Length + 2;
        }

        // Bytes that only start like the expected line, or a line not followed by CRLF yet, are left to the search.
        memo.Begin();
        Assert.Equal(-1, memo.FindNext(Encoding.ASCII.GetBytes("Host: hh\r\n")));
        Assert.Equal(-1, memo.FindNext(Encoding.ASCII.GetBytes("Host: h\r")));
        Assert.Equal(-1, memo.FindNext(Encoding.ASCII.GetBytes("X-A: 1\r\n")));

        // Found by the search in another order, the lines are expected in that order next time.
        memo.Begin();
        Assert.NotEqual(-1, memo.Find(Encoding.ASCII.GetBytes("X-B: two")));
        Assert.NotEqual(-1, memo.Find(Encoding.ASCII.GetBytes("Host: h")));
        memo.Begin();
        Assert.Equal(8, memo.FindNext(Encoding.ASCII.GetBytes("X-B: two\r\nHost: h\r\n")));
        Assert.Equal(7, memo.FindNext(Encoding.ASCII.GetBytes("Host: h\r\n")));
    }

    [Fact]
    public void A_line_that_differs_from_the_one_expected_in_any_one_byte_is_not_found_at_any_length()
    {
        // The memo compares 16 bytes at a time and the last 16 overlapping: every length up to a few loads, every byte.
        for (int length = 6; length <= 70; length++)
        {
            string line = "X-L: " + new string('v', length - 5);
            var memo = new LineMemo();
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(line)));
            memo.Remember(Entry(line), Encoding.ASCII.GetBytes(line));
            byte[] sent = Encoding.ASCII.GetBytes(line + "\r\n");
            for (int changed = 0; changed < length; changed++)
            {
                sent[changed] ^= 0x01;
                memo.Begin();
                Assert.Equal(-1, memo.FindNext(sent));
                sent[changed] ^= 0x01;
            }

            memo.Begin();
            Assert.Equal(length, memo.FindNext(sent));
        }
    }

    [Fact]
    public void A_line_followed_by_one_of_four_lines_in_turn_finds_each_where_it_ends()
    {
        // A browser's Accept after the same line changes with the kind of resource: page, script, image, style sheet.
        var memo = new LineMemo();
        Assert.Equal(-1, memo.Find("Host: h"u8));
        memo.Remember(Entry("Host: h"), "Host: h"u8);
        foreach (string accept in new[] { "Accept: a", "Accept: bb", "Accept: ccc", "Accept: dddd", "Accept: eeeee" })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
            Assert.Equal(-1, memo.FindNext(Encoding.ASCII.GetBytes(accept + "\r\n")));
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(accept)));
            memo.Remember(Entry(accept), Encoding.ASCII.GetBytes(accept));
        }

        // The last four, in any order, as often as they come.
        foreach (string next in new[] { "Accept: eeeee", "Accept: bb", "Accept: ccc", "Accept: dddd", "Accept: bb", "Accept: eeeee" })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
            Assert.Equal(next.Length, memo.FindNext(Encoding.ASCII.GetBytes(next + "\r\n")));
            Assert.Equal(next, memo[memo.Found].Name + ": " + memo[memo.Found].Value);
        }

        // A fifth (found by the search) takes the place of the one that came longest ago, ccc; dddd is still expected.
        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
        Assert.Equal(-1, memo.FindNext("Accept: a\r\n"u8));
        Assert.NotEqual(-1, memo.Find("Accept: a"u8));
        foreach ((string next, int expected) in new[] { ("Accept: ccc", -1), ("Accept: dddd", 12), ("Accept: a", 9) })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
            Assert.Equal(expected, memo.FindNext(Encoding.ASCII.GetBytes(next + "\r\n")));
        }
    }

    [Fact]
    public void A_line_remembered_by_its_name_is_found_with_any_value_and_only_where_it_is_expected()
    {
        var memo = new LineMemo();
        Assert.Equal(-1, memo.Find("Host: h"u8));
        memo.Remember(Entry("Host: h"), "Host: h"u8);
        Assert.Equal(-1, memo.Find("X-Id: 1"u8));
        memo.RememberName(NameEntry("X-Id"), "X-Id: 1"u8);
        Assert.Equal(-1, memo.Find("X-B: b"u8));
        memo.Remember(Entry("X-B: b"), "X-B: b"u8);

        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
        Assert.Equal(10, memo.FindNext("X-Id: 2345\r\nX-B: b\r\n"u8));
        Assert.Equal(LineMemo.CreatedValue, memo[memo.Found].ValueSlot);
        Assert.Equal(6, memo.FindNext("X-B: b\r\n"u8));

        // Not yet ended by CRLF, or ended by a bare LF or CR: the search decides.
        foreach (byte[] rest in new[] { "X-Id: 23"u8.ToArray(), "X-Id: 23\r"u8.ToArray(), "X-Id: 23\nX"u8.ToArray(), "X-Id: 2\rX"u8.ToArray() })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
            Assert.Equal(-1, memo.FindNext(rest));
        }

        // A name is no line: a search never finds it, not even for bytes equal to it (an empty value).
        Assert.Equal(-1, memo.Find("X-Id: 2345"u8));
        Assert.Equal(-1, memo.Find("X-Id: "u8));

        // Remembered whole in its place (its value was served after all), the line is still expected after Host.
        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
        Assert.Equal(7, memo.FindNext("X-Id: 2\r\n"u8));
        memo.Remember(Entry("X-Id: 2"), "X-Id: 2"u8);
        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
        Assert.Equal(-1, memo.FindNext("X-Id: 3\r\n"u8));
        Assert.Equal(7, memo.FindNext("X-Id: 2\r\n"u8));
        Assert.Equal(6, memo.FindNext("X-B: b\r\n"u8));
        AssertFoundAs(memo, "X-Id: 2");
    }

    [Fact]
    public void A_line_whose_value_changed_is_known_by_the_name_of_a_line_expected_there()
    {
        var memo = new LineMemo();
        memo.Remember(Entry("Host: h"), "Host: h"u8);
        memo.Remember(OtherEntry("X-Real-IP: 10.0.0.1"), "X-Real-IP: 10.0.0.1"u8);
        memo.Remember(OtherEntry("X-B: b"), "X-B: b"u8);

        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
        Assert.Equal(-1, memo.FindNext("X-Real-IP: 10.0.0.22\r\n"u8));
        Assert.Equal(-1, memo.Find("X-Real-IP: 10.0.0.22"u8));
        int named = memo.FindName("X-Real-IP: 10.0.0.22"u8);
        Assert.True(named >= 0);
        Assert.Equal("X-Real-IP", memo[named].Name);

        // The entry is not the line's: nothing was found, and the line after it is not expected from it.
        Assert.Equal(-1, memo.Found);
        Assert.Equal(-1, memo.FindNext("X-B: b\r\n"u8));

        // Only the names of the lines expected here, with a value, and never a line Kestrel acts on.
        memo.Begin();
        Assert.Equal(-1, memo.FindName("X-B: c"u8));
        Assert.Equal(-1, memo.FindName("Host: other"u8));
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8));
        Assert.Equal(-1, memo.FindName("X-Real-IP: "u8));
        Assert.Equal(-1, memo.FindName("X-Real-IPs: 1"u8));
        Assert.Equal(-1, memo.FindName("x-real-ip: 1"u8));
    }

    [Fact]
    public void Values_that_take_turns_in_a_small_cache_are_found_by_their_names_and_change_nothing_the_long_way_would_do()
    {
        // A proxy's client addresses, more than the cache of values holds: most heads miss the value, and the line is
        // found by the name of the line expected after Host.
        using var withMemo = new ReaderDriver(new HeaderStringCache(slotCount: 2, seed: 1));
        using var without = new ReaderDriver(new HeaderStringCache(slotCount: 2, seed: 1));
        without.Compactor.RecallsLines = false;
        var random = new Random(5);
        for (int i = 0; i < 200; i++)
        {
            string address = $"10.0.{random.Next(4)}.{random.Next(3)}";
            string head = $"GET / HTTP/1.1\r\nHost: h\r\nX-Real-IP: {address}\r\nX-Forwarded-For: {address}\r\nX-B: b\r\n\r\n";
            AssertSameAsLongWay(withMemo, without, Encoding.ASCII.GetBytes(head));
        }

        Assert.Equal(Summary(without), Summary(withMemo));
        Assert.True(withMemo.Compactor.LinesCreated > 100, Summary(withMemo));

        // Host in every head, and the other lines by their bytes or, when the address changed, by the name of the line
        // expected there: 761 lines (691 without the names of expected lines).
        Assert.InRange(withMemo.Compactor.LinesRecalled, 730, 4 * 200);
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

    [Theory]
    [InlineData(48, LineMemo.GrownSize)]
    [InlineData(5, LineMemo.GrownSize)]
    [InlineData(4, LineMemo.Size)]
    [InlineData(0, LineMemo.Size)]
    public void A_memo_whose_lines_push_each_other_out_grows_to_remember_twice_as_many(int replacedPer16Heads, int remembered)
    {
        var memo = new LineMemo();
        memo.Begin();
        for (int i = 0; i < LineMemo.Size; i++)
        {
            Remember(memo, $"X-First-{i}: v");
        }

        int replaced = 0;
        for (int head = 1; head < 64; head++)
        {
            memo.Begin();
            for (; replaced < head * replacedPer16Heads / 16; replaced++)
            {
                Remember(memo, $"X-{replaced}: v");
            }
        }

        memo.Begin();
        string[] last = Enumerable.Range(0, LineMemo.GrownSize + 1).Select(i => $"X-Last-{i}: v").ToArray();
        foreach (string line in last)
        {
            Remember(memo, line);
        }

        foreach (string line in last.TakeLast(remembered))
        {
            AssertFoundAs(memo, line);
        }

        Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(last[^(remembered + 1)])));
    }

    private static void Remember(LineMemo memo, string line)
    {
        byte[] bytes = Encoding.ASCII.GetBytes(line);
        Assert.Equal(-1, memo.Find(bytes));
        memo.Remember(Entry(line), bytes);
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
        return new LineMemo.Entry { Name = parts[0], Value = parts[1], Kind = HeaderNameTable.Kept, ValueSlot = -1 };
    }

    private static LineMemo.Entry OtherEntry(string line)
    {
        string[] parts = line.Split(": ");
        return new LineMemo.Entry { Name = parts[0], Value = parts[1], Kind = HeaderNameTable.Other, ValueSlot = 0 };
    }

    private static LineMemo.Entry NameEntry(string name) =>
        new() { Name = name, Value = string.Empty, Kind = HeaderNameTable.Other, ValueSlot = LineMemo.CreatedValue };

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
