using System.Runtime.CompilerServices;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Requests;
using HeaderCache.Transport;
using static HeaderCache.Caching.HttpBytes;

namespace HeaderCache.Http1;

/// <summary>Reads the header section of one request head at a time, as its bytes arrive: checks each line as soon as it
/// ends, has the <see cref="FieldResolver"/> resolve the strings of the lines it will take out, and, when the empty
/// line arrives, writes the section Kestrel should see and publishes the taken lines in the
/// <see cref="HeaderInjectionQueue"/>.</summary>
/// <remarks><para>Grammar accepted (stricter than Kestrel's): header lines <c>token ":" *(VCHAR / SP / HTAB) CRLF</c>,
/// after a request line <see cref="RequestLine"/> accepts. Anything else, Kestrel's limits, and the framing it does not
/// follow (<see cref="HeadFraming"/>) end compaction for the connection: the caller then hands Kestrel the client's
/// exact bytes.</para>
/// <para>Every line but those of the names Kestrel acts on is taken out, so Kestrel's collection gets all the other
/// names back from the request-level part, in the order they were sent. A line the connection sent before is served
/// from the <see cref="LineMemo"/> (HeadCompactor.Recall.cs), with the same outcome as the long way
/// here.</para></remarks>
internal sealed partial class HeadCompactor : IDisposable
{
    private readonly FieldResolver _fields;
    // The connection's queue; none while the compactor is lent to no connection (ReadingState), when nothing reads.
    private HeaderInjectionQueue? _queue;
    private readonly KestrelLimits _limits;
    private readonly bool _leaveReusedValues;
    private readonly LineMemo? _memo;

    private int _headerCount;
    private HeadFraming _framing = new();
    private int _scanned;
    private int _taken;
    private SectionNameFilter _sectionNames;
    private PreviousKnownValues _previous = new();

    /// <summary>The compactor of one connection. With <paramref name="leaveReusedValues"/> (Kestrel's
    /// <c>DisableStringReuse</c> off) a known value that repeats the previous request's is left to Kestrel, which reuses
    /// its string. Without a <paramref name="memo"/> every line goes the long way, which the memo must not be told
    /// apart from.</summary>
    public HeadCompactor(FieldResolver fields, HeaderInjectionQueue queue, KestrelLimits limits, bool leaveReusedValues, LineMemo? memo)
    {
        _fields = fields;
        _queue = queue;
        _limits = limits;
        _leaveReusedValues = leaveReusedValues;
        _memo = memo;
    }

    private HeaderInjectionQueue Queue => _queue!;

    public enum Outcome
    {
        NeedMore,      // the section is not complete, and nothing Kestrel would act on has arrived
        Complete,      // the empty line arrived: SectionLength bytes form the section
        PassThrough,   // the connection passes through from here, for Reason
    }

    public PassThroughReason Reason { get; private set; }
    public bool Upgrade => _framing.Upgrade;
    public bool HasTakenLines => _taken != 0;

    public MeteredCounts Metered => new()
    {
        LinesServed = LinesServed,
        LinesCreated = LinesCreated,
        AvoidedBytes = AvoidedBytes,
        ValueEvictions = _fields.ValueEvictions,
        NameEvictions = _fields.Names.Counters.Evictions,
    };

    /// <summary>Length of the complete section, empty line included.</summary>
    public int SectionLength { get; private set; }

    /// <summary>The section's Content-Length, or -1 when it has none.</summary>
    public long ContentLength => _framing.ContentLength;

    /// <summary>Length of the section Kestrel sees once the taken lines are out.</summary>
    public int CompactedLength { get; private set; }

    /// <summary>Taken lines whose name and value both came without a new string (a cache hit, a constant, an empty
    /// value, Kestrel's previous string).</summary>
    public long LinesServed { get; private set; }

    /// <summary>Taken lines for which a new name or value string was made, as Kestrel alone would have.</summary>
    public long LinesCreated { get; private set; }

    /// <summary>Managed bytes of the strings Kestrel alone would have allocated for the lines served: each one's value,
    /// unless Kestrel would have handed back its previous string, and its name, unless Kestrel has a constant for it.</summary>
    public long AvoidedBytes { get; private set; }

    public void Begin()
    {
        Queue.Discard();
        _memo?.Begin();
        _scanned = _taken = _headerCount = 0;
        _sectionNames.Clear();
        _previous.Begin();
        SectionLength = CompactedLength = 0;
        _framing = new HeadFraming();
    }

    /// <summary>Reads the section's bytes received so far (<paramref name="section"/> starts at the first header line
    /// and grows from call to call); lines already read are not read again.</summary>
    public Outcome Scan(ReadOnlySpan<byte> section)
    {
        int limit = _limits.MaxSectionLength;
        while (true)
        {
            // The first CR or LF decides: a line ends at CRLF, Kestrel rejects a CR followed by anything but LF as soon
            // as that byte arrives, and it accepts a bare LF as a line end by default (such heads are left to it).
            // A line the memo expects here ends where the remembered line does: no search.
            ReadOnlySpan<byte> rest = section[_scanned..];
            int found = -1;
            int end = _memo is null ? -1 : _memo.FindNext(rest, out found);
            if (end < 0)
            {
                end = rest.IndexOfAny(CR, LF);
                if (end < 0 || (end == rest.Length - 1 && rest[end] == CR))
                {
                    return _scanned + rest.Length > limit ? PassThrough(PassThroughReason.OverLimit) : Outcome.NeedMore;
                }
            }

            int length = end + 2;
            if (_scanned + length > limit)
            {
                return PassThrough(PassThroughReason.OverLimit);
            }

            if (rest[end] == LF || rest[end + 1] != LF)
            {
                return PassThrough(PassThroughReason.Malformed);
            }

            int start = _scanned;
            _scanned += length;
            if (end == 0)
            {
                return Complete();
            }

            if (_headerCount++ >= _limits.MaxRequestHeaderCount)
            {
                return PassThrough(PassThroughReason.OverLimit);
            }

            PassThroughReason reason = TryRecall(section, rest[..end], start, found) ? PassThroughReason.None : ReadLine(section, rest[..end], start);
            if (reason == PassThroughReason.None && _fields.ValuesDoNotRepeat)
            {
                reason = PassThroughReason.ValuesDoNotRepeat;
            }

            if (reason != PassThroughReason.None)
            {
                return PassThrough(reason);
            }
        }
    }

    /// <summary>Writes the complete section without the taken lines to <paramref name="destination"/>
    /// (<see cref="CompactedLength"/> bytes) and publishes the taken lines for the request.</summary>
    public void Compact(ReadOnlySpan<byte> section, Span<byte> destination)
    {
        int unwritten = 0;
        int written = 0;
        foreach (ref TakenHeader line in Queue.Recorded)
        {
            if (line.Value is null)
            {
                // A known value Kestrel would have reused: it gets the previous string, as from Kestrel, and is not
                // counted, as Kestrel would have allocated nothing for it.
                line.Value = _previous[line.Known];
                line.ReusedByKestrel = true;
            }
            else if (line.Created)
            {
                LinesCreated++;
            }
            else
            {
                LinesServed++;
                AvoidedBytes += AvoidedBy(line);
            }

            // Taken lines mostly follow one another: only the kept lines between them (Host, Connection) are copied.
            if (line.Start != unwritten)
            {
                section[unwritten..line.Start].CopyTo(destination[written..]);
                written += line.Start - unwritten;
            }

            unwritten = line.End;
        }

        section[unwritten..SectionLength].CopyTo(destination[written..]);
        Queue.Publish();
    }

    /// <summary>The connection ended or passes through: the compactor lets go of its caches' strings, its memo and what
    /// it knew of the last head, none of which will serve another line. The counters stay for the metrics.</summary>
    public void Dispose()
    {
        ReleaseLines();
        _fields.Release();
        _memo?.Release();
        _previous.Release();
    }

    /// <summary>Makes the compactor another connection's, whose taken lines go to <paramref name="queue"/> (none: lent to no connection): nothing of the
    /// last connection stays (its memo, what it knew of the last head, its counts, its reason to pass through), and the
    /// last connection's queue is not touched. The resolver is reset by its owner.</summary>
    public void Reset(HeaderInjectionQueue? queue)
    {
        _memo?.Reset();
        _previous.Release();
        _previous = new();
        _framing = new();
        _sectionNames.Clear();
        (_headerCount, _scanned, _taken) = (0, 0, 0);
        (Reason, SectionLength, CompactedLength) = (PassThroughReason.None, 0, 0);
        (LinesServed, LinesCreated, AvoidedBytes) = (0, 0, 0);
        _queue = queue;
    }

    /// <summary>The connection has waited long for its next request (<see cref="IdleTrim"/>): the compactor lets go of
    /// what only makes reading a head cheaper, and keeps its caches' strings, which save the next head's allocations.</summary>
    public void Trim()
    {
        _memo?.Release();
        Queue.Release();
        _previous.Release();
    }

    /// <summary>Forgets the current head's lines: a head with nothing to take out publishes none. The entries published
    /// stay for their requests.</summary>
    public void ReleaseLines() => Queue.Discard();

    /// <summary>The complete head just read is the last the compactor reads: the requests before it have ended, so the
    /// queue lets go of its array unless this head's lines wait for their request.</summary>
    public void StopAfterHead() => Queue.StopRecording();

    // Kestrel names a known header with its constant, so only other names would have cost a string; an empty value is
    // string.Empty either way (StringSize(0) is 0).
    private static int AvoidedBy(in TakenHeader line) =>
        (line.ReusedByKestrel ? 0 : HeaderStringCache.StringSize(line.ValueLength))
        + (line.Known < 0 ? HeaderStringCache.StringSize(line.NameLength) : 0);

    private Outcome Complete()
    {
        SectionLength = _scanned;
        _previous.End();
        if (_taken != 0)
        {
            // A head compacted anyway loses the lines Kestrel would reuse its previous string for too: putting that
            // string back costs less than Kestrel's parse of the line. A head with nothing else to take stays as it is.
            _taken += _previous.LeftLength;
        }

        CompactedLength = SectionLength - _taken;
        return Outcome.Complete;
    }

    // A head is being read, so the last request has ended: the queue may let go of its array if nothing waits.
    private Outcome PassThrough(PassThroughReason reason)
    {
        Reason = reason;
        Queue.StopRecording();
        return Outcome.PassThrough;
    }

    // The long way for a line the memo did not serve: the value's lookup is also its validation, so every byte is looked
    // at once.
    private PassThroughReason ReadLine(ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start)
    {
        int colon = content.IndexOf(Colon);
        if (colon <= 0 || content[..colon].ContainsAnyExcept(Token))
        {
            // Also rules out obs-fold (leading SP/HTAB) and whitespace before the colon.
            return PassThroughReason.Malformed;
        }

        ReadOnlySpan<byte> name = content[..colon];
        ReadOnlySpan<byte> value = ValueOf(content, colon);
        bool plain = LineMemo.IsPlainLayout(content, colon, value.Length);
        int kind = FieldNames.Classify(name);
        if (kind == FieldNames.Kept)
        {
            // Stays in the bytes; no other line's name equals it, so it needs no record here.
            if (value.ContainsAnyExcept(FieldContent))
            {
                return PassThroughReason.Malformed;
            }

            PassThroughReason reason = _framing.Read(name, value, out bool framing);
            if (reason == PassThroughReason.None && plain && !framing)
            {
                // A line Kestrel acts on that changes nothing here (Host, Connection: keep-alive, ...): remembered by its
                // bytes only, its strings are Kestrel's to make.
                _memo?.Remember(new LineMemo.Entry { Name = string.Empty, Value = string.Empty, Kind = FieldNames.Kept, ValueSlot = -1 }, content);
            }

            return reason;
        }

        var line = new TakenHeader(start, start + content.Length + 2, name) { Known = (short)kind, ValueLength = (ushort)value.Length };
        line.Name = kind >= 0 ? FieldNames.KnownName(kind) : _fields.ResolveName(name, ref line.Created, out line.NameSlot);
        line.Repeat = IsRepeat(line, name, section);
        short slot = -1;
        if (line.Repeat || !_previous.IsReused(kind, value))
        {
            line.Value = _fields.ResolveValue(ref line, name, value, out slot);
            if (line.Value is null)
            {
                return PassThroughReason.Malformed;
            }

            _taken += line.End - line.Start;
        }

        if (plain)
        {
            Remember(line, slot, content);
        }

        Queue.NextLine() = line;
        Queue.Record();
        NoteKnownValue(line, value);
        return PassThroughReason.None;
    }

    private static ReadOnlySpan<byte> ValueOf(ReadOnlySpan<byte> content, int colon)
    {
        ReadOnlySpan<byte> raw = content[(colon + 1)..];
        int first = raw.IndexOfAnyExcept(SP, HTAB);
        return first < 0 ? [] : raw[first..(raw.LastIndexOfAnyExcept(SP, HTAB) + 1)];
    }

    // As a line is recorded: which known values Kestrel will hand back for the next request, and how much of this head it
    // hands back the previous request's for.
    private void NoteKnownValue(in TakenHeader line, ReadOnlySpan<byte> value)
    {
        if (line.Known >= 0 && _leaveReusedValues)
        {
            _previous.Note(line, value);
        }
    }

    // Whether an earlier line of this section has the same name (case-insensitively): then the value is appended to that
    // name's values, as Kestrel appends it, and an earlier line left to Kestrel is taken too, so that all the name's
    // values go back in order. The filter makes a section without repeats linear.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool IsRepeat(in TakenHeader line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> section) =>
        _sectionNames.Add(line.Known, line.Key) && FindRepeat(line, name, section);

    private bool FindRepeat(in TakenHeader line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> section)
    {
        // An earlier line's name string is Kestrel's constant or has exactly that line's bytes.
        foreach (ref TakenHeader earlier in Queue.Recorded)
        {
            if (earlier.Key == line.Key && earlier.Name is not null && Ascii.EqualsIgnoreCase(name, earlier.Name))
            {
                if (earlier.Value is null)
                {
                    // Left because Kestrel would hand back its previous string: taking it saves nothing.
                    earlier.ReusedByKestrel = true;
                    _previous.Take(earlier);
                    ReadOnlySpan<byte> content = section[earlier.Start..(earlier.End - 2)];
                    earlier.Value = _fields.ResolveValue(ref earlier, name, ValueOf(content, content.IndexOf(Colon)), out _);
                    _taken += earlier.End - earlier.Start;
                }

                return true;
            }
        }

        return false;
    }
}
