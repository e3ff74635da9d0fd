using System.Buffers;
using System.Diagnostics;
using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Compaction;

/// <summary>
/// The per-connection state machine between the transport and Kestrel's HTTP/1.1 parser. It reads the
/// client's bytes and writes the bytes Kestrel should see: every complete request head with the lines
/// the cache can serve taken out (their strings go to the <see cref="HeaderInjectionQueue"/>), and
/// everything else unchanged.
/// </summary>
/// <remarks>
/// <para>It always knows where it is: before a request (CR/LF between requests are skipped, as Kestrel
/// does), in the request line, in the header lines, in a body of known length, or in pass-through for
/// the rest of the connection. The request line is never changed, so it is forwarded as it arrives and
/// Kestrel starts its request-headers timeout on the same byte it would alone. Header lines are held
/// until the head is complete, and each line is checked as soon as it ends: at the first line the
/// compactor does not fully understand, or that Kestrel might reject or act on (framing, upgrades), or at
/// a limit, it hands over everything it holds unchanged and passes the rest of the connection through.
/// Kestrel therefore sees exactly the client's bytes in every case where it would not accept the head.</para>
/// <para>Grammar accepted for compaction (stricter than Kestrel): request line <c>token SP target SP
/// HTTP/1.1 CRLF</c>; header lines <c>token ":" *(VCHAR / SP / HTAB) CRLF</c>.</para>
/// </remarks>
internal sealed class HeadCompactor : IDisposable
{
    private const byte CR = (byte)'\r';
    private const byte LF = (byte)'\n';
    private const byte SP = (byte)' ';
    private const byte HTAB = (byte)'\t';
    private const byte TlsHandshake = 0x16;
    private const int InitialHeadBuffer = 2048;
    private const int MaxContentLengthDigits = 18;

    private static readonly SearchValues<byte> TokenBytes =
        SearchValues.Create("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"u8);

    private static readonly SearchValues<byte> FieldBytes = SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);

    private readonly HeaderStringCache _cache;
    private readonly HeaderInjectionQueue _queue;
    private readonly HeadLimits _limits;
    private readonly byte[][] _excluded;

    private State _state;
    private bool _sawFirstByte;
    private byte[] _head = [];
    private int _length;
    private int _forwarded;
    private int _headersStart;
    private int _lineStart;
    private int _headerCount;
    private long _contentLength;
    private bool _upgrade;
    private long _bodyRemaining;

    /// <summary>Creates the compactor of one connection.</summary>
    public HeadCompactor(HeaderStringCache cache, HeaderInjectionQueue queue, HeadLimits limits, IEnumerable<string>? excludedNames = null)
    {
        _cache = cache;
        _queue = queue;
        _limits = limits;
        _excluded = excludedNames?.Select(Encoding.ASCII.GetBytes).ToArray() ?? [];
    }

    private enum State
    {
        RequestStart,
        RequestLine,
        Headers,
        Body,
        PassThrough,
    }

    /// <summary>Why this connection passes through, or <see cref="PassThroughReason.None"/>.</summary>
    public PassThroughReason PassThroughReason { get; private set; }

    /// <summary>Called once when the connection switches to pass-through.</summary>
    public Action<PassThroughReason>? PassThroughStarted { get; set; }

    /// <summary>Heads compacted so far.</summary>
    public long CompactedHeads { get; private set; }

    /// <summary>Header lines taken out of heads so far.</summary>
    public long StrippedLines { get; private set; }

    /// <summary>The connection's cache.</summary>
    public HeaderStringCache Cache => _cache;

    /// <summary>Consumes all of <paramref name="input"/>, writing what Kestrel should see to <paramref name="output"/>.</summary>
    public void Process(in ReadOnlySequence<byte> input, IBufferWriter<byte> output)
    {
        if (input.IsSingleSegment)
        {
            Process(input.FirstSpan, output);
            return;
        }

        foreach (ReadOnlyMemory<byte> segment in input)
        {
            Process(segment.Span, output);
        }
    }

    /// <summary>The client finished sending: hand over anything held, unchanged.</summary>
    public void Complete(IBufferWriter<byte> output)
    {
        if (_length > _forwarded)
        {
            output.Write(_head.AsSpan(_forwarded, _length - _forwarded));
        }

        ReturnHeadBuffer();
        _state = State.PassThrough;
    }

    /// <inheritdoc />
    public void Dispose() => ReturnHeadBuffer();

    /// <summary>Consumes all of <paramref name="data"/>.</summary>
    public void Process(ReadOnlySpan<byte> data, IBufferWriter<byte> output)
    {
        while (!data.IsEmpty)
        {
            switch (_state)
            {
                case State.PassThrough:
                    output.Write(data);
                    return;

                case State.Body:
                    {
                        int n = (int)Math.Min(_bodyRemaining, data.Length);
                        output.Write(data[..n]);
                        data = data[n..];
                        _bodyRemaining -= n;
                        if (_bodyRemaining == 0)
                        {
                            _state = State.RequestStart;
                        }

                        break;
                    }

                case State.RequestStart:
                    {
                        // Kestrel skips any CR and LF bytes before a request line.
                        int start = data.IndexOfAnyExcept(CR, LF);
                        if (start < 0)
                        {
                            _sawFirstByte = true;
                            output.Write(data);
                            return;
                        }

                        output.Write(data[..start]);
                        data = data[start..];
                        if (!_sawFirstByte && data[0] == TlsHandshake)
                        {
                            _sawFirstByte = true;
                            EnterPassThrough(PassThroughReason.Tls, output);
                            break;
                        }

                        _sawFirstByte = true;
                        BeginHead();
                        break;
                    }

                case State.RequestLine:
                    {
                        int lf = data.IndexOf(LF);
                        int take = lf < 0 ? data.Length : lf + 1;
                        if (_length + take > _limits.MaxRequestLineSize)
                        {
                            EnterPassThrough(PassThroughReason.OverLimit, output);
                            break;
                        }

                        // The request line is never changed: forward it as it arrives.
                        Append(data[..take]);
                        output.Write(data[..take]);
                        _forwarded = _length;
                        data = data[take..];
                        if (lf >= 0)
                        {
                            PassThroughReason reason = CheckRequestLine(_head.AsSpan(0, _length));
                            if (reason != PassThroughReason.None)
                            {
                                EnterPassThrough(reason, output);
                                break;
                            }

                            _state = State.Headers;
                            _headersStart = _lineStart = _length;
                        }

                        break;
                    }

                case State.Headers:
                    {
                        int lf = data.IndexOf(LF);
                        int take = lf < 0 ? data.Length : lf + 1;
                        if (_length - _headersStart + take > _limits.MaxRequestHeadersTotalSize)
                        {
                            EnterPassThrough(PassThroughReason.OverLimit, output);
                            break;
                        }

                        Append(data[..take]);
                        data = data[take..];
                        if (lf >= 0)
                        {
                            OnLineEnd(output);
                        }

                        break;
                    }
            }
        }
    }

    private void OnLineEnd(IBufferWriter<byte> output)
    {
        ReadOnlySpan<byte> line = _head.AsSpan(_lineStart, _length - _lineStart);
        if (line.Length < 2 || line[^2] != CR)
        {
            // A bare LF: Kestrel accepts it as a line end by default; leave such heads to it.
            EnterPassThrough(PassThroughReason.Malformed, output);
            return;
        }

        if (line.Length == 2)
        {
            CompleteHead(output);
            return;
        }

        PassThroughReason reason = CheckHeaderLine(line[..^2]);
        if (reason != PassThroughReason.None)
        {
            EnterPassThrough(reason, output);
            return;
        }

        _lineStart = _length;
    }

    private static PassThroughReason CheckRequestLine(ReadOnlySpan<byte> line)
    {
        if (line.Length < 2 || line[^2] != CR)
        {
            return PassThroughReason.Malformed;
        }

        line = line[..^2];
        int methodEnd = line.IndexOf(SP);
        if (methodEnd <= 0 || line[..methodEnd].ContainsAnyExcept(TokenBytes))
        {
            return PassThroughReason.Malformed;
        }

        ReadOnlySpan<byte> method = line[..methodEnd];
        ReadOnlySpan<byte> rest = line[(methodEnd + 1)..];
        int targetEnd = rest.IndexOf(SP);
        if (targetEnd <= 0)
        {
            return PassThroughReason.Malformed;
        }

        ReadOnlySpan<byte> version = rest[(targetEnd + 1)..];
        if (!version.SequenceEqual("HTTP/1.1"u8))
        {
            return method.SequenceEqual("PRI"u8) ? PassThroughReason.Http2 : PassThroughReason.Version;
        }

        return method.SequenceEqual("CONNECT"u8) ? PassThroughReason.Connect : PassThroughReason.None;
    }

    private PassThroughReason CheckHeaderLine(ReadOnlySpan<byte> content)
    {
        int colon = content.IndexOf((byte)':');
        if (colon <= 0)
        {
            return PassThroughReason.Malformed;
        }

        // A token name also rules out obs-fold (leading SP/HTAB) and whitespace before the colon.
        ReadOnlySpan<byte> name = content[..colon];
        ReadOnlySpan<byte> value = content[(colon + 1)..];
        if (name.ContainsAnyExcept(TokenBytes) || value.ContainsAnyExcept(FieldBytes))
        {
            return PassThroughReason.Malformed;
        }

        if (++_headerCount > _limits.MaxRequestHeaderCount)
        {
            return PassThroughReason.OverLimit;
        }

        if (!HeaderNameTable.IsKeptForKestrel(name))
        {
            return PassThroughReason.None;
        }

        value = Trim(value);
        if (Ascii.EqualsIgnoreCase(name, "Content-Length"u8))
        {
            // Kestrel rejects a second Content-Length and anything its number parser refuses; accept only
            // plain digits here and leave everything else to Kestrel.
            if (_contentLength >= 0 || value.IsEmpty || value.Length > MaxContentLengthDigits || value.ContainsAnyExceptInRange((byte)'0', (byte)'9'))
            {
                return PassThroughReason.Malformed;
            }

            _contentLength = 0;
            foreach (byte digit in value)
            {
                _contentLength = (_contentLength * 10) + (digit - '0');
            }
        }
        else if (Ascii.EqualsIgnoreCase(name, "Transfer-Encoding"u8))
        {
            return PassThroughReason.TransferEncoding;
        }
        else if (Ascii.EqualsIgnoreCase(name, "Upgrade"u8)
            || (Ascii.EqualsIgnoreCase(name, "Connection"u8) && ContainsIgnoreCase(value, "upgrade"u8)))
        {
            _upgrade = true;
        }

        return PassThroughReason.None;
    }

    private void CompleteHead(IBufferWriter<byte> output)
    {
        Debug.Assert(_forwarded == _headersStart, "The request line is forwarded before the header lines.");
        Compact(output);
        _queue.Publish();
        CompactedHeads++;
        ReturnHeadBuffer();

        if (_upgrade)
        {
            // After an upgrade the connection may carry another protocol: stop looking at it.
            EnterPassThrough(PassThroughReason.Upgrade, output);
        }
        else if (_contentLength > 0)
        {
            _bodyRemaining = _contentLength;
            _state = State.Body;
        }
        else
        {
            _state = State.RequestStart;
        }
    }

    private void Compact(IBufferWriter<byte> output)
    {
        ReadOnlySpan<byte> head = _head.AsSpan(0, _length);
        Span<Line> lines = _headerCount <= 64 ? stackalloc Line[64] : new Line[_headerCount];
        lines = lines[.._headerCount];
        int position = _headersStart;
        for (int i = 0; i < lines.Length; i++)
        {
            int end = position + head[position..].IndexOf(LF) + 1;
            lines[i] = Line.Parse(head, position, end);
            position = end;
        }

        int unwritten = _headersStart;
        for (int i = 0; i < lines.Length; i++)
        {
            ref readonly Line line = ref lines[i];
            if (!IsCandidate(head, lines, i) || !TryResolve(head, line, out string? name, out string? value))
            {
                continue;
            }

            output.Write(head[unwritten..line.Start]);
            unwritten = line.End;
            _queue.Add(name, value);
            StrippedLines++;
        }

        output.Write(head[unwritten..]);
    }

    private bool IsCandidate(ReadOnlySpan<byte> head, ReadOnlySpan<Line> lines, int index)
    {
        Line line = lines[index];
        ReadOnlySpan<byte> name = line.Name(head);
        if (line.ValueEnd == line.ValueStart || HeaderNameTable.IsKeptForKestrel(name))
        {
            return false;
        }

        foreach (byte[] excluded in _excluded)
        {
            if (Ascii.EqualsIgnoreCase(name, excluded))
            {
                return false;
            }
        }

        // A name sent more than once stays in the bytes with all its values, so their order is Kestrel's.
        for (int j = 0; j < lines.Length; j++)
        {
            if (j != index && lines[j].Key == line.Key && Ascii.EqualsIgnoreCase(name, lines[j].Name(head)))
            {
                return false;
            }
        }

        return true;
    }

    private bool TryResolve(ReadOnlySpan<byte> head, in Line line, out string name, out string value)
    {
        ReadOnlySpan<byte> valueBytes = head[line.ValueStart..line.ValueEnd];
        ReadOnlySpan<byte> nameBytes = line.Name(head);
        name = value = null!;
        if (valueBytes.Length > _cache.MaxLength)
        {
            return false;
        }

        string? known = HeaderNameTable.GetKnownName(nameBytes);
        if (known is not null)
        {
            name = known;
        }
        else if (!_cache.TryGetOrAdd(nameBytes, out name!))
        {
            return false;
        }

        return _cache.TryGetOrAdd(valueBytes, out value!);
    }

    private void BeginHead()
    {
        _state = State.RequestLine;
        _length = _forwarded = _headersStart = _lineStart = _headerCount = 0;
        _contentLength = -1;
        _upgrade = false;
        if (_head.Length == 0)
        {
            _head = ArrayPool<byte>.Shared.Rent(InitialHeadBuffer);
        }
    }

    private void Append(ReadOnlySpan<byte> bytes)
    {
        if (_length + bytes.Length > _head.Length)
        {
            byte[] grown = ArrayPool<byte>.Shared.Rent(Math.Max(_head.Length * 2, _length + bytes.Length));
            _head.AsSpan(0, _length).CopyTo(grown);
            ArrayPool<byte>.Shared.Return(_head);
            _head = grown;
        }

        bytes.CopyTo(_head.AsSpan(_length));
        _length += bytes.Length;
    }

    private void EnterPassThrough(PassThroughReason reason, IBufferWriter<byte> output)
    {
        if (_length > _forwarded)
        {
            output.Write(_head.AsSpan(_forwarded, _length - _forwarded));
        }

        ReturnHeadBuffer();
        _state = State.PassThrough;
        PassThroughReason = reason;
        PassThroughStarted?.Invoke(reason);
    }

    private void ReturnHeadBuffer()
    {
        if (_head.Length != 0)
        {
            ArrayPool<byte>.Shared.Return(_head);
            _head = [];
        }

        _length = _forwarded = 0;
    }

    private static ReadOnlySpan<byte> Trim(ReadOnlySpan<byte> value)
    {
        int start = value.IndexOfAnyExcept(SP, HTAB);
        if (start < 0)
        {
            return [];
        }

        int end = value.LastIndexOfAnyExcept(SP, HTAB);
        return value[start..(end + 1)];
    }

    private static bool ContainsIgnoreCase(ReadOnlySpan<byte> value, ReadOnlySpan<byte> token)
    {
        for (int i = 0; i + token.Length <= value.Length; i++)
        {
            if (Ascii.EqualsIgnoreCase(value.Slice(i, token.Length), token))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Offsets of one validated header line in the head buffer.</summary>
    private readonly struct Line
    {
        public readonly int Start;
        public readonly int NameEnd;
        public readonly int ValueStart;
        public readonly int ValueEnd;
        public readonly int End;
        public readonly int Key;

        private Line(int start, int nameEnd, int valueStart, int valueEnd, int end, int key)
        {
            Start = start;
            NameEnd = nameEnd;
            ValueStart = valueStart;
            ValueEnd = valueEnd;
            End = end;
            Key = key;
        }

        public ReadOnlySpan<byte> Name(ReadOnlySpan<byte> head) => head[Start..NameEnd];

        public static Line Parse(ReadOnlySpan<byte> head, int start, int end)
        {
            int nameEnd = start + head[start..end].IndexOf((byte)':');
            ReadOnlySpan<byte> raw = head[(nameEnd + 1)..(end - 2)];
            int valueStart = nameEnd + 1;
            int valueEnd = valueStart;
            int first = raw.IndexOfAnyExcept(SP, HTAB);
            if (first >= 0)
            {
                valueStart += first;
                valueEnd = nameEnd + 1 + raw.LastIndexOfAnyExcept(SP, HTAB) + 1;
            }

            // Cheap key for spotting repeated names: length and the first and last bytes, case-folded.
            int length = nameEnd - start;
            int key = (length << 16) | ((head[start] | 0x20) << 8) | (head[nameEnd - 1] | 0x20);
            return new Line(start, nameEnd, valueStart, valueEnd, end, key);
        }
    }
}
