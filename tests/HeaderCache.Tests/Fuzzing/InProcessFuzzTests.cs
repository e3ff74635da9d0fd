using HeaderCache.InMemory;
using HeaderCache.Tests.Integration;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>The sample app on two in-memory Kestrels: HeaderCache on, and Kestrel alone.</summary>
public sealed class InMemoryServerPair : IAsyncLifetime
{
    internal InMemoryKestrel On { get; private set; } = null!;

    internal InMemoryKestrel Alone { get; private set; } = null!;

    /// <summary>The differential fuzzer over the pair, the client pausing with <paramref name="pauses"/> in idle cases.</summary>
    internal DifferentialFuzzer Fuzzer(IdlePauses pauses) =>
        new(Http1Fuzzing.Protocol, Http1Fuzzing.InMemory(On, pauses), Http1Fuzzing.InMemory(Alone, pauses));

    public async Task InitializeAsync()
    {
        On = await SampleServer.StartInMemoryAsync(CacheMode.On);
        Alone = await SampleServer.StartInMemoryAsync(CacheMode.KestrelAlone);
    }

    public async Task DisposeAsync()
    {
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
        foreach (Divergence divergence in result.Divergences.Take(5))
        {
            output.WriteLine(divergence.ToString());
        }

        Assert.True(result.Cases >= Math.Min(cases, 1000), $"only {result.Cases} cases ran before the deadline");

        // Not vacuous: the cache took lines out and served many, most cases were answered, and rejections occurred too.
        Assert.True(activity.LinesTaken > result.Cases, $"the cache took out {activity.LinesTaken} lines in {result.Cases} cases");
        Assert.True(activity.LinesServed > result.Cases / 2, $"the cache served {activity.LinesServed} lines in {result.Cases} cases");
        Assert.True(result.Statuses["200"] > result.Cases / 2, $"200s: {result.Statuses["200"]} in {result.Cases} cases");
        Assert.True(result.Statuses["400"] > result.Cases / 20, $"400s: {result.Statuses["400"]} in {result.Cases} cases");
        Assert.True(pauses.Trims > result.Cases / 50, $"connections let go of their memo {pauses.Trims} times in {result.Cases} cases");
        Assert.Empty(result.Divergences);
    }
}
