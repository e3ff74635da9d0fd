using System.Net.WebSockets;
using System.Security.Cryptography;
using System.Text;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Sample;

/// <summary>
/// The sample server: Kestrel with HeaderCache, a plaintext endpoint, allocation stats, and an echo of
/// everything else as a canonical view of the request, so the cache can be compared on and off.
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

        configure?.Invoke(builder);
        var app = builder.Build();

        // WebSockets only on /ws (a WebSocket echo), so other requests do not pay for the middleware.
        app.UseWhen(static context => context.Request.Path.Equals("/ws", StringComparison.Ordinal), static ws => ws.UseWebSockets());
        app.Run(context => HandleAsync(context, echo));
        return app;
    }

    private static Task HandleAsync(HttpContext context, bool echo)
    {
        Interlocked.Increment(ref s_requests);
        HttpRequest request = context.Request;
        if (request.Path.Equals("/ws", StringComparison.Ordinal) && context.WebSockets.IsWebSocketRequest)
        {
            return EchoWebSocketAsync(context);
        }

        if (HttpMethods.IsGet(request.Method) && request.Path.Equals("/stats", StringComparison.Ordinal))
        {
            // /stats?heap=1 also collects and reports the live heap, for memory-per-connection measurements.
            long? heap = request.Query.ContainsKey("heap") ? GC.GetTotalMemory(forceFullCollection: true) : null;
            return context.Response.WriteAsJsonAsync(new Stats(GC.GetTotalAllocatedBytes(precise: true), Interlocked.Read(ref s_requests), GC.CollectionCount(0), heap));
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
    /// The canonical view of a request: request line, then every header the application sees, names
    /// sorted case-insensitively with each value on its own line in order, then the body's length and
    /// SHA-256. It does not depend on header enumeration order, so it is the same with and without the cache.
    /// </summary>
    public static string Describe(HttpContext context, ReadOnlySpan<byte> body)
    {
        HttpRequest request = context.Request;
        string target = context.Features.Get<IHttpRequestFeature>()?.RawTarget ?? request.Path + request.QueryString;
        var view = new StringBuilder();
        view.Append(request.Method).Append(' ').Append(target).Append(' ').Append(request.Protocol).Append('\n');
        foreach (var header in request.Headers.OrderBy(h => h.Key, StringComparer.OrdinalIgnoreCase).ThenBy(h => h.Key, StringComparer.Ordinal))
        {
            foreach (string? value in header.Value)
            {
                view.Append(header.Key).Append(": ").Append(value).Append('\n');
            }
        }

        view.Append("body-length: ").Append(body.Length).Append('\n');
        view.Append("body-sha256: ").Append(Convert.ToHexStringLower(SHA256.HashData(body))).Append('\n');
        return view.ToString();
    }

    private sealed record Stats(long AllocatedBytes, long Requests, int Gen0, long? HeapBytes);
}
