using System.Diagnostics;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// The layer alone (<see cref="ReaderBenchmarks"/>) with and without the memo of lines in one process, taking turns
/// every 64 heads for a while (<c>dotnet HeaderCache.Benchmarks.dll reader-pairs proxy-pool 5</c>), and the ratio of
/// their CPU time per head. On this machine runs of the same build one after another (<c>reader-loop</c>) move by 10-20 %;
/// in turns this short both readers meet the same conditions, and the same reader twice reads 0.997-0.999. To compare
/// two versions of a piece of the reader, put both behind a switch like <see cref="Compaction.HeadCompactor.RecallsLines"/>
/// for the time of the measurement.
/// </summary>
internal static class ReaderPairs
{
    private const int Turn = 64;

    public static void Run(string profile, double seconds, TextWriter output)
    {
        ReaderBenchmarks[] readers = [new() { Profile = profile, RecallsLines = false }, new() { Profile = profile }];
        foreach (ReaderBenchmarks reader in readers)
        {
            reader.Setup();
        }

        // A quarter of the time first, unmeasured: tiered compilation reaches the hot methods' final code.
        Alternate(readers, seconds / 4, new double[2]);
        var cpu = new double[2];
        long heads = Alternate(readers, seconds, cpu) / 2 * Turn;
        output.WriteLine(
            $"{profile}: CPU per head without the memo {cpu[0] / heads:F0} ns, with it {cpu[1] / heads:F0} ns, ratio {cpu[1] / cpu[0]:F3}");
        foreach (ReaderBenchmarks reader in readers)
        {
            reader.Dispose();
        }
    }

    // Turns of Turn heads each, the calling thread's CPU time of each added to its reader's; returns the turns taken,
    // an even number.
    private static long Alternate(ReaderBenchmarks[] readers, double seconds, double[] cpu)
    {
        var clock = Stopwatch.StartNew();
        long turn = 0;
        for (; clock.Elapsed.TotalSeconds < seconds || (turn & 1) != 0; turn++)
        {
            ReaderBenchmarks reader = readers[turn & 1];
            double start = CpuClock.Thread();
            for (int i = 0; i < Turn; i++)
            {
                reader.Head();
            }

            cpu[turn & 1] += CpuClock.Thread() - start;
        }

        return turn;
    }
}
