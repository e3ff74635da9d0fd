using System.Buffers;
using System.IO.Pipelines;
using System.Text;
using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Requests;
using HeaderCache.Tests.Fuzzing;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Tests.Requests;

/// <summary>
/// A request's headers read at hosting's end of the request (the <c>HttpRequestIn.Stop</c> event of the app's own
/// <c>DiagnosticListener</c>, where tracing, APM and request logging read them), while the next request of the same
/// connection has already started: they must be the ended request's own, as on Kestrel alone.
/// </summary>
/// <remarks>
/// Request <c>/a</c> sends <c>x-user: alice</c> (after three warm-up requests with the same field, so that the cache
/// serves it), its handler reads it, and its response arrives. Then <c>/b</c> goes out on the same connection with
/// <c>x-user: bob</c>. Hosting's end of <c>/a</c> waits, up to two seconds, for <c>/b</c>: over HTTP/2 until its handler
/// has started, over HTTP/1.1 (requests one after another) until its bytes have been sent, before or after <c>/a</c>'s
/// response. Then it reads <c>/a</c>'s <c>x-user</c> through the context hosting handed it. Fifty connections each, on
/// Kestrel alone and with HeaderCache.
/// </remarks>
public sealed class HostingEndTests
{
    private const int Connections = 50;
    private const int WarmUps = 3;
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(10);

    [Fact]
    public async Task Over_HTTP2_a_request_read_at_hosting_end_shows_its_own_fields_while_the_next_stream_runs()
    {
        List<string> alone = await RunAsync(http2: true, headerCache: false);
        List<string> on = await RunAsync(http2: true, headerCache: true);

        Assert.All(alone, read => Assert.Equal("/a: alice at its start, alice at hosting's end, which saw /b start", read));
        AssertSame(alone, on);
    }

    [Fact]
    public async Task Over_HTTP1_a_request_read_at_hosting_end_shows_its_own_fields_with_the_next_request_sent()
    {
        List<string> alone = await RunAsync(http2: false, headerCache: false);
        List<string> on = await RunAsync(http2: false, headerCache: true);

        Assert.All(alone, read => Assert.Equal("/a: alice at its start, alice at hosting's end, which saw /b sent", read));
        AssertSame(alone, on);
    }

    private static void AssertSame(List<string> alone, List<string> on) =>
        Assert.True(alone.SequenceEqual(on), $"with HeaderCache {Tally(on)}; Kestrel alone {Tally(alone)}");

    private static string Tally(List<string> reads) =>
        string.Join("; ", reads.GroupBy(read => read).Select(same => $"{same.Count()} of {reads.Count} connections: \"{same.Key}\""));

    // What each connection's /a read, on one server; with HeaderCache, also that the cache served /a's field.
    private static async Task<List<string>> RunAsync(bool http2, bool headerCache)
    {
        var probe = new Probe(http2);
        await using InMemoryKestrel server = http2
            ? await InMemoryKestrel.StartHttp2Async(headerCache, probe.HandleAsync)
            : await InMemoryKestrel.StartAsync(headerCache, probe.HandleAsync);
        using HostingEnds ends = HostingEnds.Subscribe(server.Services, probe.AtHostingEnd);
        var reads = new List<string>();
        for (int connection = 0; connection < Connections; connection++)
        {
            probe.Reset();
            InMemoryClient client = server.Connect();
            if (http2)
            {
                await Http2ConnectionAsync(client, probe);
            }
            else
            {
                await Http1ConnectionAsync(client, probe, pipelined: connection % 2 == 0);
            }

            reads.Add(await probe.ReadAsync());
            if (headerCache)
            {
                Assert.True(probe.ServedFromView, $"connection {connection}: /a's headers were not HeaderCache's view");
                Assert.True(probe.HitsForA > 0, $"connection {connection}: the cache served none of /a's fields");
            }
        }

        Assert.True(ends.Count >= Connections * (WarmUps + 2), $"{ends.Count} hosting-end events");
        return reads;
    }

    private static async Task Http2ConnectionAsync(InMemoryClient client, Probe probe)
    {
        var opening = new FrameWriter();
        opening.Preface();
        opening.Settings();
        await client.Output.WriteAsync(opening.Bytes.ToArray());
        var frames = new FrameReader(client.Input);
        int stream = 1;
        for (int i = 0; i < WarmUps; i++, stream += 2)
        {
            await SendHttp2Async(client, stream, "/w", "alice");
            await frames.ReadToEndOfStreamAsync(stream);
        }

        await SendHttp2Async(client, stream, "/a", "alice");
        await frames.ReadToEndOfStreamAsync(stream);
        stream += 2;

        // /a's response has arrived; hosting's end of /a waits for /b's handler.
        await SendHttp2Async(client, stream, "/b", "bob");
        probe.BSent();
        await frames.ReadToEndOfStreamAsync(stream);
        await client.Output.CompleteAsync();
        await frames.DrainAsync();
    }

    private static async Task SendHttp2Async(InMemoryClient client, int stream, string path, string user)
    {
        var frames = new FrameWriter();
        frames.Headers(stream, new HeaderBlock().Request("GET", path).Without("x-user", user).ToArray(), endStream: true, endHeaders: true);
        await client.Output.WriteAsync(frames.Bytes.ToArray());
    }

    private static async Task Http1ConnectionAsync(InMemoryClient client, Probe probe, bool pipelined)
    {
        for (int i = 0; i < WarmUps; i++)
        {
            await client.Output.WriteAsync(Http1Request("/w", "alice"));
            Assert.StartsWith("HTTP/1.1 200", await client.ReadResponseAsync(), StringComparison.Ordinal);
        }

        if (pipelined)
        {
            // /b in the same write as /a, in the server's hands before /a's handler runs.
            await client.Output.WriteAsync(Http1Request("/a", "alice").Concat(Http1Request("/b", "bob")).ToArray());
            probe.BSent();
            Assert.StartsWith("HTTP/1.1 200", await client.ReadResponseAsync(), StringComparison.Ordinal);
        }
        else
        {
            // /b once /a's response has arrived, while hosting's end of /a waits for it.
            await client.Output.WriteAsync(Http1Request("/a", "alice"));
            Assert.StartsWith("HTTP/1.1 200", await client.ReadResponseAsync(), StringComparison.Ordinal);
            await client.Output.WriteAsync(Http1Request("/b", "bob"));
            probe.BSent();
        }

        Assert.StartsWith("HTTP/1.1 200", await client.ReadResponseAsync(), StringComparison.Ordinal);
        await client.Output.CompleteAsync();
        Assert.Null(await client.ReadResponseAsync());
    }

    private static byte[] Http1Request(string path, string user) =>
        Encoding.ASCII.GetBytes($"GET {path} HTTP/1.1\r\nHost: x\r\nx-user: {user}\r\n\r\n");

    /// <summary>The app of both servers: what /a reads at its start and at hosting's end, and when /b is there.</summary>
    private sealed class Probe(bool http2)
    {
        private TaskCompletionSource _bStarted = New();
        private TaskCompletionSource _bSent = New();
        private TaskCompletionSource<string> _read = New<string>();
        private string _atStart = "";
        private long _hitsBeforeA;

        /// <summary>Whether /a's request read HeaderCache's view at its start.</summary>
        public bool ServedFromView { get; private set; }

        /// <summary>The cache's hits on the connection from the last warm-up's start to /a's: /a's field.</summary>
        public long HitsForA { get; private set; }

        public void Reset()
        {
            _bStarted = New();
            _bSent = New();
            _read = New<string>();
            _atStart = "";
            (ServedFromView, HitsForA, _hitsBeforeA) = (false, 0, 0);
        }

        public void BSent() => _bSent.TrySetResult();

        public Task<string> ReadAsync() => _read.Task.WaitAsync(Deadline);

        public Task HandleAsync(HttpContext context)
        {
            long hits = context.Features.Get<IHeaderStringCacheFeature>()?.Hits ?? 0;
            switch (context.Request.Path.Value)
            {
                case "/w":
                    _hitsBeforeA = hits;
                    break;
                case "/a":
                    _atStart = context.Request.Headers["x-user"].ToString();
                    ServedFromView = context.Request.Headers is RequestHeadersView;
                    HitsForA = hits - _hitsBeforeA;
                    break;
                case "/b":
                    _bStarted.TrySetResult();
                    break;
            }

            context.Response.ContentLength = 2;
            return context.Response.WriteAsync("ok");
        }

        // Hosting's end of a request, with the context hosting hands its observers: for /a, once /b is there.
        public void AtHostingEnd(HttpContext context)
        {
            if (context.Request.Path.Value != "/a")
            {
                return;
            }

            bool bThere = (http2 ? _bStarted : _bSent).Task.Wait(TimeSpan.FromSeconds(2));
            StringValues atEnd = context.Request.Headers["x-user"];
            _read.TrySetResult($"/a: {_atStart} at its start, {atEnd} at hosting's end, which {(bThere ? "saw" : "did not see")} /b {(http2 ? "start" : "sent")}");
        }

        private static TaskCompletionSource New() => new(TaskCreationOptions.RunContinuationsAsynchronously);

        private static TaskCompletionSource<T> New<T>() => new(TaskCreationOptions.RunContinuationsAsynchronously);
    }

    /// <summary>The frames the server sends on an in-memory connection, read up to the end of a stream.</summary>
    private sealed class FrameReader(PipeReader input)
    {
        public async Task ReadToEndOfStreamAsync(int stream)
        {
            while (true)
            {
                ReadResult result = await input.ReadAsync().AsTask().WaitAsync(Deadline);
                ReadOnlySequence<byte> buffer = result.Buffer;
                bool ended = false;
                while (!ended && Frame.TryRead(ref buffer, out Frame? frame))
                {
                    if (frame!.Type == FrameType.GoAway || (frame.Type == FrameType.RstStream && frame.StreamId == stream))
                    {
                        throw new InvalidOperationException($"stream {stream}: {frame.Type} {frame.ErrorCode}");
                    }

                    ended = frame.StreamId == stream && frame.Type is FrameType.Data or FrameType.Headers && frame.Has(FrameFlags.EndStream);
                }

                if (ended)
                {
                    // Frames after the end stay unread, and are read first next time.
                    input.AdvanceTo(buffer.Start);
                    return;
                }

                input.AdvanceTo(buffer.Start, buffer.End);

                if (result.IsCompleted)
                {
                    throw new InvalidOperationException($"the server closed before stream {stream} ended");
                }
            }
        }

        public async Task DrainAsync()
        {
            while (true)
            {
                ReadResult result = await input.ReadAsync().AsTask().WaitAsync(Deadline);
                input.AdvanceTo(result.Buffer.End);
                if (result.IsCompleted)
                {
                    await input.CompleteAsync();
                    return;
                }
            }
        }
    }
}
