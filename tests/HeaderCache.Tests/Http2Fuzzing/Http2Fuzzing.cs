using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Globalization;
using System.IO.Pipelines;
using System.Text;
using System.Text.RegularExpressions;
using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Tests.Fuzzing;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Tests.Http2Fuzzing;

/// <summary>
/// HTTP/2's part of the <see cref="DifferentialFuzzer"/>: connections from <see cref="Http2CaseGenerator"/>, each ended
/// by a last sync point, sent to a Kestrel with an HTTP/2-only endpoint (h2c with prior knowledge) over the in-memory
/// transport.
/// </summary>
/// <remarks>
/// <para>
/// The HTTP/1.1 fuzzer can tell after which byte every answer came, because Kestrel's HTTP/1.1 parser reads the
/// transport itself. Kestrel's HTTP/2 connection does not: it copies the transport into a pipe of its own and decodes
/// frames from that on its frame loop, and it runs each stream's request on the thread pool. So "the transport's read
/// waits" only says the bytes were copied, and the order of frames of different streams depends on threads. The
/// transcript therefore keeps only what does not depend on timing:
/// </para>
/// <list type="bullet">
/// <item>Frames on stream 0 (SETTINGS, their acks, PING acks, GOAWAY with its last stream id and error code), in order,
/// each marked with how many sync points had been acknowledged before it: all of them come from the frame loop, which
/// handles the client's frames in order, so their order among themselves and against the sync acks is fixed.</item>
/// <item>Per stream, in order, its frames: HEADERS with the fields decoded (the server's HPACK encoder has a dynamic
/// table shared by all streams, so the octets depend on the order in which streams answered; the decoded fields do
/// not), DATA as the total length in a row (Kestrel splits a response's data by the connection window it shares with
/// other streams), RST_STREAM with its code, and flags.</item>
/// <item>After which sync point the connection closed.</item>
/// <item>Per stream, what the application saw: method, scheme, host, path and query, the trailers, and the body's length
/// or after how many bytes it was aborted; and its headers at every point of the request's life where an application
/// can read them (<see cref="HeaderTimeline"/>): the handler's start, the body's end, <c>OnStarting</c>, both
/// <c>OnCompleted</c> callbacks and hosting's end.</item>
/// </list>
/// <para>
/// WINDOW_UPDATE frames from the server are left out, except the first on stream 0 (sent with the SETTINGS): the
/// others follow how fast each application read its body, on the thread pool. HeaderCache never touches DATA frames,
/// and the application's view of each body is compared instead.
/// </para>
/// <para>
/// A sync point is a PING with a payload the client knows (<see cref="SyncPing"/>). At one, the client waits for its ack
/// (or the close), then until every stream whose header block ended before it has been answered (END_STREAM or
/// RST_STREAM) or has its handler waiting for a body that has fully arrived (<see cref="ConnectionLog"/>). Only then
/// does it send on: so which streams are active, which were refused, and what a RST_STREAM from the client finds are
/// the same on every run, and no answer is lost to the client's FIN.
/// </para>
/// <para>
/// A stream's response ends before Kestrel runs its <c>OnCompleted</c> callbacks and hosting ends the request, so the
/// client goes on to the next sync point's streams while the earlier ones end. In lingering cases (odd-numbered cases
/// that open 2 to 32 streams) hosting's end of each stream waits, up to <see cref="LingerLimit"/>, until another stream
/// of the connection has started its handler (or none can come: all the client's streams started, it sent its last
/// byte, or the server sent GOAWAY) before it reads the headers: so streams start while others end, on Kestrel alone as
/// with HeaderCache, and what each ended request reads then is in the transcript. Which stream starts meanwhile depends
/// on threads, but on Kestrel alone a request reads its own headers whatever else runs: the transcripts of Kestrel alone
/// against itself stay equal (<c>HEADERCACHE_H2FUZZ_BASELINE=1</c>).
/// </para>
/// </remarks>
internal static partial class Http2Fuzzing
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    /// <summary>How long hosting's end of a stream waits, at most, for another stream to start in lingering cases.</summary>
    public static readonly TimeSpan LingerLimit = TimeSpan.FromMilliseconds(250);

    private static readonly byte[] SyncMagic = "SYNC"u8.ToArray();

    /// <summary>
    /// The HTTP/2 protocol: generated and mutated connections; every case ends with a last sync point (the terminator);
    /// <c>date</c> values are taken out (the two servers may answer in different seconds; Kestrel caches the value per
    /// second, so it is the only field that depends on the clock); statuses, GOAWAY and RST_STREAM codes are counted.
    /// </summary>
    public static FuzzProtocol Protocol { get; } = new(
        seed => new Http2CaseGenerator(seed).Generated,
        seed => new Http2CaseGenerator(seed).Mutated,
        Terminator(),
        transcript => DateField().Replace(transcript, "date: (date)"),
        transcript => Outcome().Matches(transcript).Select(match => match.Groups[1].Value));

    /// <summary>
    /// In memory: half the cases mutated, every one ended by the terminator, a quarter idle at every sync point (the
    /// reader lets go of its buffers, <see cref="IdleTrim"/>), cut into writes of 1 byte (small inputs), up to 7, 64 or
    /// 1024 bytes, or all at once.
    /// </summary>
    public static FuzzMix InMemoryMix { get; } = new(Mutated: 0.5, Ended: 1, Idle: 0.25, (length, random) =>
    {
        int max = random.Next(8) switch
        {
            0 when length <= 300 => 1,
            0 or 1 => 7,
            2 or 3 => 64,
            4 or 5 => 1024,
            _ => int.MaxValue,
        };
        return FuzzMix.Pieces(length, random, max);
    });

    /// <summary>The payload of the <paramref name="index"/>-th sync point's PING.</summary>
    public static byte[] SyncPing(int index)
    {
        var payload = new byte[8];
        SyncMagic.CopyTo(payload, 0);
        BinaryPrimitives.WriteInt32BigEndian(payload.AsSpan(4), index);
        return payload;
    }

    /// <summary>Whether a frame is a sync point's PING (or, with ACK, its answer).</summary>
    public static bool IsSync(byte flags, int stream, ReadOnlySpan<byte> payload) =>
        stream == 0 && payload.Length == 8 && payload.StartsWith(SyncMagic) && (flags & ~FrameFlags.Ack) == 0;

    /// <summary>
    /// A case to <paramref name="server"/>: its writes, waits at each sync point, the FIN, and the transcript; the
    /// connection's <see cref="IHeaderStringCacheFeature.Hits"/> go to <paramref name="engagement"/>. Odd-numbered cases
    /// linger (see the remarks).
    /// </summary>
    public static FuzzExchange InMemory(InMemoryKestrel server, Http2FuzzApp app, Engagement? engagement = null, IdlePauses? pauses = null) =>
        fuzzCase => ExchangeAsync(server, app, fuzzCase.Bytes, fuzzCase.Pieces, engagement, fuzzCase.Idle ? pauses : null, linger: fuzzCase.Number % 2 == 1);

    // With pauses, the connection idles at every sync point, once the client has all it waits for there. With linger,
    // hosting's end of each stream waits for a later stream's start, unless the case opens many streams: where Kestrel
    // refuses streams over its limit, streams still ending would change which.
    public static async Task<string> ExchangeAsync(InMemoryKestrel server, Http2FuzzApp app, byte[] bytes, IReadOnlyList<int> cut, Engagement? engagement = null, IdlePauses? pauses = null, bool linger = false)
    {
        InMemoryClient client = server.Connect();
        ConnectionLog log = app.Open(client.ConnectionId);
        var received = new Received(log.StreamsOver);
        Task reading = received.ReadAsync(client.Input);
        ClientScript script = ClientScript.Parse(bytes);
        log.ExpectedStreams = script.Syncs.Count > 0 ? script.Syncs[^1].Streams.Length : 0;
        log.Linger = linger && log.ExpectedStreams is > 1 and <= 32;
        var notes = new StringBuilder();
        try
        {
            await client.WaitUntilSettledAsync().WaitAsync(Deadline);
            int sent = 0;
            int sync = 0;
            foreach (int piece in Recut(cut, script.Syncs.Select(s => s.End)))
            {
                await client.SendAsync(bytes.AsMemory(sent, piece)).WaitAsync(Deadline);
                sent += piece;
                if (sync < script.Syncs.Count && script.Syncs[sync].End == sent)
                {
                    if (!await SettleAsync(sync, script.Syncs[sync].Streams, received, log))
                    {
                        notes.Append("sync ").Append(sync).Append(" never settled\n");
                    }

                    if (pauses is not null)
                    {
                        await pauses.PauseAsync(client);
                    }

                    sync++;
                }
            }

            log.StreamsOver();
            if (!client.ServerDone)
            {
                await client.CompleteAsync().WaitAsync(Deadline);
            }
            else
            {
                await client.Output.CompleteAsync();
            }

            await reading.WaitAsync(Deadline);

            // Kestrel may close before the handlers of aborted streams have returned, and before hosting has ended their
            // requests: their records are complete only then.
            DateTime deadline = DateTime.UtcNow + Deadline;
            while (DateTime.UtcNow < deadline)
            {
                Task changed = log.ChangedAsync();
                if (log.AllDone && log.AllEnded)
                {
                    break;
                }

                await WaitAsync(changed, deadline - DateTime.UtcNow);
            }
        }
        catch (TimeoutException)
        {
            notes.Append("timed out\n");
        }
        finally
        {
            log.StreamsOver();
            app.Close(client.ConnectionId);
        }

        if (engagement is not null && client.ServerFeatures.Get<IHeaderStringCacheFeature>() is { } feature)
        {
            engagement.Add(feature.Hits, feature.InactiveReason);
        }

        return received.Transcript() + log.Transcript() + notes;
    }

    // The pieces of the cut, each also ending at every sync point, so the client can wait there.
    private static IEnumerable<int> Recut(IReadOnlyList<int> cut, IEnumerable<int> syncEnds)
    {
        using IEnumerator<int> sync = syncEnds.GetEnumerator();
        bool more = sync.MoveNext();
        int at = 0;
        foreach (int piece in cut)
        {
            int end = at + piece;
            for (; more && sync.Current <= end; more = sync.MoveNext())
            {
                if (sync.Current > at)
                {
                    yield return sync.Current - at;
                    at = sync.Current;
                }
            }

            if (end > at)
            {
                yield return end - at;
                at = end;
            }
        }
    }

    // Waits for the sync ack or the close, then until every stream opened before the sync point is answered (the client
    // ended it), done (the client reset it), or has its handler waiting for more body after reading all the client sent
    // (the client has not ended it yet); false if that never happened.
    private static async Task<bool> SettleAsync(int sync, ClientStream[] streams, Received received, ConnectionLog log)
    {
        DateTime deadline = DateTime.UtcNow + Deadline;
        while (true)
        {
            // The task before the look, so that a frame between the two cannot be missed.
            Task changed = received.ChangedAsync();
            if (received.SyncAcks > sync || received.Closed)
            {
                break;
            }

            TimeSpan left = deadline - DateTime.UtcNow;
            if (left <= TimeSpan.Zero)
            {
                return false;
            }

            if (!await WaitAsync(changed, left))
            {
                return false;
            }
        }

        while (!received.Closed)
        {
            // Both tasks before the look: a frame or a handler's step between the two wakes the wait.
            Task frame = received.ChangedAsync();
            Task handler = log.ChangedAsync();
            if (streams.All(stream => Settled(stream, received, log)))
            {
                return true;
            }

            TimeSpan left = deadline - DateTime.UtcNow;
            if (left <= TimeSpan.Zero)
            {
                return false;
            }

            if (!await WaitAsync(Task.WhenAny(frame, handler), left))
            {
                return false;
            }
        }

        return true;
    }

    // False if the time ran out (the timer goes with the wait, where Task.Delay's would live on).
    private static async Task<bool> WaitAsync(Task task, TimeSpan timeout)
    {
        try
        {
            await task.WaitAsync(timeout > TimeSpan.Zero ? timeout : TimeSpan.Zero);
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
    }

    private static bool Settled(ClientStream stream, Received received, ConnectionLog log)
    {
        if (received.Finished(stream.Id))
        {
            return true;
        }

        StreamRecord? record = log.Find(stream.Id);
        if (stream.Reset)
        {
            // A reset stream's handler ends; Kestrel sends nothing more on it.
            return record is null || record.Done;
        }

        // Kestrel answers every stream the client ended; one it did not end waits in its handler for the rest of the body.
        return !stream.Ended && record is { Waiting: true } && record.Read == stream.Data;
    }

    private static byte[] Terminator()
    {
        var writer = new FrameWriter();
        writer.Ping(SyncPing(int.MaxValue));
        return [.. writer.Bytes];
    }

    [GeneratedRegex("date: [^|\\n\\]]*")]
    private static partial Regex DateField();

    [GeneratedRegex("(:status: \\d{3}|GOAWAY last=\\d+ code=\\d+|RST_STREAM code=\\d+)")]
    private static partial Regex Outcome();

    /// <summary>Everything the client received on a connection, frame by frame, and what waits for it.</summary>
    private sealed class Received(Action goingAway)
    {
        private readonly List<(int Acks, Frame Frame)> _frames = [];
        private readonly HashSet<int> _finished = [];
        private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int _acks;
        private volatile bool _closed;

        public int SyncAcks => Volatile.Read(ref _acks);

        public bool Closed => _closed;

        public bool Finished(int stream)
        {
            lock (_frames)
            {
                return _finished.Contains(stream);
            }
        }

        public Task ChangedAsync()
        {
            lock (_frames)
            {
                return _changed.Task;
            }
        }

        public async Task ReadAsync(PipeReader input)
        {
            while (true)
            {
                ReadResult result = await input.ReadAsync();
                ReadOnlySequence<byte> buffer = result.Buffer;
                while (Frame.TryRead(ref buffer, out Frame? frame))
                {
                    Add(frame!);
                }

                input.AdvanceTo(buffer.Start, buffer.End);
                if (result.IsCompleted)
                {
                    lock (_frames)
                    {
                        if (!buffer.IsEmpty)
                        {
                            _frames.Add((_acks, new Frame((FrameType)0xFF, 0, 0, buffer.ToArray())));
                        }

                        _closed = true;
                        Signal();
                    }

                    await input.CompleteAsync();
                    return;
                }
            }
        }

        public string Transcript()
        {
            var connection = new StringBuilder();
            var streams = new SortedDictionary<int, StringBuilder>();
            var decoder = new HpackDecoder();
            var blocks = new Dictionary<int, List<byte>>();
            var dataRun = new Dictionary<int, long>();
            bool firstWindowUpdate = true;
            lock (_frames)
            {
                foreach ((int acks, Frame frame) in _frames)
                {
                    if (frame.Type == (FrameType)0xFF)
                    {
                        connection.Append(acks).Append(": ").Append(frame.Payload.Length).Append(" octets that are not a whole frame\n");
                        continue;
                    }

                    if (frame.StreamId == 0)
                    {
                        if (frame.Type == FrameType.WindowUpdate && !firstWindowUpdate)
                        {
                            continue;
                        }

                        firstWindowUpdate &= frame.Type != FrameType.WindowUpdate;
                        connection.Append(acks).Append(": ").Append(Describe(frame)).Append('\n');
                        continue;
                    }

                    if (frame.Type == FrameType.WindowUpdate)
                    {
                        continue;
                    }

                    if (!streams.TryGetValue(frame.StreamId, out StringBuilder? text))
                    {
                        streams[frame.StreamId] = text = new StringBuilder();
                    }

                    if (frame.Type == FrameType.Data)
                    {
                        dataRun[frame.StreamId] = dataRun.GetValueOrDefault(frame.StreamId) + frame.DataLength;
                        if (frame.Has(FrameFlags.EndStream))
                        {
                            text.Append("  DATA ").Append(dataRun[frame.StreamId]).Append(" es\n");
                            dataRun.Remove(frame.StreamId);
                        }

                        continue;
                    }

                    if (dataRun.Remove(frame.StreamId, out long run))
                    {
                        text.Append("  DATA ").Append(run).Append('\n');
                    }

                    if (frame.Type is FrameType.Headers or FrameType.Continuation)
                    {
                        if (!blocks.TryGetValue(frame.StreamId, out List<byte>? block))
                        {
                            blocks[frame.StreamId] = block = [];
                        }

                        block.AddRange(frame.Fragment());
                        if (frame.Has(FrameFlags.EndHeaders))
                        {
                            blocks.Remove(frame.StreamId);
                            string fields;
                            try
                            {
                                fields = string.Join(" | ", decoder.Decode([.. block]).Select(f => $"{f.Name}: {f.Value}"));
                            }
                            catch (InvalidDataException e)
                            {
                                fields = "HPACK error: " + e.Message;
                            }

                            text.Append("  HEADERS").Append(frame.Has(FrameFlags.EndStream) ? " es" : "").Append(" [").Append(fields).Append("]\n");
                        }

                        continue;
                    }

                    text.Append("  ").Append(Describe(frame)).Append('\n');
                }
            }

            foreach ((int stream, long run) in dataRun)
            {
                streams[stream].Append("  DATA ").Append(run).Append('\n');
            }

            var transcript = new StringBuilder(connection.ToString());
            foreach ((int stream, StringBuilder text) in streams)
            {
                transcript.Append("stream ").Append(stream).Append(":\n").Append(text);
            }

            transcript.Append("closed after ").Append(_acks).Append(" sync acks\n");
            return transcript.ToString();
        }

        private static string Describe(Frame frame) => frame.Type switch
        {
            FrameType.Settings when frame.Has(FrameFlags.Ack) => $"SETTINGS ack ({frame.Payload.Length})",
            FrameType.Settings => "SETTINGS " + string.Join(',', Enumerable.Range(0, frame.Payload.Length / 6)
                .Select(i => $"{BinaryPrimitives.ReadUInt16BigEndian(frame.Payload.AsSpan(i * 6))}={BinaryPrimitives.ReadUInt32BigEndian(frame.Payload.AsSpan(i * 6 + 2))}")),
            FrameType.Ping => $"PING{(frame.Has(FrameFlags.Ack) ? " ack" : "")} {Convert.ToHexString(frame.Payload)}",
            FrameType.GoAway => $"GOAWAY last={frame.LastStreamId} code={frame.ErrorCode}",
            FrameType.RstStream => $"RST_STREAM code={frame.ErrorCode}",
            FrameType.WindowUpdate => $"WINDOW_UPDATE {frame.Increment}",
            _ => $"{frame.Type} flags={frame.Flags:x2} length={frame.Payload.Length}",
        };

        private void Add(Frame frame)
        {
            lock (_frames)
            {
                _frames.Add((_acks, frame));
                if (frame.Type == FrameType.Ping && frame.Has(FrameFlags.Ack) && IsSync(frame.Flags, frame.StreamId, frame.Payload))
                {
                    Volatile.Write(ref _acks, _acks + 1);
                }

                if (frame.Type == FrameType.GoAway)
                {
                    goingAway();
                }

                if (frame.StreamId != 0 && (frame.Type == FrameType.RstStream || (frame.Type is FrameType.Headers or FrameType.Data && frame.Has(FrameFlags.EndStream))))
                {
                    _finished.Add(frame.StreamId);
                }

                Signal();
            }
        }

        private void Signal()
        {
            TaskCompletionSource changed = _changed;
            _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            changed.TrySetResult();
        }
    }
}

/// <summary>The cache hits of the connections a run made through HeaderCache, and how many stepped aside because their
/// values did not repeat or they had nothing to cache.</summary>
internal sealed class Engagement
{
    private long _connections;
    private long _engaged;
    private long _hits;
    private long _steppedAside;
    private long _nothingToCache;

    public long Connections => Interlocked.Read(ref _connections);

    /// <summary>Connections with at least one hit.</summary>
    public long Engaged => Interlocked.Read(ref _engaged);

    public long Hits => Interlocked.Read(ref _hits);

    /// <summary>Connections that stepped aside for <c>values_do_not_repeat</c>.</summary>
    public long SteppedAside => Interlocked.Read(ref _steppedAside);

    /// <summary>Connections that stepped aside for <c>nothing_to_cache</c>.</summary>
    public long NothingToCache => Interlocked.Read(ref _nothingToCache);

    public void Add(long hits, string? inactiveReason)
    {
        if (inactiveReason == "values_do_not_repeat")
        {
            Interlocked.Increment(ref _steppedAside);
        }
        else if (inactiveReason == "nothing_to_cache")
        {
            Interlocked.Increment(ref _nothingToCache);
        }

        Interlocked.Increment(ref _connections);
        Interlocked.Add(ref _hits, hits);
        if (hits > 0)
        {
            Interlocked.Increment(ref _engaged);
        }
    }

    public override string ToString() =>
        $"{Engaged} of {Connections} connections served fields from the cache ({Hits} hits), {SteppedAside} stepped aside for values_do_not_repeat, {NothingToCache} for nothing_to_cache";
}

/// <summary>What the application saw on one stream, and whether its handler waits for body octets.</summary>
internal sealed class StreamRecord(int stream, Action changed)
{
    private volatile bool _waiting;
    private volatile bool _done;
    private long _read;

    public int Stream { get; } = stream;

    public string Seen { get; set; } = "";

    /// <summary>The request's headers over its life.</summary>
    public HeaderTimeline? Timeline { get; set; }

    public string Outcome { get; set; } = "running";

    /// <summary>The handler waits in a read of the body.</summary>
    public bool Waiting
    {
        get => _waiting;
        set
        {
            _waiting = value;
            changed();
        }
    }

    /// <summary>Body octets the handler has read.</summary>
    public long Read
    {
        get => Interlocked.Read(ref _read);
        set
        {
            Interlocked.Exchange(ref _read, value);
            changed();
        }
    }

    public bool Done => _done;

    public void Finish()
    {
        _done = true;
        changed();
    }
}

/// <summary>The application's records of one connection.</summary>
internal sealed class ConnectionLog
{
    private readonly ConcurrentDictionary<int, StreamRecord> _streams = new();

    private readonly Lock _gate = new();
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _starts;
    private volatile bool _streamsOver;

    /// <summary>The streams the client's bytes open (whose header blocks end), as it reads them back.</summary>
    public int ExpectedStreams { get; set; }

    /// <summary>Whether hosting's end of each stream waits for a later stream to start (<see cref="AwaitLaterStart"/>).</summary>
    public bool Linger { get; set; }

    /// <summary>Completes at the next step of any handler (<see cref="Signal"/>).</summary>
    public Task ChangedAsync()
    {
        lock (_gate)
        {
            return _changed.Task;
        }
    }

    public void Signal()
    {
        TaskCompletionSource changed;
        lock (_gate)
        {
            changed = _changed;
            _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        changed.TrySetResult();
    }

    /// <summary>Whether every handler that started has returned.</summary>
    public bool AllDone => _streams.Values.All(record => record.Done);

    /// <summary>Whether hosting has ended every request whose handler started.</summary>
    public bool AllEnded => _streams.Values.All(record => record.Timeline is not { Ended: false });

    /// <summary>No stream will start that has not been sent: the client has sent its last byte, or the server is going
    /// away (a GOAWAY: Kestrel closes the connection only once hosting has ended every stream, so one that waited for a
    /// stream the client would send after its close would wait in vain).</summary>
    public void StreamsOver()
    {
        _streamsOver = true;
        Signal();
    }

    /// <summary>
    /// Blocks the caller, hosting's end of a request, until another stream's handler starts, up to
    /// <paramref name="limit"/>; returns at once when every stream the client opens has started, or once no stream can
    /// come (<see cref="StreamsOver"/>). True when a stream started meanwhile.
    /// </summary>
    public bool AwaitLaterStart(TimeSpan limit)
    {
        int seen = Volatile.Read(ref _starts);
        if (seen >= ExpectedStreams)
        {
            return false;
        }

        DateTime deadline = DateTime.UtcNow + limit;
        while (true)
        {
            // The task before the look, so that a start between the two wakes the wait.
            Task changed = ChangedAsync();
            if (Volatile.Read(ref _starts) > seen)
            {
                return true;
            }

            TimeSpan left = deadline - DateTime.UtcNow;
            if (_streamsOver || left <= TimeSpan.Zero || !changed.Wait(left))
            {
                return Volatile.Read(ref _starts) > seen;
            }
        }
    }

    public StreamRecord? Find(int stream) => _streams.GetValueOrDefault(stream);

    public void Add(StreamRecord record)
    {
        _streams[record.Stream] = record;
        Interlocked.Increment(ref _starts);
        Signal();
    }

    public string Transcript()
    {
        var text = new StringBuilder();
        foreach (StreamRecord record in _streams.Values.OrderBy(r => r.Stream))
        {
            text.Append("app ").Append(record.Stream).Append(": ").Append(record.Seen).Append("  -> ").Append(record.Outcome).Append('\n');
            text.Append(record.Timeline?.Transcript());
        }

        return text.ToString();
    }
}

/// <summary>
/// The application of the HTTP/2 fuzz servers: it records, per connection and stream, what it saw of the request and of
/// its headers over its life (<see cref="HeaderTimeline"/>, hosting's end through <see cref="Observe"/>), reads the body
/// to its end (telling the client when it waits for more), and answers with the body's length.
/// </summary>
internal sealed class Http2FuzzApp : IDisposable
{
    private readonly ConcurrentDictionary<string, ConnectionLog> _connections = new();
    private HostingEnds? _ends;
    private long _started;
    private long _ended;
    private long _lingered;
    private long _overlapped;
    private long _lingerTimeouts;

    /// <summary>Requests whose handler started on a recorded connection.</summary>
    public long Started => Interlocked.Read(ref _started);

    /// <summary>Those whose headers were read at hosting's end.</summary>
    public long Ended => Interlocked.Read(ref _ended);

    /// <summary>Hosting-end events the app's listener raised, for any request.</summary>
    public long HostingEndEvents => _ends?.Count ?? 0;

    /// <summary>Hosting's ends that waited for a later stream (lingering cases).</summary>
    public long Lingered => Interlocked.Read(ref _lingered);

    /// <summary>Hosting's ends during which another stream of the connection started its handler.</summary>
    public long Overlapped => Interlocked.Read(ref _overlapped);

    /// <summary>Hosting's ends that waited the whole <see cref="Http2Fuzzing.LingerLimit"/> (each one slows its case).</summary>
    public long LingerTimeouts => Interlocked.Read(ref _lingerTimeouts);

    /// <summary>Subscribes to hosting's end of the requests of the started app of <paramref name="services"/>.</summary>
    public void Observe(IServiceProvider services) => _ends = HostingEnds.Subscribe(services, End);

    public void Dispose() => _ends?.Dispose();

    public ConnectionLog Open(string connectionId) => _connections[connectionId] = new ConnectionLog();

    public void Close(string connectionId) => _connections.TryRemove(connectionId, out _);

    public async Task HandleAsync(HttpContext context)
    {
        if (!_connections.TryGetValue(context.Connection.Id, out ConnectionLog? log))
        {
            context.Response.StatusCode = 599;
            return;
        }

        HttpRequest request = context.Request;
        var record = new StreamRecord(context.Features.Get<IHttp2StreamIdFeature>()?.StreamId ?? -1, log.Signal);
        var seen = new StringBuilder();
        seen.Append(request.Method).Append(' ').Append(request.Scheme).Append("://").Append(request.Host.Value).Append(request.PathBase.Value)
            .Append(request.Path.Value).Append(request.QueryString.Value).Append(' ').Append(request.Protocol);
        record.Seen = seen.ToString();

        // The headers, at the start and at every later point (and the start counted) before the client can learn of it.
        HeaderTimeline timeline = record.Timeline = HeaderTimeline.Start(context, $"on stream {record.Stream}");
        Interlocked.Increment(ref _started);
        log.Add(record);
        long length = 0;
        try
        {
            PipeReader reader = request.BodyReader;
            while (true)
            {
                record.Waiting = true;
                ReadResult result;
                try
                {
                    result = await reader.ReadAsync();
                }
                finally
                {
                    record.Waiting = false;
                }

                length += result.Buffer.Length;
                reader.AdvanceTo(result.Buffer.End);

                // Counted before it waits again, so that "waiting, having read all the client sent" is never seen early.
                record.Read = length;
                if (result.IsCompleted)
                {
                    break;
                }
            }

            timeline.Read("body-read", context);

            var trailers = context.Features.Get<IHttpRequestTrailersFeature>();
            string trailerText = trailers is { Available: true }
                ? string.Concat(trailers.Trailers.Select(t => $" | {t.Key}: {string.Join(" ~ ", t.Value.ToArray())}"))
                : "";
            record.Outcome = "body " + length.ToString(CultureInfo.InvariantCulture) + trailerText;
            byte[] answer = Encoding.ASCII.GetBytes(length.ToString(CultureInfo.InvariantCulture));
            context.Response.ContentLength = answer.Length;
            await context.Response.Body.WriteAsync(answer);
        }
        catch (Exception e) when (e is IOException or OperationCanceledException or InvalidOperationException or Microsoft.AspNetCore.Http.BadHttpRequestException)
        {
            record.Outcome = $"aborted after {length} body octets ({e.GetType().Name})";
        }
        finally
        {
            timeline.Returning(context, "handler-return");
            record.Finish();
        }
    }

    // Hosting's end of a request, with the context hosting hands its observers; in lingering cases it first waits for a
    // later stream of the connection to start.
    private void End(HttpContext context)
    {
        if (HeaderTimeline.Of(context) is not { } timeline)
        {
            return;
        }

        _connections.TryGetValue(context.Connection.Id, out ConnectionLog? log);
        if (log is { Linger: true })
        {
            Interlocked.Increment(ref _lingered);
            long waiting = System.Diagnostics.Stopwatch.GetTimestamp();
            if (log.AwaitLaterStart(Http2Fuzzing.LingerLimit))
            {
                Interlocked.Increment(ref _overlapped);
            }
            else if (System.Diagnostics.Stopwatch.GetElapsedTime(waiting) >= Http2Fuzzing.LingerLimit)
            {
                Interlocked.Increment(ref _lingerTimeouts);
            }
        }

        timeline.End(context, $"stream {context.Features.Get<IHttp2StreamIdFeature>()?.StreamId ?? -1}");
        Interlocked.Increment(ref _ended);
        log?.Signal();
    }
}
