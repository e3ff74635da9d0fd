using System.IO.Pipelines;
using HeaderCache.Caching;
using HeaderCache.Compaction;
using HeaderCache.Hosting;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Connection;

/// <summary>
/// One connection's HeaderCache state, published as a connection feature: the compactor (with the
/// cache) on the reading side and the queue of header strings the request-level part puts back.
/// </summary>
internal sealed class HeaderCacheConnection : IDisposable
{
    private readonly HeaderInjectionQueue _queue = new();
    private readonly HeadCompactor _compactor;
    private readonly HeadLimits _limits;
    private readonly HeaderCacheRuntime _runtime;
    private CacheCounters _published;

    /// <summary>Creates the state for one connection.</summary>
    public HeaderCacheConnection(HeaderCacheOptions options, HeadLimits limits, bool kestrelReusesValues, HeaderCacheRuntime runtime)
    {
        _runtime = runtime;
        _limits = limits;
        var cache = new HeaderStringCache(options.SlotCount, options.MaxValueLength);
        _compactor = new HeadCompactor(cache, _queue, limits, options.ExcludedHeaders, kestrelReusesValues);
    }

    /// <summary>The compactor, for the reader and for tests.</summary>
    public HeadCompactor Compactor => _compactor;

    /// <summary>The reader Kestrel gets instead of <paramref name="input"/>.</summary>
    public CompactingPipeReader CreateReader(PipeReader input) => new(input, _compactor, _limits);

    /// <summary>Puts the header lines taken out of this request's head back into its headers.</summary>
    public void RestoreHeaders(IFeatureCollection requestFeatures)
    {
        if (requestFeatures.Get<IHttpRequestFeature>() is { } request && _queue.TryApply(request.Headers))
        {
            _runtime.Metrics.Publish(_compactor.Cache.Counters, ref _published);
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        _runtime.Metrics.Publish(_compactor.Cache.Counters, ref _published);
        _runtime.Metrics.ConnectionClosed();
        _compactor.Dispose();
    }
}
