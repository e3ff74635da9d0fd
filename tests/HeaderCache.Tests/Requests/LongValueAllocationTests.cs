using System.Collections.Concurrent;
using System.Globalization;
using System.Net;
using HeaderCache.InMemory;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Requests;

/// <summary>Tests that count the bytes the whole process allocates: they run alone, after every test that runs in
/// parallel has ended, so no other test's allocations fall into their measurements.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class AllocationMeasurementGroup
{
    /// <summary>Collection name.</summary>
    public const string Name = "allocation measurement";
}

/// <summary>
/// A field HeaderCache takes must never cost a string Kestrel alone would not have made. The same requests from .NET's
/// HttpClient, each with a 1 KB bearer token, a 1.5 KB cookie (both longer than the cache of values takes, so held by
/// the cache of long values within <see cref="HeaderCacheOptions.LongValueBudget"/>, or, with a budget shorter than
/// them, never cached) and two custom headers (served from the cache), go to a Kestrel with HeaderCache and to a Kestrel
/// alone, one at a time and 8 at a time: HeaderCache's process allocates no more per request than Kestrel alone's.
/// Kestrel alone hands back its previous string for a known header whose bytes repeat (per connection on HTTP/1.1, per
/// pooled stream object on HTTP/2), so it makes no string for the token or the cookie once warm.
/// </summary>
[Collection(AllocationMeasurementGroup.Name)]
public sealed class LongValueAllocationTests(ITestOutputHelper output)
{
    private const int WarmUp = 400;
    private const int Batch = 800;
    private const int Batches = 5;

    // The client, the transport and both servers run in this process, so a batch counts the client's allocations too,
    // which are the same on both sides, and whatever else the process allocates meanwhile: Kestrel's heartbeat, a
    // thread the pool adds, a buffer that grows when the 8 requests of a moment interleave differently. That noise only
    // adds, so the least of several batches is the closest to what a request costs, and the margin covers what is left
    // of it. The strings this test is about are 2 KB (the token) and 3 KB (the cookie) each.
    private const int MarginPerRequest = 64;

    private static readonly string Token = "Bearer " + new string('t', 1024 - "Bearer ".Length);
    private static readonly string Cookie = string.Join("; ", Enumerable.Range(0, 24).Select(i => $"c{i:D2}={new string((char)('a' + (i % 26)), 58)}"));

    [Theory]
    [InlineData(true, 1, null)]
    [InlineData(true, 8, null)]
    [InlineData(false, 1, null)]
    [InlineData(false, 8, null)]
    [InlineData(true, 1, 1000)]
    [InlineData(true, 8, 1000)]
    [InlineData(false, 1, 1000)]
    public async Task Long_values_of_known_headers_cost_no_more_than_with_Kestrel_alone(bool http2, int concurrency, int? longValueBudget)
    {
        Assert.InRange(Cookie.Length, 1400, 1600);
        Measured alone = await MeasureAsync(headerCache: false, http2, concurrency, longValueBudget);
        Measured cached = await MeasureAsync(headerCache: true, http2, concurrency, longValueBudget);

        string protocol = http2 ? "HTTP/2" : "HTTP/1.1";
        string budget = longValueBudget is int bytes ? $"LongValueBudget {bytes}" : "default budget";
        string report = string.Create(
            CultureInfo.InvariantCulture,
            $"{protocol}, {concurrency} at a time, {budget}: HeaderCache {cached.BytesPerRequest:F0} B/request, Kestrel alone {alone.BytesPerRequest:F0} B/request");
        output.WriteLine(report);

        // HeaderCache served both custom headers of the measured requests from its cache: of every one, but for the first
        // request of a connection HttpClient opens while the batches run (eight at a time over HTTP/1.1 it may open one
        // when all are busy), whose fields the cache has not seen yet.
        Assert.Equal(0, alone.Served);
        Assert.True(cached.Served >= 2L * Batches * Batch * 99 / 100, $"{cached.Served} fields of {Batches * Batch} requests were served from the cache");
        Assert.True(cached.BytesPerRequest <= alone.BytesPerRequest + MarginPerRequest, report);
    }

    private static async Task<Measured> MeasureAsync(bool headerCache, bool http2, int concurrency, int? longValueBudget)
    {
        var connections = new ConcurrentDictionary<IHeaderStringCacheFeature, bool>(ReferenceEqualityComparer.Instance);

        Task App(HttpContext context)
        {
            IHeaderDictionary headers = context.Request.Headers;
            if (headers.Authorization != Token || headers.Cookie != Cookie || headers["x-tenant"] != "blue" || headers["x-client"] != "mobile-4.2.1")
            {
                context.Response.StatusCode = StatusCodes.Status400BadRequest;
            }

            if (context.Features.Get<IHeaderStringCacheFeature>() is { IsActive: true } cache && !connections.ContainsKey(cache))
            {
                connections.TryAdd(cache, true);
            }

            return Task.CompletedTask;
        }

        void Configure(WebApplicationBuilder builder)
        {
            if (longValueBudget is int bytes)
            {
                builder.Configuration["HeaderCache:LongValueBudget"] = bytes.ToString(CultureInfo.InvariantCulture);
            }
        }

        await using InMemoryKestrel server = http2
            ? await InMemoryKestrel.StartHttp2Async(headerCache, App, Configure)
            : await InMemoryKestrel.StartAsync(headerCache, App, Configure);
        using var http = new HttpClient(new SocketsHttpHandler
        {
            // The cookie goes as the one field it is given as.
            UseCookies = false,
            MaxConnectionsPerServer = http2 ? int.MaxValue : concurrency,
            ConnectCallback = (_, _) => ValueTask.FromResult<Stream>(new RequestHeadersDifferentialTests.DuplexPipeStream(server.Connect())),
        });

        await SendAsync(http, http2, concurrency, WarmUp);
        long hits = connections.Keys.Sum(cache => cache.Hits);
        long least = long.MaxValue;
        for (int batch = 0; batch < Batches; batch++)
        {
            long before = GC.GetTotalAllocatedBytes(precise: true);
            await SendAsync(http, http2, concurrency, Batch);
            least = Math.Min(least, GC.GetTotalAllocatedBytes(precise: true) - before);
        }

        return new Measured((double)least / Batch, connections.Keys.Sum(cache => cache.Hits) - hits);
    }

    private static async Task SendAsync(HttpClient http, bool http2, int concurrency, int requests)
    {
        async Task Worker(int count)
        {
            for (int i = 0; i < count; i++)
            {
                using var request = new HttpRequestMessage(HttpMethod.Get, "http://localhost/api/orders")
                {
                    Version = http2 ? HttpVersion.Version20 : HttpVersion.Version11,
                    VersionPolicy = HttpVersionPolicy.RequestVersionExact,
                };
                request.Headers.TryAddWithoutValidation("authorization", Token);
                request.Headers.TryAddWithoutValidation("cookie", Cookie);
                request.Headers.TryAddWithoutValidation("x-tenant", "blue");
                request.Headers.TryAddWithoutValidation("x-client", "mobile-4.2.1");
                using HttpResponseMessage response = await http.SendAsync(request);
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            }
        }

        await Task.WhenAll(Enumerable.Range(0, concurrency).Select(_ => Worker(requests / concurrency)));
    }

    private readonly record struct Measured(double BytesPerRequest, long Served);
}
