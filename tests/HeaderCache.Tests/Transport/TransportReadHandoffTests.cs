using System.Buffers;
using System.IO.Pipelines;
using HeaderCache.Transport;

namespace HeaderCache.Tests.Transport;

/// <summary>Kestrel's wait on the transport's read through <see cref="TransportReadHandoff"/>, with an in-memory pipe
/// as the transport and a reader that shows a read once it holds <see cref="Reader.Need"/> bytes.</summary>
public sealed class TransportReadHandoffTests
{
    private static readonly AsyncLocal<string> Flow = new();

    [Fact]
    public async Task The_wait_goes_on_until_the_reader_shows_something()
    {
        using var fixture = new Fixture(PipeScheduler.ThreadPool);
        fixture.Reader.Need = 5;
        ValueTask<ReadResult> read = fixture.ReadAsync();
        await fixture.WriteAsync("ab");
        await Task.Delay(20);
        Assert.False(read.IsCompleted);
        await fixture.WriteAsync("cde");
        ReadResult result = await read;
        Assert.Equal(5, result.Buffer.Length);
        Assert.Equal(2, fixture.Reader.WaitsEnded);
        fixture.Transport.Reader.AdvanceTo(result.Buffer.End);

        // The next wait is an invocation of its own.
        ValueTask<ReadResult> next = fixture.ReadAsync();
        await fixture.WriteAsync("fghij");
        Assert.Equal(5, (await next).Buffer.Length);
    }

    [Fact]
    public async Task A_failure_of_the_transport_or_of_the_reader_is_thrown_by_Kestrels_read_and_the_next_wait_works()
    {
        using var fixture = new Fixture(PipeScheduler.ThreadPool);
        fixture.Reader.Fail = true;
        ValueTask<ReadResult> failing = fixture.ReadAsync();
        await fixture.WriteAsync("a");
        await Assert.ThrowsAsync<InvalidOperationException>(async () => await failing);

        fixture.Reader.Fail = false;
        ValueTask<ReadResult> next = fixture.ReadAsync();
        await fixture.WriteAsync("b");
        ReadResult result = await next;
        Assert.Equal(2, result.Buffer.Length);
        fixture.Transport.Reader.AdvanceTo(result.Buffer.End);

        ValueTask<ReadResult> reset = fixture.ReadAsync();
        await fixture.Transport.Writer.CompleteAsync(new IOException("reset"));
        Assert.Equal("reset", (await Assert.ThrowsAsync<IOException>(async () => await reset)).Message);
    }

    [Fact]
    public async Task The_callers_token_cancels_Kestrels_read()
    {
        using var fixture = new Fixture(PipeScheduler.ThreadPool);
        using var cts = new CancellationTokenSource();
        ValueTask<ReadResult> read = fixture.ReadAsync(cts.Token);
        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await read);
    }

    [Fact]
    public async Task The_transports_pipe_resumes_the_wait_through_the_thread_pool_without_a_work_item_of_its_own()
    {
        var scheduler = new ThreadPoolQueueingScheduler();
        using var fixture = new Fixture(scheduler);
        for (int i = 0; i < 500; i++)
        {
            ValueTask<ReadResult> read = fixture.ReadAsync();
            await fixture.WriteAsync("x");
            ReadResult result = await read;
            fixture.Transport.Reader.AdvanceTo(result.Buffer.End);
        }

        Assert.Equal(500, scheduler.Scheduled);
        Assert.True(scheduler.Allocating <= scheduler.Scheduled / 20, $"{scheduler.Allocating} of {scheduler.Scheduled} continuations allocated as they were queued");
    }

    [Fact]
    public async Task A_continuation_that_blocks_on_the_read_it_starts_gets_it()
    {
        using var fixture = new Fixture(PipeScheduler.ThreadPool);
        var done = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
        ValueTask<ReadResult> first = fixture.ReadAsync();

        // Kestrel's continuation runs where the loop completes the read; a synchronous body read there blocks its
        // thread until the next read completes, which the loop must already wait on.
        ContinueWhereCompleted(first, () =>
        {
            fixture.Transport.Reader.AdvanceTo(first.GetAwaiter().GetResult().Buffer.End);
            ValueTask<ReadResult> next = fixture.ReadAsync();
            _ = Task.Run(async () =>
            {
                await Task.Delay(20);
                await fixture.WriteAsync("yz");
            });
            done.SetResult(next.AsTask().GetAwaiter().GetResult().Buffer.Length);
        });

        await fixture.WriteAsync("x");
        Assert.Equal(2, await done.Task.WaitAsync(TimeSpan.FromSeconds(10)));
    }

    [Fact]
    public async Task The_readers_work_runs_in_the_execution_context_of_Kestrels_read()
    {
        using var fixture = new Fixture(PipeScheduler.ThreadPool);
        Flow.Value = "first";
        ValueTask<ReadResult> first = fixture.ReadAsync();
        await fixture.WriteAsync("a");
        fixture.Transport.Reader.AdvanceTo((await first).Buffer.End);

        Flow.Value = "later";
        ValueTask<ReadResult> later = fixture.ReadAsync();
        await fixture.WriteAsync("b");
        fixture.Transport.Reader.AdvanceTo((await later).Buffer.End);
        Assert.Equal(["first", "later"], fixture.Reader.Flows);

        // Kestrel's own continuation keeps its own.
        Assert.Equal("later", Flow.Value);
    }

    // As Kestrel's awaits register: no context captured, the continuation runs where the read completes.
    private static void ContinueWhereCompleted(ValueTask<ReadResult> read, Action continuation) =>
        read.ConfigureAwait(false).GetAwaiter().UnsafeOnCompleted(continuation);

    private sealed class Reader(PipeReader input) : TransportReadHandoff.IReader
    {
        public int Need { get; set; } = 1;

        public bool Fail { get; set; }

        public int WaitsEnded { get; private set; }

        public List<string?> Flows { get; } = [];

        public void WaitEnded() => WaitsEnded++;

        public bool TryShow(in ReadResult read, out ReadResult result)
        {
            Flows.Add(Flow.Value);
            if (Fail)
            {
                input.AdvanceTo(read.Buffer.Start, read.Buffer.End);
                throw new InvalidOperationException("the reader failed");
            }

            result = read;
            if (read.Buffer.Length >= Need || read.IsCompleted || read.IsCanceled)
            {
                return true;
            }

            input.AdvanceTo(read.Buffer.Start, read.Buffer.End);
            return false;
        }
    }

    private sealed class Fixture : IDisposable
    {
        public Fixture(PipeScheduler scheduler)
        {
            Transport = new Pipe(new PipeOptions(readerScheduler: scheduler, writerScheduler: PipeScheduler.Inline, useSynchronizationContext: false));
            Reader = new Reader(Transport.Reader);
        }

        public Pipe Transport { get; }

        public Reader Reader { get; }

        // What a reader's ReadAsync does with a read that waits.
        public ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
        {
#pragma warning disable CA2012 // Handed on once, pending.
            ValueTask<ReadResult> read = Transport.Reader.ReadAsync(cancellationToken);
#pragma warning restore CA2012
            Assert.False(read.IsCompleted);
            return TransportReadHandoff.Wait(Reader, Transport.Reader, read, cancellationToken);
        }

        public async Task WriteAsync(string text) => await Transport.Writer.WriteAsync(System.Text.Encoding.ASCII.GetBytes(text));

        public void Dispose() => Transport.Reader.Complete();
    }
}
