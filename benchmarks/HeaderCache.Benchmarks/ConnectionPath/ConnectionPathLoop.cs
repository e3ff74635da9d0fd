using System.Diagnostics;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// Runs one <see cref="ConnectionPathBenchmarks"/> case in a loop for a while, for a profiler to attach to
/// (<c>dotnet-trace collect -- dotnet HeaderCache.Benchmarks.dll connection-path-loop plaintext HeaderCache 20</c>).
/// Prints the mean time per request, which is only a sanity check: BenchmarkDotNet gives the figures.
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
        var clock = Stopwatch.StartNew();
        while (clock.Elapsed.TotalSeconds < seconds)
        {
            benchmark.Request().GetAwaiter().GetResult();
            invocations++;
        }

        benchmark.Cleanup();
        output.WriteLine($"{profile} {server}: {clock.Elapsed.TotalMicroseconds / (invocations * ConnectionPathBenchmarks.RequestsPerInvoke):F2} us per request");
    }
}
