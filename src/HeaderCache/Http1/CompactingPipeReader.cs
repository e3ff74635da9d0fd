using HeaderCache.Diagnostics;
using System.Buffers;
using System.IO.Pipelines;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using static HeaderCache.Caching.HttpBytes;

namespace HeaderCache.Http1;

/// <summary>
/// The <see cref="PipeReader"/> Kestrel reads instead of the transport's. Kestrel reads the transport's own
/// memory: the request line, bodies and everything between requests as slices of the transport's buffer, and
/// each header section either as it is (nothing to take out) or compacted into one small buffer.
/// </summary>
/// <remarks>
/// <para>A request head is shown in two steps, so that Kestrel sees every byte it would act on when it would
/// see it alone: the request line as soon as it arrives (Kestrel starts its request-headers timeout, and rejects
/// a line too long or with a NUL, on the same byte), then the header section once the empty line has arrived,
/// unless the <see cref="HeadCompactor"/> finds something Kestrel would decide on earlier or does not follow
/// (then the connection passes through: every later call goes straight to the transport's reader).</para>
/// <para>A view that is a slice of the transport's buffer keeps the transport's positions, so Kestrel's
/// <c>AdvanceTo</c> goes to the transport as it is, except that when Kestrel took all of a view that ends
/// before the buffer does, what follows is shown at once, and when it looked at all of it without taking it
/// all, the next read waits for new bytes, as it would on the transport. A compacted section is held with the
/// transport's read until Kestrel has taken all of it; then the transport moves past the original section.</para>
/// </remarks>
internal sealed class CompactingPipeReader : PipeReader, IValueTaskSource<ReadResult>
{
    private const byte TlsHandshake = 0x16;

    // A request line spanning segments is made contiguous up to this many bytes (leading CR/LF and the line).
    private const int MaxRequestLineScan = 64 * 1024;

    // Heads in a row with nothing to take out after which the connection is left to Kestrel: a client whose heads
    // hold only names Kestrel acts on and values Kestrel reuses itself gains nothing from the scan of each head.
    internal const int HeadsWithNothingToTake = 16;

    private readonly PipeReader _input;
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
    private int _cancelRequested;
    private byte[] _section = [];
    private int _sectionLength;   // transport bytes Kestrel is shown as a head (Section) or in place of one (CompactedSection)
    private int _headStart;
    private int _headLength;
    private byte[] _copy = [];
    private int _copied;
    private int _headsWithNothingTaken;
    private IValueTaskSource<ReadResult>? _transportRead;   // the transport's read Kestrel waits on through this reader
    private bool _showsNothing;   // the last read showed Kestrel no bytes: its AdvanceTo has nothing to pass on

    /// <summary>Wraps <paramref name="input"/>.</summary>
    public CompactingPipeReader(PipeReader input, HeadCompactor compactor, HeadLimits limits)
    {
        _input = input;
        _compactor = compactor;
        _limits = limits;
    }

    private enum Stage
    {
        // Between requests and in a request line: Kestrel sees the bytes up to the end of the line.
        RequestLine,

        // The header section is arriving: Kestrel sees nothing of it yet.
        Headers,

        // The complete section, unchanged, as a slice of the transport's buffer.
        Section,

        // The complete section, compacted into _section.
        CompactedSection,

        // A body of known length, as slices of the transport's buffer.
        Body,

        // Every call goes straight to the transport's reader.
        PassThrough,
    }

    /// <summary>Why this connection passes through, or <see cref="PassThroughReason.None"/>.</summary>
    public PassThroughReason PassThroughReason { get; private set; }

    /// <summary>Called once when the connection switches to pass-through for a reason worth reporting.</summary>
    public Action<PassThroughReason>? PassThroughStarted { get; set; }

    /// <summary>Called on the thread that shows Kestrel a complete head, just before Kestrel parses it there (and, for a
    /// head in one piece, creates the request's context there too).</summary>
    public Action? HeadShown { get; set; }

    // One byte past what Kestrel allows a section is enough for the compactor to decide.
    private int SectionScanLength => _limits.MaxSectionLength + 1;

    /// <summary>Whether the last view is the start of a request: leading CR/LF and the request line so far.</summary>
    internal bool ShowsRequestLine => _stage == Stage.RequestLine;

    /// <summary>Called on each of Kestrel's heartbeats, on its thread: lets the compactor of a connection that has waited
    /// long for its next request let go of what only speeds up reading a head (<see cref="IdleTrim"/>).</summary>
    /// <returns>Whether it let go.</returns>
    public bool OnHeartbeat() => _idle.OnHeartbeat(_compactor);

    /// <summary>The connection reads no more heads: a trim that runs has finished on return, and none starts.</summary>
    public void EndIdle() => _idle.End();

    /// <inheritdoc />
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

#pragma warning disable CA2012 // Reading a pending read's source and token does not consume it: one of Kestrel or ReadLoopAsync does.
        ValueTask<ReadResult> read = _input.ReadAsync(cancellationToken);
#pragma warning restore CA2012
        if (!read.IsCompletedSuccessfully)
        {
            // Between requests and in a request line, where a completed read has something to show (but for a
            // cancellation Kestrel did not ask for, see GetResult), Kestrel waits on the transport's read itself and
            // this reader takes its result when Kestrel does. Elsewhere a read may have nothing to show (a section
            // not yet complete), and this reader reads on.
            if (_stage == Stage.RequestLine && TransportRead.TryGet(ref read, out _transportRead, out short token))
            {
                if (_lineEnd == 0)
                {
                    // No head has begun (a complete request line begins one): until the read completes, the compactor
                    // holds nothing of a head, and the requests before have ended.
                    _idle.Wait();
                }

                return new(this, token);
            }

            return ReadLoopAsync(read, cancellationToken);
        }

        return TryPresent(read.Result, out ReadResult result) ? new(result) : ReadLoopAsync(_input.ReadAsync(cancellationToken), cancellationToken);
    }

    /// <inheritdoc />
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

    /// <inheritdoc />
    public override void AdvanceTo(SequencePosition consumed) => AdvanceTo(consumed, consumed);

    /// <inheritdoc />
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
                // Kestrel may parse a head here and create its request's context: the request-level part then finds
                // the connection's empty part through this thread instead of the request's features.
                HeadShown?.Invoke();
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

    /// <inheritdoc />
    public override void CancelPendingRead()
    {
        // Kestrel sees one cancelled read per call; the transport's own cancellation only wakes a waiting read.
        Volatile.Write(ref _cancelRequested, 1);
        _input.CancelPendingRead();
    }

    /// <inheritdoc />
    public override void Complete(Exception? exception = null)
    {
        _input.Complete(exception);
        _idle.End();
        _compactor.Dispose();
        Return(ref _section);
        Return(ref _copy);
    }

    /// <inheritdoc />
    ReadResult IValueTaskSource<ReadResult>.GetResult(short token)
    {
        _idle.Resume();
        if (TryPresent(_transportRead!.GetResult(token), out ReadResult result))
        {
            return result;
        }

        // In a request line only a cancellation Kestrel did not ask for (of the transport's reader itself) shows
        // nothing. Kestrel parses no bytes and reads again, as it does after a cancellation of its own.
        _showsNothing = true;
        return new ReadResult(default, isCanceled: false, isCompleted: false);
    }

    /// <inheritdoc />
    ValueTaskSourceStatus IValueTaskSource<ReadResult>.GetStatus(short token) => _transportRead!.GetStatus(token);

    /// <inheritdoc />
    void IValueTaskSource<ReadResult>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _transportRead!.OnCompleted(continuation, state, token, flags);

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<ReadResult> ReadLoopAsync(ValueTask<ReadResult> read, CancellationToken cancellationToken)
    {
        while (true)
        {
            ReadResult input = await read.ConfigureAwait(false);
            if (TryPresent(input, out ReadResult result))
            {
                return result;
            }

            read = _input.ReadAsync(cancellationToken);
        }
    }

    // Decides what Kestrel sees of a transport read. False: nothing yet; the read was advanced, read again.
    private bool TryPresent(in ReadResult input, out ReadResult result)
    {
        _buffer = input.Buffer;
        _completed = input.IsCompleted;
        bool canceled = input.IsCanceled && Interlocked.Exchange(ref _cancelRequested, 0) == 1;
        if (input.IsCanceled && !canceled && _buffer.IsEmpty && !_completed)
        {
            // A cancellation Kestrel has already seen, and no new bytes: wait on.
            _input.AdvanceTo(_buffer.Start, _buffer.End);
            _buffer = default;
            result = default;
            return false;
        }

        if (_completed)
        {
            // The client is done sending: Kestrel sees what is left as it is, with the end.
            result = PassThrough(PassThroughReason.None, canceled);
            return true;
        }

        switch (_stage)
        {
            case Stage.RequestLine:
                long view = RequestLineView();
                result = _lineEnd > 0 ? PresentRequest(canceled) : View(view, canceled);
                return true;

            case Stage.Body:
                result = View(Math.Min(_bodyRemaining, _buffer.Length), canceled);
                return true;

            case Stage.Section:
                result = View(_sectionLength, canceled);
                return true;

            default:
                return TryPresentSection(canceled, out result);
        }
    }

    private bool TryPresentSection(bool canceled, out ReadResult result)
    {
        ReadOnlySpan<byte> section = Contiguous(SectionScanLength);
        if (TryPresentHead(section, 0, canceled, out result))
        {
            return true;
        }

        _input.AdvanceTo(_buffer.Start, _buffer.End);
        _buffer = default;
        return false;
    }

    // The request line is complete and shown up to _lineEnd. When the whole head is already there (the
    // usual case) Kestrel gets it in one piece, as it would alone; else it gets the line, and the section
    // follows once complete.
    private ReadResult PresentRequest(bool canceled)
    {
        ReadOnlySpan<byte> first = _buffer.FirstSpan;
        _compactor.Begin();
        if (first.Length > _lineEnd)
        {
            ReadOnlySpan<byte> section = first[(int)_lineEnd..];
            if (section.Length >= SectionScanLength || first.Length == _buffer.Length)
            {
                if (TryPresentHead(section[..Math.Min(section.Length, SectionScanLength)], (int)_lineEnd, canceled, out ReadResult head))
                {
                    return head;
                }
            }
        }

        return View(_lineEnd, canceled);
    }

    // Scans the section that starts `prefix` bytes into the buffer (after the request line, or at the start of
    // the buffer once Kestrel took the line) and shows the head if the section is complete or must pass through.
    private bool TryPresentHead(ReadOnlySpan<byte> section, int prefix, bool canceled, out ReadResult result)
    {
        switch (_compactor.Scan(section))
        {
            case HeadCompactor.Outcome.NeedMore:
                if (canceled)
                {
                    result = View(prefix, canceled);
                    return true;
                }

                result = default;
                return false;

            case HeadCompactor.Outcome.PassThrough:
                result = PassThrough(_compactor.Reason, canceled);
                return true;
        }

        _sectionLength = prefix + _compactor.SectionLength;
        HeadShown?.Invoke();
        if (!_compactor.HasTakenLines)
        {
            // Nothing to put back: the request-level part finds no entry and does nothing.
            _compactor.ReleaseLines();
            _headsWithNothingTaken++;
            _stage = Stage.Section;
            result = View(_sectionLength, canceled);
            return true;
        }

        _headsWithNothingTaken = 0;
        int length = prefix + _compactor.CompactedLength;
        if (_section.Length < length)
        {
            Return(ref _section);
            _section = ArrayPool<byte>.Shared.Rent(Math.Max(1024, length));
        }

        _buffer.FirstSpan[..prefix].CopyTo(_section);
        _compactor.Compact(section, _section.AsSpan(prefix));
        _headStart = 0;
        _headLength = length;
        _stage = Stage.CompactedSection;
        result = CompactedView(canceled);
        return true;
    }

    // Bytes of the buffer Kestrel may see in the RequestLine stage: leading CR/LF (Kestrel skips them) and the
    // request line up to its LF, or all of it while the line is incomplete.
    private long RequestLineView()
    {
        _lineEnd = 0;
        ReadOnlySpan<byte> data = Contiguous(MaxRequestLineScan, fromScratch: true);
        int start = data.IndexOfAnyExcept(CR, LF);
        if (start < 0)
        {
            _sawFirstByte |= !data.IsEmpty;
            return _buffer.Length;
        }

        if (!_sawFirstByte && data[start] == TlsHandshake)
        {
            EnterPassThrough(PassThroughReason.Tls);
            return _buffer.Length;
        }

        _sawFirstByte = true;
        int lf = data[start..].IndexOf(LF);
        if (lf < 0)
        {
            if (data.Length - start >= _limits.MaxRequestLineSize)
            {
                EnterPassThrough(PassThroughReason.OverLimit);
            }

            return _buffer.Length;
        }

        int end = start + lf + 1;
        PassThroughReason reason = end - start > _limits.MaxRequestLineSize
            ? PassThroughReason.OverLimit
            : RequestLine.Check(data[start..end]);
        if (reason != PassThroughReason.None)
        {
            EnterPassThrough(reason);
            return _buffer.Length;
        }

        _lineEnd = end;
        return end;
    }

    private void OnTaken(long taken)
    {
        switch (_stage)
        {
            case Stage.RequestLine when _lineEnd > 0 && taken >= _lineEnd:
                _stage = Stage.Headers;
                _copied = 0;
                break;

            case Stage.Section:
                _sectionLength -= (int)taken;
                if (_sectionLength == 0)
                {
                    AfterHead();
                }

                break;

            case Stage.Body:
                _bodyRemaining -= taken;
                if (_bodyRemaining == 0)
                {
                    (_stage, _lineEnd) = (Stage.RequestLine, 0);
                }

                break;
        }
    }

    private void AfterHead()
    {
        // An idle keep-alive connection keeps no buffer: the next head rents again.
        Return(ref _section);
        Return(ref _copy);
        if (_compactor.Upgrade || _headsWithNothingTaken == HeadsWithNothingToTake)
        {
            // After an upgrade the connection may carry another protocol: stop looking at it. The requests before this
            // head have ended, so only this head's lines, if any, need the queue from here.
            _compactor.StopAfterHead();
            EnterPassThrough(_compactor.Upgrade ? PassThroughReason.Upgrade : PassThroughReason.NothingToCache);
        }
        else if (_compactor.ContentLength > 0)
        {
            _bodyRemaining = _compactor.ContentLength;
            _stage = Stage.Body;
        }
        else
        {
            (_stage, _lineEnd) = (Stage.RequestLine, 0);
        }
    }

    private ReadResult View(long length, bool canceled)
    {
        _viewLength = length;
        return new ReadResult(_buffer.Slice(0, length), canceled, isCompleted: false);
    }

    private ReadResult CompactedView(bool canceled = false)
    {
        // Read before it is exchanged: a locked exchange on every head costs more than the rest of showing it.
        canceled |= Volatile.Read(ref _cancelRequested) == 1 && Interlocked.Exchange(ref _cancelRequested, 0) == 1;
        return new ReadResult(new ReadOnlySequence<byte>(_section, _headStart, _headLength - _headStart), canceled, isCompleted: false);
    }

    private ReadResult PassThrough(PassThroughReason reason, bool canceled)
    {
        EnterPassThrough(reason);
        return new ReadResult(_buffer, canceled, _completed);
    }

    private void EnterPassThrough(PassThroughReason reason)
    {
        _stage = Stage.PassThrough;
        _compactor.Dispose();
        Return(ref _section);
        Return(ref _copy);
        if (reason != PassThroughReason.None)
        {
            PassThroughReason = reason;
            PassThroughStarted?.Invoke(reason);
        }
    }

    // The first bytes of the buffer (at most max) as one span: the buffer's own memory when it is one
    // segment, else a copy. A section's copy only grows, as its start stays where it is between reads.
    private ReadOnlySpan<byte> Contiguous(int max, bool fromScratch = false)
    {
        int length = (int)Math.Min(_buffer.Length, max);
        ReadOnlySpan<byte> first = _buffer.FirstSpan;
        if (first.Length >= length)
        {
            return first[..length];
        }

        if (fromScratch)
        {
            _copied = 0;
        }

        if (_copy.Length < length)
        {
            byte[] grown = ArrayPool<byte>.Shared.Rent(Math.Max(length, 4096));
            _copy.AsSpan(0, _copied).CopyTo(grown);
            Return(ref _copy);
            _copy = grown;
        }

        _buffer.Slice(_copied, length - _copied).CopyTo(_copy.AsSpan(_copied));
        _copied = length;
        return _copy.AsSpan(0, length);
    }

    private static void Return(ref byte[] array)
    {
        if (array.Length != 0)
        {
            ArrayPool<byte>.Shared.Return(array);
            array = [];
        }
    }
}
