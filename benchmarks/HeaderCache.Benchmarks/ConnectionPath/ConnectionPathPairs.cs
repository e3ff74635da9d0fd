using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// HeaderCache and Kestrel alone in one process, taking turns every 64 requests for a while
/// (<c>dotnet HeaderCache.Benchmarks.dll connection-path-pairs chrome 30</c>), and the ratio of their CPU time per
/// request, over HTTP/1.1 or, with <c>h2</c>, over HTTP/2 (<see cref="Http2ConnectionPathBenchmarks"/>). Runs of the
/// same build on this machine move by 20 % and more from one to the next (the virtual machine's CPU is shared); turns
/// this short put both servers under the same conditions, so the ratio holds where the absolute figures do not. Linux
/// only: the process's CPU clock is read at every turn.
/// </summary>
/// <remarks>
/// The figure is the process's CPU time during each server's turns, client included (the same client for both), and
/// the garbage collections each server's allocations bring on mostly fall in its own turns. Bytes allocated per request
/// are the whole process's during each server's turns, client included, as Kestrel runs on thread-pool threads. The
/// ratio is printed for the whole run and for each tenth of it, whose spread says how far the whole can be trusted. With
/// a size in KB after the seconds, a <see cref="CacheEvictor"/> of that size runs before every request of both servers
/// and its CPU time is taken out of theirs: how the ratio moves when every request starts from cold caches. With
/// <c>logging</c> last, the host logs, as a template's app does (<see cref="ConnectionPathBenchmarks.HostLogging"/>).
/// </remarks>
internal static class ConnectionPathPairs
{
    private const int Tenths = 10;

    public static void Run(string profile, double seconds, int evictKilobytes, bool hostLogging, bool http2, TextWriter output)
    {
        CacheEvictor? evictor = evictKilobytes > 0 ? new CacheEvictor(evictKilobytes) : null;
        IConnectionPath Path(ConnectionPathBenchmarks.Mode server) => http2
            ? new Http2ConnectionPathBenchmarks { Profile = profile, Server = server, Evictor = evictor, HostLogging = hostLogging }
            : new ConnectionPathBenchmarks { Profile = profile, Server = server, Evictor = evictor, HostLogging = hostLogging };
        IConnectionPath[] servers = [Path(ConnectionPathBenchmarks.Mode.HeaderCache), Path(ConnectionPathBenchmarks.Mode.KestrelDefault)];
        foreach (IConnectionPath server in servers)
        {
            server.Setup();
        }

        // A quarter of the time first, unmeasured: tiered compilation reaches the hot methods' final code.
        Alternate(servers, evictor, seconds / 4, new double[1, 2], new long[1, 2], new long[2]);

        var cpu = new double[Tenths, 2];
        var turns = new long[Tenths, 2];
        var allocated = new long[2];
        Alternate(servers, evictor, seconds, cpu, turns, allocated);
        (long served, long created) = LinesTaken();
        foreach (IConnectionPath server in servers)
        {
            server.Cleanup();
        }

        double PerRequest(int tenth, int server) => cpu[tenth, server] / (turns[tenth, server] * ConnectionPathBenchmarks.RequestsPerInvoke);
        double[] ratios = [.. Enumerable.Range(0, Tenths).Select(tenth => PerRequest(tenth, 0) / PerRequest(tenth, 1)).Order()];
        double headerCache = Enumerable.Range(0, Tenths).Sum(tenth => cpu[tenth, 0]) / (Enumerable.Range(0, Tenths).Sum(tenth => turns[tenth, 0]) * ConnectionPathBenchmarks.RequestsPerInvoke);
        double kestrel = Enumerable.Range(0, Tenths).Sum(tenth => cpu[tenth, 1]) / (Enumerable.Range(0, Tenths).Sum(tenth => turns[tenth, 1]) * ConnectionPathBenchmarks.RequestsPerInvoke);
        double BytesPerRequest(int server) => (double)allocated[server] / (Enumerable.Range(0, Tenths).Sum(tenth => turns[tenth, server]) * ConnectionPathBenchmarks.RequestsPerInvoke);
        output.WriteLine(
            (http2 ? "HTTP/2, " : string.Empty)
            + (evictor is null ? string.Empty : $"{evictKilobytes} KB evicted before every request, ")
            + (hostLogging ? "host logging, " : string.Empty)
            + $"{profile}: CPU per request HeaderCache {headerCache / 1000:F2} us, Kestrel alone {kestrel / 1000:F2} us, ratio {headerCache / kestrel:F3}"
            + $" (tenths of the run: median {(ratios[(Tenths / 2) - 1] + ratios[Tenths / 2]) / 2:F3}, {ratios[0]:F3} to {ratios[^1]:F3})"
            + $"; allocated B/request HeaderCache {BytesPerRequest(0):F0}, Kestrel alone {BytesPerRequest(1):F0}"
            + $"; header lines HeaderCache took out: {served + created:N0}, served without a new string {100.0 * served / Math.Max(1, served + created):F1} %");
    }

    // The headercache.lines metric of the one server that has HeaderCache, as dotnet-counters would read it.
    private static (long Served, long Created) LinesTaken()
    {
        long served = 0;
        long created = 0;
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == HeaderCacheOptions.MeterName && instrument.Name == "headercache.lines")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            foreach (KeyValuePair<string, object?> tag in tags)
            {
                if (tag.Key == "headercache.line.outcome")
                {
                    (tag.Value as string == "served" ? ref served : ref created) += value;
                }
            }
        });
        listener.Start();
        listener.RecordObservableInstruments();
        return (served, created);
    }

    // Turns of one invocation each (64 requests), the CPU time of each turn, less the evictor's, added to its server's
    // tenth of the run, and the bytes allocated during it to its server's total. The precise count takes in what the
    // thread-pool threads allocated that their allocation contexts have not yet reported; it is read outside the CPU time.
    private static void Alternate(IConnectionPath[] servers, CacheEvictor? evictor, double seconds, double[,] cpu, long[,] turns, long[] allocated)
    {
        var clock = Stopwatch.StartNew();
        long limit = (long)(seconds * Stopwatch.Frequency);
        int parts = cpu.GetLength(0);
        for (long turn = 0; clock.ElapsedTicks < limit; turn++)
        {
            int server = (int)(turn & 1);
            int part = (int)Math.Min(parts - 1, clock.ElapsedTicks * parts / limit);
            long bytes = GC.GetTotalAllocatedBytes(precise: true);
            double start = CpuClock.Process();
            double walked = evictor?.Nanoseconds ?? 0;
            servers[server].Request().GetAwaiter().GetResult();
            cpu[part, server] += CpuClock.Process() - start - ((evictor?.Nanoseconds ?? 0) - walked);
            allocated[server] += GC.GetTotalAllocatedBytes(precise: true) - bytes;
            turns[part, server]++;
        }
    }
}
