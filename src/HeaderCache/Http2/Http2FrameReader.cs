using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Transport;

namespace HeaderCache.Http2;

/// <summary>The <see cref="PipeReader"/> Kestrel reads instead of an HTTP/2 connection's (decrypted) transport. Every
/// byte passes unchanged, as slices of the transport's buffer, except HEADERS frames that open a stream, which
/// <see cref="HeaderBlockRewriter"/> may show without the fields it takes out. This file holds the states and what
/// Kestrel sees in each (the calls themselves are <see cref="TransportReader"/>'s); the frame walk that moves between
/// them is in Http2FrameReader.Frames.cs.</summary>
/// <remarks><para>Kestrel sees each byte it would act on when it would alone: the preface and frame headers as soon as
/// they are whole (Kestrel checks a frame's header before its payload arrives), other frames' payloads as they arrive.
/// Only a HEADERS frame that may be rewritten is held until it is complete, which is when Kestrel would decode it;
/// if the client ends the connection first, Kestrel gets everything held, unchanged.</para>
/// <para>A rewritten frame is shown alone from the held buffer while the transport's read stays pending; once
/// Kestrel has taken it, the transport moves past the frame as the client sent it.</para>
/// <para>Once the reader stops (a decoding error, a frame Kestrel rejects, anything it does not follow, or, between
/// frames, values that do not repeat), every call goes straight to the transport's reader.</para></remarks>
internal sealed partial class Http2FrameReader : TransportReader
{
    private readonly HeaderBlockRewriter _rewriter;
    private readonly HpackBlockDecoder _decoder;
    private readonly int _maxFrameSize;

    // The walk (Http2FrameReader.Frames.cs) moves these forward; what Kestrel takes (below) moves them back.
    private State _state;
    private long _decided;              // bytes at the front of Buffer Kestrel may see as they are
    private bool _readBroughtNothing;   // the last wait ended in a cancellation alone, and the next continues it

    public Http2FrameReader(PipeReader input, HeaderBlockRewriter rewriter, HpackBlockDecoder decoder, int maxFrameSize)
        : base(input)
    {
        _rewriter = rewriter;
        _decoder = decoder;
        _maxFrameSize = maxFrameSize;
    }

    // Where the walk is in the client's bytes, and so what Kestrel's next read shows. The walk decides the bytes from
    // _decided on; Kestrel sees the decided bytes as they are, then a held frame, if any.
    private enum State
    {
        Preface,         // the client preface is arriving: Kestrel sees its bytes as they arrive, while they match
        FrameHeader,     // between frames, no header block open: the next frame header is decided once whole
        Payload,         // a frame's payload that is no header block's passes as it arrives
        BlockFragment,   // a HEADERS or CONTINUATION payload passes as it arrives and is collected for the table mirror
        Continuation,    // between the frames of an open header block: the next frame must be its CONTINUATION
        Held,            // a rewritten HEADERS frame waits in the held buffer behind decided bytes Kestrel has not taken
        HeldShown,       // Kestrel is shown the rewritten frame; the transport's read stays pending until it takes it all
        Stopped,         // every call goes straight to the transport's reader
    }

    /// <summary>Why the reader stopped, or <see cref="PassThroughReason.None"/>.</summary>
    public PassThroughReason PassThroughReason { get; private set; }

    /// <summary>The connection told once when the reader stops, with what made it stop.</summary>
    public IOwner? Owner { get; init; }

    /// <summary>What the connection the reader reads does when the reader stops.</summary>
    public interface IOwner
    {
        /// <summary>Called once when the reader stops serving the connection, with why.</summary>
        void Stopped(Http2StopCause cause);
    }

    protected override bool PassesThrough => _state == State.Stopped;

    protected override bool ShowsHeld => _state == State.HeldShown;

    // A read that brought only a cancellation brought no request: the wait after it is the same wait.
    protected override void WaitStarts(IdleTrim idle) => idle.Wait(continues: _readBroughtNothing);

    protected override bool TryShowWaited(in ReadResult input, out ReadResult result)
    {
        if (TryPresent(input, out result))
        {
            _readBroughtNothing = result.IsCanceled && result.Buffer.IsEmpty;
            return true;
        }

        // Only part of a frame being held arrived (or a cancellation Kestrel did not ask for): Kestrel sees no bytes
        // and reads again, as it does when a read brings it part of a frame.
        _readBroughtNothing = false;
        result = ShowNothing();
        return true;
    }

    // Decides what Kestrel sees of a transport read. False: nothing yet; the read was advanced, read again.
    protected override bool TryPresent(in ReadResult input, out ReadResult result)
    {
        Buffer = input.Buffer;
        bool canceled = KestrelCanceled(input);
        if (_state != State.Held)
        {
            Walk(input.IsCompleted);
        }

        if (_state == State.Stopped)
        {
            result = new ReadResult(Buffer, canceled, input.IsCompleted);
            return true;
        }

        if (_decided == 0 && _state == State.Held)
        {
            _state = State.HeldShown;
            result = HeldView(canceled);
            return true;
        }

        if (_decided == 0 && !canceled && !input.IsCompleted)
        {
            // Only a frame being held, or a cancellation Kestrel has already seen: wait for more.
            Input.AdvanceTo(Buffer.Start, Buffer.End);
            Buffer = default;
            result = default;
            return false;
        }

        result = View(_decided, canceled, input.IsCompleted && _decided == Buffer.Length);
        return true;
    }

    protected override SequencePosition Examined(long taken, SequencePosition consumed, SequencePosition examined)
    {
        if (taken == ViewLength || _state == State.Held)
        {
            // Everything shown was taken, or a rewritten frame waits behind it: what follows is shown at once.
            return consumed;
        }

        // Everything shown was looked at: wait for bytes that are new to the transport too.
        return Buffer.Slice(0, examined).Length >= ViewLength ? Buffer.End : examined;
    }

    protected override void Taken(long taken) => _decided -= taken;

    protected override void HeldTaken() => _state = State.FrameHeader;

    // Every later call goes to the transport's reader; the bytes of the read being presented are shown as they are. What
    // was handed to streams stays for their requests; the table mirror, the buffers and the caches go.
    private void Stop(Http2StopCause cause)
    {
        _state = State.Stopped;
        PassThroughReason = cause.Reason();
        Release();
        Owner?.Stopped(cause);
    }
}
