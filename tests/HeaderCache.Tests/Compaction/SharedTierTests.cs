using System.Text;
using HeaderCache.Caching;
using HeaderCache.Compaction;
using HeaderCache.Testing;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Compaction;

/// <summary>The shared tier as the compactor uses it: who is served from it, and what never enters it.</summary>
public sealed class SharedTierTests
{
    private const int K = SharedAdmission.ConnectionsToAdmit;

    // Values a proxy or a browser sends that identify a user, a session, a request or an address.
    private const string Private =
        "Cookie: session=abc123\r\nAuthorization: Bearer eyJhbGciOi.payload.sig\r\nProxy-Authorization: Basic dXNlcjpwYXNz\r\n" +
        "Referer: https://shop.example.test/account/42\r\nOrigin: https://shop.example.test\r\nIf-None-Match: \"etag-1\"\r\n" +
        "X-Request-ID: 0af7651916cd43dd8448eb211c80319c\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n" +
        "X-Forwarded-For: 203.0.113.7\r\nX-Real-IP: 203.0.113.7\r\nX-Forwarded-Host: tenant-a.example.test\r\nX-Api-Key: k-123\r\n" +
        "X-CSRF-Token: t-456\r\nX-Session: s-789\r\nX-Auth-User: alice\r\nsec-ch-ua-full-version-list: \"Chromium\";v=\"146.0.7000.1\"\r\n";

    [Fact]
    public void A_value_sent_on_k_minus_1_connections_any_number_of_times_is_never_served_from_the_tier_and_on_k_it_is()
    {
        var shared = new SharedStrings();
        byte[] request = Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: probe/1.0\r\nSec-Ch-Ua: \"Probe\";v=\"1\"\r\nX-Other: o\r\n\r\n");
        for (int connection = 1; connection <= K + 1; connection++)
        {
            // One slot for values: the connection misses its own cache on almost every value, so it asks the tier and
            // offers its values again and again.
            using var driver = new ReaderDriver(new HeaderStringCache(slotCount: 1), shared: shared);
            for (int i = 0; i < 50; i++)
            {
                driver.Send(request);
                driver.Queue.TryApply(new HeaderDictionary());
                long sharedHits = driver.Compactor.Counters.SharedHits;
                if (connection < K || (connection == K && i == 0))
                {
                    // Seen on at most k - 1 connections before this request's lookups: nothing to serve.
                    Assert.Equal(0, sharedHits);
                }
                else
                {
                    // The k-th connection's first offer admitted them; from then on every connection is served.
                    Assert.True(sharedHits > 0, $"connection {connection}, request {i}: no shared hit");
                }
            }
        }

        // The two allow-listed values, and the name in a casing the list of well-known names does not hold.
        Assert.Equal(2, shared.Values.Count);
        Assert.Equal(1, shared.Names!.Count);
    }

    [Fact]
    public void From_its_first_request_a_new_connection_gets_the_strings_k_earlier_connections_made_for_allow_listed_lines()
    {
        var shared = new SharedStrings();
        TrafficProfile chrome = TrafficProfile.Load("chrome");
        var firstHeads = new List<HeaderDictionary>();
        for (int connection = 1; connection <= K + 1; connection++)
        {
            using var driver = new ReaderDriver(shared: shared);
            driver.Send(chrome.Connect(connection).Render(0));
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            firstHeads.Add(headers);
            if (connection <= K)
            {
                // Nothing from the tier; the lines whose name and value are both well-known strings come without a new
                // string (sec-ch-ua-mobile, sec-ch-ua-platform, Upgrade-Insecure-Requests, the four Sec-Fetch-*,
                // Accept-Encoding, the document's Accept), the other four do not.
                Assert.Equal(0, driver.Compactor.Counters.SharedHits);
                Assert.Equal(9, driver.Compactor.LinesServed);
            }
            else
            {
                // Every line of the first head but the cookie: 3 client hints, 4 fetch metadata, 5 known headers.
                Assert.Equal(12, driver.Compactor.LinesServed);
                Assert.Equal(1, driver.Compactor.LinesCreated);
                Assert.Equal(0, driver.Compactor.Counters.Misses - driver.Names.Counters.Misses - 1);
            }
        }

        HeaderDictionary admitted = firstHeads[K - 1], served = firstHeads[K];
        Assert.Same(admitted["sec-ch-ua"].ToString(), served["sec-ch-ua"].ToString());
        Assert.Same(admitted["User-Agent"].ToString(), served["User-Agent"].ToString());
        Assert.Same(admitted.Keys.Single(k => k == "Sec-Fetch-Dest"), served.Keys.Single(k => k == "Sec-Fetch-Dest"));
        Assert.NotSame(admitted["Cookie"].ToString(), served["Cookie"].ToString());
    }

    [Fact]
    public void Credentials_identifiers_addresses_and_unlisted_names_never_enter_the_tier()
    {
        var shared = new SharedStrings();
        byte[] request = Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\n" + Private + "User-Agent: control/1.0\r\n\r\n");
        var values = new List<Dictionary<string, string>>();
        for (int connection = 1; connection <= 3 * K; connection++)
        {
            using var driver = new ReaderDriver(shared: shared);
            driver.Send(request);
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            values.Add(headers.ToDictionary(h => h.Key, h => h.Value.ToString()));
        }

        // The control line is shared, so the tier was on; nothing else is.
        Assert.Equal(1, shared.Values.Count);
        Assert.Equal(0, shared.Names!.Count);
        Assert.True(shared.Values.TryFind("control/1.0"u8, out _, out _));
        foreach (string line in Private.Split("\r\n", StringSplitOptions.RemoveEmptyEntries))
        {
            string name = line[..line.IndexOf(':', StringComparison.Ordinal)];
            string value = line[(name.Length + 2)..];
            Assert.False(shared.Values.TryFind(Encoding.ASCII.GetBytes(value), out _, out _), name);
            Assert.False(shared.Names!.TryFind(Encoding.ASCII.GetBytes(name), out _, out _), name);
            Assert.Equal(values.Count, values.Select(v => v[name]).Distinct(ReferenceEqualityComparer.Instance).Count());
        }
    }

    [Fact]
    public void Names_in_ExcludedHeaders_stay_out_of_the_tier_even_when_allow_listed()
    {
        var shared = new SharedStrings();
        byte[] request = Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: u/1\r\nsec-ch-ua: \"A\";v=\"1\"\r\nAccept-Language: en\r\n\r\n");
        for (int connection = 1; connection <= 3 * K; connection++)
        {
            using var driver = new ReaderDriver(excluded: ["user-agent", "SEC-CH-UA"], shared: shared);
            driver.Send(request);
            driver.Queue.TryApply(new HeaderDictionary());
        }

        Assert.False(shared.Values.TryFind("u/1"u8, out _, out _));
        Assert.False(shared.Values.TryFind("\"A\";v=\"1\""u8, out _, out _));
        Assert.False(shared.Names!.TryFind("sec-ch-ua"u8, out _, out _));
        Assert.True(shared.Values.TryFind("en"u8, out _, out _));
    }

    [Fact]
    public void The_allow_list_holds_no_name_that_carries_a_credential_an_identifier_an_address_or_a_url()
    {
        // Whole words of a name, and parts of words.
        string[] words = ["id", "ip", "for", "host", "from", "via", "real", "client"];
        string[] parts = ["cookie", "auth", "token", "csrf", "xsrf", "key", "session", "refer", "origin", "match", "since", "trace", "baggage", "correlation", "address"];
        foreach (string name in ShareableHeaders.Names)
        {
            string lower = name.ToLowerInvariant();
            Assert.DoesNotContain(parts, part => lower.Contains(part, StringComparison.Ordinal));
            if (lower != "x-forwarded-proto")
            {
                Assert.DoesNotContain(lower.Split('-'), words.Contains);
            }
        }

        Assert.Contains("X-Forwarded-Proto", ShareableHeaders.Names);
    }

    [Theory]
    [InlineData("chrome")]
    [InlineData("proxy-pool")]
    public void The_memo_of_lines_changes_nothing_with_the_tier_on(string profileName)
    {
        // Two tiers warmed by the same connections, then the same connection with and without the memo.
        TrafficProfile profile = TrafficProfile.Load(profileName);
        SharedStrings withMemoTier = new(), withoutTier = new();
        for (int seed = 1; seed <= K; seed++)
        {
            foreach (SharedStrings tier in new[] { withMemoTier, withoutTier })
            {
                using var warm = new ReaderDriver(new HeaderStringCache(seed: 1), shared: tier);
                for (int i = 0; i < 20; i++)
                {
                    warm.Send(profile.Connect(seed).Render(i));
                    warm.Queue.TryApply(new HeaderDictionary());
                }
            }
        }

        TrafficProfile.Connection connection = profile.Connect(seed: 9);
        using var withMemo = new ReaderDriver(new HeaderStringCache(seed: 1), shared: withMemoTier);
        using var without = new ReaderDriver(new HeaderStringCache(seed: 1), shared: withoutTier);
        without.Compactor.RecallsLines = false;
        for (int i = 0; i < 400; i++)
        {
            LineMemoTests.AssertSameAsLongWay(withMemo, without, connection.Render(i));
        }

        Assert.Equal(without.Compactor.Counters, withMemo.Compactor.Counters);
        Assert.True(withMemo.Compactor.Counters.SharedHits > 0);
        Assert.True(withMemo.Compactor.LinesRecalled > 0);
    }

    [Fact]
    public void Without_the_tier_no_connection_gets_another_ones_string()
    {
        TrafficProfile chrome = TrafficProfile.Load("chrome");
        var values = new List<string>();
        for (int connection = 1; connection <= 2 * K; connection++)
        {
            using var driver = new ReaderDriver();
            driver.Send(chrome.Connect(connection).Render(0));
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal(0, driver.Compactor.Counters.SharedHits);
            values.Add(headers["sec-ch-ua"].ToString());
        }

        Assert.Equal(values.Count, values.Distinct(ReferenceEqualityComparer.Instance).Count());
    }
}
