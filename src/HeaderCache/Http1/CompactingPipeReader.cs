using HeaderCache.Diagnostics;
using HeaderCache.Pipes;
using System.Buffers;
using System.IO.Pipelines;

namespace HeaderCache.Http1;

/// <summary>The <see cref="PipeReader"/> Kestrel reads instead of the transport's. Kestrel reads the transport's own
/// memory: the request line, bodies and everything between requests as slices of the transport's buffer, and each
/// header section either as it is (nothing to take out) or compacted into one small buffer. This file maps Kestrel's
/// calls onto the transport's reader; which bytes each stage of a request shows is in
/// CompactingPipeReader.Stages.cs.</summary>
/// <remarks><para>Kestrel sees every byte it would act on when it would see it alone: the request line as soon as it
/// arrives (Kestrel starts its request-headers timeout, and rejects a line too long or with a NUL, on the same byte),
/// then the header section once the empty line has arrived, unless the <see cref="HeadCompactor"/> finds something
/// Kestrel would decide on earlier or does not follow: then every later call goes straight to the transport's
/// reader.</para>
/// <para>A view that is a slice of the transport's buffer keeps the transport's positions, so Kestrel's
/// <c>AdvanceTo</c> goes to the transport as it is, except that when Kestrel took all of a view that ends before the
/// buffer does, what follows is shown at once, and when it looked at all of it without taking it all, the next read
/// waits for new bytes, as it would on the transport. A compacted section holds the transport's read until Kestrel has
/// taken all of it; then the transport moves past the original section.</para></remarks>
internal sealed partial class CompactingPipeReader : PipeReader, TransportReadHandoff.IReader
{
    // Heads in a row with nothing to take out after which the connection is left to Kestrel: a client that sends only
    // names Kestrel acts on and values Kestrel reuses itself gains nothing from the scan of each head.
    internal const int HeadsWithNothingToTake = 16;

    private PipeReader _input;   // the transport's reader, or the HTTP/2 reader over it once the preface arrived
    private readonly HeadCompactor _compactor;
    private readonly HeadLimits _limits;
    private readonly IdleTrim _idle = new();

    private Stage _stage;
    private ReadOnlySequence<byte> _buffer;
    private bool _completed;
    private long _viewLength;
    private long _lineEnd;
    private long _bodyRemaining;
    private bool _sawFirstByte;
    private bool _prefaceMayStart;   // the request line being read began at the connection's first byte
    private int _cancelRequested;
    private byte[] _section = [];
    private int _sectionLength;   // transport bytes Kestrel is shown as a head (Section) or in place of one (CompactedSection)
    private int _headStart;
    private int _headLength;
    private ContiguousBytes _contiguous = new();
    private int _headsWithNothingTaken;
    private TransportReadHandoff? _handoff;   // Kestrel's wait on the transport's read, from the first read that waits
    private bool _showsNothing;   // the last read showed Kestrel no bytes: its AdvanceTo has nothing to pass on

    public CompactingPipeReader(PipeReader input, HeadCompactor compactor, HeadLimits limits)
    {
        _input = input;
        _compactor = compactor;
        _limits = limits;
    }

    private enum Stage
    {
        RequestLine,        // between requests and in a request line: Kestrel sees the bytes up to the end of the line
        Headers,            // the header section is arriving: Kestrel sees nothing of it yet
        Section,            // the complete section, unchanged, as a slice of the transport's buffer
        CompactedSection,   // the complete section, compacted into _section
        Body,               // a body of known length, as slices of the transport's buffer
        PassThrough,        // every call goes straight to the transport's reader
    }

    public PassThroughReason PassThroughReason { get; private set; }

    /// <summary>Called once when the connection switches to pass-through for a reason worth reporting.</summary>
    public Action<PassThroughReason>? PassThroughStarted { get; set; }

    /// <summary>Given the transport's reader when the HTTP/2 preface arrives, returns the reader every later call goes
    /// to; without it the connection passes through.</summary>
    public Func<PipeReader, PipeReader>? Http2Started { get; set; }

    /// <summary>Whether the last view is the start of a request: leading CR/LF and the request line so far.</summary>
    internal bool ShowsRequestLine => _stage == Stage.RequestLine;

    /// <summary>Called on each of Kestrel's heartbeats, on its thread (<see cref="IdleTrim"/>); true when the compactor
    /// let go of what only speeds up reading a head.</summary>
    public bool OnHeartbeat() => _idle.OnHeartbeat(_compactor);

    /// <summary>The connection reads no more heads: a trim that runs has finished on return, and none starts.</summary>
    public void EndIdle() => _idle.End();

    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        if (_stage == Stage.PassThrough)
        {
            return _input.ReadAsync(cancellationToken);
        }

        if (_stage == Stage.CompactedSection)
        {
            return new(CompactedView());
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

            // That read was advanced: read on. Once the preface made the HTTP/2 reader the input, its read is
            // Kestrel's as it is.
            read = _input.ReadAsync(cancellationToken);
            if (_stage == Stage.PassThrough)
            {
                return read;
            }
        }

        if (_stage == Stage.RequestLine && _lineEnd == 0)
        {
            // No head has begun (a complete request line begins one): until the read completes, the compactor holds
            // nothing of a head, and the requests before have ended.
            _idle.Wait();
        }

        return (_handoff ??= new(this)).Wait(_input, read, cancellationToken);
    }

    public override bool TryRead(out ReadResult result)
    {
        if (_stage == Stage.PassThrough)
        {
            return _input.TryRead(out result);
        }

        if (_stage == Stage.CompactedSection)
        {
            result = CompactedView();
            return true;
        }

        while (_input.TryRead(out ReadResult input))
        {
            if (TryPresent(input, out result))
            {
                return true;
            }
        }

        result = default;
        return false;
    }

    public override void AdvanceTo(SequencePosition consumed) => AdvanceTo(consumed, consumed);

    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined)
    {
        if (_showsNothing)
        {
            // The transport's read was already advanced.
            _showsNothing = false;
            return;
        }

        switch (_stage)
        {
            case Stage.PassThrough:
                _input.AdvanceTo(consumed, examined);
                return;

            case Stage.CompactedSection:
                _headStart = consumed.GetInteger();
                if (_headStart == _headLength)
                {
                    // All of it: the transport moves past the section as the client sent it.
                    SequencePosition end = _buffer.GetPosition(_sectionLength);
                    _input.AdvanceTo(end, end);
                    _buffer = default;
                    AfterHead();
                }

                return;
        }

        long taken = _buffer.Slice(0, consumed).Length;
        SequencePosition seen = examined;
        if (_viewLength == 0 || (taken < _viewLength && _buffer.Slice(0, examined).Length >= _viewLength))
        {
            // Everything shown was looked at: wait for bytes that are new to the transport too.
            seen = _buffer.End;
        }
        else if (taken == _viewLength)
        {
            // Everything shown was taken: what follows it is shown at once.
            seen = consumed;
        }

        _input.AdvanceTo(consumed, seen);
        _buffer = default;
        OnTaken(taken);
    }

    public override void CancelPendingRead()
    {
        // Kestrel sees one cancelled read per call; the transport's own cancellation only wakes a waiting read.
        Volatile.Write(ref _cancelRequested, 1);
        _input.CancelPendingRead();
    }

    public override void Complete(Exception? exception = null)
    {
        _input.Complete(exception);
        _idle.End();
        _compactor.Dispose();
        ContiguousBytes.Return(ref _section);
        _contiguous.Return();
    }

    void TransportReadHandoff.IReader.WaitEnded() => _idle.Resume();

    bool TransportReadHandoff.IReader.TryShow(in ReadResult input, out ReadResult result)
    {
        // Between requests and in a request line a read Kestrel waited on shows it something: bytes, or no bytes for a
        // cancellation Kestrel did not ask for (of the transport's reader itself) or the HTTP/2 preface, and Kestrel
        // reads again, as it does after a cancellation of its own. Elsewhere a read may have nothing to show yet (a
        // section not yet complete), and the wait goes on.
        bool requestLine = _stage == Stage.RequestLine;
        if (TryPresent(input, out result))
        {
            return true;
        }

        if (!requestLine)
        {
            return false;
        }

        _showsNothing = true;
        result = new ReadResult(default, isCanceled: false, isCompleted: false);
        return true;
    }

    private ReadResult CompactedView(bool canceled = false)
    {
        // Read before it is exchanged: a locked exchange on every head would cost more than the rest of showing it.
        canceled |= Volatile.Read(ref _cancelRequested) == 1 && Interlocked.Exchange(ref _cancelRequested, 0) == 1;
        return new ReadResult(new ReadOnlySequence<byte>(_section, _headStart, _headLength - _headStart), canceled, isCompleted: false);
    }
}
