using HeaderCache.Sample;
using Yarp.ReverseProxy.Configuration;

namespace HeaderCache.Gateway;

/// <summary>
/// A minimal YARP reverse proxy with HeaderCache on its Kestrel: every request but the gateway's own <c>/stats</c> and
/// <c>/headercache</c> goes to one backend (<c>Gateway:Backend</c>) with YARP's default transforms. A gateway behind a
/// load balancer gets pooled HTTP/1.1 keep-alive connections carrying many users' requests, the traffic HeaderCache
/// is for; what it saves shows in the gateway's bytes allocated per request (<c>benchmarks/gateway/compare.sh</c>).
/// </summary>
public static class GatewayApp
{
    /// <summary>The one cluster's id, and its one destination's.</summary>
    public const string ClusterId = "backend";

    private static long s_requests;

    /// <summary>Builds the app. <paramref name="configure"/> lets tests add services or settings.</summary>
    public static WebApplication Build(string[] args, Action<WebApplicationBuilder>? configure = null)
    {
        var builder = WebApplication.CreateBuilder(args);

        // The one line: HeaderCache on every endpoint of the gateway, options from the "HeaderCache" section.
        // Gateway:KestrelOnly=true leaves HeaderCache out entirely, for measuring the gateway on Kestrel alone.
        if (!builder.Configuration.GetValue<bool>("Gateway:KestrelOnly"))
        {
            builder.WebHost.UseHeaderStringCache();
        }

        string backend = builder.Configuration["Gateway:Backend"] ?? "http://127.0.0.1:5080";
        if (!Uri.TryCreate(backend, UriKind.Absolute, out Uri? backendUri) || (backendUri.Scheme != Uri.UriSchemeHttp && backendUri.Scheme != Uri.UriSchemeHttps))
        {
            throw new InvalidOperationException($"Gateway:Backend is '{backend}'; it must be an absolute http or https address.");
        }

        // One catch-all route to one destination, with YARP's default transforms (X-Forwarded-*, the backend's Host).
        builder.Services.AddReverseProxy().LoadFromMemory(
            [new RouteConfig { RouteId = "all", ClusterId = ClusterId, Match = new RouteMatch { Path = "{**catch-all}" } }],
            [new ClusterConfig { ClusterId = ClusterId, Destinations = new Dictionary<string, DestinationConfig> { [ClusterId] = new() { Address = backend } } }]);

        // Gateway:CacheStats=true adds HeaderCache's metric totals to /stats (hit rate and evictions per request). Off by
        // default: listening costs a callback per measurement, which would count against HeaderCache in the benchmark.
        SampleCacheStats? cacheStats = builder.Configuration.GetValue<bool>("Gateway:CacheStats") ? new SampleCacheStats() : null;

        configure?.Invoke(builder);
        var app = builder.Build();
        if (cacheStats is not null)
        {
            app.Lifetime.ApplicationStopped.Register(cacheStats.Dispose);
        }

        // Every request the gateway answers, its own /stats included (as the main sample counts them).
        app.Use(static (context, next) =>
        {
            Interlocked.Increment(ref s_requests);
            return next(context);
        });

        // The gateway's own allocation figures, in the main sample's shape, so benchmarks read both alike. A literal
        // route wins over the proxy's catch-all.
        app.MapGet("/stats", () =>
        {
            long jitMicroseconds = (long)System.Runtime.JitInfo.GetCompilationTime().TotalMicroseconds;
            return new Stats(GC.GetTotalAllocatedBytes(precise: true), Interlocked.Read(ref s_requests), GC.CollectionCount(0), jitMicroseconds, cacheStats?.Totals);
        });

        // What HeaderCache does on this connection (client to gateway), as a health check would read it.
        app.MapGet("/headercache", static (HttpContext context) =>
        {
            IHeaderStringCacheFeature? cache = context.Features.Get<IHeaderStringCacheFeature>();
            return new CacheState(cache is not null, cache?.IsActive ?? false, cache?.InactiveReason, cache?.Hits ?? 0, cache?.Misses ?? 0);
        });

        app.MapReverseProxy();
        return app;
    }

    /// <summary>The gateway's <c>/stats</c>: the process's bytes allocated, requests answered, gen0 collections, JIT time.</summary>
    public sealed record Stats(long AllocatedBytes, long Requests, int Gen0, long JitMicroseconds, IReadOnlyDictionary<string, long>? Cache);

    /// <summary>The gateway's <c>/headercache</c>: the connection feature's view of the connection it came on.</summary>
    public sealed record CacheState(bool Present, bool Active, string? Reason, long Hits, long Misses);
}
