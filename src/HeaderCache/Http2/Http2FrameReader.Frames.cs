using System.Buffers;
using System.Buffers.Binary;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using static HeaderCache.Http2.Http2Frame;

namespace HeaderCache.Http2;

/// <summary>The frame walk: which bytes Kestrel may see, which HEADERS frame is held and rewritten, and the header
/// blocks the table mirror decodes.</summary>
internal sealed partial class Http2FrameReader
{
    private static ReadOnlySpan<byte> Preface => "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8;

    private int _prefaceSeen;      // Preface: the preface's bytes decided so far
    private int _payloadLeft;      // Payload, BlockFragment: the bytes of the passing frame's payload still to come
    private byte _frameType;       // the passing frame's header
    private byte _frameFlags;
    private int _highestStream;    // the highest stream a HEADERS frame opened
    private int _blockStream;      // BlockFragment, Continuation: the stream whose header block is open
    private byte[] _block = [];    // the open block's fragments, and the payload of its frame passing
    private int _blockLength;
    private int _frameStart;       // where the passing frame's payload starts in _block
    private byte[] _frame = [];    // a HEADERS frame that may be rewritten, contiguous

    // Walks from _decided to the end of Buffer, deciding as much as can be decided.
    private void Walk(bool completed)
    {
        while (_state is not (State.Held or State.Stopped))
        {
            if (_state == State.FrameHeader && _rewriter.StepAside is var cause and not Http2StopCause.None)
            {
                // Between frames no block is open, and no block taken from was ever a change to Kestrel's table: from
                // here Kestrel decodes the client's blocks against the table the client encoded them against.
                Stop(cause);
                return;
            }

            ReadOnlySequence<byte> rest = Buffer.Slice(_decided);
            if (rest.IsEmpty)
            {
                return;
            }

            if (_state == State.Preface)
            {
                TryPreface(rest);
            }
            else if (_state is State.Payload or State.BlockFragment)
            {
                int length = (int)Math.Min(rest.Length, _payloadLeft);
                if (_state == State.BlockFragment && !TryAppend(rest.Slice(0, length)))
                {
                    return;
                }

                _payloadLeft -= length;
                _decided += length;
                if (_payloadLeft == 0)
                {
                    OnPayloadEnd();
                }
            }
            else if (rest.Length < HeaderLength)
            {
                // Kestrel acts on a frame header only once it is whole; so may this reader.
                break;
            }
            else if (!TryFrame(rest))
            {
                break;
            }
        }

        if (completed && _state != State.Stopped && _decided < Buffer.Length)
        {
            // The client ended within a frame, or with a rewritten frame not yet shown: Kestrel gets what it would alone.
            Stop(Http2StopCause.ClientEnded);
        }
    }

    // The preface's bytes at _decided, shown as they arrive while they are the preface's.
    private void TryPreface(in ReadOnlySequence<byte> rest)
    {
        int length = (int)Math.Min(rest.Length, Preface.Length - _prefaceSeen);
        Span<byte> bytes = stackalloc byte[Preface.Length];
        rest.Slice(0, length).CopyTo(bytes);
        if (!bytes[..length].SequenceEqual(Preface.Slice(_prefaceSeen, length)))
        {
            Stop(Http2StopCause.NotPreface);
            return;
        }

        _prefaceSeen += length;
        _decided += length;
        if (_prefaceSeen == Preface.Length)
        {
            _state = State.FrameHeader;
        }
    }

    // A frame header at _decided, in FrameHeader or Continuation: false when the frame is held and not yet complete, or
    // Kestrel ends the connection on it.
    private bool TryFrame(in ReadOnlySequence<byte> rest)
    {
        Span<byte> header = stackalloc byte[HeaderLength];
        rest.Slice(0, HeaderLength).CopyTo(header);
        int length = (header[0] << 16) | (header[1] << 8) | header[2];
        byte type = header[3];
        byte flags = header[4];
        int stream = (int)(BinaryPrimitives.ReadUInt32BigEndian(header[5..]) & StreamIdMask);
        bool blockOpen = _state == State.Continuation;
        if (length > _maxFrameSize || (stream != 0 && (stream & 1) == 0) || (blockOpen && (type != Continuation || stream != _blockStream))
            || (!blockOpen && type == Continuation) || (type == Headers && stream == 0))
        {
            // Kestrel ends the connection here.
            Stop(Http2StopCause.FrameRejected);
            return false;
        }

        if (type == Headers && !blockOpen && stream > _highestStream && (flags & (EndHeaders | Padded)) == EndHeaders)
        {
            if (rest.Length < HeaderLength + length)
            {
                return false;
            }

            Candidate(rest.Slice(0, HeaderLength + length), stream, flags);
            return true;
        }

        if (type == Headers)
        {
            if (!blockOpen && stream > _highestStream)
            {
                // A block that opens a stream but is never rewritten (padded, or in CONTINUATION frames).
                _rewriter.CountNothingTaken();
            }

            _highestStream = Math.Max(_highestStream, stream);
            _blockStream = stream;
            _blockLength = 0;
        }

        (_frameType, _frameFlags, _payloadLeft) = (type, flags, length);
        _frameStart = _blockLength;
        _decided += HeaderLength;
        _state = type is Headers or Continuation ? State.BlockFragment : State.Payload;
        if (length == 0)
        {
            OnPayloadEnd();
        }

        return true;
    }

    // A complete HEADERS frame that opens a stream with a whole block: decoded, then held rewritten or decided as it is.
    private void Candidate(in ReadOnlySequence<byte> frame, int stream, byte flags)
    {
        _highestStream = stream;
        int length = (int)frame.Length;
        if (_frame.Length < length)
        {
            ConnectionArrays.Grow(ref _frame, Math.Max(length, 2 * _frame.Length));
        }

        frame.CopyTo(_frame);
        ReadOnlySpan<byte> bytes = _frame.AsSpan(0, length);
        bool priority = (flags & Priority) != 0;
        int fragmentStart = HeaderLength + (priority ? PriorityLength : 0);
        if (fragmentStart > length)
        {
            Stop(Http2StopCause.FieldsDoNotFit);
            return;
        }

        if (priority && (BinaryPrimitives.ReadUInt32BigEndian(bytes[HeaderLength..]) & StreamIdMask) == stream)
        {
            Stop(Http2StopCause.DependsOnItself);
            return;
        }

        if (!_decoder.Decode(bytes[fragmentStart..]))
        {
            Stop(Http2StopCause.BlockUndecodable);
            return;
        }

        int written = _rewriter.TryRewrite(bytes, fragmentStart, stream, ref Held);
        if (written == 0)
        {
            _decided += length;
            return;
        }

        Hold(written, length);
        _state = State.Held;
    }

    // The passing frame's payload has all been decided: a block fragment goes to the open block, and a whole block to
    // the table mirror.
    private void OnPayloadEnd()
    {
        if (_state == State.Payload)
        {
            _state = State.FrameHeader;
            return;
        }

        int start = _frameStart;
        int end = _blockLength;
        if (_frameType == Headers)
        {
            if ((_frameFlags & Padded) != 0)
            {
                int pad = end > start ? _block[start] : 0;
                start++;
                end -= pad;
            }

            if ((_frameFlags & Priority) != 0)
            {
                start += PriorityLength;
            }

            if (start > end)
            {
                Stop(Http2StopCause.FieldsDoNotFit);
                return;
            }
        }

        _block.AsSpan(start, end - start).CopyTo(_block.AsSpan(_frameStart));
        _blockLength = _frameStart + (end - start);
        if ((_frameFlags & EndHeaders) == 0)
        {
            _state = State.Continuation;
            return;
        }

        bool decoded = _decoder.Decode(_block.AsSpan(0, _blockLength));
        (_state, _blockLength) = (State.FrameHeader, 0);
        if (!decoded)
        {
            Stop(Http2StopCause.BlockUndecodable);
        }
    }

    // Collects a block fragment: false when the block grows beyond what the reader follows, and it stopped.
    private bool TryAppend(in ReadOnlySequence<byte> bytes)
    {
        int length = (int)bytes.Length;
        if (_block.Length - _blockLength < length)
        {
            // A block Kestrel would accept decodes to at most twice its header-size limit; one far longer than that is
            // not followed.
            if (_blockLength + length > 4 * (_maxFrameSize + 65536))
            {
                Stop(Http2StopCause.BlockTooLong);
                return false;
            }

            ConnectionArrays.Grow(ref _block, Math.Max(_blockLength + length, 2 * _block.Length), _blockLength);
        }

        bytes.CopyTo(_block.AsSpan(_blockLength));
        _blockLength += length;
        return true;
    }

    // While the connection idles (IdleTrim) only the table mirror and the caches stay: the buffers a header block
    // passes through are built again by the next. A block still open, or a rewritten frame not yet taken, keeps its own.
    protected override void TrimIdle()
    {
        ConnectionArrays.Release(ref _frame);
        if (!Holds)
        {
            ConnectionArrays.Release(ref Held);
        }

        if (_state is not (State.BlockFragment or State.Continuation))
        {
            ConnectionArrays.Release(ref _block);
            _blockLength = 0;
        }

        _decoder.Trim();
        _rewriter.Trim();
    }

    protected override void Release()
    {
        _decoder.Release();
        _rewriter.Release();
        ConnectionArrays.Release(ref _block);
        ConnectionArrays.Release(ref _frame);
        if (_state != State.HeldShown)
        {
            ConnectionArrays.Release(ref Held);
        }
    }
}
