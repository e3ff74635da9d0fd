using System.Buffers;
using System.IO.Pipelines;
using HeaderCache.Caching;
using HeaderCache.Fields;
using HeaderCache.H2Client;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Tests.Transport;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Tests.Http2;

/// <summary>Reads of the HTTP/2 reader that wait for the transport, with an in-memory pipe as the transport.</summary>
public sealed class Http2FrameReaderTests
{
    [Fact]
    public void A_read_that_waits_resumes_Kestrel_inside_the_transports_continuation_and_allocates_nothing()
    {
        using var fixture = new Fixture();
        fixture.ReadPreface();
        var frames = new FrameWriter();
        frames.Ping(new byte[8]);
        byte[] ping = [.. frames.Bytes];
        int wrong = 0;

        void OnePing()
        {
            wrong += fixture.Kestrel.Start(fixture.Reader) ? 0 : 1;
            fixture.Write(ping);
            wrong += fixture.Shown(ping.Length) ? 0 : 1;
            fixture.Reader.AdvanceTo(fixture.Kestrel.Result.Buffer.End);
        }

        for (int i = 0; i < 10; i++)
        {
            OnePing();
        }

        int scheduled = fixture.Scheduler.Scheduled;
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 1000; i++)
        {
            OnePing();
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
        Assert.Equal(0, wrong);

        // One continuation of the transport's per write: Kestrel's runs in it.
        Assert.Equal(1000, fixture.Scheduler.Scheduled - scheduled);
    }

    [Fact]
    public void A_frame_held_until_whole_shows_Kestrel_no_bytes_while_only_part_of_it_has_arrived()
    {
        using var fixture = new Fixture();
        fixture.ReadPreface();
        var frames = new FrameWriter();
        frames.Headers(1, new HeaderBlock().Request("GET", "/").Without("x-a", "1").ToArray(), endStream: true, endHeaders: true);
        byte[] headers = [.. frames.Bytes];

        Assert.True(fixture.Kestrel.Start(fixture.Reader));
        fixture.Write(headers.AsSpan(0, 12).ToArray());
        Assert.True(fixture.Shown(0));
        Assert.False(fixture.Kestrel.Result.IsCompleted);
        fixture.Reader.AdvanceTo(fixture.Kestrel.Result.Buffer.Start, fixture.Kestrel.Result.Buffer.End);

        Assert.True(fixture.Kestrel.Start(fixture.Reader));
        fixture.Write(headers.AsSpan(12).ToArray());
        Assert.True(fixture.Kestrel.Completed);
        Assert.True(fixture.Kestrel.RanInTransportContinuation);
        byte[] shown = fixture.Kestrel.Result.Buffer.ToArray();
        Assert.True(shown.Length >= 9);
        Assert.Equal(shown.Length - 9, (shown[0] << 16) | (shown[1] << 8) | shown[2]);
        Assert.Equal((byte)FrameType.Headers, shown[3]);
        Assert.Equal(1, shown[8]);
        fixture.Reader.AdvanceTo(fixture.Kestrel.Result.Buffer.End);
    }

    [Fact]
    public void CancelPendingRead_and_a_transport_failure_reach_a_read_that_waits()
    {
        using var fixture = new Fixture();
        fixture.ReadPreface();

        Assert.True(fixture.Kestrel.Start(fixture.Reader));
        fixture.Reader.CancelPendingRead();
        Assert.True(fixture.Kestrel.Completed);
        Assert.Null(fixture.Kestrel.Failure);
        Assert.True(fixture.Kestrel.Result.IsCanceled);
        Assert.True(fixture.Kestrel.Result.Buffer.IsEmpty);
        fixture.Reader.AdvanceTo(fixture.Kestrel.Result.Buffer.Start, fixture.Kestrel.Result.Buffer.End);

        Assert.True(fixture.Kestrel.Start(fixture.Reader));
        fixture.Transport.Writer.Complete(new IOException("reset"));
        Assert.True(fixture.Kestrel.Completed);
        Assert.Equal("reset", Assert.IsType<IOException>(fixture.Kestrel.Failure).Message);
    }

    private sealed class Fixture : IDisposable
    {
        public Fixture()
        {
            Transport = new Pipe(new PipeOptions(readerScheduler: Scheduler, writerScheduler: PipeScheduler.Inline, pauseWriterThreshold: 0, useSynchronizationContext: false));
            var decoder = new HpackBlockDecoder(new HpackDynamicTable(4096), 32 * 1024);
            var rewriter = new HeaderBlockRewriter(decoder, FieldResolver.Create(25, 256, LongValueCache.DefaultBudget), new Http2StreamHandoff(200, 100), KestrelLimits.From(new KestrelServerLimits()));
            Reader = new Http2FrameReader(Transport.Reader, rewriter, decoder, 16384);
            Kestrel = new WaitingRead(Scheduler);
        }

        public CountingInlineScheduler Scheduler { get; } = new();

        public Pipe Transport { get; }

        public Http2FrameReader Reader { get; }

        public WaitingRead Kestrel { get; }

        public void ReadPreface()
        {
            Assert.True(Kestrel.Start(Reader));
            Write(FrameWriter.PrefaceBytes);
            Assert.True(Shown(FrameWriter.PrefaceBytes.Length));
            Reader.AdvanceTo(Kestrel.Result.Buffer.End);
        }

        public bool Shown(int length) =>
            Kestrel.Completed && Kestrel.RanInTransportContinuation && Kestrel.Failure is null && !Kestrel.Result.IsCanceled
            && Kestrel.Result.Buffer.Length == length;

        public void Write(byte[] bytes)
        {
            Transport.Writer.Write(bytes);
            ValueTask<FlushResult> flush = Transport.Writer.FlushAsync();
            if (!flush.IsCompletedSuccessfully)
            {
                throw new InvalidOperationException("The transport pipe applied back-pressure.");
            }

            _ = flush.Result;
        }

        public void Dispose() => Reader.Complete();
    }
}
