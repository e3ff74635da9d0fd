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
    // Keyed by instrument name and up to two tag values, so that counting a measurement allocates nothing (the
    // browser benchmark compares bytes allocated per request).
    private readonly ConcurrentDictionary<(string Name, string? First, string? Second), long> _totals = new();

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
            var key = (instrument.Name, tags.Length > 0 ? tags[0].Value as string : null, tags.Length > 1 ? tags[1].Value as string : null);
            if (instrument.IsObservable)
            {
                // An observable counter reports its running total when asked (see Totals), not an increment.
                _totals[key] = value;
            }
            else
            {
                _totals.AddOrUpdate(key, static (_, added) => added, static (_, total, added) => total + added, value);
            }
        });
        _listener.Start();
    }

    /// <summary>The totals so far, by instrument name and tag values (<c>headercache.connections|cached</c>).</summary>
    public IReadOnlyDictionary<string, long> Totals
    {
        get
        {
            _listener.RecordObservableInstruments();
            return new SortedDictionary<string, long>(
                _totals.ToDictionary(entry => string.Join('|', new[] { entry.Key.Name, entry.Key.First, entry.Key.Second }.OfType<string>()), entry => entry.Value),
                StringComparer.Ordinal);
        }
    }

    public void Dispose() => _listener.Dispose();
}
