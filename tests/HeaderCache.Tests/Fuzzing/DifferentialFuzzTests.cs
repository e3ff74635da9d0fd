using HeaderCache.Tests.Integration;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// The seeded differential fuzz run over real sockets (the in-process fuzzer does the volume): real TCP reads, FIN and
/// reset handling. Scale it with <c>HEADERCACHE_SOCKET_FUZZ_CASES</c>, <c>HEADERCACHE_SOCKET_FUZZ_SEED</c>,
/// <c>HEADERCACHE_SOCKET_FUZZ_MINUTES</c>.
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
        var fuzzer = new DifferentialFuzzer(Http1Fuzzing.Protocol, Http1Fuzzing.OverSockets(servers.On.EndPoint), Http1Fuzzing.OverSockets(servers.Alone.EndPoint));
        FuzzResult result = await fuzzer.RunAsync(seed, cases, deadline, Http1Fuzzing.SocketMix, parallel: 4, output.WriteLine);
        output.WriteLine($"{result}; lines the cache served: {activity.LinesServed} of {activity.LinesTaken} it took out");
        foreach (Divergence divergence in result.Divergences.Take(5))
        {
            output.WriteLine(divergence.ToString());
        }

        Assert.True(result.Cases >= Math.Min(cases, 100), $"only {result.Cases} cases ran before the deadline");

        // Not vacuous: the cache took lines out and served many, most answers are successes, and rejections occur too.
        Assert.True(activity.LinesTaken > result.Cases, $"the cache took out {activity.LinesTaken} lines in {result.Cases} cases");
        Assert.True(activity.LinesServed > result.Cases / 2, $"the cache served {activity.LinesServed} lines in {result.Cases} cases");
        Assert.True(result.Statuses["200"] > result.Cases, $"200s: {result.Statuses["200"]} in {result.Cases} cases");
        Assert.True(result.Statuses["400"] > result.Cases / 20, $"400s: {result.Statuses["400"]} in {result.Cases} cases");
        Assert.Empty(result.Divergences);
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
