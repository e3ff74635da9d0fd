using System.Buffers;
using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Http1;
using HeaderCache.Pipes;

namespace HeaderCache.Http2;

/// <summary>The <see cref="PipeReader"/> Kestrel reads instead of an HTTP/2 connection's (decrypted) transport. Every
/// byte passes unchanged, as slices of the transport's buffer, except HEADERS frames that open a stream, which
/// <see cref="HeaderBlockRewriter"/> may show without the fields it takes out. The frame walk is in
/// Http2FrameReader.Frames.cs.</summary>
/// <remarks><para>Kestrel sees each byte it would act on when it would alone: the preface and frame headers as soon as
/// they are whole (Kestrel checks a frame's header before its payload arrives), other frames' payloads as they arrive.
/// Only a HEADERS frame that may be rewritten is held until it is complete, which is when Kestrel would decode it;
/// if the client ends the connection first, Kestrel gets everything held, unchanged.</para>
/// <para>A rewritten frame is shown alone from a buffer of its own while the transport's read stays pending; once
/// Kestrel has taken it, the transport moves past the frame as the client sent it.</para>
/// <para>Once the reader stops serving (a decoding error, a frame Kestrel rejects, anything it does not follow), every
/// call goes straight to the transport's reader.</para></remarks>
internal sealed partial class Http2FrameReader : PipeReader, TransportReadHandoff.IReader, IdleTrim.ITarget
{
    private readonly PipeReader _input;
    private ReadOnlySequence<byte> _buffer;   // the transport's pending read, from Kestrel's consumed position
    private long _decided;                    // bytes at the front of _buffer Kestrel may see as they are
    private long _viewLength;
    private bool _serving = true;
    private int _cancelRequested;

    // The rewritten frame: shown from _held while the transport's read stays pending, replacing _heldReplaces bytes
    // at the front of _buffer.
    private byte[] _held = [];
    private int _heldStart;
    private int _heldLength;
    private int _heldReplaces;
    private bool _heldShown;

    private readonly IdleTrim _idle = new();
    private TransportReadHandoff? _handoff;   // Kestrel's wait on the transport's read, from the first read that waits
    private bool _showsNothing;   // the last read showed Kestrel no bytes: its AdvanceTo has nothing to pass on
    private bool _readBroughtNothing;   // the last wait ended in a cancellation alone, and the next continues it

    public Http2FrameReader(PipeReader input, HeaderBlockRewriter rewriter, HpackBlockDecoder decoder, int maxFrameSize)
    {
        _input = input;
        _rewriter = rewriter;
        _decoder = decoder;
        _maxFrameSize = maxFrameSize;
    }

    /// <summary>Why the reader stopped serving, or <see cref="PassThroughReason.None"/>.</summary>
    public PassThroughReason PassThroughReason { get; private set; }

    /// <summary>Whether a frame followed the preface: on a cleartext endpoint where Kestrel runs HTTP/1.1, the preface
    /// alone gets Kestrel's GOAWAY (HTTP_1_1_REQUIRED) and the connection ends, as it would without the reader.</summary>
    public bool SawFrame { get; private set; }

    /// <summary>Called once when the reader stops serving the connection.</summary>
    public Action<PassThroughReason>? PassThroughStarted { get; set; }

    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        if (!_serving)
        {
            return _input.ReadAsync(cancellationToken);
        }

        if (_heldShown)
        {
            return new(HeldView());
        }

        ValueTask<ReadResult> read = _input.ReadAsync(cancellationToken);
        while (read.IsCompleted)
        {
            if (!read.IsCompletedSuccessfully)
            {
                // A failure, or a cancellation by the caller's token, as the transport has it.
                return read;
            }

            if (TryPresent(read.Result, out ReadResult result))
            {
                return new(result);
            }

            // That read was advanced: read on.
            read = _input.ReadAsync(cancellationToken);
        }

        _idle.Wait(continues: _readBroughtNothing);
        return (_handoff ??= new(this)).Wait(_input, read, cancellationToken);
    }

    void TransportReadHandoff.IReader.WaitEnded() => _idle.Resume();

    bool TransportReadHandoff.IReader.TryShow(in ReadResult input, out ReadResult result)
    {
        if (TryPresent(input, out result))
        {
            _readBroughtNothing = result.IsCanceled && result.Buffer.IsEmpty;
            return true;
        }

        // Only part of a frame being held arrived (or a cancellation Kestrel did not ask for): Kestrel sees no bytes
        // and reads again, as it does when a read brings it part of a frame.
        _showsNothing = true;
        _readBroughtNothing = false;
        result = new ReadResult(default, isCanceled: false, isCompleted: false);
        return true;
    }

    public override bool TryRead(out ReadResult result)
    {
        if (!_serving)
        {
            return _input.TryRead(out result);
        }

        if (_heldShown)
        {
            result = HeldView();
            return true;
        }

        // Bytes that cannot be shown yet (a frame being held) stay so until more arrive, which a wait would see.
        if (_input.TryRead(out ReadResult input) && TryPresent(input, out result))
        {
            return true;
        }

        result = default;
        return false;
    }

    public override void AdvanceTo(SequencePosition consumed) => AdvanceTo(consumed, consumed);

    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined)
    {
        if (!_serving)
        {
            _input.AdvanceTo(consumed, examined);
            return;
        }

        if (_showsNothing)
        {
            // The transport was advanced when that read was decided.
            _showsNothing = false;
            return;
        }

        if (_heldShown)
        {
            _heldStart = consumed.GetInteger();
            if (_heldStart == _heldLength)
            {
                // All of it: the transport moves past the frame as the client sent it, and what follows is shown at once.
                SequencePosition end = _buffer.GetPosition(_heldReplaces);
                _input.AdvanceTo(end, end);
                (_buffer, _heldShown, _heldLength, _heldReplaces) = (default, false, 0, 0);
            }

            return;
        }

        long taken = _buffer.Slice(0, consumed).Length;
        SequencePosition seen = examined;
        if (taken == _viewLength || _heldLength != 0)
        {
            // Everything shown was taken, or a rewritten frame waits behind it: what follows is shown at once.
            seen = consumed;
        }
        else if (_buffer.Slice(0, examined).Length >= _viewLength)
        {
            // Everything shown was looked at: wait for bytes that are new to the transport too.
            seen = _buffer.End;
        }

        _input.AdvanceTo(consumed, seen);
        _decided -= taken;
        _buffer = default;
    }

    public override void CancelPendingRead()
    {
        // Kestrel sees one cancelled read per call; the transport's own cancellation only wakes a waiting read.
        Volatile.Write(ref _cancelRequested, 1);
        _input.CancelPendingRead();
    }

    public override void Complete(Exception? exception = null)
    {
        _idle.End();
        _input.Complete(exception);
        Release();
    }

    /// <summary>Called on each of Kestrel's heartbeats, on its thread (<see cref="IdleTrim"/>); true when the reader
    /// let go of its buffers.</summary>
    public bool OnHeartbeat() => _idle.OnHeartbeat(this);

    /// <summary>The connection ended: no trim runs from here.</summary>
    public void EndIdle() => _idle.End();

    // Decides what Kestrel sees of a transport read. False: nothing yet; the read was advanced, read again.
    private bool TryPresent(in ReadResult input, out ReadResult result)
    {
        _buffer = input.Buffer;
        bool canceled = input.IsCanceled && Interlocked.Exchange(ref _cancelRequested, 0) == 1;
        if (_heldLength == 0)
        {
            Walk(input.IsCompleted);
        }

        if (!_serving)
        {
            result = new ReadResult(_buffer, canceled, input.IsCompleted);
            return true;
        }

        if (_decided == 0 && _heldLength != 0)
        {
            _heldShown = true;
            result = HeldView(canceled);
            return true;
        }

        if (_decided == 0 && !canceled && !input.IsCompleted)
        {
            // Only a frame being held, or a cancellation Kestrel has already seen: wait for more.
            _input.AdvanceTo(_buffer.Start, _buffer.End);
            _buffer = default;
            result = default;
            return false;
        }

        _viewLength = _decided;
        result = new ReadResult(_buffer.Slice(0, _decided), canceled, input.IsCompleted && _decided == _buffer.Length);
        return true;
    }

    private ReadResult HeldView(bool canceled = false)
    {
        canceled |= Volatile.Read(ref _cancelRequested) == 1 && Interlocked.Exchange(ref _cancelRequested, 0) == 1;
        return new ReadResult(new ReadOnlySequence<byte>(_held, _heldStart, _heldLength - _heldStart), canceled, isCompleted: false);
    }

    // Every later call goes to the transport's reader; the bytes of the read being presented are shown as they are.
    private void StopServing(PassThroughReason reason)
    {
        _serving = false;
        _handoff = null;   // no read waits through this reader from here
        PassThroughReason = reason;
        Release();
        PassThroughStarted?.Invoke(reason);
    }
}
