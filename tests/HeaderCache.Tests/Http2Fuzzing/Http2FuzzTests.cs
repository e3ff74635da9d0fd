using HeaderCache.InMemory;
using HeaderCache.Tests.Fuzzing;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Http2Fuzzing;

/// <summary>
/// The HTTP/2 fuzz app on two in-memory Kestrels with HTTP/2-only endpoints: HeaderCache on, and Kestrel alone, each
/// observing hosting's end of its requests. With <c>HEADERCACHE_H2FUZZ_BASELINE=1</c> both are Kestrel alone: a run then
/// shows that the transcripts depend on nothing but the bytes and their cut.
/// </summary>
public sealed class Http2ServerPair : IAsyncLifetime
{
    internal Http2FuzzApp OnApp { get; } = new();

    internal Http2FuzzApp AloneApp { get; } = new();

    /// <summary>Both servers are Kestrel alone (<c>HEADERCACHE_H2FUZZ_BASELINE=1</c>).</summary>
    internal bool Baseline { get; } = FuzzSettings.Get("HEADERCACHE_H2FUZZ_BASELINE", 0) == 1;

    internal InMemoryKestrel On { get; private set; } = null!;

    internal InMemoryKestrel Alone { get; private set; } = null!;

    /// <summary>The differential fuzzer over the pair; HeaderCache's connections report their hits to <paramref name="engagement"/>.</summary>
    internal DifferentialFuzzer Fuzzer(Engagement engagement, IdlePauses? pauses = null) =>
        new(Http2Fuzzing.Protocol, Http2Fuzzing.InMemory(On, OnApp, engagement, pauses), Http2Fuzzing.InMemory(Alone, AloneApp, pauses: pauses));

    private int _minThreads;

    public async Task InitializeAsync()
    {
        // Hosting's end of a stream in a lingering case blocks its thread until a later stream has started (see
        // Http2Fuzzing): with the pool's default minimum (the core count) the streams they wait for would often wait
        // for a thread of their own, up to the limit.
        ThreadPool.GetMinThreads(out _minThreads, out int io);
        ThreadPool.SetMinThreads(Math.Max(_minThreads, 32), io);
        On = await InMemoryKestrel.StartHttp2Async(headerCache: !Baseline, OnApp.HandleAsync);
        Alone = await InMemoryKestrel.StartHttp2Async(headerCache: false, AloneApp.HandleAsync);
        OnApp.Observe(On.Services);
        AloneApp.Observe(Alone.Services);
    }

    public async Task DisposeAsync()
    {
        OnApp.Dispose();
        AloneApp.Dispose();
        ThreadPool.GetMinThreads(out _, out int io);
        ThreadPool.SetMinThreads(_minThreads, io);
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
        double minutes = FuzzSettings.Get("HEADERCACHE_H2FUZZ_MINUTES", 1.0);
        DateTime deadline = DateTime.UtcNow.AddMinutes(minutes);

        var engagement = new Engagement();
        var pauses = new IdlePauses();
        var started = System.Diagnostics.Stopwatch.StartNew();
        FuzzResult result = await servers.Fuzzer(engagement, pauses).RunAsync(seed, cases, deadline, Http2Fuzzing.InMemoryMix, FuzzSettings.Get("HEADERCACHE_H2FUZZ_PARALLEL", 4), output.WriteLine);
        output.WriteLine($"{result} in {started.Elapsed.TotalSeconds:F1} s ({result.Cases / started.Elapsed.TotalSeconds:F0} cases/s); {engagement}; idle trims: {pauses.Trims}");
        Http2FuzzApp on = servers.OnApp, alone = servers.AloneApp;
        output.WriteLine($"requests: {on.Started} started, {on.Ended} read at hosting's end ({on.HostingEndEvents} events), {on.Lingered} of those waited for a later stream, {on.Overlapped} saw one start, {on.LingerTimeouts} waited in vain; alone {alone.Started}, {alone.Ended}, {alone.Lingered}, {alone.Overlapped}, {alone.LingerTimeouts}");
        if (result.Divergences.Count > 0)
        {
            output.WriteLine($"first differences by point: {string.Join(", ", result.Divergences.GroupBy(d => d.Point).Select(point => $"{point.Key} {point.Count()}"))}");
        }

        foreach (Divergence divergence in result.Divergences.Take(3))
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

        // Not vacuous: most requests were answered, and the faults reached Kestrel's stream and connection errors.
        Assert.True(result.Statuses[":status: 200"] > result.Cases, $"200s: {result.Statuses[":status: 200"]} in {result.Cases} cases");
        Assert.True(result.Statuses[":status: 431"] > 0, "no 431");
        Assert.True(result.Statuses["RST_STREAM code=1"] > 0, "no RST_STREAM(PROTOCOL_ERROR)");
        Assert.True(result.Statuses["GOAWAY last=0 code=1"] + result.Statuses["GOAWAY last=1 code=1"] > 0, "no GOAWAY(PROTOCOL_ERROR)");
        Assert.True(result.Statuses.ToString().Contains("code=9", StringComparison.Ordinal), "no COMPRESSION_ERROR");
        Assert.True(pauses.Trims > result.Cases / 50, $"readers let go of their buffers {pauses.Trims} times in {result.Cases} cases");

        // Every request's headers were read at hosting's end too, and many of those ends saw another stream start.
        Assert.True(on.Started > result.Cases, $"{on.Started} requests in {result.Cases} cases");
        Assert.Equal(on.Started, on.Ended);
        Assert.Equal(alone.Started, alone.Ended);
        Assert.True(on.HostingEndEvents >= on.Ended, $"{on.HostingEndEvents} hosting-end events for {on.Ended} requests");
        Assert.True(on.Overlapped > result.Cases / 4, $"{on.Overlapped} hosting ends saw another stream start in {result.Cases} cases");
        Assert.Empty(result.Divergences);
    }

    [Fact]
    public async Task Generated_connections_are_served_from_the_cache()
    {
        var engagement = new Engagement();
        FuzzResult result = await servers.Fuzzer(engagement).RunAsync(7, 300, DateTime.UtcNow.AddMinutes(1), Http2Fuzzing.InMemoryMix with { Mutated = 0 }, parallel: 4);
        output.WriteLine($"{result}; {engagement}; {servers.OnApp.Overlapped} hosting ends saw another stream start, {servers.OnApp.LingerTimeouts} waited in vain");
        Assert.Empty(result.Divergences);
        // More than half of the connections made to be served: all but those that churn or start bare.
        Assert.True(engagement.Engaged * 2 > engagement.Connections - engagement.SteppedAside - engagement.NothingToCache, engagement.ToString());

        // Churning connections and those that start bare reach the steps aside, so the comparison covers blocks after them.
        Assert.True(engagement.SteppedAside > 0, engagement.ToString());
        Assert.True(engagement.NothingToCache > 0, engagement.ToString());
    }
}
