using System.Diagnostics.Metrics;

namespace HeaderCache.Sample;

/// <summary>
/// The bytes Kestrel's memory pools hold free for reuse (the <c>aspnetcore.memory_pool.pooled</c> up-down counter), for
/// <c>/stats</c> when <c>Sample:PoolStats=true</c>. Memory-per-connection measurements subtract them from the live heap:
/// a free block belongs to no connection, and how many there are depends on the peak of the burst that opened the
/// connections and on when the pool last evicted. Off by default: listening costs a callback on every rent and return.
/// </summary>
internal sealed class SamplePoolStats : IDisposable
{
    private const string MeterName = "Microsoft.AspNetCore.MemoryPool";
    private const string PooledName = "aspnetcore.memory_pool.pooled";

    private readonly MeterListener _listener = new();
    private long _pooled;

    // Started before the host is built, so that the counter's every change since the pools were made is summed.
    public SamplePoolStats()
    {
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == MeterName && instrument.Name == PooledName)
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref _pooled, value));
        _listener.Start();
    }

    /// <summary>The bytes all of Kestrel's memory pools hold free now.</summary>
    public long PooledBytes => Interlocked.Read(ref _pooled);

    public void Dispose() => _listener.Dispose();
}
