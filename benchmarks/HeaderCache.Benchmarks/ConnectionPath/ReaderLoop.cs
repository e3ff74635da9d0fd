using System.Diagnostics;
using HeaderCache.Compaction;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// Runs <see cref="ReaderBenchmarks"/> (the layer alone, one thread) in a loop for a while, for a profiler to attach
/// to and for quick A/B comparisons of two builds (<c>dotnet HeaderCache.Benchmarks.dll reader-loop chrome 10</c>).
/// Prints the mean time and the process's CPU time per head after a warm-up of a quarter of the time; the CPU time
/// is the steadier figure when other work shares the machine. Then what became of the lines of a head, on average:
/// recalled from the memo of lines (taken or kept), and of the lines taken, served without a new string or created.
/// </summary>
internal static class ReaderLoop
{
    private const int Batch = 1000;

    public static void Run(string profile, double seconds, TextWriter output)
    {
        var benchmark = new ReaderBenchmarks { Profile = profile };
        benchmark.Setup();
        RunFor(benchmark, seconds / 4);
        HeadCompactor compactor = benchmark.Compactor;
        (long recalled, long served, long created) = (compactor.LinesRecalled, compactor.LinesServed, compactor.LinesCreated);
        var clock = Stopwatch.StartNew();
        TimeSpan cpu = Process.GetCurrentProcess().TotalProcessorTime;
        long heads = RunFor(benchmark, seconds);
        cpu = Process.GetCurrentProcess().TotalProcessorTime - cpu;
        output.WriteLine($"{profile}: {clock.Elapsed.TotalNanoseconds / heads:F0} ns per head, {cpu.TotalNanoseconds / heads:F0} ns CPU per head");
        output.WriteLine(
            $"lines per head: {PerHead(compactor.LinesRecalled - recalled, heads)} recalled, {PerHead(compactor.LinesServed - served, heads)} served, "
            + $"{PerHead(compactor.LinesCreated - created, heads)} created");
        benchmark.Dispose();
    }

    private static string PerHead(long lines, long heads) =>
        ((double)lines / heads).ToString("F2", System.Globalization.CultureInfo.InvariantCulture);

    private static long RunFor(ReaderBenchmarks benchmark, double seconds)
    {
        var clock = Stopwatch.StartNew();
        long heads = 0;
        while (clock.Elapsed.TotalSeconds < seconds)
        {
            for (int i = 0; i < Batch; i++)
            {
                benchmark.Head();
            }

            heads += Batch;
        }

        return heads;
    }
}
