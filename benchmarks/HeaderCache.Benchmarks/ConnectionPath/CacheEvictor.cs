namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// Pushes the servers' code and data out of the processor's caches before every request, as the kernel and wrk do
/// between two requests of a connection under load: a write to every 64-byte line of a buffer of this size. The walk's
/// own CPU time is kept apart, so that it can be taken out of a server's.
/// </summary>
internal sealed class CacheEvictor(int kilobytes)
{
    private const int CacheLine = 64;

    private readonly byte[] _buffer = new byte[kilobytes * 1024];

    /// <summary>CPU time spent walking, in nanoseconds.</summary>
    public double Nanoseconds { get; private set; }

    /// <summary>Walks the buffer once.</summary>
    public void Walk()
    {
        double start = CpuClock.Thread();
        byte[] buffer = _buffer;
        for (int i = 0; i < buffer.Length; i += CacheLine)
        {
            buffer[i]++;
        }

        Nanoseconds += CpuClock.Thread() - start;
    }
}
