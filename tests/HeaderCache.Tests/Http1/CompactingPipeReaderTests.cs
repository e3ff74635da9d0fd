using System.Buffers;
using System.IO.Pipelines;
using System.Reflection;
using System.Text;
using System.Threading.Tasks.Sources;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Testing;
using HeaderCache.Tests.Transport;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Tests.Http1;

/// <summary>The reader's side of the <see cref="PipeReader"/> contract, with an in-memory pipe as the transport.</summary>
public sealed class CompactingPipeReaderTests
{
    private const string Head = "GET / HTTP/1.1\r\nHost: x\r\nsec-ch-ua: \"A\"\r\nAccept: */*\r\n\r\n";

    [Fact]
    public async Task Compacted_head_reaches_the_reader_and_the_taken_lines_wait_in_the_queue()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync(Head);
        // The whole head is there: Kestrel gets it in one piece, as it would alone.
        ReadResult head = await fixture.Reader.ReadAsync();
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Text(head.Buffer));
        fixture.Reader.AdvanceTo(head.Buffer.End);

        var headers = new HeaderDictionary();
        Assert.True(fixture.Queue.TryApply(headers));
        Assert.Equal("\"A\"", headers["sec-ch-ua"]);
        Assert.Equal("*/*", headers["Accept"]);
        Assert.False(fixture.Queue.TryApply(new HeaderDictionary()));
    }

    [Fact]
    public async Task After_Complete_a_read_fails_as_the_transports_own_does_even_while_a_compacted_section_is_shown()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync(Head);
        ReadResult head = await fixture.Reader.ReadAsync();
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Text(head.Buffer));
        fixture.Reader.Complete();

        CompletedReads.FailAsTheTransportsOwn(fixture.Reader);
    }

    [Fact]
    public async Task Request_line_is_forwarded_before_the_head_is_complete()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync("GET / HT");
        ReadResult first = await fixture.Reader.ReadAsync();
        Assert.Equal("GET / HT", Text(first.Buffer));
        fixture.Reader.AdvanceTo(first.Buffer.Start, first.Buffer.End);

        // The line is shown as soon as it ends; the header line after it is held back.
        ValueTask<ReadResult> pending = fixture.Reader.ReadAsync();
        Assert.False(pending.IsCompleted);
        await fixture.WriteAsync("TP/1.1\r\nsec-ch-ua: \"A\"\r\n");
        ReadResult line = await pending;
        Assert.Equal("GET / HTTP/1.1\r\n", Text(line.Buffer));
        fixture.Reader.AdvanceTo(line.Buffer.End);

        ValueTask<ReadResult> held = fixture.Reader.ReadAsync();
        await Task.Delay(20);
        Assert.False(held.IsCompleted);
        await fixture.WriteAsync("\r\n");
        ReadResult section = await held;
        Assert.Equal("\r\n", Text(section.Buffer));
    }

    [Fact]
    public async Task Examined_but_unconsumed_data_is_not_returned_again_until_more_arrives()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync("GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\na");

        // A view that ends before the transport's data does: looked at but not taken, the read still waits.
        ReadResult head = await fixture.Reader.ReadAsync();
        fixture.Reader.AdvanceTo(head.Buffer.Start, head.Buffer.End);
        ValueTask<ReadResult> pending = fixture.Reader.ReadAsync();
        await Task.Delay(20);
        Assert.False(pending.IsCompleted);
        await fixture.WriteAsync("b");
        head = await pending;
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Text(head.Buffer));
        fixture.Reader.AdvanceTo(head.Buffer.End);

        // The next head is taken as it comes; its body is read the same way.
        ReadResult post = await fixture.Reader.ReadAsync();
        Assert.Equal("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", Text(post.Buffer));
        fixture.Reader.AdvanceTo(post.Buffer.End);

        ReadResult body = await fixture.Reader.ReadAsync();
        Assert.Equal("ab", Text(body.Buffer));
        fixture.Reader.AdvanceTo(body.Buffer.Start, body.Buffer.End);
        ValueTask<ReadResult> waiting = fixture.Reader.ReadAsync();
        await Task.Delay(20);
        Assert.False(waiting.IsCompleted);
        await fixture.WriteAsync("c");
        body = await waiting;
        Assert.Equal("abc", Text(body.Buffer));
    }

    [Fact]
    public async Task CancelPendingRead_wakes_a_read_that_waits_for_the_transport()
    {
        using var fixture = new Fixture();
        ValueTask<ReadResult> pending = fixture.Reader.ReadAsync();
        Assert.False(pending.IsCompleted);
        fixture.Reader.CancelPendingRead();
        ReadResult result = await pending;
        Assert.True(result.IsCanceled);
        fixture.Reader.AdvanceTo(result.Buffer.End);

        // The leftover cancellation on the transport side is absorbed: the next read waits for data.
        ValueTask<ReadResult> next = fixture.Reader.ReadAsync();
        await Task.Delay(50);
        Assert.False(next.IsCompleted);
        await fixture.WriteAsync(Head);
        ReadResult data = await next;
        Assert.False(data.IsCanceled);
        Assert.StartsWith("GET / HTTP/1.1", Text(data.Buffer), StringComparison.Ordinal);
    }

    [Fact]
    public void A_read_that_waits_resumes_Kestrel_inside_the_transports_continuation_and_allocates_nothing()
    {
        var scheduler = new CountingInlineScheduler();
        var transport = new Pipe(new PipeOptions(readerScheduler: scheduler, writerScheduler: PipeScheduler.Inline, pauseWriterThreshold: 0, useSynchronizationContext: false));
        var queue = new HeaderInjectionQueue();
        using var compactor = new HeadCompactor(
            FieldResolver.Create(HeaderStringCache.DefaultSlotCount, HeaderStringCache.DefaultMaxLength, LongValueCache.DefaultBudget), queue, KestrelLimits.From(new KestrelServerLimits()), leaveReusedValues: true, new LineMemo());
        var reader = new CompactingPipeReader(transport.Reader, compactor, KestrelLimits.From(new KestrelServerLimits()));
        var kestrel = new WaitingRead(scheduler);
        byte[] line = "GET / HTTP/1.1\r\n"u8.ToArray();
        byte[] lines = "Host: x\r\nsec-ch-ua: \"A\"\r\n"u8.ToArray();
        byte[] end = "\r\n"u8.ToArray();
        var headers = new HeaderDictionary();
        int wrong = 0;

        // Between requests, and in a section that arrives in two writes: every read waits, the write that completes a
        // view resumes Kestrel inside the transport's continuation, and the one that completes nothing does not.
        void OneRequest()
        {
            wrong += kestrel.Start(reader) ? 0 : 1;
            Write(transport, line);
            wrong += Shown(kestrel, line.Length) ? 0 : 1;
            reader.AdvanceTo(kestrel.Result.Buffer.End);

            wrong += kestrel.Start(reader) ? 0 : 1;
            Write(transport, lines);
            wrong += kestrel.Completed ? 1 : 0;
            Write(transport, end);
            wrong += Shown(kestrel, "Host: x\r\n\r\n".Length) ? 0 : 1;
            reader.AdvanceTo(kestrel.Result.Buffer.End);
            wrong += queue.TryApply(headers) ? 0 : 1;
        }

        for (int i = 0; i < 10; i++)
        {
            OneRequest();
        }

        int scheduled = scheduler.Scheduled;
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 1000; i++)
        {
            OneRequest();
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
        Assert.Equal(0, wrong);

        // One continuation of the transport's per write: Kestrel's runs in it.
        Assert.Equal(3 * 1000, scheduler.Scheduled - scheduled);
        Assert.Equal("\"A\"", headers["sec-ch-ua"]);
        reader.Complete();
    }

    [Fact]
    public async Task A_read_that_waits_in_a_section_is_woken_by_CancelPendingRead_and_fails_as_the_transport_does()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync("GET / HTTP/1.1\r\n");
        ReadResult line = await fixture.Reader.ReadAsync();
        fixture.Reader.AdvanceTo(line.Buffer.End);

        // Nothing of a section is shown before it is complete: the cancellation shows no bytes.
        ValueTask<ReadResult> section = fixture.Reader.ReadAsync();
        await fixture.WriteAsync("Host: x\r\n");
        Assert.False(section.IsCompleted);
        fixture.Reader.CancelPendingRead();
        ReadResult canceled = await section;
        Assert.True(canceled.IsCanceled);
        Assert.True(canceled.Buffer.IsEmpty);
        fixture.Reader.AdvanceTo(canceled.Buffer.Start, canceled.Buffer.End);

        ValueTask<ReadResult> failing = fixture.Reader.ReadAsync();
        Assert.False(failing.IsCompleted);
        await fixture.Transport.Writer.CompleteAsync(new IOException("reset"));
        IOException thrown = await Assert.ThrowsAsync<IOException>(async () => await failing);
        Assert.Equal("reset", thrown.Message);
    }

    [Fact]
    public async Task A_transport_read_that_completes_while_the_reader_looks_at_it_is_still_shown_through_the_reader()
    {
        var pipe = new Pipe();
        await pipe.Writer.WriteAsync(Encoding.ASCII.GetBytes(Head));
        var transport = new CompletingWhileLookedAt(pipe.Reader);
        var queue = new HeaderInjectionQueue();
        using var compactor = new HeadCompactor(
            FieldResolver.Create(HeaderStringCache.DefaultSlotCount, HeaderStringCache.DefaultMaxLength, LongValueCache.DefaultBudget), queue, KestrelLimits.From(new KestrelServerLimits()), leaveReusedValues: true, new LineMemo());
        var reader = new CompactingPipeReader(transport, compactor, KestrelLimits.From(new KestrelServerLimits()));

        ReadResult head = await reader.ReadAsync();
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Text(head.Buffer));
        reader.AdvanceTo(head.Buffer.End);
        Assert.True(queue.TryApply(new HeaderDictionary()));
    }

    private static bool Shown(WaitingRead read, int length) =>
        read.Completed && read.RanInTransportContinuation && read.Failure is null && !read.Result.IsCanceled && read.Result.Buffer.Length == length;

    private static void Write(Pipe transport, byte[] bytes)
    {
        transport.Writer.Write(bytes);
        ValueTask<FlushResult> flush = transport.Writer.FlushAsync();
        if (!flush.IsCompletedSuccessfully)
        {
            throw new InvalidOperationException("The transport pipe applied back-pressure.");
        }

        _ = flush.Result;
    }

    [Fact]
    public async Task A_cancellation_of_the_transports_reader_that_Kestrel_did_not_ask_for_shows_no_bytes()
    {
        using var fixture = new Fixture();
        ValueTask<ReadResult> pending = fixture.Reader.ReadAsync();
        fixture.Transport.Reader.CancelPendingRead();
        ReadResult nothing = await pending;
        Assert.True(nothing.Buffer.IsEmpty);
        Assert.False(nothing.IsCanceled);
        Assert.False(nothing.IsCompleted);
        fixture.Reader.AdvanceTo(nothing.Buffer.Start, nothing.Buffer.End);

        ValueTask<ReadResult> next = fixture.Reader.ReadAsync();
        await Task.Delay(20);
        Assert.False(next.IsCompleted);
        await fixture.WriteAsync(Head);
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Text((await next).Buffer));
    }

    [Fact]
    public async Task A_waiting_read_sees_nothing_of_a_section_until_it_is_complete_and_each_waiting_read_gets_its_own_head()
    {
        using var fixture = new Fixture();
        for (int i = 0; i < 3; i++)
        {
            ValueTask<ReadResult> line = fixture.Reader.ReadAsync();
            Assert.False(line.IsCompleted);
            await fixture.WriteAsync($"GET /{i} HTTP/1.1\r\n");
            ReadResult shown = await line;
            Assert.Equal($"GET /{i} HTTP/1.1\r\n", Text(shown.Buffer));
            fixture.Reader.AdvanceTo(shown.Buffer.End);

            // The section arrives in three writes while the read waits: the reader reads on until the empty line.
            ValueTask<ReadResult> section = fixture.Reader.ReadAsync();
            await fixture.WriteAsync("Host: x\r\n");
            await fixture.WriteAsync($"sec-ch-ua: \"A{i}\"\r\n");
            await Task.Delay(20);
            Assert.False(section.IsCompleted);
            await fixture.WriteAsync("\r\n");
            ReadResult head = await section;
            Assert.Equal("Host: x\r\n\r\n", Text(head.Buffer));
            fixture.Reader.AdvanceTo(head.Buffer.End);
            Assert.True(fixture.Queue.TryApply(new HeaderDictionary()));
        }
    }

    [Fact]
    public async Task CancelPendingRead_before_a_read_cancels_that_read()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync(Head);
        fixture.Reader.CancelPendingRead();
        ReadResult result = await fixture.Reader.ReadAsync();
        Assert.True(result.IsCanceled);
    }

    [Fact]
    public async Task TryRead_serves_available_input_and_reports_none_without_input()
    {
        using var fixture = new Fixture();
        Assert.False(fixture.Reader.TryRead(out _));
        await fixture.WriteAsync(Head);
        Assert.True(fixture.Reader.TryRead(out ReadResult head));
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", Text(head.Buffer));
        fixture.Reader.AdvanceTo(head.Buffer.End);
        Assert.False(fixture.Reader.TryRead(out _));
    }

    [Fact]
    public async Task Transport_end_hands_over_a_partial_head_unchanged_and_completes()
    {
        using var fixture = new Fixture();
        await fixture.WriteAsync("GET / HTTP/1.1\r\nsec-ch-ua: \"A\"\r\n");
        await fixture.Transport.Writer.CompleteAsync();
        ReadResult result = await fixture.Reader.ReadAsync();
        while (!result.IsCompleted)
        {
            fixture.Reader.AdvanceTo(result.Buffer.Start, result.Buffer.End);
            result = await fixture.Reader.ReadAsync();
        }

        Assert.Equal("GET / HTTP/1.1\r\nsec-ch-ua: \"A\"\r\n", Text(result.Buffer));
    }

    [Fact]
    public async Task Transport_failure_reaches_the_reader()
    {
        using var fixture = new Fixture();
        ValueTask<ReadResult> pending = fixture.Reader.ReadAsync();
        await fixture.Transport.Writer.CompleteAsync(new IOException("reset"));
        IOException thrown = await Assert.ThrowsAsync<IOException>(async () => await pending);
        Assert.Equal("reset", thrown.Message);
    }

    [Fact]
    public async Task Caller_token_cancels_the_read_without_breaking_the_reader()
    {
        using var fixture = new Fixture();
        using var cts = new CancellationTokenSource();
        ValueTask<ReadResult> pending = fixture.Reader.ReadAsync(cts.Token);
        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await pending);
        await fixture.WriteAsync(Head);
        ReadResult result = await fixture.Reader.ReadAsync();
        Assert.StartsWith("GET / HTTP/1.1", Text(result.Buffer), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Complete_completes_the_transport_reader()
    {
        using var fixture = new Fixture();
        await fixture.Reader.CompleteAsync();
        FlushResult flush = await fixture.Transport.Writer.WriteAsync("x"u8.ToArray());
        Assert.True(flush.IsCompleted);
    }

    [Fact]
    public async Task A_connection_whose_heads_have_nothing_to_take_is_left_to_Kestrel()
    {
        using var fixture = new Fixture();
        // Host is Kestrel's to act on, and Accept repeats: from the second head on Kestrel reuses its string on its own.
        const string Plain = "GET / HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
        await fixture.WriteAsync(Plain);
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", await ReadHeadAsync(fixture));

        // A head with a line to take starts the count again.
        for (int i = 1; i < CompactingPipeReader.HeadsWithNothingToTake; i++)
        {
            await fixture.WriteAsync(Plain);
            Assert.Equal(Plain, await ReadHeadAsync(fixture));
        }

        await fixture.WriteAsync(Head);
        Assert.Equal("GET / HTTP/1.1\r\nHost: x\r\n\r\n", await ReadHeadAsync(fixture));
        for (int i = 1; i < CompactingPipeReader.HeadsWithNothingToTake; i++)
        {
            await fixture.WriteAsync(Plain);
            Assert.Equal(Plain, await ReadHeadAsync(fixture));
        }

        Assert.Equal(PassThroughReason.None, fixture.Reader.PassThroughReason);
        Assert.True(fixture.Fields.Values.IsAllocated);
        Assert.True(HoldsLines(fixture.Queue));

        // The last of them has a body: it is read as it is, and so is everything after it.
        const string Post = "POST / HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nContent-Length: 2\r\n\r\n";
        await fixture.WriteAsync(Post + "ab" + Head);
        ReadResult post = await fixture.Reader.ReadAsync();
        Assert.Equal(Post, Text(post.Buffer));
        fixture.Reader.AdvanceTo(post.Buffer.End);
        Assert.Equal(PassThroughReason.NothingToCache, fixture.Reader.PassThroughReason);

        // What would serve a later head is let go of; what the cache did stays counted.
        Assert.False(fixture.Fields.Values.IsAllocated);
        Assert.False(HoldsLines(fixture.Queue));
        Assert.Equal(0, fixture.Fields.Values.Count);
        Assert.True(fixture.Fields.Values.Counters.Misses > 0);

        ReadResult rest = await fixture.Reader.ReadAsync();
        Assert.Equal("ab" + Head, Text(rest.Buffer));
        Assert.False(fixture.Queue.TryApply(new HeaderDictionary()));
    }

    private static async Task<string> ReadHeadAsync(Fixture fixture)
    {
        ReadResult head = await fixture.Reader.ReadAsync();
        string text = Text(head.Buffer);
        fixture.Reader.AdvanceTo(head.Buffer.End);
        fixture.Queue.TryApply(new HeaderDictionary());
        return text;
    }

    [Fact]
    public void Steady_state_compaction_allocates_nothing()
    {
        using var driver = new ReaderDriver();
        byte[] head = Encoding.ASCII.GetBytes(
            "GET /img/a.webp HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nsec-ch-ua: \"Chromium\";v=\"146\"\r\n" +
            "User-Agent: Mozilla/5.0\r\nAccept: image/avif,*/*\r\nSec-Fetch-Dest: image\r\nPOST-ish: 1\r\n\r\n");
        var headers = new HeaderDictionary();

        void OneRequest()
        {
            driver.Clear();
            driver.Send(head);
            driver.Queue.TryApply(headers);
        }

        for (int i = 0; i < 10; i++)
        {
            OneRequest();
        }

        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 1000; i++)
        {
            OneRequest();
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
        // From the second request on, the known values that repeat go out too (the head is compacted anyway) and come
        // back as the previous strings, which Kestrel would have reused.
        Assert.Equal("GET /img/a.webp HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", Encoding.ASCII.GetString(driver.Seen));
        Assert.Equal("Mozilla/5.0", headers["User-Agent"]);
    }

    private static string Text(ReadOnlySequence<byte> buffer) => Encoding.ASCII.GetString(buffer.ToArray());

    // A transport whose reads have their bytes already, but say so only from the second look at their status on: as a
    // read that completes on another thread while the reader looks at it.
    private sealed class CompletingWhileLookedAt(PipeReader inner) : PipeReader, IValueTaskSource<ReadResult>
    {
        private int _looks;

        public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
        {
            _looks = 0;
            return new(this, 0);
        }

        public override bool TryRead(out ReadResult result) => inner.TryRead(out result);

        public override void AdvanceTo(SequencePosition consumed) => inner.AdvanceTo(consumed);

        public override void AdvanceTo(SequencePosition consumed, SequencePosition examined) => inner.AdvanceTo(consumed, examined);

        public override void CancelPendingRead() => inner.CancelPendingRead();

        public override void Complete(Exception? exception = null) => inner.Complete(exception);

        public ReadResult GetResult(short token) => inner.TryRead(out ReadResult result) ? result : throw new InvalidOperationException("no bytes");

        public ValueTaskSourceStatus GetStatus(short token) => ++_looks == 1 ? ValueTaskSourceStatus.Pending : ValueTaskSourceStatus.Succeeded;

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            ThreadPool.UnsafeQueueUserWorkItem(continuation, state, preferLocal: false);
    }

    // Whether the queue keeps its array of lines, which nothing in the library asks: read from the field that holds it.
    private static bool HoldsLines(HeaderInjectionQueue queue) =>
        ((TakenHeader[])typeof(HeaderInjectionQueue).GetField("_lines", BindingFlags.Instance | BindingFlags.NonPublic)!.GetValue(queue)!).Length != 0;

    private sealed class Fixture : IDisposable
    {
        public Fixture()
        {
            Transport = new Pipe();
            Queue = new HeaderInjectionQueue();
            Fields = FieldResolver.Create(HeaderStringCache.DefaultSlotCount, HeaderStringCache.DefaultMaxLength, LongValueCache.DefaultBudget);
            Compactor = new HeadCompactor(Fields, Queue, KestrelLimits.From(new KestrelServerLimits()), leaveReusedValues: true, new LineMemo());
            Reader = new CompactingPipeReader(Transport.Reader, Compactor, KestrelLimits.From(new KestrelServerLimits()));
        }

        public Pipe Transport { get; }

        public HeaderInjectionQueue Queue { get; }

        public FieldResolver Fields { get; }

        public HeadCompactor Compactor { get; }

        public CompactingPipeReader Reader { get; }

        public async Task WriteAsync(string text) => await Transport.Writer.WriteAsync(Encoding.ASCII.GetBytes(text));

        public void Dispose() => Compactor.Dispose();
    }
}
