using System.Buffers;
using System.IO.Pipelines;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.H2Client;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Tests.Transport;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Tests.Http2;

/// <summary>Each cause that makes the HTTP/2 reader stop, read in one piece from an in-memory transport: the reader
/// names it once, and Kestrel gets every byte unchanged.</summary>
public sealed class Http2StopCauseTests
{
    private static readonly byte[] Block = new HeaderBlock().Request("GET", "/").Without("x-a", "1").ToArray();

    [Fact]
    public void Bytes_that_are_not_the_preface_stop_it()
    {
        Assert.Equal(Http2StopCause.NotPreface, Stops("GET / HTTP/1.1\r\n\r\n"u8.ToArray()));
    }

    [Fact]
    public void The_client_ending_within_a_frame_header_stops_it()
    {
        var frames = Preface();
        frames.Ping(new byte[8]);
        Assert.Equal(Http2StopCause.ClientEnded, Stops([.. frames.Bytes.Take(frames.Bytes.Count - 12)], end: true));
    }

    [Fact]
    public void A_frame_on_an_even_stream_stops_it()
    {
        var frames = Preface();
        frames.Data(2, new byte[4], endStream: false);
        Assert.Equal(Http2StopCause.FrameRejected, Stops([.. frames.Bytes]));
    }

    [Fact]
    public void A_HEADERS_frame_shorter_than_its_priority_fields_stops_it()
    {
        var frames = Preface();
        frames.Frame(FrameType.Headers, FrameFlags.EndHeaders | FrameFlags.Priority, 1, new byte[3]);
        Assert.Equal(Http2StopCause.FieldsDoNotFit, Stops([.. frames.Bytes]));
    }

    [Fact]
    public void A_padded_HEADERS_frame_whose_padding_is_longer_than_it_stops_it()
    {
        var frames = Preface();
        frames.Headers(1, Block, endStream: true, endHeaders: true, padding: 1, declaredPad: 200);
        Assert.Equal(Http2StopCause.FieldsDoNotFit, Stops([.. frames.Bytes]));
    }

    [Fact]
    public void A_stream_that_depends_on_itself_stops_it()
    {
        var frames = Preface();
        frames.Headers(1, Block, endStream: true, endHeaders: true, dependency: 1);
        Assert.Equal(Http2StopCause.DependsOnItself, Stops([.. frames.Bytes]));
    }

    [Fact]
    public void A_block_Kestrels_decoder_rejects_stops_it()
    {
        var frames = Preface();
        frames.Headers(1, [0x80], endStream: true, endHeaders: true);
        Assert.Equal(Http2StopCause.BlockUndecodable, Stops([.. frames.Bytes]));
    }

    [Fact]
    public void A_block_far_longer_than_Kestrel_accepts_stops_it_and_its_frames_pass_whole()
    {
        // CONTINUATION frames past what the reader collects, all in one read: the frame that crosses the bound and those
        // after it reach Kestrel as they are.
        var frames = Preface();
        frames.Headers(1, Block, endStream: true, endHeaders: false);
        for (int i = 0; i < 40; i++)
        {
            frames.Continuation(1, new byte[16384], endHeaders: false);
        }

        frames.Continuation(1, Block, endHeaders: true);
        Assert.Equal(Http2StopCause.BlockTooLong, Stops([.. frames.Bytes]));
    }

    [Fact]
    public void After_Complete_a_read_fails_as_the_transports_own_does_even_while_a_rewritten_frame_is_shown()
    {
        var frames = Preface();
        frames.Headers(1, Block, endStream: true, endHeaders: true);
        using var fixture = new Fixture([.. frames.Bytes]);
        Assert.True(fixture.Reader.TryRead(out ReadResult preface));
        fixture.Reader.AdvanceTo(preface.Buffer.End);
        Assert.True(fixture.Reader.TryRead(out ReadResult rewritten));
        Assert.True(rewritten.Buffer.Length < frames.Bytes.Count - FrameWriter.PrefaceBytes.Length, "the frame was not rewritten");
        fixture.Reader.Complete();

        CompletedReads.FailAsTheTransportsOwn(fixture.Reader);
    }

    private static FrameWriter Preface()
    {
        var frames = new FrameWriter();
        frames.Preface();
        return frames;
    }

    // Reads everything as Kestrel would, taking all of each read; the cause the reader reported, once.
    private static Http2StopCause Stops(byte[] bytes, bool end = false)
    {
        using var fixture = new Fixture(bytes, end);
        var shown = new List<byte>();
        while (fixture.Reader.TryRead(out ReadResult result))
        {
            shown.AddRange(result.Buffer.ToArray());
            fixture.Reader.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                break;
            }
        }

        Assert.Equal(bytes, shown);
        Assert.Equal(PassThroughReason.Http2Stopped, fixture.Reader.PassThroughReason);
        return Assert.Single(fixture.Reported);
    }

    private sealed class Owner(List<Http2StopCause> reported) : Http2FrameReader.IOwner
    {
        public void Stopped(Http2StopCause cause) => reported.Add(cause);
    }

    private sealed class Fixture : IDisposable
    {
        public Fixture(byte[] bytes, bool end = false)
        {
            var transport = new Pipe(new PipeOptions(pauseWriterThreshold: 0, useSynchronizationContext: false));
            var decoder = new HpackBlockDecoder(new HpackDynamicTable(4096), 32 * 1024);
            var rewriter = new HeaderBlockRewriter(decoder, FieldResolver.Create(25, 256, LongValueCache.DefaultBudget), new Http2StreamHandoff(200, 100), KestrelLimits.From(new KestrelServerLimits()));
            Reader = new Http2FrameReader(transport.Reader, rewriter, decoder, 16384) { Owner = new Owner(Reported) };
            transport.Writer.Write(bytes);
            _ = transport.Writer.FlushAsync().AsTask().Result;
            if (end)
            {
                transport.Writer.Complete();
            }
        }

        public Http2FrameReader Reader { get; }

        public List<Http2StopCause> Reported { get; } = [];

        public void Dispose() => Reader.Complete();
    }
}
