using System.Diagnostics;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// Runs one <see cref="ConnectionPathBenchmarks"/> case in a loop for a while, for a profiler to attach to
/// (<c>dotnet-trace collect -- dotnet HeaderCache.Benchmarks.dll connection-path-loop plaintext HeaderCache 20</c>).
/// Prints the mean time, the process's CPU time (all threads, client included) and the bytes allocated per request.
/// CPU time is the figure to compare between servers: on 2 cores the wall time depends on how the thread pool's
/// workers happen to meet, more than on the work per request.
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

        // A quarter of the time first, unmeasured: tiered compilation reaches the hot methods' final code.
        var warmUp = Stopwatch.StartNew();
        while (warmUp.Elapsed.TotalSeconds < seconds / 4)
        {
            benchmark.Request().GetAwaiter().GetResult();
        }

        long invocations = 0;
        long allocated = GC.GetTotalAllocatedBytes(precise: true);
        TimeSpan cpu = Process.GetCurrentProcess().TotalProcessorTime;
        long workItems = ThreadPool.CompletedWorkItemCount;
        var clock = Stopwatch.StartNew();
        while (clock.Elapsed.TotalSeconds < seconds)
        {
            benchmark.Request().GetAwaiter().GetResult();
            invocations++;
        }

        allocated = GC.GetTotalAllocatedBytes(precise: true) - allocated;
        cpu = Process.GetCurrentProcess().TotalProcessorTime - cpu;
        workItems = ThreadPool.CompletedWorkItemCount - workItems;
        clock.Stop();
        benchmark.Cleanup();
        long requests = invocations * ConnectionPathBenchmarks.RequestsPerInvoke;
        output.WriteLine($"{profile} {server}: {clock.Elapsed.TotalMicroseconds / requests:F2} us per request, {cpu.TotalMicroseconds / requests:F2} us CPU per request, {(double)allocated / requests:F0} B allocated per request (all threads), {(double)workItems / requests:F2} thread-pool work items per request");
    }
}
