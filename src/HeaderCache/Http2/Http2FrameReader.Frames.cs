using System.Buffers;
using System.Buffers.Binary;
using HeaderCache.Diagnostics;
using HeaderCache.Http1;

namespace HeaderCache.Http2;

/// <summary>The frame walk: which bytes Kestrel may see, which HEADERS frame is held and rewritten, and the header
/// blocks the table mirror decodes.</summary>
internal sealed partial class Http2FrameReader
{
    private const int FrameHeaderLength = 9;
    private const byte Headers = 0x1, Continuation = 0x9;
    private const byte EndHeaders = 0x4, Padded = 0x8, Priority = 0x20;

    private static ReadOnlySpan<byte> Preface => "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8;

    private readonly HeaderBlockRewriter _rewriter;
    private readonly HpackBlockDecoder _decoder;
    private readonly int _maxFrameSize;

    private int _prefaceSeen;
    private int _payloadLeft;      // of the frame whose header Kestrel has seen
    private byte _frameType;
    private byte _frameFlags;
    private int _highestStream;    // the highest stream a HEADERS frame opened
    private int _blockStream;      // the stream whose header block is open (no END_HEADERS yet), or 0
    private byte[] _block = [];    // the open block's fragments, and the payload of its frame passing
    private int _blockLength;
    private int _frameStart;       // where the passing frame's payload starts in _block
    private byte[] _frame = [];    // a held frame, contiguous

    // Walks from _decided to the end of _buffer, deciding as much as can be decided.
    private void Walk(bool completed)
    {
        while (_serving && _heldLength == 0)
        {
            ReadOnlySequence<byte> rest = _buffer.Slice(_decided);
            if (rest.IsEmpty)
            {
                return;
            }

            if (_prefaceSeen < Preface.Length)
            {
                if (!TryPreface(rest))
                {
                    StopServing(PassThroughReason.Http2Stopped);
                    return;
                }
            }
            else if (_payloadLeft > 0)
            {
                int length = (int)Math.Min(rest.Length, _payloadLeft);
                if (_frameType is Headers or Continuation)
                {
                    Append(rest.Slice(0, length));
                }

                _payloadLeft -= length;
                _decided += length;
                if (_payloadLeft == 0)
                {
                    OnPayloadEnd();
                }
            }
            else if (rest.Length < FrameHeaderLength)
            {
                // Kestrel acts on a frame header only once it is whole; so may this reader.
                break;
            }
            else if (!TryFrame(rest))
            {
                break;
            }
        }

        if (completed && _serving && _decided < _buffer.Length)
        {
            // The client ended mid-frame: Kestrel gets what it would alone.
            StopServing(PassThroughReason.Http2Stopped);
        }
    }

    // The preface's bytes at _decided, shown as they arrive: false when they are not the preface's.
    private bool TryPreface(in ReadOnlySequence<byte> rest)
    {
        int length = (int)Math.Min(rest.Length, Preface.Length - _prefaceSeen);
        Span<byte> bytes = stackalloc byte[Preface.Length];
        rest.Slice(0, length).CopyTo(bytes);
        if (!bytes[..length].SequenceEqual(Preface.Slice(_prefaceSeen, length)))
        {
            return false;
        }

        _prefaceSeen += length;
        _decided += length;
        return true;
    }

    // A frame header at _decided: false when the frame is held and not yet complete.
    private bool TryFrame(in ReadOnlySequence<byte> rest)
    {
        Span<byte> header = stackalloc byte[FrameHeaderLength];
        rest.Slice(0, FrameHeaderLength).CopyTo(header);
        SawFrame = true;
        int length = (header[0] << 16) | (header[1] << 8) | header[2];
        byte type = header[3];
        byte flags = header[4];
        int stream = (int)(BinaryPrimitives.ReadUInt32BigEndian(header[5..]) & 0x7FFFFFFF);
        bool blockOpen = _blockStream != 0;
        if (length > _maxFrameSize || (stream != 0 && (stream & 1) == 0) || (blockOpen && (type != Continuation || stream != _blockStream))
            || (!blockOpen && type == Continuation) || (type == Headers && stream == 0))
        {
            // Kestrel ends the connection here.
            StopServing(PassThroughReason.Http2Stopped);
            return false;
        }

        if (type == Headers && !blockOpen && stream > _highestStream && (flags & (EndHeaders | Padded)) == EndHeaders)
        {
            if (rest.Length < FrameHeaderLength + length)
            {
                return false;
            }

            Candidate(rest.Slice(0, FrameHeaderLength + length), stream, flags);
            return true;
        }

        if (type == Headers)
        {
            _highestStream = Math.Max(_highestStream, stream);
            _blockStream = stream;
            _blockLength = 0;
        }

        (_frameType, _frameFlags, _payloadLeft) = (type, flags, length);
        _frameStart = _blockLength;
        _decided += FrameHeaderLength;
        if (length == 0)
        {
            OnPayloadEnd();
        }

        return true;
    }

    // A complete HEADERS frame that opens a stream with a whole block: decoded, then shown rewritten or as it is.
    private void Candidate(in ReadOnlySequence<byte> frame, int stream, byte flags)
    {
        _highestStream = stream;
        int length = (int)frame.Length;
        if (_frame.Length < length)
        {
            _frame = new byte[Math.Max(length, 2 * _frame.Length)];
        }

        frame.CopyTo(_frame);
        ReadOnlySpan<byte> bytes = _frame.AsSpan(0, length);
        int fragmentStart = FrameHeaderLength + ((flags & Priority) != 0 ? 5 : 0);
        if (fragmentStart > length
            || ((flags & Priority) != 0 && (BinaryPrimitives.ReadUInt32BigEndian(bytes[FrameHeaderLength..]) & 0x7FFFFFFF) == stream)
            || !_decoder.Decode(bytes[fragmentStart..]))
        {
            StopServing(PassThroughReason.Http2Stopped);
            return;
        }

        int written = _rewriter.TryRewrite(bytes, fragmentStart, stream, ref _held);
        if (written == 0)
        {
            _decided += length;
            return;
        }

        (_heldStart, _heldLength, _heldReplaces) = (0, written, length);
    }

    // The passing frame's payload has all been shown: a block fragment goes to the open block, and a whole block to the
    // table mirror.
    private void OnPayloadEnd()
    {
        if (_frameType is not (Headers or Continuation))
        {
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
                start += 5;
            }

            if (start > end)
            {
                StopServing(PassThroughReason.Http2Stopped);
                return;
            }
        }

        _block.AsSpan(start, end - start).CopyTo(_block.AsSpan(_frameStart));
        _blockLength = _frameStart + (end - start);
        if ((_frameFlags & EndHeaders) != 0)
        {
            bool decoded = _decoder.Decode(_block.AsSpan(0, _blockLength));
            (_blockStream, _blockLength) = (0, 0);
            if (!decoded)
            {
                StopServing(PassThroughReason.Http2Stopped);
            }
        }
    }

    private void Append(in ReadOnlySequence<byte> bytes)
    {
        int length = (int)bytes.Length;
        if (_block.Length - _blockLength < length)
        {
            // A block Kestrel would accept decodes to at most twice its header-size limit; one far longer than that is
            // not followed.
            if (_blockLength + length > 4 * (_maxFrameSize + 65536))
            {
                StopServing(PassThroughReason.Http2Stopped);
                return;
            }

            Array.Resize(ref _block, Math.Max(_blockLength + length, 2 * _block.Length));
        }

        bytes.CopyTo(_block.AsSpan(_blockLength));
        _blockLength += length;
    }

    // While the connection idles (IdleTrim) only the table mirror and the caches stay: the buffers a header block
    // passes through are built again by the next. A block still open, or a rewritten frame not yet taken, keeps its own.
    void IdleTrim.ITarget.Trim()
    {
        _frame = [];
        if (_heldLength == 0)
        {
            _held = [];
        }

        if (_blockStream == 0 && (_payloadLeft == 0 || _frameType is not (Headers or Continuation)))
        {
            (_block, _blockLength) = ([], 0);
        }

        _decoder.Trim();
        _rewriter.Trim();
    }

    private void Release()
    {
        _decoder.Release();
        (_block, _frame) = ([], []);
        if (!_heldShown)
        {
            _held = [];
        }
    }
}
