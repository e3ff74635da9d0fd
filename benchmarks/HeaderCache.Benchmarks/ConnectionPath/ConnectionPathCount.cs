using System.Runtime.InteropServices;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// Runs one <see cref="ConnectionPathBenchmarks"/> case a fixed number of times under an instruction counter
/// (<c>benchmarks/callgrind/count.sh</c>). Instructions, unlike seconds, repeat from run to run to under 1 % on an idle
/// machine, so a difference of a percent between two builds is visible in one run each.
/// </summary>
internal static class ConnectionPathCount
{
    public static void Run(string profile, string server, int warmUps, int invocations, TextWriter output)
    {
        var benchmark = new ConnectionPathBenchmarks
        {
            Profile = profile,
            Server = Enum.Parse<ConnectionPathBenchmarks.Mode>(server),
        };
        benchmark.Setup();

        // The counter's control calls, from a small native library count.sh builds: only the measured invocations
        // are counted, not start-up, the JIT or the warm-up.
        nint control = NativeLibrary.Load(Environment.GetEnvironmentVariable("HEADERCACHE_CALLGRIND_CONTROL")
            ?? throw new InvalidOperationException("HEADERCACHE_CALLGRIND_CONTROL names the control library"));
        var zero = Marshal.GetDelegateForFunctionPointer<Action>(NativeLibrary.GetExport(control, "cg_zero"));
        var dump = Marshal.GetDelegateForFunctionPointer<Action>(NativeLibrary.GetExport(control, "cg_dump"));

        // One wait on this thread for the whole run: a wait per invocation spins for as long as the invocation
        // takes, which would make the count depend on time.
        Task.Run(async () =>
        {
            for (int i = 0; i < warmUps; i++)
            {
                await benchmark.Request();
            }

            zero();
            for (int i = 0; i < invocations; i++)
            {
                await benchmark.Request();
            }

            dump();
        }).GetAwaiter().GetResult();

        // Where each assembly's ReadyToRun code lies, for naming the code the runtime's map of JIT-compiled code leaves out.
        if (Environment.GetEnvironmentVariable("HEADERCACHE_CALLGRIND_MAPS") is { } maps)
        {
            File.Copy("/proc/self/maps", maps, overwrite: true);
        }

        benchmark.Cleanup();
        output.WriteLine($"{profile} {server}: {invocations * ConnectionPathBenchmarks.RequestsPerInvoke} requests counted after {warmUps} invocations");
    }
}
