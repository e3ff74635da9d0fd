using System.Buffers;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Testing;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Tests.Http1;

/// <summary>Which lines the compactor takes out, and where it steps aside.</summary>
public sealed class HeadCompactorTests
{
    [Fact]
    public void Takes_out_unique_cacheable_lines_and_keeps_what_Kestrel_acts_on()
    {
        var (output, taken, reason) = Run(
            "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: keep-alive\r\nExpect: 100-continue\r\n" +
            "Keep-Alive: 5\r\nTE: trailers\r\nX-A:  one \r\nAccept: */*\r\n\r\nhi");
        Assert.Equal(
            "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: keep-alive\r\nExpect: 100-continue\r\nKeep-Alive: 5\r\nTE: trailers\r\n\r\nhi",
            output);
        Assert.Equal(["X-A=one", "Accept=*/*"], taken);
        Assert.Equal(PassThroughReason.None, reason);
    }

    [Fact]
    public void Takes_out_every_line_Kestrel_does_not_act_on_in_wire_order_and_caches_only_what_it_may()
    {
        // Lines the cache does not hold (empty, too long, excluded) are taken out too, with strings made as
        // Kestrel makes them: only then can all the lines go back into the request in the order they were sent.
        string longValue = new('v', 257);
        string head = "GET / HTTP/1.1\r\nHost: h\r\nX-Dup: d1\r\nX-Empty: \r\nx-dup: d2\r\nX-Long: " + longValue +
            "\r\nX-Secret: s\r\nTrailer: t\r\nX-Ok: ok\r\n\r\n";
        using var driver = new ReaderDriver(excluded: ["x-secret"]);
        HeaderStringCache cache = driver.Cache;
        driver.Send(Encoding.ASCII.GetBytes(head));

        Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        var headers = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(headers));
        Assert.Equal(
            ["X-Dup=d1|d2", "X-Empty=", $"X-Long={longValue}", "X-Secret=s", "Trailer=t", "X-Ok=ok"],
            headers.Select(h => $"{h.Key}={string.Join('|', h.Value.ToArray())}"));

        // Cached: the values d1, d2, t and ok, not "", the long value or "s"; and, in the cache of names, the seven
        // names (none is a field of Kestrel's).
        Assert.Equal(4, cache.Count);
        Assert.Equal(4, cache.Counters.Misses);
        Assert.Equal(7, driver.Names.Count);
        Assert.Equal(7, driver.Names.Counters.Misses);
    }

    [Fact]
    public void Known_values_Kestrel_reuses_on_its_own_are_left_to_it_or_put_back_as_its_previous_strings()
    {
        using var driver = new ReaderDriver();
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nUser-Agent: u\r\nX-A: 1\r\n\r\n"));
        Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        var first = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(first));

        // Same Accept and User-Agent in a head that is compacted anyway (X-A): they go too, and come back as the
        // previous strings, which Kestrel would have handed back; they are not counted as lines served.
        long served = driver.Compactor.LinesServed;
        driver.Clear();
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nUser-Agent: u\r\nX-A: 1\r\n\r\n"));
        Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        var second = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(second));
        Assert.Equal(["Accept=a", "User-Agent=u", "X-A=1"], second.Select(h => $"{h.Key}={h.Value}"));
        Assert.Same(first["Accept"].ToString(), second["Accept"].ToString());
        Assert.Same(first["User-Agent"].ToString(), second["User-Agent"].ToString());
        Assert.Equal(served + 1, driver.Compactor.LinesServed);

        // Nothing else to take: the head stays as it is and Kestrel reuses the strings itself.
        driver.Clear();
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nUser-Agent: u\r\n\r\n"));
        Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nUser-Agent: u\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        Assert.False(driver.Queue.TryTake());

        // Accept repeated in a head: all its lines are taken, so its values go back in order.
        driver.Clear();
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nUser-Agent: v\r\naccept: b\r\n\r\n"));
        Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        var headers = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(headers));
        Assert.Equal(["Accept=a|b", "User-Agent=v"], headers.Select(h => $"{h.Key}={string.Join('|', h.Value.ToArray())}"));

        // After a repeated Accept Kestrel has no single previous value: the next Accept is taken, even with the bytes
        // of the repeat's last value, and with it the User-Agent Kestrel would reuse.
        driver.Clear();
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: b\r\nUser-Agent: v\r\n\r\n"));
        Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        headers.Clear();
        Assert.True(driver.Queue.TryApply(headers));
        Assert.Equal(["Accept=b", "User-Agent=v"], headers.Select(h => $"{h.Key}={h.Value}"));
    }

    [Fact]
    public void An_excluded_known_value_left_to_Kestrel_is_not_remembered_with_its_string()
    {
        // From the second head on Kestrel hands back its previous strings for Authorization and User-Agent, so both lines
        // are left to it. The memo keeps User-Agent's line with that string, but never an excluded name's: its string
        // would outlive Kestrel's own (until the entry is replaced or the connection idles).
        using var driver = new ReaderDriver(excluded: ["authorization"]);
        for (int i = 0; i < 3; i++)
        {
            driver.Clear();
            driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t0k3n\r\nUser-Agent: u\r\nX-A: 1\r\n\r\n"));
            Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal(["Authorization=Bearer t0k3n", "User-Agent=u", "X-A=1"], headers.Select(h => $"{h.Key}={h.Value}"));
        }

        Assert.NotEqual(-1, driver.Memo!.Find("X-A: 1"u8));
        Assert.NotEqual(-1, driver.Memo.Find("User-Agent: u"u8));
        Assert.Equal(-1, driver.Memo.Find("Authorization: Bearer t0k3n"u8));
    }

    [Fact]
    public void A_body_of_known_length_is_never_parsed_as_a_head()
    {
        const string body = "GET / HTTP/1.1\r\nX-In-Body: 1\r\n\r\n";
        string input = $"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: {body.Length}\r\n\r\n{body}GET /next HTTP/1.1\r\nHost: h\r\nX-After: 2\r\n\r\n";
        var (output, taken, _) = Run(input);
        Assert.Equal($"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: {body.Length}\r\n\r\n{body}GET /next HTTP/1.1\r\nHost: h\r\n\r\n", output);
        Assert.Equal(["X-After=2"], taken);
    }

    [Theory]
    [InlineData("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n0\r\n\r\n", nameof(PassThroughReason.TransferEncoding))]
    [InlineData("GET / HTTP/1.0\r\nX-A: 1\r\n\r\n", nameof(PassThroughReason.Version))]
    [InlineData("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", nameof(PassThroughReason.Http2))]
    [InlineData("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\nX-A: 1\r\n\r\n", nameof(PassThroughReason.Connect))]
    [InlineData("GET / HTTP/1.1\nX-A: 1\r\n\r\n", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nX-A: 1\n\r\n", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nX-A : 1\r\n\r\n", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nX-A: 1\r\n continued\r\n\r\n", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nX-A: caf\u00e9\r\n\r\n", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx", nameof(PassThroughReason.Malformed))]
    [InlineData("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", nameof(PassThroughReason.Malformed))]
    [InlineData("\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u00fc\u0003\u0003", nameof(PassThroughReason.Tls))]
    public void Steps_aside_and_hands_over_the_exact_bytes(string input, string expected)
    {
        var (output, taken, reason) = Run(input);
        Assert.Equal(expected, reason.ToString());
        Assert.Equal(input, output);
        Assert.Empty(taken);
    }

    [Fact]
    public void An_upgrade_request_is_compacted_and_what_follows_passes_through()
    {
        string input = "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-A: 1\r\n\r\nGET / HTTP/1.1\r\nX-B: 2\r\n\r\n";
        var (output, taken, reason) = Run(input);
        Assert.Equal(PassThroughReason.Upgrade, reason);
        Assert.Equal(input.Replace("X-A: 1\r\n", "", StringComparison.Ordinal), output);
        Assert.Equal(["X-A=1"], taken);
    }

    [Fact]
    public void Heads_over_a_limit_pass_through_whole()
    {
        var limits = KestrelLimits.From(new KestrelServerLimits()) with { MaxRequestLineSize = 64, MaxRequestHeadersTotalSize = 64, MaxRequestHeaderCount = 2 };
        string tooMany = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        string tooBig = "GET / HTTP/1.1\r\nA: " + new string('a', 64) + "\r\n\r\n";
        string longLine = "GET /" + new string('a', 64) + " HTTP/1.1\r\nA: 1\r\n\r\n";
        foreach (string input in new[] { tooMany, tooBig, longLine })
        {
            var (output, _, reason) = Run(input, limits: limits);
            Assert.Equal(PassThroughReason.OverLimit, reason);
            Assert.Equal(input, output);
        }

        var (atLimit, taken, ok) = Run("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", limits: limits);
        Assert.Equal(PassThroughReason.None, ok);
        Assert.Equal("GET / HTTP/1.1\r\n\r\n", atLimit);
        Assert.Equal(2, taken.Count);
    }

    [Fact]
    public void Leading_empty_lines_are_handed_over_and_the_head_after_them_is_compacted()
    {
        var (output, taken, _) = Run("\r\n\n\rGET / HTTP/1.1\r\nX-A: 1\r\n\r\n");
        Assert.Equal("\r\n\n\rGET / HTTP/1.1\r\n\r\n", output);
        Assert.Equal(["X-A=1"], taken);
    }

    [Fact]
    public void Any_split_of_the_input_gives_the_same_output()
    {
        const string input = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nX-A: 1\r\n\r\nabcGET /b HTTP/1.1\r\nHost: h\r\nX-B: 2\r\n\r\n";
        var (whole, wholeTaken, _) = Run(input);
        for (int cut = 1; cut < input.Length; cut++)
        {
            var (output, taken, _) = Run(input, cut);
            Assert.Equal(whole, output);
            Assert.Equal(wholeTaken, taken);
        }
    }

    [Fact]
    public void A_line_counts_as_served_only_when_neither_its_name_nor_its_value_needed_a_new_string()
    {
        using var driver = new ReaderDriver();
        string Head(string id) => $"GET / HTTP/1.1\r\nHost: h\r\nsec-ch-ua: \"A\"\r\nAccept: a{id}\r\nX-Empty: \r\nX-Id: {id}\r\n\r\n";
        driver.Send(Encoding.ASCII.GetBytes(Head("1")));
        Assert.True(driver.Queue.TryApply(new HeaderDictionary()));
        Assert.Equal((0, 4), (driver.Compactor.LinesServed, driver.Compactor.LinesCreated));   // every name and value is new
        Assert.Equal(0, driver.Compactor.AvoidedBytes);

        // Second head: sec-ch-ua and X-Empty come from the caches; Accept's and X-Id's values are new. Kestrel alone
        // would have made sec-ch-ua's name and value and X-Empty's name (its empty value is string.Empty).
        driver.Send(Encoding.ASCII.GetBytes(Head("2")));
        Assert.True(driver.Queue.TryApply(new HeaderDictionary()));
        Assert.Equal((0 + 2, 4 + 2), (driver.Compactor.LinesServed, driver.Compactor.LinesCreated));
        Assert.Equal(8, driver.Compactor.LinesServed + driver.Compactor.LinesCreated);
        Assert.Equal(
            HeaderStringCache.StringSize("sec-ch-ua".Length) + HeaderStringCache.StringSize("\"A\"".Length) + HeaderStringCache.StringSize("X-Empty".Length),
            driver.Compactor.AvoidedBytes);
    }

    [Fact]
    public void Names_have_their_own_slots_and_names_over_64_bytes_get_a_new_string_each_time()
    {
        using var driver = new ReaderDriver();
        string longName = "X-" + new string('n', HeaderStringCache.NameMaxLength - 1);
        var seen = new List<string>();
        for (int i = 0; i < 2; i++)
        {
            driver.Clear();
            driver.Send(Encoding.ASCII.GetBytes($"GET / HTTP/1.1\r\nHost: h\r\nX-Short: s1\r\n{longName}: s2\r\n\r\n"));
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal(["X-Short", longName], headers.Keys);
            seen.AddRange(headers.Keys);
        }

        Assert.Same(seen[0], seen[2]);
        Assert.NotSame(seen[1], seen[3]);
        Assert.Equal(seen[1], seen[3]);
        Assert.Equal((1, 1, 1), (driver.Names.Count, driver.Names.Counters.Hits, driver.Names.Counters.Misses));
        Assert.Equal((2, 2, 2), (driver.Cache.Count, driver.Cache.Counters.Hits, driver.Cache.Counters.Misses));
    }

    [Fact]
    public void A_connection_whose_values_never_repeat_is_left_to_Kestrel_from_the_line_that_ends_a_window_without_hits()
    {
        using var driver = new ReaderDriver();
        var headers = new HeaderDictionary();
        string? firstName = null;
        int compacted = 0;
        for (int i = 0; i < 200; i++)
        {
            string head = $"GET / HTTP/1.1\r\nHost: h\r\nX-Session: s{i}\r\nX-Trace: t{i}\r\n\r\n";
            driver.Clear();
            driver.Send(Encoding.ASCII.GetBytes(head));
            headers.Clear();
            if (driver.Reader.PassThroughReason != PassThroughReason.None)
            {
                // From the head in which the window ended: Kestrel gets every head as it was sent, and nothing is put back.
                Assert.Equal(head, Encoding.ASCII.GetString(driver.Seen));
                Assert.False(driver.Queue.TryApply(headers));
                continue;
            }

            Assert.Equal(i, compacted++);
            Assert.Equal("GET / HTTP/1.1\r\nHost: h\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal($"s{i}", headers["X-Session"]);
            Assert.Equal($"t{i}", headers["X-Trace"]);
            string name = headers.Keys.First(k => k == "X-Session");
            firstName ??= name;
            Assert.Same(firstName, name);
        }

        // The window is value lookups (names whose values keep missing are looked up only now and then, so it takes more
        // than 32 heads); it ended at its 64th lookup without a hit.
        Assert.Equal(PassThroughReason.ValuesDoNotRepeat, driver.Reader.PassThroughReason);
        Assert.InRange(compacted, ValueAdmission.ValueWindow / 2, 199);
        Assert.Equal((0, ValueAdmission.ValueWindow), (driver.Cache.Counters.Hits, driver.Cache.Counters.Misses));
        Assert.Equal(2, driver.Names.Counters.Misses);
        Assert.True(driver.Names.Counters.Hits >= 2 * (compacted - 1), $"{driver.Names.Counters.Hits} name hits");
    }

    [Fact]
    public void A_connection_whose_new_values_come_with_one_that_repeats_keeps_compacting()
    {
        using var driver = new ReaderDriver();
        for (int i = 0; i < 200; i++)
        {
            // Three lines of names and values never sent before, looked up every time, and one line sent in every head.
            driver.Send(Encoding.ASCII.GetBytes($"GET / HTTP/1.1\r\nHost: h\r\nX-A{i}: a{i}\r\nX-B{i}: b{i}\r\nX-C{i}: c{i}\r\nX-Stable: same\r\n\r\n"));
            Assert.True(driver.Queue.TryTake());
        }

        Assert.Equal(PassThroughReason.None, driver.Reader.PassThroughReason);
        Assert.Equal(199, driver.Cache.Counters.Hits);
    }

    [Fact]
    public void A_name_whose_values_keep_missing_stops_taking_slots_and_comes_back_when_its_values_repeat()
    {
        using var driver = new ReaderDriver();
        HeaderStringCache cache = driver.Cache;
        var headers = new HeaderDictionary();
        string? stable = null;
        void Send(string requestId)
        {
            driver.Clear();
            driver.Send(Encoding.ASCII.GetBytes($"GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: {requestId}\r\nX-Stable: same\r\n\r\n"));
            headers.Clear();
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal(requestId, headers["X-Request-Id"]);
            Assert.Equal("same", headers["X-Stable"]);
            stable ??= headers["X-Stable"];
            Assert.Same(stable, (string?)headers["X-Stable"]);
        }

        // Sixteen misses in a row, then seven values created without a lookup, then one looked up again (a miss).
        for (int i = 0; i < 24; i++)
        {
            Send($"r{i}");
        }

        Assert.Equal(1 + 16 + 1, cache.Counters.Misses);
        Assert.Equal(23, cache.Counters.Hits);
        Assert.Equal(HeaderStringCache.DefaultSlotCount - 7, cache.Count);
        Assert.Equal(23, driver.Compactor.LinesServed); // X-Stable but on the first request; no X-Request-Id

        // The name's values start repeating: the next look-up admits it, the one after hits, and from then on
        // every line is served from the cache again.
        int requests = 0;
        long missesBefore = cache.Counters.Misses;
        string? repeated = null;
        while (requests < 17)
        {
            Send("r-again");
            requests++;
            string value = headers["X-Request-Id"]!;
            if (repeated is not null && ReferenceEquals(repeated, value))
            {
                break;
            }

            repeated = cache.Counters.Misses > missesBefore ? value : null;
        }

        Assert.InRange(requests, 2, 17);
        long served = driver.Compactor.LinesServed;
        for (int i = 0; i < 20; i++)
        {
            Send("r-again");
            Assert.Same(repeated, (string?)headers["X-Request-Id"]);
        }

        Assert.Equal(served + 40, driver.Compactor.LinesServed);
    }

    private static (string Output, List<string> Taken, PassThroughReason Reason) Run(
        string input, int cut = -1, string[]? excluded = null, KestrelLimits? limits = null)
    {
        using var driver = new ReaderDriver(limits: limits, excluded: excluded);
        byte[] bytes = Encoding.Latin1.GetBytes(input);
        if (cut > 0)
        {
            driver.Send(bytes.AsSpan(0, cut));
            driver.Send(bytes.AsSpan(cut));
        }
        else
        {
            driver.Send(bytes);
        }

        driver.Complete();
        var taken = new List<string>();
        var headers = new HeaderDictionary();
        while (driver.Queue.TryApply(headers))
        {
            taken.AddRange(headers.Select(h => $"{h.Key}={h.Value}"));
            headers.Clear();
        }

        return (Encoding.Latin1.GetString(driver.Seen), taken, driver.Reader.PassThroughReason);
    }
}
