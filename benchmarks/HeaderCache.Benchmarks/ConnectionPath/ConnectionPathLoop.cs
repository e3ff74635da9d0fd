using System.Diagnostics;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// Runs one <see cref="ConnectionPathBenchmarks"/> case in a loop for a while, for a profiler to attach to
/// (<c>dotnet-trace collect -- dotnet HeaderCache.Benchmarks.dll connection-path-loop plaintext HeaderCache 20</c>).
/// Prints the mean time and the bytes allocated per request, which are only a sanity check: BenchmarkDotNet gives the
/// figures.
/// </summary>
internal static class ConnectionPathLoop
{
    public static void Run(string profile, string server, double seconds, TextWriter output)
    {
        var benchmark = new ConnectionPathBenchmarks
        {
            Profile = profile,
            Server = Enum.Parse<ConnectionPathBenchmarks.Mode>(server),
        };
        benchmark.Setup();
        long invocations = 0;
        long allocated = GC.GetTotalAllocatedBytes(precise: true);
        var clock = Stopwatch.StartNew();
        while (clock.Elapsed.TotalSeconds < seconds)
        {
            benchmark.Request().GetAwaiter().GetResult();
            invocations++;
        }

        allocated = GC.GetTotalAllocatedBytes(precise: true) - allocated;
        clock.Stop();
        benchmark.Cleanup();
        long requests = invocations * ConnectionPathBenchmarks.RequestsPerInvoke;
        output.WriteLine($"{profile} {server}: {clock.Elapsed.TotalMicroseconds / requests:F2} us per request, {(double)allocated / requests:F0} B allocated per request (all threads)");
    }
}
