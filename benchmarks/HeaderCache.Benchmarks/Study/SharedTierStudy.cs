using System.Globalization;
using HeaderCache.Caching;
using HeaderCache.Compaction;
using HeaderCache.Testing;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// The shared tier in the eviction study: each profile's connections replayed one after another (all requests of
/// connection 1, then of connection 2, ...) through the product's compactor, with the tier off, on for values only,
/// and on for values and names (the product). Each profile gets a fresh tier, as a fresh process would: the first
/// <see cref="SharedAdmission.ConnectionsToAdmit"/> connections of a profile are the warm-up, since a value enters
/// the tier only when that many distinct connections sent it.
/// </summary>
internal static class SharedTierStudy
{
    private const int K = SharedAdmission.ConnectionsToAdmit;

    public static void Run(IReadOnlyList<TrafficProfile> profiles, int connections, int requests, TextWriter output)
    {
        var results = profiles.ToDictionary(
            p => p,
            p => (Off: Replay(p, connections, requests, null), Values: Replay(p, connections, requests, new SharedStrings(shareNames: false)),
                On: Replay(p, connections, requests, new SharedStrings())));

        output.WriteLine("### The shared tier: header lines served, tier off and on");
        output.WriteLine();
        output.WriteLine(Invariant($"{connections} connections per profile replayed one after another ({requests} requests each), so the tier can warm up; a fresh tier per profile. \"Served\": of the lines the compactor takes out of heads, the share put back without a new name or value string (a hit in the connection's caches or in the shared tier, a constant, an empty value). A value enters the tier after {K} distinct connections sent it."));
        output.WriteLine();
        output.WriteLine("| profile | lines taken/req | tier off | tier on, values only | tier on (values and names) | shared hits/conn | tier entries at the end (values + names) | goal | met |");
        output.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|---|");
        foreach (var profile in profiles)
        {
            var (off, values, on) = results[profile];
            double goal = profile.Name switch { "chrome" or "firefox" or "safari" => 0.95, "proxy-pool" => 0.70, _ => double.NaN };
            output.WriteLine(Invariant(
                $"| {profile.Name} | {(double)on.All.Taken / (connections * (long)requests):0.0} | {off.All} | {values.All} | {on.All} | {(double)on.SharedHits / connections:0.0} | {on.Entries} | {Goal(goal)} | {Met(goal, on.All.Share)} |"));
        }

        output.WriteLine();
        output.WriteLine("### The first request of a connection");
        output.WriteLine();
        output.WriteLine(Invariant($"Lines served on request 0 of each connection, all {connections} connections, and only connections {K + 1}-{connections} (those that start after the tier could have admitted anything: the steady state of a server that has seen {K} connections)."));
        output.WriteLine();
        output.WriteLine(Invariant($"| profile | lines taken | tier off | tier on, values only | tier on (values and names) | tier on, connections {K + 1}-{connections} | goal | met |"));
        output.WriteLine("|---|---:|---:|---:|---:|---:|---:|---|");
        foreach (var profile in profiles)
        {
            var (off, values, on) = results[profile];
            double goal = profile.Name is "chrome" or "firefox" or "safari" or "proxy-pool" ? 0.50 : double.NaN;
            output.WriteLine(Invariant(
                $"| {profile.Name} | {(double)on.First.Taken / connections:0.0} | {off.First} | {values.First} | {on.First} | {on.FirstWarm} | {Goal(goal)} | {Met(goal, on.First.Share)} |"));
        }

        output.WriteLine();
    }

    private static string Goal(double goal) => double.IsNaN(goal) ? "-" : Invariant($">= {goal:0%}");

    private static string Met(double goal, double share) => double.IsNaN(goal) ? "-" : share >= goal ? "yes" : "no";

    private static Outcome Replay(TrafficProfile profile, int connections, int requests, SharedStrings? shared)
    {
        Lines all = default, first = default, firstWarm = default;
        long sharedHits = 0;
        for (int seed = 1; seed <= connections; seed++)
        {
            TrafficProfile.Connection connection = profile.Connect(seed);
            using var driver = new ReaderDriver(new HeaderStringCache(seed: (uint)seed), recordSeen: false, shared: shared);
            for (int i = 0; i < requests; i++)
            {
                driver.Send(connection.Render(i));
                driver.Queue.TryApply(new HeaderDictionary());
                if (StudyConnections.HasLeftKestrelAlone(driver, i, seed))
                {
                    break;
                }

                if (i == 0)
                {
                    var lines = new Lines(driver.Compactor.LinesServed, driver.Compactor.StrippedLines);
                    first += lines;
                    firstWarm += seed > K ? lines : default;
                }
            }

            all += new Lines(driver.Compactor.LinesServed, driver.Compactor.StrippedLines);
            sharedHits += driver.Compactor.Counters.SharedHits;
        }

        string entries = shared is null ? "-" : Invariant($"{shared.Values.Count} + {shared.Names?.Count ?? 0}");
        return new Outcome(all, first, firstWarm, sharedHits, entries);
    }

    private readonly record struct Outcome(Lines All, Lines First, Lines FirstWarm, long SharedHits, string Entries);

    private readonly record struct Lines(long Served, long Taken)
    {
        public double Share => Taken == 0 ? 0 : (double)Served / Taken;

        public static Lines operator +(Lines left, Lines right) => new(left.Served + right.Served, left.Taken + right.Taken);

        public override string ToString() => Taken == 0 ? "-" : Share.ToString("0.0%", CultureInfo.InvariantCulture);
    }
}
