using HeaderCache.Tests.Integration;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// The seeded differential fuzz run over real sockets (the in-process fuzzer does the volume). Scale it with
/// <c>HEADERCACHE_SOCKET_FUZZ_CASES</c>, <c>HEADERCACHE_SOCKET_FUZZ_SEED</c>, <c>HEADERCACHE_SOCKET_FUZZ_MINUTES</c>.
/// </summary>
[Collection(ServerPairGroup.Name)]
public sealed class DifferentialFuzzTests(ServerPair servers, ITestOutputHelper output)
{
    [Fact]
    public async Task Generated_streams_over_sockets_behave_as_on_Kestrel_alone()
    {
        int cases = FuzzSettings.Get("HEADERCACHE_SOCKET_FUZZ_CASES", 150);
        int seed = FuzzSettings.Get("HEADERCACHE_SOCKET_FUZZ_SEED", 20261122);
        double minutes = FuzzSettings.Get("HEADERCACHE_SOCKET_FUZZ_MINUTES", 1.0);
        DateTime deadline = DateTime.UtcNow.AddMinutes(minutes);

        using var activity = new CacheActivity(servers.On);
        var (run, divergences, statuses) = await DifferentialFuzzer.RunAsync(servers.On.EndPoint, servers.Alone.EndPoint, seed, cases, deadline, output.WriteLine);
        output.WriteLine($"seed {seed}: {run} cases, {divergences.Count} divergences; responses by status: " +
            string.Join(", ", statuses.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key}: {s.Value}")));
        foreach (var d in divergences.Take(5))
        {
            output.WriteLine($"case {d.Case} (split seed {d.SplitSeed}): \"{d.Bytes}\"\n-- on --\n{d.On}\n-- alone --\n{d.Off}");
        }

        Assert.True(run >= Math.Min(cases, 100), $"only {run} cases ran before the deadline");

        // Not vacuous: the cache served lines, most answers are successes, and rejections occur too.
        Assert.True(activity.LinesTaken > run, $"the cache took out {activity.LinesTaken} lines in {run} cases");
        Assert.True(statuses.GetValueOrDefault("200") > run, $"200s: {statuses.GetValueOrDefault("200")} in {run} cases");
        Assert.True(statuses.GetValueOrDefault("400") > run / 20, $"400s: {statuses.GetValueOrDefault("400")} in {run} cases");
        Assert.Empty(divergences);
    }

    [Fact]
    public void The_generator_is_deterministic_and_varied()
    {
        byte[][] first = Enumerable.Range(0, 50).Select(_ => Array.Empty<byte>()).ToArray();
        var a = new RequestStreamGenerator(7);
        var b = new RequestStreamGenerator(7);
        for (int i = 0; i < first.Length; i++)
        {
            first[i] = a.Next();
            Assert.Equal(first[i], b.Next());
        }

        Assert.True(first.Select(Convert.ToBase64String).Distinct().Count() > 45);
        string all = string.Concat(first.Select(x => System.Text.Encoding.Latin1.GetString(x)));
        Assert.Contains("Content-Length", all, StringComparison.Ordinal);
        Assert.Contains("Transfer-Encoding", all, StringComparison.Ordinal);
    }

}
