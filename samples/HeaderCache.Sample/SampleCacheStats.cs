using System.Collections.Concurrent;
using System.Diagnostics.Metrics;

namespace HeaderCache.Sample;

/// <summary>
/// Totals of HeaderCache's instruments, by name and tags, for <c>/stats</c> when <c>Sample:CacheStats=true</c>
/// (the browser benchmark reads them). Off by default: listening costs a callback per measurement, which would
/// count against HeaderCache in the load tests.
/// </summary>
internal sealed class SampleCacheStats : IDisposable
{
    private readonly MeterListener _listener = new();
    private readonly ConcurrentDictionary<string, long> _totals = new(StringComparer.Ordinal);

    public SampleCacheStats()
    {
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == HeaderCacheOptions.MeterName)
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            string key = instrument.Name;
            foreach (KeyValuePair<string, object?> tag in tags)
            {
                key += "|" + tag.Value;
            }

            _totals.AddOrUpdate(key, value, (_, total) => total + value);
        });
        _listener.Start();
    }

    /// <summary>The totals so far, by instrument name and tag values (<c>headercache.connections|cached</c>).</summary>
    public IReadOnlyDictionary<string, long> Totals => new SortedDictionary<string, long>(_totals, StringComparer.Ordinal);

    public void Dispose() => _listener.Dispose();
}
