using System.Globalization;
using System.Net.WebSockets;
using System.Security.Cryptography;
using System.Text;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Sample;

/// <summary>
/// The sample server: Kestrel with HeaderCache, a plaintext endpoint, allocation stats, and an echo of
/// everything else as the view the application has of the request, so HeaderCache can be compared with Kestrel alone.
/// </summary>
public static class SampleApp
{
    private static readonly byte[] HelloWorld = "Hello, World!"u8.ToArray();
    private static long s_requests;

    /// <summary>Builds the app. <paramref name="configure"/> lets tests add services or settings.</summary>
    public static WebApplication Build(string[] args, Action<WebApplicationBuilder>? configure = null)
    {
        var builder = WebApplication.CreateBuilder(args);

        // The one line: HeaderCache on every endpoint, options from the "HeaderCache" section.
        // Sample:KestrelOnly=true leaves HeaderCache out entirely, for measuring Kestrel alone.
        if (!builder.Configuration.GetValue<bool>("Sample:KestrelOnly"))
        {
            builder.WebHost.UseHeaderStringCache();
        }

        // Third comparison mode: Kestrel without its own reuse of known header values.
        bool disableStringReuse = builder.Configuration.GetValue<bool>("Kestrel:DisableStringReuse");
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.DisableStringReuse = disableStringReuse);

        // Sample:Echo=false answers every other request like /plaintext, so that load tests measure the
        // server's per-request cost rather than the echo's own allocations.
        bool echo = builder.Configuration.GetValue("Sample:Echo", defaultValue: true);

        // Sample:CacheStats=true adds HeaderCache's metric totals to /stats (for benchmarks/browser).
        // With them, whether the application gets the same string instances for values a connection repeats.
        bool withCacheStats = builder.Configuration.GetValue<bool>("Sample:CacheStats");
        SampleCacheStats? cacheStats = withCacheStats ? new SampleCacheStats() : null;
        SampleValueReuse? valueReuse = withCacheStats ? new SampleValueReuse() : null;

        // Sample:PoolStats=true adds the bytes Kestrel's memory pools hold free to /stats (benchmarks/hostile/idle_connections.py).
        SamplePoolStats? poolStats = builder.Configuration.GetValue<bool>("Sample:PoolStats") ? new SamplePoolStats() : null;

        configure?.Invoke(builder);
        var app = builder.Build();
        if (cacheStats is not null)
        {
            app.Lifetime.ApplicationStopped.Register(cacheStats.Dispose);
        }

        if (poolStats is not null)
        {
            app.Lifetime.ApplicationStopped.Register(poolStats.Dispose);
        }

        // WebSockets only on /ws (a WebSocket echo), so other requests do not pay for the middleware.
        app.UseWhen(static context => context.Request.Path.Equals("/ws", StringComparison.Ordinal), static ws => ws.UseWebSockets());
        app.Run(context => HandleAsync(context, echo, cacheStats, valueReuse, poolStats));
        return app;
    }

    private static Task HandleAsync(HttpContext context, bool echo, SampleCacheStats? cacheStats, SampleValueReuse? valueReuse, SamplePoolStats? poolStats)
    {
        Interlocked.Increment(ref s_requests);
        valueReuse?.Record(context);
        HttpRequest request = context.Request;
        if (request.Path.Equals("/ws", StringComparison.Ordinal) && context.WebSockets.IsWebSocketRequest)
        {
            return EchoWebSocketAsync(context);
        }

        if (HttpMethods.IsGet(request.Method) && request.Path.Equals("/stats", StringComparison.Ordinal))
        {
            // /stats?heap=1 also collects and reports the live heap, for memory-per-connection measurements.
            long? heap = request.Query.ContainsKey("heap") ? GC.GetTotalMemory(forceFullCollection: true) : null;
            // The JIT's time so far: benchmarks/wrk/compare.sh reports how much of it fell into its measured runs.
            long jitMicroseconds = (long)System.Runtime.JitInfo.GetCompilationTime().TotalMicroseconds;
            return context.Response.WriteAsJsonAsync(new Stats(GC.GetTotalAllocatedBytes(precise: true), Interlocked.Read(ref s_requests), GC.CollectionCount(0), jitMicroseconds, heap, poolStats?.PooledBytes, cacheStats?.Totals, valueReuse?.Read(context)));
        }

        if (request.Path.StartsWithSegments("/site", StringComparison.Ordinal))
        {
            return SampleSite.HandleAsync(context);
        }

        if (HttpMethods.IsGet(request.Method) && request.Path.Equals("/headercache", StringComparison.Ordinal))
        {
            // What HeaderCache does on this connection, as a health check would read it.
            IHeaderStringCacheFeature? cache = context.Features.Get<IHeaderStringCacheFeature>();
            return context.Response.WriteAsJsonAsync(new CacheState(cache is not null, cache?.IsActive ?? false, cache?.InactiveReason, cache?.Hits ?? 0, cache?.Misses ?? 0));
        }

        if (SampleGrpc.Matches(request))
        {
            return SampleGrpc.HandleAsync(context);
        }

        if (!echo || (HttpMethods.IsGet(request.Method) && request.Path.Equals("/plaintext", StringComparison.Ordinal)))
        {
            context.Response.ContentType = "text/plain";
            context.Response.ContentLength = HelloWorld.Length;
            return context.Response.Body.WriteAsync(HelloWorld).AsTask();
        }

        return EchoAsync(context);
    }

    private static async Task EchoWebSocketAsync(HttpContext context)
    {
        // Sends every message back as it came, until the client closes.
        using WebSocket socket = await context.WebSockets.AcceptWebSocketAsync().ConfigureAwait(false);
        byte[] buffer = new byte[4096];
        while (true)
        {
            ValueWebSocketReceiveResult received = await socket.ReceiveAsync(buffer.AsMemory(), context.RequestAborted).ConfigureAwait(false);
            if (received.MessageType == WebSocketMessageType.Close)
            {
                await socket.CloseAsync(socket.CloseStatus ?? WebSocketCloseStatus.NormalClosure, socket.CloseStatusDescription, context.RequestAborted).ConfigureAwait(false);
                return;
            }

            await socket.SendAsync(buffer.AsMemory(0, received.Count), received.MessageType, received.EndOfMessage, context.RequestAborted).ConfigureAwait(false);
        }
    }

    private static async Task EchoAsync(HttpContext context)
    {
        byte[] body;
        using (var buffer = new MemoryStream())
        {
            await context.Request.Body.CopyToAsync(buffer, context.RequestAborted).ConfigureAwait(false);
            body = buffer.ToArray();
        }

        // With a Content-Length the response's bytes do not depend on how Kestrel happens to chunk them.
        // A 2xx answer to CONNECT may not have one (RFC 9110, 15.3): Kestrel would turn it into a 500.
        byte[] view = Encoding.UTF8.GetBytes(Describe(context, body));
        context.Response.ContentType = "text/plain; charset=utf-8";
        if (!HttpMethods.IsConnect(context.Request.Method))
        {
            context.Response.ContentLength = view.Length;
        }

        await context.Response.Body.WriteAsync(view, context.RequestAborted).ConfigureAwait(false);
    }

    /// <summary>
    /// What the application sees of a request, as text: the request line; every header in the order
    /// <c>Request.Headers</c> enumerates them, with the name as it is stored (exact casing) and each of its
    /// values on its own line in order; then <c>Count</c> and a few typed accessors (lines starting with
    /// <c>=</c>); then the body's length and SHA-256. Nothing is sorted or case-folded, so any difference in
    /// order, casing or grouping between two servers shows.
    /// </summary>
    public static string Describe(HttpContext context, ReadOnlySpan<byte> body)
    {
        HttpRequest request = context.Request;
        IHeaderDictionary headers = request.Headers;
        string target = context.Features.Get<IHttpRequestFeature>()?.RawTarget ?? request.Path + request.QueryString;
        var view = new StringBuilder();
        view.Append(request.Method).Append(' ').Append(target).Append(' ').Append(request.Protocol).Append('\n');
        foreach (KeyValuePair<string, StringValues> header in headers)
        {
            foreach (string? value in header.Value)
            {
                view.Append(header.Key).Append(": ").Append(value).Append('\n');
            }
        }

        view.Append("=count: ").Append(headers.Count).Append('\n');
        view.Append("=accept: ").Append(headers.Accept.ToString()).Append('\n');
        view.Append("=user-agent: ").Append(headers.UserAgent.ToString()).Append('\n');
        view.Append("=cookie: ").Append(headers.Cookie.ToString()).Append('\n');
        view.Append("=content-length: ").Append(headers.ContentLength?.ToString(CultureInfo.InvariantCulture) ?? "none").Append('\n');
        view.Append("body-length: ").Append(body.Length).Append('\n');
        view.Append("body-sha256: ").Append(Convert.ToHexStringLower(SHA256.HashData(body))).Append('\n');
        return view.ToString();
    }

    private sealed record Stats(long AllocatedBytes, long Requests, int Gen0, long JitMicroseconds, long? HeapBytes, long? PoolFreeBytes, IReadOnlyDictionary<string, long>? Cache, SampleValueReuse.Snapshot? ValueReuse);

    private sealed record CacheState(bool Present, bool Active, string? Reason, long Hits, long Misses);
}
