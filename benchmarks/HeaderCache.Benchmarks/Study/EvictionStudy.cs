using HeaderCache.Testing;
using System.Buffers;
using System.Globalization;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Compaction;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// The eviction study behind <c>docs/eviction.md</c>: replays every traffic profile through the real
/// <see cref="HeaderStringCache"/> (CLOCK) and the study's other policies at each slot count and prints markdown tables.
/// </summary>
/// <remarks>
/// Every simulated connection has its own cache and its own placeholder seed, and replays its profile
/// file for <see cref="RequestsPerConnection"/> requests. The lookups are not re-derived from the header
/// lines: the requests go through the product's <see cref="HeadCompactor"/>, and every lookup it makes in
/// its cache is recorded (through the cache's fingerprint hook), so the study follows whatever rules the
/// compactor has. All policies and sizes then replay the same recorded lookups.
/// OPT is Belady's farthest-next-use eviction over the same lookups (every miss admitted, as the engine
/// does): no policy can beat it at that size. "all" is the hit rate with unlimited slots.
/// </remarks>
internal static class EvictionStudy
{
    public const string Command = "dotnet run -c Release --project benchmarks/HeaderCache.Benchmarks -- eviction-study";

    private const int Connections = 20;
    private const int RequestsPerConnection = 200;
    private const int HeadlineSlots = HeaderStringCache.DefaultSlotCount;
    private const int Doorkeeper = 64;

    private static readonly int[] SlotCounts = [8, 16, 25, 32, 48, 64];
    private static readonly string[] Policies = ["LRU", "CLOCK", "SIEVE"];

    public static void Run(TextWriter output)
    {
        var profiles = TrafficProfile.LoadAll();
        var traces = profiles.ToDictionary(
            p => p,
            p => Enumerable.Range(1, Connections).Select(seed => Trace.Record(p.Connect(seed), RequestsPerConnection)).ToArray());

        output.WriteLine(Invariant($"Eviction study: {Connections} connections per profile (seeds 1-{Connections}), {RequestsPerConnection} requests per connection, one cache per connection."));
        output.WriteLine(Invariant($"Command: `{Command}`"));
        output.WriteLine();
        output.WriteLine(Invariant($"Lookups recorded from the product's HeadCompactor; replaying them through a fresh {HeadlineSlots}-slot CLOCK cache (the engine's) reproduced the recording run's hits and misses on every connection."));
        output.WriteLine();

        SharedTierStudy.Run(profiles, Connections, RequestsPerConnection, output);

        output.WriteLine(Invariant($"### Hit rate at {HeadlineSlots} slots"));
        output.WriteLine();
        output.WriteLine(Invariant($"| profile | lookups/req | distinct strings/conn | LRU | CLOCK | SIEVE | OPT | all | SIEVE + doorkeeper {Doorkeeper} (prototype) |"));
        output.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        foreach (var profile in profiles)
        {
            Trace[] t = traces[profile];
            long requests = t.Sum(x => (long)x.Requests);
            var cells = Policies.Select(policy => Percent(Simulate(t, policy, HeadlineSlots).HitRate));
            double distinct = t.Average(x => x.Lookups.Count - x.OptimalHits(int.MaxValue));
            output.WriteLine(Invariant(
                $"| {profile.Name} | {(double)t.Sum(x => x.Lookups.Count) / requests:0.0} | {distinct:0.0} | {string.Join(" | ", cells)} | {Percent(Optimal(t, HeadlineSlots))} | {Percent(Optimal(t, int.MaxValue))} | {Percent(WithDoorkeeper(t, HeadlineSlots))} |"));
        }

        output.WriteLine();
        output.WriteLine(Invariant($"### Names in their own {HeaderStringCache.NameSlotCount} slots"));
        output.WriteLine();
        output.WriteLine(Invariant($"The tables above and below are values only, and count the values the compactor looked up: a name whose values missed {ValueAdmission.MissesBeforeNameBypass} times in a row has most of its values created without a look-up (per-name admission), and those are not in them. Names Kestrel has no constant for go through the connection's cache of names ({HeaderStringCache.NameSlotCount} slots, CLOCK). What the application gets, names and values and bypassed values together, is the next table."));
        output.WriteLine();
        output.WriteLine("| profile | name lookups/req | name hit rate |");
        output.WriteLine("|---|---:|---:|");
        foreach (var profile in profiles)
        {
            Trace[] t = traces[profile];
            long requests = t.Sum(x => (long)x.Requests);
            long nameHits = t.Sum(x => x.Names.Hits);
            long nameLookups = nameHits + t.Sum(x => x.Names.Misses);
            output.WriteLine(Invariant($"| {profile.Name} | {(double)nameLookups / requests:0.0} | {Percent((double)nameHits / Math.Max(1, nameLookups))} |"));
        }

        output.WriteLine();
        output.WriteLine("### Header lines served, at the defaults");
        output.WriteLine();
        output.WriteLine("What an application gets: of the header lines the compactor takes out of heads, the share put back without a new name or value string (a cache hit, a constant, an empty value); the rest got a new string, as with Kestrel alone. Lines Kestrel reuses a string for on its own are left to it and not counted.");
        output.WriteLine();
        output.WriteLine("| profile | lines taken/req | served |");
        output.WriteLine("|---|---:|---:|");
        foreach (var profile in profiles)
        {
            Trace[] t = traces[profile];
            long served = t.Sum(x => x.LinesServed);
            long taken = served + t.Sum(x => x.LinesCreated);
            output.WriteLine(Invariant($"| {profile.Name} | {(double)taken / t.Sum(x => (long)x.Requests):0.0} | {Percent((double)served / Math.Max(1, taken))} |"));
        }

        output.WriteLine();
        output.WriteLine("### Hit rate and bytes saved per request, by slot count");
        output.WriteLine();
        output.WriteLine("| profile | slots | LRU | CLOCK | SIEVE | OPT | LRU B/req | CLOCK B/req | SIEVE B/req |");
        output.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        foreach (var profile in profiles)
        {
            Trace[] t = traces[profile];
            foreach (int slots in SlotCounts)
            {
                Result[] results = Policies.Select(policy => Simulate(t, policy, slots)).ToArray();
                output.WriteLine(Invariant($"| {profile.Name} | {slots} | {string.Join(" | ", results.Select(r => Percent(r.HitRate)))} | {Percent(Optimal(t, slots))} | {string.Join(" | ", results.Select(r => r.SavedPerRequest.ToString("N0", CultureInfo.InvariantCulture)))} |"));
            }
        }

        output.WriteLine();
        output.WriteLine(Invariant($"### Header-string bytes allocated per request for the values the cache looks up ({HeadlineSlots} slots)"));
        output.WriteLine();
        output.WriteLine("Values a name's admission created without a look-up are in \"Kestrel alone\" (which counts every line taken) but not in the other columns; the bytes a server allocates per request, all included, are in docs/benchmarks.md.");
        output.WriteLine();
        output.WriteLine("| profile | no reuse | Kestrel alone | LRU | CLOCK | SIEVE | OPT |");
        output.WriteLine("|---|---:|---:|---:|---:|---:|---:|");
        foreach (var profile in profiles)
        {
            Trace[] t = traces[profile];
            double requests = t.Sum(x => x.Requests);
            double all = t.Sum(x => x.LookupBytes) / requests;
            var cells = Policies.Select(policy => (all - Simulate(t, policy, HeadlineSlots).SavedPerRequest).ToString("N0", CultureInfo.InvariantCulture));
            double optimal = t.Sum(x => x.MissBytes(HeadlineSlots)) / requests;
            output.WriteLine(Invariant($"| {profile.Name} | {all:N0} | {t.Sum(x => x.KestrelBytes) / requests:N0} | {string.Join(" | ", cells)} | {optimal:N0} |"));
        }
    }

    private static string Percent(double rate) => rate.ToString("0.0%", CultureInfo.InvariantCulture);

    // CLOCK is the engine itself; the other policies are the study's own (StudyPolicy).
    private static Result Simulate(Trace[] traces, string policy, int slots)
    {
        long hits = 0, misses = 0, saved = 0, requests = 0;
        foreach (Trace trace in traces)
        {
            if (policy == "CLOCK")
            {
                var cache = new HeaderStringCache(slots, seed: (uint)trace.Seed);
                foreach (byte[] lookup in trace.Lookups)
                {
                    if (!cache.TryGetOrAdd(lookup, out _))
                    {
                        throw new InvalidOperationException("The trace holds a lookup the cache refuses.");
                    }
                }

                (hits, misses, saved) = (hits + cache.Counters.Hits, misses + cache.Counters.Misses, saved + cache.Counters.BytesSaved);
            }
            else
            {
                StudyPolicy model = policy == "LRU" ? StudyPolicy.Lru(slots) : StudyPolicy.Sieve(slots);
                trace.Lookups.ForEach(model.Access);
                (hits, misses, saved) = (hits + model.Hits, misses + model.Misses, saved + model.BytesSaved);
            }

            requests += trace.Requests;
        }

        return new Result((double)hits / (hits + misses), (double)saved / requests);
    }

    // A prototype of admission: SIEVE, but a first miss is only remembered, and the value is admitted when it
    // misses again.
    private static double WithDoorkeeper(Trace[] traces, int slots)
    {
        long hits = 0, misses = 0;
        foreach (Trace trace in traces)
        {
            StudyPolicy model = StudyPolicy.SieveWithDoorkeeper(slots, Doorkeeper);
            trace.Lookups.ForEach(model.Access);
            hits += model.Hits;
            misses += model.Misses;
        }

        return (double)hits / (hits + misses);
    }

    private static double Optimal(Trace[] traces, int slots)
    {
        long hits = traces.Sum(t => t.OptimalHits(slots));
        return (double)hits / traces.Sum(t => (long)t.Lookups.Count);
    }

    private readonly record struct Result(double HitRate, double SavedPerRequest);

    /// <summary>The lookups one simulated connection makes, in order.</summary>
    private sealed class Trace
    {
        private int[]? _ids;
        private int[]? _nextUse;

        private Trace(int seed, int requests, List<byte[]> lookups, long kestrelBytes, CacheCounters names, HeadCompactor compactor)
        {
            Names = names;
            LinesServed = compactor.LinesServed;
            LinesCreated = compactor.LinesCreated;
            Seed = seed;
            Requests = requests;
            Lookups = lookups;
            KestrelBytes = kestrelBytes;
            LookupBytes = lookups.Sum(l => (long)HeaderStringCache.StringSize(l.Length));
        }

        public int Seed { get; }

        /// <summary>What the connection's own cache of names did (the product's, <see cref="HeaderStringCache.NameSlotCount"/> slots, CLOCK).</summary>
        public CacheCounters Names { get; }

        public int Requests { get; }

        /// <summary>Lines the compactor took out and put back without a new string.</summary>
        public long LinesServed { get; }

        /// <summary>Lines the compactor took out for which a new string was made.</summary>
        public long LinesCreated { get; }

        public List<byte[]> Lookups { get; }

        public long KestrelBytes { get; }

        public long LookupBytes { get; }

        /// <summary>Sends <paramref name="requests"/> requests of <paramref name="connection"/> through the
        /// product's compactor and records every lookup it makes in its cache, in order.</summary>
        public static Trace Record(TrafficProfile.Connection connection, int requests)
        {
            var lookups = new List<byte[]>();
            var cache = new HeaderStringCache(HeadlineSlots, seed: (uint)connection.Seed)
            {
                FingerprintOverride = (bytes, seed) =>
                {
                    lookups.Add(bytes.ToArray());
                    return HeaderStringCache.Fingerprint(bytes, seed);
                },
            };

            // Lines served from the memo of lines touch the cache without a lookup, so they would not be recorded; the
            // memo changes no counter of either cache (LineMemoTests), so recording without it gives the same lookups.
            using var driver = new ReaderDriver(cache);
            driver.Compactor.RecallsLines = false;
            var kestrel = new KestrelAlone();
            for (int i = 0; i < requests; i++)
            {
                driver.Send(connection.Render(i));
                driver.Clear();
                var headers = new HeaderDictionary();
                driver.Queue.TryApply(headers);   // false when the head had nothing to take out
                if (StudyConnections.HasLeftKestrelAlone(driver, i, connection.Seed))
                {
                    break;
                }

                kestrel.Add(headers);
            }

            var trace = new Trace(connection.Seed, requests, lookups, kestrel.Bytes, driver.Names.Counters, driver.Compactor);
            var replay = new HeaderStringCache(HeadlineSlots, seed: (uint)connection.Seed);
            foreach (byte[] lookup in lookups)
            {
                replay.TryGetOrAdd(lookup, out _);
            }

            if ((replay.Counters.Hits, replay.Counters.Misses) != (cache.Counters.Hits, cache.Counters.Misses))
            {
                throw new InvalidOperationException(Invariant(
                    $"Seed {connection.Seed}: the compactor's cache saw {cache.Counters.Hits} hits / {cache.Counters.Misses} misses, the replay {replay.Counters.Hits} / {replay.Counters.Misses}."));
            }

            return trace;
        }

        /// <summary>Belady: on a miss with all slots taken, evict the string whose next use is farthest.</summary>
        public long OptimalHits(int slots) => RunOptimal(slots).Hits;

        /// <summary>String bytes the optimal cache still allocates.</summary>
        public long MissBytes(int slots) => RunOptimal(slots).MissBytes;

        private (long Hits, long MissBytes) RunOptimal(int slots)
        {
            Index();
            int[] ids = _ids!;
            int[] nextUse = _nextUse!;
            var cached = new Dictionary<int, int>(); // id -> position of its next use
            long hits = 0, missBytes = 0;
            for (int i = 0; i < ids.Length; i++)
            {
                if (cached.Remove(ids[i]))
                {
                    hits++;
                }
                else
                {
                    missBytes += HeaderStringCache.StringSize(Lookups[i].Length);
                    if (cached.Count == slots)
                    {
                        int victim = cached.MaxBy(entry => entry.Value).Key;
                        cached.Remove(victim);
                    }
                }

                cached[ids[i]] = nextUse[i];
            }

            return (hits, missBytes);
        }

        private void Index()
        {
            if (_ids is not null)
            {
                return;
            }

            var idOf = new Dictionary<string, int>(StringComparer.Ordinal);
            _ids = new int[Lookups.Count];
            for (int i = 0; i < _ids.Length; i++)
            {
                string key = Encoding.Latin1.GetString(Lookups[i]);
                if (!idOf.TryGetValue(key, out int id))
                {
                    id = idOf.Count;
                    idOf.Add(key, id);
                }

                _ids[i] = id;
            }

            _nextUse = new int[_ids.Length];
            var upcoming = new Dictionary<int, int>();
            for (int i = _ids.Length - 1; i >= 0; i--)
            {
                _nextUse[i] = upcoming.TryGetValue(_ids[i], out int next) ? next : int.MaxValue;
                upcoming[_ids[i]] = i;
            }
        }
    }
}
