using System.Globalization;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Requests;

/// <summary>
/// A connection pays for itself soon: connections each opened, used one request at a time and closed allocate no more
/// per request with HeaderCache than with Kestrel alone, the connection's own set-up included: from 6 requests (one
/// page's worth) on HTTP/1.1, from 48 on HTTP/2, whose set-up (the table mirror, the frame reader, the per-stream
/// hand-off) a page of requests does not pay back yet. (A proxy's HTTP/2 requests, whose ids change every request and
/// whose encoder indexes them anyway, reach parity only on longer connections: docs/results.md.) Connections of 48
/// requests allocate well under Kestrel alone's
/// bytes, which they could not unless the cache served them, so the comparison cannot pass with the cache off.
/// </summary>
[Collection(AllocationMeasurementGroup.Name)]
public sealed class ConnectionLengthAllocationTests(ITestOutputHelper output)
{
    private const int RequestsPerMeasurement = 1536;
    private const int NewConnections = 512;

    // What else the process allocates meanwhile (Kestrel's heartbeat, a thread the pool adds) only adds: the least of
    // a few measurements is the closest to what a request costs, and this margin covers what is left of it.
    private const int MarginPerRequest = 16;

    public static TheoryData<bool, string, string, int> Profiles => new()
    {
        { false, "chrome", "chrome", 6 },
        { false, "firefox", "chrome", 6 },
        { false, "proxy-pool", "chrome", 6 },
        { true, "chrome", "chrome", 48 },
        { true, "firefox", "chrome", 48 },
        { true, "chrome", "nghttp2", 48 },
        { true, "chrome", "httpclient", 48 },
    };

    [Theory]
    [MemberData(nameof(Profiles))]
    public async Task Connections_allocate_no_more_than_with_Kestrel_alone_from_their_first_page_or_so(bool http2, string profileName, string encoder, int shortest)
    {
        HpackEncoding encoding = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        TrafficProfile profile = TrafficProfile.Load(profileName);
        await using InMemoryKestrel alone = await StartAsync(headerCache: false, http2);
        await using InMemoryKestrel cached = await StartAsync(headerCache: true, http2);

        foreach (int length in ((int[])[shortest, 48]).Distinct())
        {
            double aloneBytes = Measure(alone, profile, http2, encoding, length);
            double cachedBytes = Measure(cached, profile, http2, encoding, length);
            string report = string.Create(
                CultureInfo.InvariantCulture,
                $"{(http2 ? $"h2c ({encoder}'s HPACK)" : "HTTP/1.1")} {profileName}, {length} requests a connection: HeaderCache {cachedBytes:F0} B/request, Kestrel alone {aloneBytes:F0}");
            output.WriteLine(report);

            Assert.True(cachedBytes <= aloneBytes + MarginPerRequest, report);
            if (length == 48)
            {
                Assert.True(cachedBytes < 0.8 * aloneBytes, $"the cache served too little to be on the path: {report}");
            }
        }
    }

    /// <summary>An HTTP/2 connection whose values never repeat steps aside within its first requests: from then on a
    /// request allocates no more than with Kestrel alone. The bytes per request between connections of 48 and of 384
    /// requests are those of requests after the step.</summary>
    [Theory]
    [InlineData("chrome")]
    [InlineData("httpclient")]
    public async Task Churn_requests_after_the_step_aside_allocate_no_more_than_with_Kestrel_alone(string encoder)
    {
        HpackEncoding encoding = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        TrafficProfile profile = TrafficProfile.Load("churn");
        await using InMemoryKestrel alone = await StartAsync(headerCache: false, http2: true);
        await using InMemoryKestrel cached = await StartAsync(headerCache: true, http2: true);

        double aloneBytes = AfterTheFirst48(alone, profile, encoding);
        double cachedBytes = AfterTheFirst48(cached, profile, encoding);
        string report = string.Create(
            CultureInfo.InvariantCulture,
            $"h2c ({encoder}'s HPACK) churn, requests 49 to 384 of a connection: HeaderCache {cachedBytes:F0} B/request, Kestrel alone {aloneBytes:F0}");
        output.WriteLine(report);
        Assert.True(cachedBytes <= aloneBytes + MarginPerRequest, report);
    }

    private static double AfterTheFirst48(InMemoryKestrel server, TrafficProfile profile, HpackEncoding encoding) =>
        ((384 * Measure(server, profile, http2: true, encoding, 384)) - (48 * Measure(server, profile, http2: true, encoding, 48))) / (384 - 48);

    // What a new connection allocates beyond Kestrel alone's, set-up and end included: connections of one request with
    // the request line and Host alone (the pseudo-header fields alone on h2c), so that no header is taken and what is
    // left is the connection's own objects. Its reading state is lent by the endpoint's pool, and its accept's and its
    // waits' state machines come from the async builder's pool, so what stays is what only the connection can hold: its
    // readers, its requests' queue and view or its HTTP/2 hand-off, and its feature.
    // Guards against regressions, with room for the spread of runs on a busy machine; the figures and the goal are on
    // the results page.
    public static TheoryData<bool, int> NewConnectionBounds => new()
    {
        { false, 1024 },
        { true, 1024 },
    };

    [Theory]
    [MemberData(nameof(NewConnectionBounds))]
    public async Task A_new_connection_costs_at_most_its_bound_beyond_Kestrel_alone(bool http2, int bound)
    {
        TrafficProfile profile = TrafficProfile.Load("chrome");
        await using InMemoryKestrel alone = await StartAsync(headerCache: false, http2);
        await using InMemoryKestrel cached = await StartAsync(headerCache: true, http2);

        double aloneBytes = Measure(alone, profile, http2, HpackEncoding.Chrome, length: 1, bare: true, NewConnections);
        double cachedBytes = Measure(cached, profile, http2, HpackEncoding.Chrome, length: 1, bare: true, NewConnections);
        string report = string.Create(
            CultureInfo.InvariantCulture,
            $"{(http2 ? "h2c" : "HTTP/1.1")}, a new connection of one bare request: HeaderCache {cachedBytes:F0} B, Kestrel alone {aloneBytes:F0}, {cachedBytes - aloneBytes:F0} B more (bound {bound})");
        output.WriteLine(report);

        Assert.True(cachedBytes - aloneBytes <= bound, report);
    }

    private static Task<InMemoryKestrel> StartAsync(bool headerCache, bool http2) => http2
        ? InMemoryKestrel.StartHttp2Async(headerCache, static _ => Task.CompletedTask)
        : InMemoryKestrel.StartAsync(headerCache, static _ => Task.CompletedTask);

    private static double Measure(InMemoryKestrel server, TrafficProfile profile, bool http2, HpackEncoding encoding, int length, bool bare = false, int requests = RequestsPerMeasurement)
    {
        // A first round warms the JIT's tiers up; then the least of three.
        ConnectionBytes.PerRequest(server, profile, http2, encoding, bare, length, requests / length, seed: 1_000_000);
        return Enumerable.Range(0, 3)
            .Min(round => ConnectionBytes.PerRequest(server, profile, http2, encoding, bare, length, requests / length, seed: round * 10_000));
    }
}
