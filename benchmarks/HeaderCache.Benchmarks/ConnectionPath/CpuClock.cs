using System.Runtime.InteropServices;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>CPU time of the process and of the calling thread, in nanoseconds (Linux only).</summary>
internal static class CpuClock
{
    private const int ProcessClock = 2;  // CLOCK_PROCESS_CPUTIME_ID
    private const int ThreadClock = 3;   // CLOCK_THREAD_CPUTIME_ID

    /// <summary>CPU time of every thread of the process.</summary>
    public static double Process() => Read(ProcessClock);

    /// <summary>CPU time of the calling thread.</summary>
    public static double Thread() => Read(ThreadClock);

    private static double Read(int clock)
    {
        if (ClockGetTime(clock, out TimeSpec now) != 0)
        {
            throw new PlatformNotSupportedException("clock_gettime with a CPU-time clock failed: Linux only.");
        }

        return (now.Seconds * 1e9) + now.Nanoseconds;
    }

    [DllImport("libc", EntryPoint = "clock_gettime")]
    private static extern int ClockGetTime(int clock, out TimeSpec time);

    [StructLayout(LayoutKind.Sequential)]
    private struct TimeSpec
    {
        public long Seconds;
        public long Nanoseconds;
    }
}
