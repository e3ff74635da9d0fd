using System.Globalization;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Requests;

/// <summary>
/// A connection pays for itself from its first page of requests: connections of 6 requests (one page's worth) and of
/// 48, each opened, used one request at a time and closed, allocate no more per request with HeaderCache than with
/// Kestrel alone, the connection's own set-up included. The longer connections allocate well under Kestrel alone's
/// bytes, which they could not unless the cache served them, so the comparison cannot pass with the cache off.
/// </summary>
[Collection(AllocationMeasurementGroup.Name)]
public sealed class ConnectionLengthAllocationTests(ITestOutputHelper output)
{
    private const int RequestsPerMeasurement = 1536;

    // What else the process allocates meanwhile (Kestrel's heartbeat, a thread the pool adds) only adds: the least of
    // a few measurements is the closest to what a request costs, and this margin covers what is left of it.
    private const int MarginPerRequest = 16;

    public static TheoryData<bool, string, string> Profiles => new()
    {
        { false, "chrome", "chrome" },
        { false, "firefox", "chrome" },
        { false, "proxy-pool", "chrome" },
    };

    [Theory]
    [MemberData(nameof(Profiles))]
    public async Task Connections_of_a_page_of_requests_allocate_no_more_than_with_Kestrel_alone(bool http2, string profileName, string encoder)
    {
        HpackEncoding encoding = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        TrafficProfile profile = TrafficProfile.Load(profileName);
        await using InMemoryKestrel alone = await StartAsync(headerCache: false, http2);
        await using InMemoryKestrel cached = await StartAsync(headerCache: true, http2);

        foreach (int length in (int[])[6, 48])
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

    private static Task<InMemoryKestrel> StartAsync(bool headerCache, bool http2) => http2
        ? InMemoryKestrel.StartHttp2Async(headerCache, static _ => Task.CompletedTask)
        : InMemoryKestrel.StartAsync(headerCache, static _ => Task.CompletedTask);

    private static double Measure(InMemoryKestrel server, TrafficProfile profile, bool http2, HpackEncoding encoding, int length)
    {
        // A first round warms the JIT's tiers up; then the least of three.
        ConnectionBytes.PerRequest(server, profile, http2, encoding, bare: false, length, RequestsPerMeasurement / length, seed: 1_000_000);
        return Enumerable.Range(0, 3)
            .Min(round => ConnectionBytes.PerRequest(server, profile, http2, encoding, bare: false, length, RequestsPerMeasurement / length, seed: round * 10_000));
    }
}
