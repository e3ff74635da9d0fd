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

    private const int ValueWindow = 64;
    private const int MinValueHitRateInverse = 8;
    private const int ValueBypassLength = 1024;

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
    private HeaderLine[] _lines = [];
    private ulong _seenKeys;
    private long _contentLength;
    private bool _upgrade;
    private long _bodyRemaining;
    private int _valueLookups;
    private int _valueHits;
    private int _valueBypassRemaining;

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

    /// <summary>
    /// How often the connection's values stopped going through the cache: fewer than one in
    /// eight of the last 64 value lookups were hits, so the next 1024 values were created directly.
    /// </summary>
    public long ValueBypasses { get; private set; }

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
                        if (HasBareCr(data[..take]))
                        {
                            // Kestrel rejects a CR followed by anything but LF as soon as that byte arrives.
                            EnterPassThrough(PassThroughReason.Malformed, output);
                            break;
                        }

                        // Kestrel allows the header lines plus the final CRLF to take MaxRequestHeadersTotalSize + 2.
                        if (_length - _headersStart + take > _limits.MaxRequestHeadersTotalSize + 2)
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

        PassThroughReason reason = OnHeaderLine(_lineStart, _length);
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

    // Checks a complete header line as soon as it ends and, unless Kestrel acts on it, resolves its strings
    // now: the cache's lookup is also the validation of the value, so every byte is looked at once. Every
    // other line is taken out, so Kestrel's collection gets them all from the re-injection, in wire order.
    private PassThroughReason OnHeaderLine(int start, int end)
    {
        ReadOnlySpan<byte> content = _head.AsSpan(start, end - start - 2);
        int colon = content.IndexOf((byte)':');
        if (colon <= 0 || content[..colon].ContainsAnyExcept(TokenBytes))
        {
            // Also rules out obs-fold (leading SP/HTAB) and whitespace before the colon.
            return PassThroughReason.Malformed;
        }

        if (++_headerCount > _limits.MaxRequestHeaderCount)
        {
            return PassThroughReason.OverLimit;
        }

        ReadOnlySpan<byte> name = content[..colon];
        ReadOnlySpan<byte> raw = content[(colon + 1)..];
        int first = raw.IndexOfAnyExcept(SP, HTAB);
        ReadOnlySpan<byte> value = first < 0 ? [] : raw[first..(raw.LastIndexOfAnyExcept(SP, HTAB) + 1)];
        var line = new HeaderLine(start, end, name);

        if (HeaderNameTable.IsKeptForKestrel(name))
        {
            if (value.ContainsAnyExcept(FieldBytes))
            {
                return PassThroughReason.Malformed;
            }

            PassThroughReason reason = OnKeptHeader(name, value);
            if (reason != PassThroughReason.None)
            {
                return reason;
            }
        }
        else
        {
            string? valueString = ResolveValue(name, value);
            if (valueString is null)
            {
                // A byte other than VCHAR, SP or HTAB.
                return PassThroughReason.Malformed;
            }

            line.Name = HeaderNameTable.GetKnownName(name) ?? ResolveName(name);
            line.Value = valueString;
            line.Repeat = IsRepeat(line, name);
        }

        if (_headerCount > _lines.Length)
        {
            GrowLines();
        }

        _lines[_headerCount - 1] = line;
        return PassThroughReason.None;
    }

    // A value the cache does not hold (empty, too long, or of an excluded name) is created as Kestrel would.
    private string? ResolveValue(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value)
    {
        if (value.IsEmpty)
        {
            return string.Empty;
        }

        if (value.Length > _cache.MaxLength || IsExcluded(name))
        {
            return value.ContainsAnyExcept(FieldBytes) ? null : HeaderStringCache.Decode(value);
        }

        return LookUpValue(value);
    }

    // Names are validated tokens, so the cache refuses only names longer than its limit.
    private string ResolveName(ReadOnlySpan<byte> name) =>
        _cache.TryGetOrAdd(name, out string? cached) ? cached : HeaderStringCache.Decode(name);

    // Whether an earlier line of this head has the same name (case-insensitively): then the value is appended
    // to that name's values, as Kestrel appends it. The filter makes the common head, without repeats, linear.
    private bool IsRepeat(HeaderLine line, ReadOnlySpan<byte> name)
    {
        ulong bit = 1UL << (int)(((uint)line.Key * 0x9E3779B9u) >> 26);
        if ((_seenKeys & bit) == 0)
        {
            _seenKeys |= bit;
            return false;
        }

        ReadOnlySpan<byte> head = _head.AsSpan(0, _length);
        foreach (ref readonly HeaderLine earlier in _lines.AsSpan(0, _headerCount - 1))
        {
            if (earlier.Key == line.Key && earlier.Name is not null && Ascii.EqualsIgnoreCase(earlier.NameBytes(head), name))
            {
                return true;
            }
        }

        return false;
    }

    // Values go through the cache unless the connection's recent values almost never repeat (a hostile
    // or highly varied client): then, for a while, values are created directly, which costs what Kestrel
    // would pay and neither takes slots from the names nor keeps strings alive. Names stay cached.
    private string? LookUpValue(ReadOnlySpan<byte> value)
    {
        if (_valueBypassRemaining > 0)
        {
            _valueBypassRemaining--;
            return value.ContainsAnyExcept(FieldBytes) ? null : HeaderStringCache.Decode(value);
        }

        long hits = _cache.Counters.Hits;
        if (!_cache.TryGetOrAdd(value, out string? result))
        {
            return null;
        }

        _valueHits += (int)(_cache.Counters.Hits - hits);
        if (++_valueLookups == ValueWindow)
        {
            if (_valueHits * MinValueHitRateInverse < ValueWindow)
            {
                _valueBypassRemaining = ValueBypassLength;
                ValueBypasses++;
            }

            _valueLookups = _valueHits = 0;
        }

        return result;
    }

    private PassThroughReason OnKeptHeader(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value)
    {
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

    private bool IsExcluded(ReadOnlySpan<byte> name)
    {
        foreach (byte[] excluded in _excluded)
        {
            if (Ascii.EqualsIgnoreCase(name, excluded))
            {
                return true;
            }
        }

        return false;
    }

    private void GrowLines()
    {
        HeaderLine[] grown = ArrayPool<HeaderLine>.Shared.Rent(Math.Max(32, _lines.Length * 2));
        _lines.AsSpan().CopyTo(grown);
        ReturnLines();
        _lines = grown;
    }

    private void ReturnLines()
    {
        if (_lines.Length != 0)
        {
            // Drop the string references of the lines used, not the whole rented array.
            Array.Clear(_lines, 0, Math.Min(_headerCount, _lines.Length));
            ArrayPool<HeaderLine>.Shared.Return(_lines);
            _lines = [];
        }
    }

    private void CompleteHead(IBufferWriter<byte> output)
    {
        Debug.Assert(_forwarded == _headersStart, "The request line is forwarded before the header lines.");
        Compact(output);
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
        Span<HeaderLine> lines = _lines.AsSpan(0, _headerCount);
        int unwritten = _headersStart;
        foreach (ref readonly HeaderLine line in lines)
        {
            if (line.Value is null)
            {
                continue;
            }

            output.Write(head[unwritten..line.Start]);
            unwritten = line.End;
            StrippedLines++;
        }

        output.Write(head[unwritten..]);
        _queue.Publish(lines);
    }

    // Whether a CR in a piece of a header line is followed by a byte other than LF, counting a CR held from
    // the line's previous piece. A piece ends at the first LF, so only its first CR can be the line's end.
    private bool HasBareCr(ReadOnlySpan<byte> piece)
    {
        if (_length > _lineStart && _head[_length - 1] == CR && piece[0] != LF)
        {
            return true;
        }

        int cr = piece.IndexOf(CR);
        return cr >= 0 && cr < piece.Length - 1 && piece[cr + 1] != LF;
    }

    private void BeginHead()
    {
        _state = State.RequestLine;
        _length = _forwarded = _headersStart = _lineStart = _headerCount = 0;
        _contentLength = -1;
        _upgrade = false;
        _seenKeys = 0;
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

        ReturnLines();
        _length = _forwarded = 0;
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
}
