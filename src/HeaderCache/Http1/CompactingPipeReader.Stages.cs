using HeaderCache.Diagnostics;
using System.Buffers;
using System.IO.Pipelines;
using static HeaderCache.Caching.HttpBytes;

namespace HeaderCache.Http1;

// What Kestrel sees of the transport's buffer in each stage of a request: leading CR/LF and the request line, the
// head in one piece or the section once complete, a body of known length; and where the connection passes through.
internal sealed partial class CompactingPipeReader
{
    private const byte TlsHandshake = 0x16;

    // A request line spanning segments is made contiguous up to this many bytes (leading CR/LF and the line).
    private const int MaxRequestLineScan = 64 * 1024;

    // One byte past what Kestrel allows a section is enough for the compactor to decide.
    private int SectionScanLength => _limits.MaxSectionLength + 1;

    // Decides what Kestrel sees of a transport read. False: nothing yet; the read was advanced, read again.
    protected override bool TryPresent(in ReadResult input, out ReadResult result)
    {
        Buffer = input.Buffer;
        _inputEnded = input.IsCompleted;
        bool canceled = KestrelCanceled(input);
        if (input.IsCanceled && !canceled && Buffer.IsEmpty && !_inputEnded)
        {
            // A cancellation Kestrel has already seen, and no new bytes: wait on.
            Input.AdvanceTo(Buffer.Start, Buffer.End);
            Buffer = default;
            result = default;
            return false;
        }

        if (_inputEnded)
        {
            // The client is done sending: Kestrel sees what is left as it is, with the end.
            result = PassThrough(PassThroughReason.None, canceled);
            return true;
        }

        switch (_stage)
        {
            case Stage.RequestLine:
                long view = RequestLineView();
                if (PassThroughReason == PassThroughReason.Http2 && _prefaceMayStart && Owner is { } owner)
                {
                    // Nothing is shown: the HTTP/2 reader reads the same bytes, preface first, from the transport. Only a
                    // preface at the connection's first byte is HTTP/2's; after anything else Kestrel answers HTTP/1.1.
                    Input.AdvanceTo(Buffer.Start);
                    Input = owner.Http2Started(Input);
                    Buffer = default;
                    result = default;
                    return false;
                }

                result = _lineEnd > 0 ? PresentRequest(canceled) : View(view, canceled);
                return true;

            case Stage.Body:
                result = View(Math.Min(_bodyRemaining, Buffer.Length), canceled);
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
        ReadOnlySpan<byte> section = _contiguous.First(Buffer, SectionScanLength);
        if (TryPresentHead(section, 0, canceled, out result))
        {
            return true;
        }

        Input.AdvanceTo(Buffer.Start, Buffer.End);
        Buffer = default;
        return false;
    }

    // The request line is complete and shown up to _lineEnd. When the whole head is already there Kestrel gets it in
    // one piece, as it would alone; else it gets the line, and the section follows once complete.
    private ReadResult PresentRequest(bool canceled)
    {
        ReadOnlySpan<byte> first = Buffer.FirstSpan;
        _compactor.Begin();
        if (first.Length > _lineEnd)
        {
            ReadOnlySpan<byte> section = first[(int)_lineEnd..];
            if (section.Length >= SectionScanLength || first.Length == Buffer.Length)
            {
                if (TryPresentHead(section[..Math.Min(section.Length, SectionScanLength)], (int)_lineEnd, canceled, out ReadResult head))
                {
                    return head;
                }
            }
        }

        return View(_lineEnd, canceled);
    }

    // Scans the section that starts `prefix` bytes into the buffer (after the request line, or at the start of the
    // buffer once Kestrel took the line) and shows the head if the section is complete or must pass through.
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
        if (Held.Length < length)
        {
            ContiguousBytes.Return(ref Held);
            Held = ArrayPool<byte>.Shared.Rent(Math.Max(1024, length));
        }

        Buffer.FirstSpan[..prefix].CopyTo(Held);
        _compactor.Compact(section, Held.AsSpan(prefix));
        Hold(length, _sectionLength);
        _stage = Stage.CompactedSection;
        result = HeldView(canceled);
        return true;
    }

    // Bytes of the buffer Kestrel may see in the RequestLine stage: leading CR/LF (Kestrel skips them) and the request
    // line up to its LF, or all of it while the line is incomplete.
    private long RequestLineView()
    {
        _lineEnd = 0;
        ReadOnlySpan<byte> data = _contiguous.First(Buffer, MaxRequestLineScan, fromScratch: true);
        int start = data.IndexOfAnyExcept(CR, LF);
        if (start < 0)
        {
            _sawFirstByte |= !data.IsEmpty;
            return Buffer.Length;
        }

        if (!_sawFirstByte && data[start] == TlsHandshake)
        {
            EnterPassThrough(PassThroughReason.Tls);
            return Buffer.Length;
        }

        _prefaceMayStart = !_sawFirstByte && start == 0;
        _sawFirstByte = true;
        int lf = data[start..].IndexOf(LF);
        if (lf < 0)
        {
            if (data.Length - start >= _limits.MaxRequestLineSize)
            {
                EnterPassThrough(PassThroughReason.OverLimit);
            }

            return Buffer.Length;
        }

        int end = start + lf + 1;
        PassThroughReason reason = end - start > _limits.MaxRequestLineSize
            ? PassThroughReason.OverLimit
            : RequestLine.Check(data[start..end]);
        if (reason == PassThroughReason.None && PassesHeadsThrough)
        {
            reason = PassThroughReason.Http1Disabled;
        }

        if (reason != PassThroughReason.None)
        {
            EnterPassThrough(reason);
            return Buffer.Length;
        }

        _lineEnd = end;
        return end;
    }

    protected override void Taken(long taken)
    {
        switch (_stage)
        {
            case Stage.RequestLine when _lineEnd > 0 && taken >= _lineEnd:
                _stage = Stage.Headers;
                _contiguous.Restart();
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
        ContiguousBytes.Return(ref Held);
        _contiguous.Return();
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

    private ReadResult PassThrough(PassThroughReason reason, bool canceled)
    {
        EnterPassThrough(reason);
        return new ReadResult(Buffer, canceled, _inputEnded);
    }

    private void EnterPassThrough(PassThroughReason reason)
    {
        _stage = Stage.PassThrough;
        _compactor.Dispose();
        ContiguousBytes.Return(ref Held);
        _contiguous.Return();
        if (reason != PassThroughReason.None)
        {
            PassThroughReason = reason;
            Owner?.PassThroughStarted(reason);
        }
    }
}
