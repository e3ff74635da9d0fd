using HeaderCache.InMemory;
using HeaderCache.Tests.Fuzzing;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Http2Fuzzing;

/// <summary>The HTTP/2 fuzz app on two in-memory Kestrels with HTTP/2-only endpoints: HeaderCache on, and Kestrel alone.</summary>
public sealed class Http2ServerPair : IAsyncLifetime
{
    internal Http2FuzzApp OnApp { get; } = new();

    internal Http2FuzzApp AloneApp { get; } = new();

    internal InMemoryKestrel On { get; private set; } = null!;

    internal InMemoryKestrel Alone { get; private set; } = null!;

    /// <summary>The differential fuzzer over the pair; HeaderCache's connections report their hits to <paramref name="engagement"/>.</summary>
    internal DifferentialFuzzer Fuzzer(Engagement engagement, IdlePauses? pauses = null) =>
        new(Http2Fuzzing.Protocol, Http2Fuzzing.InMemory(On, OnApp, engagement, pauses), Http2Fuzzing.InMemory(Alone, AloneApp, pauses: pauses));

    public async Task InitializeAsync()
    {
        On = await InMemoryKestrel.StartHttp2Async(headerCache: true, OnApp.HandleAsync);
        Alone = await InMemoryKestrel.StartHttp2Async(headerCache: false, AloneApp.HandleAsync);
    }

    public async Task DisposeAsync()
    {
        await On.DisposeAsync();
        await Alone.DisposeAsync();
    }
}

/// <summary>
/// The seeded in-process differential fuzz run for HTTP/2 (see <see cref="Http2Fuzzing"/> for what is compared and why):
/// generated and mutated connections go to HeaderCache and to Kestrel alone in the same writes, and the transcripts must
/// be equal. Scale it up with <c>HEADERCACHE_H2FUZZ_CASES</c>, <c>HEADERCACHE_H2FUZZ_SEED</c>,
/// <c>HEADERCACHE_H2FUZZ_MINUTES</c> (see <c>docs/fuzzing.md</c> and <c>tests/fuzz/run.sh h2</c>).
/// </summary>
public sealed class Http2InProcessFuzzTests(Http2ServerPair servers, ITestOutputHelper output) : IClassFixture<Http2ServerPair>
{
    [Fact]
    public async Task Generated_and_mutated_connections_behave_as_on_Kestrel_alone_frame_for_frame()
    {
        int cases = FuzzSettings.Get("HEADERCACHE_H2FUZZ_CASES", 4_000);
        int seed = FuzzSettings.Get("HEADERCACHE_H2FUZZ_SEED", 20261127);
        double minutes = FuzzSettings.Get("HEADERCACHE_H2FUZZ_MINUTES", 0.5);
        DateTime deadline = DateTime.UtcNow.AddMinutes(minutes);

        var engagement = new Engagement();
        var pauses = new IdlePauses();
        var started = System.Diagnostics.Stopwatch.StartNew();
        FuzzResult result = await servers.Fuzzer(engagement, pauses).RunAsync(seed, cases, deadline, Http2Fuzzing.InMemoryMix, FuzzSettings.Get("HEADERCACHE_H2FUZZ_PARALLEL", 4), output.WriteLine);
        output.WriteLine($"{result} in {started.Elapsed.TotalSeconds:F1} s ({result.Cases / started.Elapsed.TotalSeconds:F0} cases/s); {engagement}; idle trims: {pauses.Trims}");
        foreach (Divergence divergence in result.Divergences.Take(3))
        {
            output.WriteLine(divergence.ToString());
        }

        Assert.True(result.Cases >= Math.Min(cases, 1000), $"only {result.Cases} cases ran before the deadline");

        // Not vacuous: most requests were answered, and the faults reached Kestrel's stream and connection errors.
        Assert.True(result.Statuses[":status: 200"] > result.Cases, $"200s: {result.Statuses[":status: 200"]} in {result.Cases} cases");
        Assert.True(result.Statuses[":status: 431"] > 0, "no 431");
        Assert.True(result.Statuses["RST_STREAM code=1"] > 0, "no RST_STREAM(PROTOCOL_ERROR)");
        Assert.True(result.Statuses["GOAWAY last=0 code=1"] + result.Statuses["GOAWAY last=1 code=1"] > 0, "no GOAWAY(PROTOCOL_ERROR)");
        Assert.True(result.Statuses.ToString().Contains("code=9", StringComparison.Ordinal), "no COMPRESSION_ERROR");
        Assert.True(pauses.Trims > result.Cases / 50, $"readers let go of their buffers {pauses.Trims} times in {result.Cases} cases");
        Assert.Empty(result.Divergences);
    }

    [Fact]
    public async Task Generated_connections_are_served_from_the_cache()
    {
        var engagement = new Engagement();
        FuzzResult result = await servers.Fuzzer(engagement).RunAsync(7, 300, DateTime.UtcNow.AddMinutes(1), Http2Fuzzing.InMemoryMix with { Mutated = 0 }, parallel: 4);
        output.WriteLine($"{result}; {engagement}");
        Assert.Empty(result.Divergences);
        Assert.True(engagement.Engaged * 2 > engagement.Connections, engagement.ToString());
    }
}
