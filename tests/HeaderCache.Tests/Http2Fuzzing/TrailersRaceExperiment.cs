using System.Buffers;
using System.Collections.Concurrent;
using System.IO.Pipelines;
using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Tests.Fuzzing;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Xunit.Abstractions;

namespace HeaderCache.Tests.Http2Fuzzing;

/// <summary>
/// An experiment on Kestrel alone (docs/fuzzing.md, "A race in Kestrel alone: trailers a handler does not see"):
/// connections of 100 streams, each a GET whose HEADERS frame has no END_STREAM, an empty DATA frame and trailers with
/// END_STREAM, the trailers only once every handler has started (the generator's shape, where every handler must see
/// them; two seconds by default) or, with <c>HEADERCACHE_TRAILERS_RACE_SYNCED=0</c>, all in one write; each handler reads its
/// body to the end and then asks <see cref="IHttpRequestTrailersFeature.Available"/>, as the fuzz app does. It counts
/// the streams whose handler saw the trailers and those whose did not. <c>HEADERCACHE_TRAILERS_RACE_SPINNERS</c> busy
/// threads compete for the cores, so Kestrel's frame loop is taken off its core at random points.
/// </summary>
public sealed class TrailersRaceExperiment(ITestOutputHelper output)
{
    private const int Streams = 100;

    [Fact]
    public async Task Kestrel_alone_handlers_see_trailers_that_end_an_empty_body_or_not()
    {
        // By default (CI) two seconds of the shape the generator sends, the trailers after every handler started; the
        // race itself only with HEADERCACHE_TRAILERS_RACE_SYNCED=0, for as long as asked.
        double seconds = FuzzSettings.Get("HEADERCACHE_TRAILERS_RACE_SECONDS", 2.0);
        int spinners = FuzzSettings.Get("HEADERCACHE_TRAILERS_RACE_SPINNERS", 0);
        int parallel = FuzzSettings.Get("HEADERCACHE_TRAILERS_RACE_PARALLEL", 2);
        bool synced = FuzzSettings.Get("HEADERCACHE_TRAILERS_RACE_SYNCED", 1) == 1;

        var app = new App();
        await using InMemoryKestrel server = await InMemoryKestrel.StartHttp2Async(headerCache: false, app.HandleAsync);
        (byte[] heads, byte[] ends) = Bytes();

        bool stop = false;
        var threads = Enumerable.Range(0, spinners).Select(_ => new Thread(() =>
        {
            while (!Volatile.Read(ref stop))
            {
                Thread.SpinWait(100);
            }
        }) { IsBackground = true }).ToList();
        threads.ForEach(t => t.Start());

        DateTime deadline = DateTime.UtcNow.AddSeconds(seconds);
        long connections = 0, missed = 0;
        try
        {
            await Task.WhenAll(Enumerable.Range(0, parallel).Select(async _ =>
            {
                while (DateTime.UtcNow < deadline)
                {
                    int without = await ConnectionAsync(server, app, heads, ends, synced);
                    Interlocked.Increment(ref connections);
                    if (without > 0)
                    {
                        Interlocked.Increment(ref missed);
                    }
                }
            }));
        }
        finally
        {
            Volatile.Write(ref stop, true);
            threads.ForEach(t => t.Join());
        }

        output.WriteLine($"{(synced ? "synced" : "one write")}, {spinners} spinners, {parallel} at a time: {connections} connections of {Streams} streams, " +
            $"{app.With} handlers saw the trailers, {app.Without} saw none ({missed} connections with one or more); {app.Other} other outcomes; {app.Kinds}");
        Assert.True(connections > 0);
        Assert.Equal(connections * Streams, app.With + app.Without);
        if (synced)
        {
            // What the generator's sync point relies on: a handler already waiting in its read sees the trailers.
            Assert.Equal(0, app.Without);
        }
    }

    // The connection's bytes: the preface, SETTINGS and the 100 streams' HEADERS (GET http://a/, no END_STREAM); then each
    // stream's empty DATA frame and its trailers (x-checksum: abc123, END_STREAM), as the generator writes them.
    private static (byte[] Heads, byte[] Ends) Bytes()
    {
        var heads = new FrameWriter();
        heads.Preface();
        heads.Settings();
        var ends = new FrameWriter();
        byte[] trailers = [0x00, 0x0A, .. "x-checksum"u8, 0x06, .. "abc123"u8];
        for (int stream = 1; stream < 2 * Streams; stream += 2)
        {
            heads.Headers(stream, [0x82, 0x86, 0x84, 0x41, 0x01, 0x61], endStream: false, endHeaders: true);
            ends.Data(stream, [], endStream: false);
            ends.Headers(stream, trailers, endStream: true, endHeaders: true);
        }

        return ([.. heads.Bytes], [.. ends.Bytes]);
    }

    // Sends one connection's streams, whole or with the trailers after every handler started; returns how many handlers
    // saw no trailers.
    private static async Task<int> ConnectionAsync(InMemoryKestrel server, App app, byte[] heads, byte[] ends, bool synced)
    {
        InMemoryClient client = server.Connect();
        Tally tally = app.Open(client.ConnectionId);
        Task reading = DrainAsync(client.Input);
        try
        {
            await client.WaitUntilSettledAsync().WaitAsync(TimeSpan.FromSeconds(20));
            if (synced)
            {
                await client.SendAsync(heads).WaitAsync(TimeSpan.FromSeconds(20));
                await tally.AllStarted.Task.WaitAsync(TimeSpan.FromSeconds(20));
                await client.SendAsync(ends).WaitAsync(TimeSpan.FromSeconds(20));
            }
            else
            {
                byte[] whole = [.. heads, .. ends];
                await client.SendAsync(whole).WaitAsync(TimeSpan.FromSeconds(20));
            }

            await tally.AllDone.Task.WaitAsync(TimeSpan.FromSeconds(20));
            await client.CompleteAsync().WaitAsync(TimeSpan.FromSeconds(20));
            await reading.WaitAsync(TimeSpan.FromSeconds(20));
            return tally.Without;
        }
        finally
        {
            app.Close(client.ConnectionId);
        }
    }

    private static async Task DrainAsync(PipeReader input)
    {
        while (true)
        {
            ReadResult result = await input.ReadAsync();
            input.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                await input.CompleteAsync();
                return;
            }
        }
    }

    private sealed class Tally
    {
        private int _started;
        private int _done;
        private int _without;

        public TaskCompletionSource AllStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource AllDone { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public int Without => Volatile.Read(ref _without);

        public void Started()
        {
            if (Interlocked.Increment(ref _started) == Streams)
            {
                AllStarted.TrySetResult();
            }
        }

        public void Done(bool withTrailers)
        {
            if (!withTrailers)
            {
                Interlocked.Increment(ref _without);
            }

            if (Interlocked.Increment(ref _done) == Streams)
            {
                AllDone.TrySetResult();
            }
        }
    }

    private sealed class App
    {
        private readonly ConcurrentDictionary<string, Tally> _tallies = new();
        private long _with;
        private long _without;
        private long _other;
        private readonly ConcurrentDictionary<(bool CanHaveBody, object Seen), long> _kinds = new();

        /// <summary>Handlers by whether their body could have octets at their start (Kestrel's choice of body) and what they saw.</summary>
        public string Kinds => string.Join("; ", _kinds.OrderBy(k => k.Key.ToString()).Select(k => $"CanHaveBody={k.Key.CanHaveBody} {k.Key.Seen}: {k.Value}"));

        public long With => Interlocked.Read(ref _with);

        public long Without => Interlocked.Read(ref _without);

        public long Other => Interlocked.Read(ref _other);

        public Tally Open(string connectionId) => _tallies[connectionId] = new Tally();

        public void Close(string connectionId) => _tallies.TryRemove(connectionId, out _);

        // As the fuzz app: the body read to its end, then the trailers if they are available.
        public async Task HandleAsync(HttpContext context)
        {
            if (!_tallies.TryGetValue(context.Connection.Id, out Tally? tally))
            {
                Interlocked.Increment(ref _other);
                return;
            }

            tally.Started();
            bool canHaveBody = context.Features.Get<IHttpRequestBodyDetectionFeature>()?.CanHaveBody ?? true;
            PipeReader reader = context.Request.BodyReader;
            long length = 0;
            while (true)
            {
                ReadResult result = await reader.ReadAsync();
                length += result.Buffer.Length;
                reader.AdvanceTo(result.Buffer.End);
                if (result.IsCompleted)
                {
                    break;
                }
            }

            var trailers = context.Features.Get<IHttpRequestTrailersFeature>();
            bool seen = trailers is { Available: true } && trailers.Trailers.ContainsKey("x-checksum");
            Interlocked.Increment(ref seen ? ref _with : ref _without);
            _kinds.AddOrUpdate((canHaveBody, seen), 1, (_, n) => n + 1);
            if (!seen)
            {
                // The frame loop was between the stream's end and the trailers' availability: a moment later they are there.
                await Task.Delay(10);
                _kinds.AddOrUpdate((canHaveBody, trailers is { Available: true } ? "available 10 ms later" : "still not available"), 1, (_, n) => n + 1);
            }

            if (length != 0)
            {
                Interlocked.Increment(ref _other);
            }

            context.Response.ContentLength = 1;
            await context.Response.Body.WriteAsync("1"u8.ToArray());
            tally.Done(seen);
        }
    }
}
