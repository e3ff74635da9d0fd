using HeaderCache.InMemory;
using HeaderCache.Tests.Integration;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// The sample app on two in-memory Kestrels: HeaderCache on, and Kestrel alone, each recording what its application
/// reads of every request's headers over the request's life (<see cref="Http1Timelines"/>). With
/// <c>HEADERCACHE_FUZZ_BASELINE=1</c> both are Kestrel alone: a run then shows that the transcripts depend on nothing
/// but the bytes and their cut.
/// </summary>
public sealed class InMemoryServerPair : IAsyncLifetime
{
    internal InMemoryKestrel On { get; private set; } = null!;

    internal InMemoryKestrel Alone { get; private set; } = null!;

    internal Http1Timelines OnTimelines { get; } = new();

    internal Http1Timelines AloneTimelines { get; } = new();

    /// <summary>Both servers are Kestrel alone (<c>HEADERCACHE_FUZZ_BASELINE=1</c>).</summary>
    internal bool Baseline { get; } = FuzzSettings.Get("HEADERCACHE_FUZZ_BASELINE", 0) == 1;

    /// <summary>The differential fuzzer over the pair, the client pausing with <paramref name="pauses"/> in idle cases.</summary>
    internal DifferentialFuzzer Fuzzer(IdlePauses pauses) =>
        new(Http1Fuzzing.Protocol, Http1Fuzzing.InMemory(On, pauses, OnTimelines), Http1Fuzzing.InMemory(Alone, pauses, AloneTimelines));

    public async Task InitializeAsync()
    {
        On = await SampleServer.StartInMemoryAsync(Baseline ? CacheMode.KestrelAlone : CacheMode.On, builder => builder.Services.AddSingleton<IStartupFilter>(OnTimelines));
        Alone = await SampleServer.StartInMemoryAsync(CacheMode.KestrelAlone, builder => builder.Services.AddSingleton<IStartupFilter>(AloneTimelines));
        OnTimelines.Observe(On.Services);
        AloneTimelines.Observe(Alone.Services);
    }

    public async Task DisposeAsync()
    {
        OnTimelines.Dispose();
        AloneTimelines.Dispose();
        await On.DisposeAsync();
        await Alone.DisposeAsync();
    }
}

/// <summary>
/// The seeded in-process differential fuzz run of the test suite: the same bytes, cut the same way, go to HeaderCache
/// and to Kestrel alone, and the two transcripts (every response byte but <c>Date</c>, after which byte it came, and
/// when the server closed) must be equal. Scale it up with environment variables (see <c>docs/fuzzing.md</c>):
/// <c>HEADERCACHE_FUZZ_CASES</c>, <c>HEADERCACHE_FUZZ_SEED</c>, <c>HEADERCACHE_FUZZ_MINUTES</c>.
/// </summary>
public sealed class InProcessFuzzTests(InMemoryServerPair servers, ITestOutputHelper output) : IClassFixture<InMemoryServerPair>
{
    [Fact]
    public async Task Generated_and_mutated_streams_behave_as_on_Kestrel_alone_byte_for_byte_and_in_time()
    {
        int cases = FuzzSettings.Get("HEADERCACHE_FUZZ_CASES", 20_000);
        int seed = FuzzSettings.Get("HEADERCACHE_FUZZ_SEED", 20261123);
        double minutes = FuzzSettings.Get("HEADERCACHE_FUZZ_MINUTES", 1.5);
        DateTime deadline = DateTime.UtcNow.AddMinutes(minutes);

        using var activity = new CacheActivity(servers.On.Services);
        var pauses = new IdlePauses();
        var started = System.Diagnostics.Stopwatch.StartNew();
        FuzzResult result = await servers.Fuzzer(pauses).RunAsync(seed, cases, deadline, Http1Fuzzing.InMemoryMix, parallel: 4, output.WriteLine);
        output.WriteLine($"{result} in {started.Elapsed.TotalSeconds:F0} s; lines the cache served: {activity.LinesServed} of {activity.LinesTaken} it took out; idle trims: {pauses.Trims}");
        Http1Timelines on = servers.OnTimelines, alone = servers.AloneTimelines;
        output.WriteLine($"timelines: {on.Started} requests started, {on.Ended} reached hosting's end ({on.HostingEndEvents} events), {on.AfterABody} came after a body on their connection; alone {alone.Started}, {alone.Ended} ({alone.HostingEndEvents})");
        if (result.Divergences.Count > 0)
        {
            output.WriteLine($"first differences by point: {string.Join(", ", result.Divergences.GroupBy(d => d.Point).Select(point => $"{point.Key} {point.Count()}"))}");
        }

        foreach (Divergence divergence in result.Divergences.Take(5))
        {
            output.WriteLine(divergence.ToString());
        }

        Assert.True(result.Cases >= Math.Min(cases, 1000), $"only {result.Cases} cases ran before the deadline");
        if (servers.Baseline)
        {
            // Kestrel alone against Kestrel alone: only the transcripts' equality means anything.
            Assert.Empty(result.Divergences);
            return;
        }

        // Not vacuous: the cache took lines out and served many, most cases were answered, and rejections occurred too.
        Assert.True(activity.LinesTaken > result.Cases, $"the cache took out {activity.LinesTaken} lines in {result.Cases} cases");
        Assert.True(activity.LinesServed > result.Cases / 2, $"the cache served {activity.LinesServed} lines in {result.Cases} cases");
        Assert.True(result.Statuses["200"] > result.Cases / 2, $"200s: {result.Statuses["200"]} in {result.Cases} cases");
        Assert.True(result.Statuses["400"] > result.Cases / 20, $"400s: {result.Statuses["400"]} in {result.Cases} cases");
        Assert.True(pauses.Trims > result.Cases / 50, $"connections let go of their memo {pauses.Trims} times in {result.Cases} cases");

        // Every request's headers were read at hosting's end too, and many requests followed a body on their connection.
        Assert.True(on.Started > result.Cases / 2, $"{on.Started} requests in {result.Cases} cases");
        Assert.Equal(on.Started, on.Ended);
        Assert.Equal(alone.Started, alone.Ended);
        Assert.True(on.HostingEndEvents >= on.Ended, $"{on.HostingEndEvents} hosting-end events for {on.Ended} requests");
        Assert.True(on.AfterABody > result.Cases / 20, $"{on.AfterABody} requests after a body in {result.Cases} cases");
        Assert.Empty(result.Divergences);
    }
}
