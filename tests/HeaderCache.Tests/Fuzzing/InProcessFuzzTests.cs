using HeaderCache.Caching;
using HeaderCache.Hosting;
using HeaderCache.Tests.Integration;
using Microsoft.Extensions.DependencyInjection;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>Both servers of the in-process fuzzer: HeaderCache on and Kestrel alone, over in-memory transports.</summary>
public sealed class InMemoryServerPair : IAsyncLifetime
{
    internal InMemoryServer On { get; private set; } = null!;

    internal InMemoryServer Alone { get; private set; } = null!;

    public async Task InitializeAsync()
    {
        On = await InMemoryServer.StartAsync(CacheMode.On);
        Alone = await InMemoryServer.StartAsync(CacheMode.KestrelAlone);
    }

    public async Task DisposeAsync()
    {
        await On.DisposeAsync();
        await Alone.DisposeAsync();
    }
}

/// <summary>
/// The seeded in-process differential fuzz run of the test suite. Scale it up with environment variables
/// (see <c>docs/fuzzing.md</c>): <c>HEADERCACHE_FUZZ_CASES</c>, <c>HEADERCACHE_FUZZ_SEED</c>,
/// <c>HEADERCACHE_FUZZ_MINUTES</c>.
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
        var started = System.Diagnostics.Stopwatch.StartNew();
        InProcessFuzzer.Result result = await InProcessFuzzer.RunAsync(servers.On, servers.Alone, seed, cases, deadline, progress: output.WriteLine);
        output.WriteLine($"seed {seed}: {result.Cases} cases in {started.Elapsed.TotalSeconds:F0} s, {result.Divergences.Count} divergences; " +
            $"lines the cache took out: {activity.LinesTaken}; idle trims: {servers.On.Trims}; responses by status: " +
            string.Join(", ", result.Statuses.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key}: {s.Value}")));
        foreach (var d in result.Divergences.Take(5))
        {
            output.WriteLine($"case {d.Case} (pieces {d.Pieces}): \"{d.Bytes}\"\n-- on --\n{d.On}\n-- alone --\n{d.Alone}");
        }

        Assert.True(result.Cases >= Math.Min(cases, 1000), $"only {result.Cases} cases ran before the deadline");

        // Not vacuous: the cache served lines, most cases were answered, and rejections occurred too.
        Assert.True(activity.LinesTaken > result.Cases, $"the cache took out {activity.LinesTaken} lines in {result.Cases} cases");
        Assert.True(result.Statuses.GetValueOrDefault("200") > result.Cases / 2, $"200s: {result.Statuses.GetValueOrDefault("200")} in {result.Cases} cases");
        Assert.True(result.Statuses.GetValueOrDefault("400") > result.Cases / 20, $"400s: {result.Statuses.GetValueOrDefault("400")} in {result.Cases} cases");
        Assert.True(servers.On.Trims > result.Cases / 50, $"connections let go of their memo {servers.On.Trims} times in {result.Cases} cases");
        Assert.Empty(result.Divergences);
    }
}
