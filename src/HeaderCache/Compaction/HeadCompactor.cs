using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.Intrinsics.X86;
using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Compaction;

/// <summary>
/// Reads the header section of one request head at a time, as its bytes arrive: checks each line as soon as
/// it ends, resolves the strings of the lines it will take out, and, when the empty line arrives, writes the
/// section Kestrel should see (the lines Kestrel acts on, then the empty line) and publishes the taken lines in the
/// <see cref="HeaderInjectionQueue"/>, where it records each line as it reads it.
/// </summary>
/// <remarks>
/// <para>Grammar accepted (stricter than Kestrel's): header lines <c>token ":" *(VCHAR / SP / HTAB) CRLF</c>, after a
/// request line <see cref="RequestLine"/> accepts. Anything else, Kestrel's limits, and the framing it does not follow
/// (<see cref="HeadFraming"/>) end compaction for the connection: the caller then hands Kestrel the client's exact
/// bytes.</para>
/// <para>Every line but those of the names Kestrel acts on is taken out, so Kestrel's collection gets all the
/// other names from the re-injection, in the order they were sent.</para>
/// </remarks>
internal sealed class HeadCompactor : IDisposable
{
    private const byte CR = (byte)'\r';
    private const byte LF = (byte)'\n';
    private const byte SP = (byte)' ';
    private const byte HTAB = (byte)'\t';

    private readonly HeaderStringCache _cache;
    private readonly HeaderStringCache _names;
    private readonly HeaderInjectionQueue _queue;
    private readonly HeadLimits _limits;
    private readonly byte[][] _excluded;
    private readonly bool _leaveReusedValues;
    private readonly LineMemo _memo = new();
    private readonly SharedStringTable? _sharedValues;
    private readonly SharedStringTable? _sharedNames;
    private readonly long _connectionId;

    private int _headerCount;
    private HeadFraming _framing = new();
    private int _scanned;
    private int _taken;
    private SectionNameFilter _sectionNames;
    private ValueAdmission _admission;
    private int _valueSlot;

    private PreviousKnownValues _previous = new();

    /// <summary>Creates the compactor of one connection.</summary>
    /// <param name="cache">The connection's cache of values.</param>
    /// <param name="names">The connection's cache of header names Kestrel has no constant for: a connection's
    /// names are few and stable, and kept apart they take no slot from the values.</param>
    /// <param name="queue">Where the taken lines wait for their request.</param>
    /// <param name="limits">Kestrel's limits on a head.</param>
    /// <param name="excludedNames">Names whose values are never cached.</param>
    /// <param name="leaveReusedValues">Kestrel reuses a known header's string when the value repeats the previous
    /// request's (its <c>DisableStringReuse</c> is off): such lines are then left to Kestrel.</param>
    /// <param name="shared">The process's shared tier, or <see langword="null"/> when it is off: asked only when the
    /// connection's own cache misses a value (or name) of a header on <see cref="ShareableHeaders"/>.</param>
    public HeadCompactor(
        HeaderStringCache cache,
        HeaderStringCache names,
        HeaderInjectionQueue queue,
        HeadLimits limits,
        IEnumerable<string>? excludedNames = null,
        bool leaveReusedValues = true,
        SharedStrings? shared = null)
    {
        _sharedValues = shared?.Values;
        _sharedNames = shared?.Names;
        _connectionId = shared is null ? 0 : SharedAdmission.NewConnectionId();
        _cache = cache;
        _names = names;
        _queue = queue;
        _limits = limits;
        _excluded = excludedNames?.Select(Encoding.ASCII.GetBytes).ToArray() ?? [];
        _leaveReusedValues = leaveReusedValues;
        _admission = new ValueAdmission(names.SlotCount);
    }

    /// <summary>What <see cref="Scan"/> found.</summary>
    public enum Outcome
    {
        /// <summary>The section is not complete yet and nothing Kestrel would act on has arrived.</summary>
        NeedMore,

        /// <summary>The empty line arrived: <see cref="SectionLength"/> bytes form the section.</summary>
        Complete,

        /// <summary>The connection must pass through from here, for <see cref="Reason"/>.</summary>
        PassThrough,
    }

    /// <summary>The connection's cache of values.</summary>
    public HeaderStringCache Cache => _cache;

    /// <summary>The connection's cache of names.</summary>
    public HeaderStringCache Names => _names;

    /// <summary>What both caches have done.</summary>
    public CacheCounters Counters => _cache.Counters + _names.Counters;

    /// <summary>What the instruments report of this connection.</summary>
    public MeteredCounts Metered => new()
    {
        LinesServed = LinesServed,
        LinesCreated = LinesCreated,
        AvoidedBytes = AvoidedBytes,
        ValueEvictions = _cache.Counters.Evictions,
        NameEvictions = _names.Counters.Evictions,
    };

    /// <summary>Why <see cref="Scan"/> last returned <see cref="Outcome.PassThrough"/>.</summary>
    public PassThroughReason Reason { get; private set; }

    /// <summary>Length of the complete section, empty line included.</summary>
    public int SectionLength { get; private set; }

    /// <summary>The section's Content-Length, or -1 when it has none.</summary>
    public long ContentLength => _framing.ContentLength;

    /// <summary>Whether the section asks for an upgrade (<c>Connection: upgrade</c> or an <c>Upgrade</c> header).</summary>
    public bool Upgrade => _framing.Upgrade;

    /// <summary>Whether the complete section has lines to take out.</summary>
    public bool HasTakenLines => _taken != 0;

    /// <summary>Length of the section Kestrel sees once the taken lines are out.</summary>
    public int CompactedLength { get; private set; }

    /// <summary>Header lines taken out of heads so far.</summary>
    public long StrippedLines => LinesServed + LinesCreated;

    /// <summary>Whether lines sent before are served from the memo of lines; off only in the tests that show the
    /// memo changes nothing but the work done.</summary>
    internal bool RecallsLines { get; set; } = true;

    /// <summary>Header lines served from the memo of lines (<see cref="LineMemo"/>), taken or not.</summary>
    public long LinesRecalled { get; private set; }

    /// <summary>Taken lines whose name and value both came without a new string (a cache hit, a constant, an empty value).</summary>
    public long LinesServed { get; private set; }

    /// <summary>Taken lines for which a new name or value string was made.</summary>
    public long LinesCreated { get; private set; }

    /// <summary>
    /// Managed bytes of the strings Kestrel alone would have allocated for the lines served: each one's value, unless
    /// Kestrel would have handed back its previous string, and its name, unless Kestrel has a constant for it.
    /// </summary>
    public long AvoidedBytes { get; private set; }

    /// <summary>Starts a new header section.</summary>
    public void Begin()
    {
        _queue.Discard();
        _memo.Begin();
        _scanned = _taken = _headerCount = 0;
        _sectionNames.Clear();
        _previous.Begin();
        SectionLength = CompactedLength = 0;
        _framing = new HeadFraming();
    }

    /// <summary>
    /// Looks at the section's bytes received so far (<paramref name="section"/> starts at the first header line
    /// and grows from call to call); lines already seen are not looked at again.
    /// </summary>
    public Outcome Scan(ReadOnlySpan<byte> section)
    {
        int limit = _limits.MaxSectionLength;
        while (true)
        {
            // The first CR or LF decides: a line ends at CRLF, Kestrel rejects a CR followed by anything but LF as
            // soon as that byte arrives, and it accepts a bare LF as a line end by default (such heads are left to it).
            // A line the memo expects here ends where the remembered line does: no search.
            ReadOnlySpan<byte> rest = section[_scanned..];
            int end = RecallsLines ? _memo.FindNext(rest) : -1;
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
                SectionLength = _scanned;
                _previous.End();
                if (_taken != 0)
                {
                    // A head compacted anyway loses the lines Kestrel would reuse its previous string for too: putting
                    // that string back costs less than Kestrel's parse of the line. A head with nothing else to take
                    // stays as it is.
                    _taken += _previous.LeftLength;
                }

                CompactedLength = SectionLength - _taken;
                return Outcome.Complete;
            }

            PassThroughReason reason = OnHeaderLine(section, rest[..end], start);
            if (reason != PassThroughReason.None)
            {
                return PassThrough(reason);
            }
        }
    }

    /// <summary>
    /// Writes the complete section without the taken lines to <paramref name="destination"/>
    /// (<see cref="CompactedLength"/> bytes) and publishes the taken lines for the request.
    /// </summary>
    public void Compact(ReadOnlySpan<byte> section, Span<byte> destination)
    {
        int unwritten = 0;
        int written = 0;
        foreach (ref HeaderLine line in _queue.Recorded)
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

            if (line.Known >= 0 && !line.Created)
            {
                Prefetch(line.Value!);
            }

            // Taken lines mostly follow one another: only the kept lines before them (Host, Connection) are copied.
            if (line.Start != unwritten)
            {
                section[unwritten..line.Start].CopyTo(destination[written..]);
                written += line.Start - unwritten;
            }

            unwritten = line.End;
        }

        section[unwritten..SectionLength].CopyTo(destination[written..]);
        _queue.Publish();
    }

    // Kestrel reads a known value's string as the request's context is created (its indexer asks the value's count).
    // A string the cache served, or Kestrel's previous one, was made long ago, and under load it is no longer in the
    // processor's caches: its first line is fetched now, while Kestrel parses the compacted head, rather than then. The
    // address alone is taken: calling anything on the string would read it now, which is the wait this avoids.
    private static unsafe void Prefetch(string value)
    {
        if (Sse.IsSupported)
        {
            Sse.Prefetch0((void*)Unsafe.As<string, nint>(ref value));
        }
    }

    // Kestrel names a known header with its constant, so only other names would have cost a string; an empty value is
    // string.Empty either way (StringSize(0) is 0).
    // Inlined: code compiled ahead otherwise calls it for every served line.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int AvoidedBy(in HeaderLine line) =>
        (line.ReusedByKestrel ? 0 : HeaderStringCache.StringSize(line.ValueLength))
        + (line.Known < 0 ? HeaderStringCache.StringSize(line.NameLength) : 0);

    /// <summary>
    /// The connection ended or passes through: nothing the compactor holds will serve another line, so it lets go of
    /// its caches' strings, its memo and what it knew of the last head (a long-lived upgraded connection would keep
    /// them for nothing). The counters stay for the metrics.
    /// </summary>
    public void Dispose()
    {
        ReleaseLines();
        _cache.Release();
        _names.Release();
        _memo.Release();
        _previous.Release();
        _admission.Release();
    }

    /// <summary>
    /// The connection waits for its next request, and has for long (<see cref="IdleTrim"/>): the compactor lets go of what
    /// only makes reading a head cheaper and the next head builds again (the memo of lines, the queue's array and the
    /// previous head's known values), and keeps its caches' strings, which save the next head's allocations.
    /// </summary>
    public void Trim()
    {
        _memo.Release();
        _queue.Release();
        _previous.Release();
    }

    /// <summary>Forgets the current head's lines, recorded in the queue: a head with nothing to take out publishes none,
    /// and a connection that passes through or ends records no more. The entries published stay for their requests
    /// (an upgraded request, or one whose client stopped sending, still runs).</summary>
    public void ReleaseLines() => _queue.Discard();

    /// <summary>The complete head just read is the last the compactor reads: the requests before it have ended, so the
    /// queue lets go of its array unless this head's lines wait for their request.</summary>
    public void StopAfterHead() => _queue.StopRecording();

    // A head is being read, so the last request has ended: the queue may let go of its array if nothing waits.
    private Outcome PassThrough(PassThroughReason reason)
    {
        Reason = reason;
        _queue.StopRecording();
        return Outcome.PassThrough;
    }

    // Checks a complete header line (without its CRLF) and, unless Kestrel acts on it or reuses its value on its
    // own, resolves its strings now. A line sent before as it is now is served from the memo of lines. Inlined into
    // Scan: code compiled ahead (ReadyToRun, count.sh) otherwise calls it for every line.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private PassThroughReason OnHeaderLine(ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start)
    {
        if (_headerCount >= _limits.MaxRequestHeaderCount)
        {
            return PassThroughReason.OverLimit;
        }

        _headerCount++;
        return RecallsLines && TryRecall(section, content, start) ? _admission.StepAside : ReadLine(section, content, start);
    }

    // The long way for a line the memo did not serve: the cache's lookup is also the validation of the value, so
    // every byte is looked at once.
    private PassThroughReason ReadLine(ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start)
    {
        int colon = content.IndexOf((byte)':');
        if (colon <= 0 || content[..colon].ContainsAnyExcept(HttpBytes.Token))
        {
            // Also rules out obs-fold (leading SP/HTAB) and whitespace before the colon.
            return PassThroughReason.Malformed;
        }

        ReadOnlySpan<byte> name = content[..colon];
        ReadOnlySpan<byte> value = ValueOf(content, colon);
        bool plain = LineMemo.IsPlainLayout(content, colon, value.Length);
        int kind = HeaderNameTable.Classify(name);
        if (kind == HeaderNameTable.Kept)
        {
            // Stays in the bytes; no other line's name equals it, so it needs no record here.
            if (value.ContainsAnyExcept(HttpBytes.FieldContent))
            {
                return PassThroughReason.Malformed;
            }

            PassThroughReason reason = _framing.Read(name, value, out bool framing);
            if (reason == PassThroughReason.None && plain && RecallsLines && !framing)
            {
                // A line Kestrel acts on that changes nothing here (Host, Connection: keep-alive, ...). Its strings are
                // Kestrel's to make: the entry holds none, only the bytes to recognise the line by.
                _memo.Remember(new LineMemo.Entry { Name = string.Empty, Value = string.Empty, Kind = HeaderNameTable.Kept, ValueSlot = -1 }, content);
            }

            return reason;
        }

        // A byte other than VCHAR, SP or HTAB.
        return TakeLine(section, content, start, name, value, kind, plain, recalledNameSlot: -1) ? _admission.StepAside : PassThroughReason.Malformed;
    }

    // The long way from a line's name on, its kind known and its value trimmed: the name resolved (or, for a line
    // found by its name alone, recalledNameSlot >= 0, served from that slot of the cache of names as a recalled line's
    // is), the value taken unless Kestrel reuses it, the line remembered for later heads and recorded. False for a value
    // with a byte other than VCHAR, SP or HTAB.
    private bool TakeLine(
        ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start, ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, int kind, bool plain, int recalledNameSlot)
    {
        bool recalled = recalledNameSlot >= 0;
        var line = new HeaderLine(start, start + content.Length + 2, name) { Known = (short)kind, ValueLength = (ushort)value.Length };
        line.Shared = _sharedValues is not null && IsShareable(kind, name);
        if (kind >= 0)
        {
            line.Name = HeaderNameTable.KnownName(kind);
        }
        else if (recalled)
        {
            line.NameSlot = (short)recalledNameSlot;
            line.Name = _names.Touch(recalledNameSlot, name.Length);
        }
        else
        {
            line.Name = ResolveName(name, line.Shared, ref line.Created, out line.NameSlot);
        }

        bool nameServed = !line.Created;
        line.Repeat = IsRepeat(line, name, section);
        _valueSlot = -1;
        if ((line.Repeat || !_previous.IsReused(kind, value)) && !Take(ref line, name, value))
        {
            return false;
        }

        if (plain && RecallsLines)
        {
            RememberTaken(line, name, content, byName: nameServed && !recalled);
        }

        Record(line, value);
        return true;
    }

    // A line the connection sent before, byte for byte: it is valid and of the same kind, and while the caches
    // still hold its strings where the memo says, the lookups of the long way would find them there. So it is
    // served from the memo, with the caches, counters and per-name history changed as those lookups change them. A
    // value since evicted, or one that would now be created directly, goes the long way from the value on; a name
    // since evicted, the long way.
    private bool TryRecall(ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start)
    {
        int found = _memo.Found >= 0 ? _memo.Found : _memo.Find(content);
        if (found < 0)
        {
            // A line expected here whose value changed: its name is known without the long way's search.
            int named = _memo.FindName(content);
            return named >= 0 && IsNameHeld(_memo[named]) && TryRecallName(section, content, start, _memo[named]);
        }

        ref readonly LineMemo.Entry entry = ref _memo[found];
        if (entry.Kind == HeaderNameTable.Kept)
        {
            LinesRecalled++;
            return true;
        }

        if (!IsNameHeld(entry))
        {
            return false;
        }

        if (entry.ValueSlot == LineMemo.CreatedValue)
        {
            return TryRecallName(section, content, start, entry);
        }

        // Filled in place: copying a line with its two references into the array costs more than the rest. Nothing
        // below records a line, so the reference stays in the queue's array.
        ref HeaderLine line = ref _queue.NextLine();
        ReadOnlySpan<byte> name = content[..entry.NameLength];
        ReadOnlySpan<byte> value = content[(name.Length + 2)..];
        line = new HeaderLine(start, start + content.Length + 2, name.Length, entry.Key)
        {
            Known = entry.Kind, NameSlot = entry.Kind < 0 ? entry.NameSlot : (short)-1, ValueLength = (ushort)value.Length,
        };
        line.Repeat = IsRepeat(line, name, section);
        bool take = line.Repeat || !_previous.IsReused(line.Known, value, entry.Value);
        ref byte nameMisses = ref _admission.Misses(entry.History);
        line.Name = entry.Kind >= 0 ? HeaderNameTable.KnownName(entry.Kind) : _names.Touch(entry.NameSlot, line.NameLength);
        if (take && (ValueAdmission.IsBypassed(nameMisses)
            || (entry.ValueSlot != LineMemo.WellKnownValue && !ReferenceEquals(_cache.StringAt(entry.ValueSlot), entry.Value))))
        {
            // The name's values are created without a look-up now, or this one was pushed out of the cache of values
            // since (a proxy's client addresses take turns in it): the value goes the long way, the name as recalled.
            TakeRecalledValue(ref line, name, value, content);
        }
        else if (take)
        {
            line.Value = entry.ValueSlot == LineMemo.WellKnownValue ? entry.Value : _cache.Touch(entry.ValueSlot, line.ValueLength);
            _taken += line.End - line.Start;
            _admission.Count(ref nameMisses, hit: true);
        }

        _queue.Record();
        NoteKnownValue(line, value);
        LinesRecalled++;
        return true;
    }

    // The long way from the value on for a line found in the memo, as TakeLine goes it for a line whose name was served.
    // The value's bytes are those remembered, which were checked then.
    private void TakeRecalledValue(ref HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, ReadOnlySpan<byte> content)
    {
        line.Shared = _sharedValues is not null && IsShareable(line.Known, name);
        _valueSlot = -1;
        bool taken = Take(ref line, name, value);
        Debug.Assert(taken, "A remembered value is valid.");
        RememberTaken(line, name, content, byName: true);
    }

    // A line is remembered once its strings were served: a line whose value or name was just created (a request id, a
    // per-file validator) mostly never comes back, and remembering it would cost as much as the lookup it might save
    // and push out a line that does come back. Its name does come back, and once the name's values are created without
    // a lookup, the name alone is remembered (byName false: a line found by it already is).
    private void RememberTaken(in HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> content, bool byName)
    {
        if (!line.Created)
        {
            Remember(line, name, content);
        }
        else if (byName && ValueAdmission.IsBypassed(_admission.Misses(line)))
        {
            RememberName(line, name, content);
        }
    }

    // A name Kestrel has a constant for, or one the cache of names still holds where the memo says. Inlined: asked for
    // every recalled line, from the reader's largest method, whose inlining budget is spent before it gets here.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool IsNameHeld(in LineMemo.Entry entry) => entry.Kind >= 0 || ReferenceEquals(_names.StringAt(entry.NameSlot), entry.Name);

    // A line found by its name alone: the name is served as a recalled line's is, and the value goes the long way,
    // which creates it (or, every NameProbeInterval-th time, looks it up; a value served after all makes the line
    // remembered whole). A value not in the plain layout, or with a byte Kestrel rejects, is left to the long way from
    // the start, which tells what it is; so the value checked here is always taken.
    private bool TryRecallName(ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start, in LineMemo.Entry entry)
    {
        ReadOnlySpan<byte> value = content[(entry.NameLength + 2)..];
        if (value.IsEmpty || value[0] is SP or HTAB || value[^1] is SP or HTAB || value.ContainsAnyExcept(HttpBytes.FieldContent)
            || !TakeLine(section, content, start, content[..entry.NameLength], value, entry.Kind, plain: true, entry.NameSlot))
        {
            return false;
        }

        LinesRecalled++;
        return true;
    }

    private void Record(in HeaderLine line, ReadOnlySpan<byte> value)
    {
        _queue.NextLine() = line;
        _queue.Record();
        NoteKnownValue(line, value);
    }

    // After the long way: remembers a line in the plain layout whose strings a later head can be served: a value the
    // cache of values holds or Kestrel reuses, under Kestrel's constant (sent in its casing) or a cached name.
    private void Remember(in HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> content)
    {
        string? value = line.Value ?? (line.Known >= 0 ? _previous[line.Known] : null);
        if (value is null || !IsNamedInMemo(line, name) || (line.Value is not null && _valueSlot == -1))
        {
            return;
        }

        _memo.Remember(MemoEntry(line, value, (short)_valueSlot), content);
    }

    // After the long way: remembers by its name alone a line whose value was created because the name's values are
    // created without a lookup (LookUpValue), under Kestrel's constant (sent in its casing) or a cached name.
    private void RememberName(in HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> content)
    {
        if (IsNamedInMemo(line, name))
        {
            _memo.RememberName(MemoEntry(line, string.Empty, LineMemo.CreatedValue), content);
        }
    }

    // The memo's entry for a line the long way took: its strings, where the caches hold them, and what a recalled line
    // would otherwise work out again from its name.
    private LineMemo.Entry MemoEntry(in HeaderLine line, string value, short valueSlot) => new()
    {
        Name = line.Name!, Value = value, Kind = (sbyte)line.Known, NameSlot = (byte)Math.Max((int)line.NameSlot, 0), ValueSlot = valueSlot,
        Key = line.Key, History = _admission.History(line),
    };

    // Whether the memo can give a line its name string: Kestrel's constant, sent in its casing, or a name the cache of
    // names holds.
    private static bool IsNamedInMemo(in HeaderLine line, ReadOnlySpan<byte> name) =>
        line.Known >= 0 ? Ascii.Equals(name, line.Name!) : line.NameSlot >= 0;

    private bool Take(ref HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> value)
    {
        line.Value = ResolveValue(line, name, value, ref line.Created);
        _taken += line.End - line.Start;
        return line.Value is not null;
    }

    private static ReadOnlySpan<byte> ValueOf(ReadOnlySpan<byte> content, int colon)
    {
        ReadOnlySpan<byte> raw = content[(colon + 1)..];
        int first = raw.IndexOfAnyExcept(SP, HTAB);
        return first < 0 ? [] : raw[first..(raw.LastIndexOfAnyExcept(SP, HTAB) + 1)];
    }

    // As a line is recorded: which known values Kestrel will hand back for the next request, and how much of this head
    // it hands back the previous request's for.
    // Inlined (code compiled ahead, and tier 1 in the sample server under wrk, called it for every recorded line): most
    // are of other names.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void NoteKnownValue(in HeaderLine line, ReadOnlySpan<byte> value)
    {
        if (line.Known >= 0 && _leaveReusedValues)
        {
            _previous.Note(line, value);
        }
    }

    // A value the cache does not hold (empty, too long, or of an excluded name) is created as Kestrel would.
    private string? ResolveValue(in HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, ref bool created)
    {
        if (value.IsEmpty)
        {
            return string.Empty;
        }

        if (value.Length > _cache.MaxLength || IsExcluded(name))
        {
            created = true;
            return HeaderStringCache.DecodeIfValid(value);
        }

        return LookUpValue(ref _admission.Misses(line), value, line.Shared ? _sharedValues : null, ref created);
    }

    // Names are validated tokens, so the cache refuses only names longer than its limit.
    private string ResolveName(ReadOnlySpan<byte> name, bool shared, ref bool created, out short slot)
    {
        long hits = _names.Counters.Hits;
        long misses = _names.Counters.Misses;
        string resolved = _names.TryGetOrAdd(name, out string? cached, out int found, shared ? _sharedNames : null, _connectionId, WellKnownStrings.Names)
            ? cached
            : HeaderStringCache.Decode(name);
        slot = (short)found;
        bool miss = _names.Counters.Hits == hits;

        // A name too long for the cache, or one it missed that the shared tier did not serve, is a new string.
        created |= slot < 0 || _names.Counters.Misses != misses;
        if (miss && slot >= 0)
        {
            // The slot held another name, or none: the history starts again.
            _admission.Restart(slot);
        }

        return resolved;
    }

    // Whether an earlier line of this section has the same name (case-insensitively): then the value is appended
    // to that name's values, as Kestrel appends it, and an earlier line left to Kestrel is taken too, so that
    // all the name's values go back in order. The filter makes a section without repeats linear. Inlined: asked for
    // every taken line, and the search it rarely needs stays a call.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool IsRepeat(in HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> section) =>
        _sectionNames.Add(line.Known, line.Key) && FindRepeat(line, name, section);

    private bool FindRepeat(in HeaderLine line, ReadOnlySpan<byte> name, ReadOnlySpan<byte> section)
    {
        // An earlier line's name string is Kestrel's constant or has exactly that line's bytes.
        foreach (ref HeaderLine earlier in _queue.Recorded)
        {
            if (earlier.Key == line.Key && earlier.Name is not null && Ascii.EqualsIgnoreCase(name, earlier.Name))
            {
                if (earlier.Value is null)
                {
                    // Left because Kestrel would hand back its previous string: taking it saves nothing.
                    earlier.ReusedByKestrel = true;
                    _previous.Take(earlier);
                    ReadOnlySpan<byte> content = section[earlier.Start..(earlier.End - 2)];
                    Take(ref earlier, name, ValueOf(content, content.IndexOf((byte)':')));
                }

                return true;
            }
        }

        return false;
    }

    // A value of a name whose values keep missing is mostly created without a look-up (ValueAdmission). A value of a
    // header on the allow-list that the connection's cache misses is asked of the shared tier first (shared is null
    // otherwise, or when the tier is off); a string it holds is served as a hit.
    private string? LookUpValue(ref byte nameMisses, ReadOnlySpan<byte> value, SharedStringTable? shared, ref bool created)
    {
        if (ValueAdmission.Bypasses(ref nameMisses))
        {
            created = true;
            return HeaderStringCache.DecodeIfValid(value);
        }

        if (WellKnownStrings.Values.TryGet(value, out string? wellKnown))
        {
            _valueSlot = LineMemo.WellKnownValue;
            _admission.Count(ref nameMisses, hit: true);
            return wellKnown;
        }

        // A lookup that made no string was served, by this connection's cache or the shared tier.
        long misses = _cache.Counters.Misses;
        if (!_cache.TryGetOrAdd(value, out string? result, out _valueSlot, shared, _connectionId))
        {
            return null;
        }

        bool hit = _cache.Counters.Misses == misses;
        created |= !hit;
        _admission.Count(ref nameMisses, hit);
        return result;
    }

    // Whether the line's strings may come from, and be offered to, the shared tier: on the allow-list and not excluded
    // (an excluded name's values never reach a cache; its name stays out of the shared tier too).
    private bool IsShareable(int known, ReadOnlySpan<byte> name) =>
        known >= 0 ? (ShareableHeaders.KnownMask & (1UL << known)) != 0 : ShareableHeaders.IsShareableOther(name) && !IsExcluded(name);

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
}
