using System.Buffers;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Requests;
using HeaderCache.Transport;

namespace HeaderCache.Http2;

/// <summary>Decides which fields of a decoded header block that opens a stream are taken out, gives them their
/// strings, and writes the frame Kestrel sees instead.</summary>
/// <remarks><para>Only representations that leave the table unchanged are removed: indexed fields, literals without
/// indexing and never-indexed literals (which Kestrel decodes as it decodes literals without indexing, and whose flag
/// it passes to nothing above it). Everything else (size updates, literals with incremental indexing, pseudo-headers,
/// the names Kestrel acts on) stays in the frame, so Kestrel's table stays the client's and every HPACK decision is
/// Kestrel's.</para>
/// <para>A block is rewritten only when Kestrel would accept it as it is: all of its fields, kept or taken, pass the
/// checks Kestrel makes per field and per block, within its limits. Anything else passes unchanged and Kestrel answers
/// as it would alone.</para>
/// <para>What the application sees stays Kestrel's: a name's fields are all taken or all stay (the crumbs of a cookie
/// too, joined with "; " as Kestrel joins them); the names Kestrel keeps in fields of its own enumerate in a fixed order
/// whatever is taken, but the other names enumerate in arrival order, so they are taken all or none. A field of another
/// name that adds to the table stays in the block and still travels with the taken ones, in its place
/// (<see cref="TakenHeader.LeftInBlock"/>), when its name is sent once in the block and has a string that costs nothing:
/// the request moves Kestrel's field into its view, so the other names still enumerate in arrival order. Else all of
/// them stay.</para>
/// <para>A field taken never costs a string Kestrel alone would not make: a literal of a known name whose value would get
/// a new string every time stays, with its name's other fields, for Kestrel to hand back its previous string when the
/// bytes repeat; cookie crumbs are taken, as Kestrel joins them into a new string every time.</para>
/// <para>A field that stays and adds to the table or refers to it gets the strings the caches already hold for it, which
/// replace Kestrel's in the request's collection, so that the application gets one instance of a value whichever way
/// its field went; where the caches hold none it keeps Kestrel's, as a field that stays never costs a second
/// string.</para></remarks>
internal sealed class HeaderBlockRewriter(HpackBlockDecoder decoder, FieldResolver resolver, Http2StreamHandoff handoff, KestrelLimits limits)
{
    private static readonly int CookieKind = FieldNames.Classify("cookie"u8);

    // The connection's hand-off; none while the rewriter is lent to no connection (ReadingState), when nothing reads.
    private Http2StreamHandoff? _handoff = handoff;
    private short[] _kinds = [];   // per field: FieldNames.Classify, or a pseudo-header's Kept
    private byte[] _joined = [];
    private int _blocksWithNothingTaken;   // blocks opening streams in a row that had no field taken or given strings

    private Http2StreamHandoff Handoff => _handoff!;

    public long FieldsServed { get; private set; }
    public long FieldsCreated { get; private set; }

    /// <summary>Why the reader should leave the connection to Kestrel at the next frame, or
    /// <see cref="Http2StopCause.None"/>: its values have stopped repeating (<see cref="FieldResolver.ValuesDoNotRepeat"/>),
    /// so taking its fields costs more than it saves, or <see cref="ValueAdmission.RequestsWithNothingToTake"/> blocks in
    /// a row had nothing to take, as HTTP/1.1 heads do (only the names Kestrel acts on).</summary>
    public Http2StopCause StepAside =>
        resolver.ValuesDoNotRepeat ? Http2StopCause.ValuesDoNotRepeat
        : _blocksWithNothingTaken >= ValueAdmission.RequestsWithNothingToTake ? Http2StopCause.NothingToCache
        : Http2StopCause.None;

    /// <summary>Counts a block that opens a stream and passes as it is, never rewritten, towards
    /// <see cref="Http2StopCause.NothingToCache"/>.</summary>
    public void CountNothingTaken() => _blocksWithNothingTaken++;

    /// <summary>Makes the rewriter another connection's, whose streams' fields go to <paramref name="handoff"/> (none: lent to no connection): its
    /// buffers and counts start empty, and the last connection's hand-off is not touched. The decoder and the resolver are
    /// reset by their owner.</summary>
    public void Reset(Http2StreamHandoff? handoff)
    {
        ConnectionArrays.Release(ref _kinds);
        ConnectionArrays.Release(ref _joined);
        (FieldsServed, FieldsCreated, _blocksWithNothingTaken, _handoff) = (0, 0, 0, handoff);
    }

    /// <summary>The connection idles: lets go of the buffers a block passes through, and of the arrays no stream holds.</summary>
    public void Trim()
    {
        ConnectionArrays.Release(ref _kinds);
        ConnectionArrays.Release(ref _joined);
        Handoff.Trim();
    }

    /// <summary>The connection rewrites no more blocks: lets go of the buffers, the arrays no stream holds and the
    /// caches' strings. The fields already handed to streams stay for their requests; the counters stay.</summary>
    public void Release()
    {
        Trim();
        resolver.Release();
    }

    /// <summary>Rewrites the decoded block of <paramref name="frame"/> (a complete HEADERS frame of stream
    /// <paramref name="streamId"/>, whose fragment starts at <paramref name="fragmentStart"/>) into
    /// <paramref name="output"/>: its length, or 0 when the frame passes unchanged.</summary>
    public int TryRewrite(ReadOnlySpan<byte> frame, int fragmentStart, int streamId, ref byte[] output)
    {
        ReadOnlySpan<byte> block = frame[fragmentStart..];
        ReadOnlySpan<HpackField> fields = decoder.Fields;
        if (fields.Length == 0 || !Handoff.HasRoom || !IsAccepted(block, fields))
        {
            _blocksWithNothingTaken++;
            return 0;
        }

        // Which names stay: a kept name; every field of a name of which one field changes the table; every field of a
        // known name of which one literal would get a new string however often it repeats (too long for the cache, or
        // excluded), as Kestrel's stream object hands back its previous string when the bytes repeat, but for a cookie
        // in crumbs, which Kestrel joins into a new string every time; then all other names if one of them stays. A
        // reference to a table entry gets the entry's strings, made once per entry.
        ulong knownStays = 0;
        ulong createdEveryTime = 0;
        ulong knownSeen = 0;
        ulong knownRepeated = 0;
        int cookies = 0;
        bool othersStay = false;
        bool othersTaken = false;
        int taken = 0;
        for (int i = 0; i < fields.Length; i++)
        {
            short kind = _kinds[i];
            if (kind == FieldNames.Kept)
            {
                continue;
            }

            if (kind >= 0)
            {
                knownRepeated |= knownSeen & (1UL << kind);
                knownSeen |= 1UL << kind;
            }

            // Whether the client's values repeat is in the encoding: a reference to a table entry (or a static one)
            // repeats a value, a literal the client adds to its table is one its encoder had not got.
            ref readonly HpackField field = ref fields[i];
            if (field.Representation is HpackRepresentation.Indexed or HpackRepresentation.IncrementalIndexing)
            {
                resolver.CountEncoded(repeats: field.Representation == HpackRepresentation.Indexed);
            }

            if (field.Representation == HpackRepresentation.IncrementalIndexing)
            {
                if (kind >= 0)
                {
                    knownStays |= 1UL << kind;
                }
                else
                {
                    othersStay = othersStay || !CanCarry(block, fields, i);
                }
            }
            else if (kind >= 0 && field.Representation != HpackRepresentation.Indexed && resolver.CreatesEveryValue(kind, field.ValueLength))
            {
                createdEveryTime |= 1UL << kind;
            }

            othersTaken |= kind < 0 && field.Representation != HpackRepresentation.IncrementalIndexing;

            if (kind == CookieKind)
            {
                cookies++;
            }
        }

        if (cookies > 1)
        {
            createdEveryTime &= ~(1UL << CookieKind);
        }

        knownStays |= createdEveryTime;

        // Fields of other names are carried only around taken ones: alone they gain nothing, and stay as they are.
        othersStay |= !othersTaken;

        int given = 0;
        int carried = 0;
        for (int i = 0; i < fields.Length; i++)
        {
            if (IsTaken(_kinds[i], fields[i], knownStays, othersStay))
            {
                taken++;
            }
            else if (IsCarried(_kinds[i], fields[i], othersStay))
            {
                carried++;
            }
            else if (IsGivenStrings(block, fields, i, knownRepeated))
            {
                given++;
            }
        }

        if (taken == 0 && given == 0)
        {
            _blocksWithNothingTaken++;
            return 0;
        }

        _blocksWithNothingTaken = 0;
        while (Handoff.TryTakeOffer(out int serial, out string? offered))
        {
            if (serial == Http2StreamHandoff.JoinedCookie)
            {
                AdoptJoinedCookie(offered);
            }
            else
            {
                decoder.Table.Offer(serial, offered);
            }
        }

        ArraySegment<TakenHeader> lines = Resolve(block, fields, knownStays, othersStay, knownRepeated, taken + carried, given);
        if (lines.Array is null)
        {
            return 0;
        }

        if (!Handoff.TryAdd(streamId, lines))
        {
            Handoff.Return(lines.Array);
            return 0;
        }

        return taken == 0 ? 0 : Write(frame, fragmentStart, fields, knownStays, othersStay, ref output);
    }

    private static bool IsTaken(short kind, ulong knownStays, bool othersStay) =>
        kind >= 0 ? (knownStays & (1UL << kind)) == 0 : (kind is FieldNames.Other or FieldNames.Interned) && !othersStay;

    // A field that adds to the table is never taken out of the block (of a known name, its name stays altogether).
    private static bool IsTaken(short kind, in HpackField field, ulong knownStays, bool othersStay) =>
        field.Representation != HpackRepresentation.IncrementalIndexing && IsTaken(kind, knownStays, othersStay);

    // A field of another name that stays in the block and travels among the taken ones (CanCarry).
    private static bool IsCarried(short kind, in HpackField field, bool othersStay) =>
        kind == FieldNames.Other && !othersStay && field.Representation == HpackRepresentation.IncrementalIndexing;

    // Whether field i, of another name and adding to the table, can travel among the taken fields while it stays in
    // the block: the table kept its entry, its name is sent once in the block (the request then finds Kestrel's field
    // by name alone) and a string for the name is held already, so carrying it costs no string.
    private bool CanCarry(ReadOnlySpan<byte> block, ReadOnlySpan<HpackField> fields, int i) =>
        _kinds[i] == FieldNames.Other && fields[i].Added is { } entry && IsOtherNameSentOnce(block, fields, i)
        && (entry.NameString ?? resolver.ResolveKeptName(entry.Name)) is not null;

    private bool IsOtherNameSentOnce(ReadOnlySpan<byte> block, ReadOnlySpan<HpackField> fields, int i)
    {
        ReadOnlySpan<byte> name = decoder.Name(block, fields[i]);
        for (int j = 0; j < fields.Length; j++)
        {
            if (j != i && _kinds[j] is FieldNames.Other or FieldNames.Interned && decoder.Name(block, fields[j]).SequenceEqual(name))
            {
                return false;
            }
        }

        return true;
    }

    // Whether field i, which stays for Kestrel, gets the strings a taken field would get, for the application to read
    // in place of those Kestrel makes, so that a value is one instance whether its field was taken or stayed: a
    // reference to the table, or a literal that adds to the dynamic table, of a name the block sends once, none of the
    // names Kestrel acts on; or the first crumb of a cookie in crumbs, for the joined value, as taken crumbs get it.
    private bool IsGivenStrings(ReadOnlySpan<byte> block, ReadOnlySpan<HpackField> fields, int i, ulong knownRepeated)
    {
        short kind = _kinds[i];
        ref readonly HpackField field = ref fields[i];
        if (kind == CookieKind && (knownRepeated & (1UL << kind)) != 0)
        {
            return _kinds.AsSpan(0, i).IndexOf(kind) < 0;
        }

        if (kind == FieldNames.Kept
            || field.Representation is HpackRepresentation.WithoutIndexing or HpackRepresentation.NeverIndexed
            || (field.Representation == HpackRepresentation.IncrementalIndexing && field.Added is null))
        {
            return false;
        }

        if (kind >= 0)
        {
            return (knownRepeated & (1UL << kind)) == 0;
        }

        return IsOtherNameSentOnce(block, fields, i);
    }

    // Kestrel's checks on each field and on the block, stricter where that is simpler: a block any of them could
    // reject passes unchanged.
    private bool IsAccepted(ReadOnlySpan<byte> block, ReadOnlySpan<HpackField> fields)
    {
        if (fields.Length > limits.MaxRequestHeaderCount)
        {
            return false;
        }

        if (_kinds.Length < fields.Length)
        {
            ConnectionArrays.Grow(ref _kinds, Math.Max(fields.Length, _kinds.Length * 2));
        }

        long total = 0;
        int pseudo = 0;
        bool regular = false;
        for (int i = 0; i < fields.Length; i++)
        {
            ref readonly HpackField field = ref fields[i];
            total += field.NameLength + field.ValueLength;
            if (field.LongestString > limits.MaxRequestHeaderFieldSize || !IsVisible(block, field))
            {
                return false;
            }

            HpackNameCheck name = NameCheck(block, field);
            if (name.Rejected || (name.IsTe && !decoder.Value(block, field).SequenceEqual("trailers"u8)))
            {
                return false;
            }

            if (name.Pseudo != 0)
            {
                if (regular || (pseudo & name.Pseudo) != 0)
                {
                    return false;
                }

                pseudo |= name.Pseudo;
            }
            else
            {
                regular = true;
            }

            _kinds[i] = name.Kind;
        }

        return total <= limits.MaxRequestHeadersTotalSize;
    }

    // A name the table gives is checked once: a dynamic entry keeps its check, the static ones are checked up front.
    private HpackNameCheck NameCheck(ReadOnlySpan<byte> block, in HpackField field) =>
        field.Entry is { } entry ? entry.NameCheck ??= HpackNameCheck.Of(entry.Name)
        : field.StaticIndex != 0 ? HpackNameCheck.Static(field.StaticIndex)
        : HpackNameCheck.Of(decoder.Name(block, field));

    // VCHAR and SP, neither first nor last. A reference to a dynamic entry is checked once for the entry; the static
    // table's values all pass.
    private bool IsVisible(ReadOnlySpan<byte> block, in HpackField field)
    {
        if (field.Representation == HpackRepresentation.Indexed)
        {
            return field.Entry is not { } entry || (entry.ValueVisible ??= IsVisible(entry.Value));
        }

        return IsVisible(decoder.Value(block, field));
    }

    private static bool IsVisible(ReadOnlySpan<byte> value) =>
        !value.ContainsAnyExcept(HttpBytes.Visible) && (value.Length == 0 || (value[0] != HttpBytes.SP && value[^1] != HttpBytes.SP));

    // The taken fields' strings, in arrival order, with the fields carried (IsCarried) in their places; a cookie's
    // crumbs become one field at the first crumb's place. After
    // them in the array (not in the segment), up to the first empty entry, the strings of the fields that stay and are
    // given strings, where the cache keeps their values; from the array's end, those whose values it does not keep,
    // with their names and their table entries' serials in Start (a cookie in crumbs: JoinedCookie), whose Kestrel
    // strings the request offers back.
    private ArraySegment<TakenHeader> Resolve(
        ReadOnlySpan<byte> block, ReadOnlySpan<HpackField> fields, ulong knownStays, bool othersStay, ulong knownRepeated, int taken, int given)
    {
        short cookie = (short)CookieKind;
        int crumbs = IsTaken(cookie, knownStays, othersStay) ? _kinds.AsSpan(0, fields.Length).Count(cookie) : 0;
        int joinedLength = JoinedLength(fields, cookie);

        int length = crumbs > 1 ? taken - crumbs + 1 : taken;
        TakenHeader[] lines = Handoff.Rent(length + given);
        int count = 0;
        ulong knownSeen = 0;
        for (int i = 0; i < fields.Length; i++)
        {
            short kind = _kinds[i];
            ref readonly HpackField field = ref fields[i];
            if (IsCarried(kind, field, othersStay))
            {
                if (!TryCarry(field, ref lines[count++]))
                {
                    Handoff.Return(lines);
                    return default;
                }

                continue;
            }

            if (!IsTaken(kind, field, knownStays, othersStay) || (kind == cookie && crumbs > 1 && (knownSeen & (1UL << kind)) != 0))
            {
                continue;
            }

            ref TakenHeader line = ref lines[count++];
            line.Known = kind;
            line.NameSlot = -1;
            line.NameLength = (ushort)field.NameLength;
            if (kind >= 0)
            {
                line.Name = FieldNames.KnownName(kind);
                line.Repeat = (knownSeen & (1UL << kind)) != 0;
                knownSeen |= 1UL << kind;
            }

            string? value = kind == cookie && crumbs > 1
                ? JoinCookie(block, fields, ref line, joinedLength, kept: false)
                : ValueOf(block, field, ref line);
            if (value is null)
            {
                Handoff.Return(lines);
                return default;
            }

            line.Value = value;
            if (kind < 0)
            {
                line.Repeat = IsRepeated(lines.AsSpan(0, count - 1), line.Name!);
            }

            if (line.Created)
            {
                FieldsCreated++;
            }
            else
            {
                FieldsServed++;
            }
        }

        int stayed = length;
        int offers = lines.Length;   // the offers fill the array from its end (Http2StreamHandoff.Offer)
        for (int i = 0; i < fields.Length && given != 0; i++)
        {
            if (IsTaken(_kinds[i], fields[i], knownStays, othersStay) || IsCarried(_kinds[i], fields[i], othersStay)
                || !IsGivenStrings(block, fields, i, knownRepeated))
            {
                continue;
            }

            ref TakenHeader line = ref lines[stayed];
            line.Known = _kinds[i];
            line.NameSlot = -1;
            line.NameLength = (ushort)fields[i].NameLength;
            line.Name = line.Known >= 0 ? FieldNames.KnownName(line.Known) : null;
            bool joined = line.Known == cookie && (knownRepeated & (1UL << cookie)) != 0;
            string? value = joined
                ? JoinCookie(block, fields, ref line, joinedLength, kept: true)
                : StayedValueOf(fields[i], ref line);
            if (value is not null)
            {
                line.Value = value;
                stayed++;
                continue;
            }

            // No string in the caches for a field that adds to the table or refers to it: the request asks Kestrel for
            // its string, for the entry's later references; for a cookie's crumbs joined, for the cache of values, unless
            // the cache would make such a value anew anyway (too long, excluded). Written after the line is cleared, as
            // the last offer may take the line's own place.
            HpackEntry? entry = fields[i].Representation == HpackRepresentation.Indexed ? fields[i].Entry : fields[i].Added;
            TakenHeader offer = line;
            line = default;
            if (offer.Name is not null && (joined ? !resolver.CreatesEveryValue(cookie, joinedLength) : entry is not null))
            {
                offer.Start = joined ? Http2StreamHandoff.JoinedCookie : entry!.Serial;
                lines[--offers] = offer;
            }
        }

        if (stayed == 0 && offers == lines.Length)
        {
            Handoff.Return(lines);
            return default;
        }

        return new ArraySegment<TakenHeader>(lines, 0, length);
    }

    // A carried field's line: its name's string, and the strings the caches hold for its table entry, or none, for the
    // request to read Kestrel's and offer it to the entry, whose serial is then in Start (else -1: nothing to offer).
    private bool TryCarry(in HpackField field, ref TakenHeader line)
    {
        (line.Known, line.NameSlot, line.NameLength, line.LeftInBlock) = (FieldNames.Other, -1, (ushort)field.NameLength, true);
        line.Value = StayedValueOf(field, ref line);
        line.Start = line.Value is null && field.Added is { } entry ? entry.Serial : -1;
        return line.Name is not null;
    }

    // The length of a cookie's crumbs joined with "; ".
    private int JoinedLength(ReadOnlySpan<HpackField> fields, int cookie)
    {
        int length = -2;
        for (int i = 0; i < fields.Length; i++)
        {
            length += _kinds[i] == cookie ? 2 + fields[i].ValueLength : 0;
        }

        return Math.Max(length, 0);
    }

    // The strings of a field that stays: a static entry's value, or the table entry's strings where the caches already
    // hold them (kept for the entry's later references); else null, and the application reads Kestrel's. A field that
    // stays never costs a string beside Kestrel's.
    private string? StayedValueOf(in HpackField field, ref TakenHeader line)
    {
        HpackEntry? entry = field.Representation == HpackRepresentation.Indexed ? field.Entry : field.Added;
        if (entry?.ValueString is { } held)
        {
            line.Name = entry.NameString;
            return held;
        }

        line.Name ??= resolver.ResolveKeptName(entry is null ? field.NameArray.AsSpan(field.NameOffset, field.NameLength) : entry.Name);
        if (line.Name is null)
        {
            return null;
        }

        if (entry is null)
        {
            return HpackStaticTable.ValueString(field.StaticIndex);
        }

        entry.ValueString = resolver.ResolveKeptValue(entry.Name, entry.Value, entry.Offered);
        entry.NameString = entry.ValueString is null ? null : line.Name;
        return entry.ValueString;
    }

    private string? ValueOf(ReadOnlySpan<byte> block, in HpackField field, ref TakenHeader line)
    {
        if (field.Representation == HpackRepresentation.Indexed)
        {
            if (field.Entry is { } entry)
            {
                // The entry's strings, made once: later references to it cost no compare.
                if (entry.ValueString is null)
                {
                    line.Name ??= ResolveName(entry.Name, ref line);
                    entry.ValueString = resolver.ResolveValue(ref line, entry.Name, entry.Value, out _, entry.Offered);
                    entry.NameString = line.Name;
                    return entry.ValueString;
                }

                line.Name = entry.NameString;
                return entry.ValueString;
            }

            line.Name ??= ResolveName(field.NameArray.AsSpan(field.NameOffset, field.NameLength), ref line);
            return HpackStaticTable.ValueString(field.StaticIndex);
        }

        ReadOnlySpan<byte> name = decoder.Name(block, field);
        line.Name ??= ResolveName(name, ref line);
        return resolver.ResolveValue(ref line, name, decoder.Value(block, field), out _);
    }

    private string ResolveName(ReadOnlySpan<byte> name, ref TakenHeader line)
    {
        string resolved = resolver.ResolveName(name, ref line.Created, out short slot);
        line.NameSlot = slot;
        return resolved;
    }

    // The string Kestrel joined a cookie's crumbs into for a request where they stayed, for the cache of values to hold
    // (unless it already holds the value), so that the next request whose crumbs are taken gets it rather than a new one.
    private void AdoptJoinedCookie(string offered)
    {
        if (_joined.Length < offered.Length)
        {
            ConnectionArrays.Grow(ref _joined, Math.Max(offered.Length, _joined.Length * 2));
        }

        if (Ascii.FromUtf16(offered, _joined, out int length) == OperationStatus.Done)
        {
            var line = new TakenHeader { Known = (short)CookieKind, NameSlot = -1 };
            resolver.ResolveValue(ref line, "cookie"u8, _joined.AsSpan(0, length), out _, offered);
        }
    }

    // Kestrel joins a cookie's crumbs with "; " in arrival order; the joined value goes through the cache as one value
    // (of a cookie that stays, only where the cache keeps it).
    private string? JoinCookie(ReadOnlySpan<byte> block, ReadOnlySpan<HpackField> fields, ref TakenHeader line, int length, bool kept)
    {
        if (_joined.Length < length)
        {
            ConnectionArrays.Grow(ref _joined, Math.Max(length, _joined.Length * 2));
        }

        int at = 0;
        for (int i = 0; i < fields.Length; i++)
        {
            if (_kinds[i] == line.Known)
            {
                if (at != 0)
                {
                    "; "u8.CopyTo(_joined.AsSpan(at));
                    at += 2;
                }

                decoder.Value(block, fields[i]).CopyTo(_joined.AsSpan(at));
                at += fields[i].ValueLength;
            }
        }

        return kept
            ? resolver.ResolveKeptValue("cookie"u8, _joined.AsSpan(0, at))
            : resolver.ResolveValue(ref line, "cookie"u8, _joined.AsSpan(0, at), out _);
    }

    private static bool IsRepeated(ReadOnlySpan<TakenHeader> earlier, string name)
    {
        foreach (ref readonly TakenHeader line in earlier)
        {
            if (line.Known < 0 && string.Equals(line.Name, name, StringComparison.Ordinal))
            {
                return true;
            }
        }

        return false;
    }

    // The frame without the taken fields: the same header but for the length, the priority fields, and every other
    // byte of the block in order.
    private int Write(ReadOnlySpan<byte> frame, int fragmentStart, ReadOnlySpan<HpackField> fields, ulong knownStays, bool othersStay, ref byte[] output)
    {
        if (output.Length < frame.Length)
        {
            ConnectionArrays.Grow(ref output, Math.Max(frame.Length, 2 * output.Length));
        }

        Span<byte> target = output;
        frame[..fragmentStart].CopyTo(target);
        int written = fragmentStart;
        int copied = 0;   // block bytes up to here are written or skipped
        ReadOnlySpan<byte> block = frame[fragmentStart..];
        for (int i = 0; i < fields.Length; i++)
        {
            if (IsTaken(_kinds[i], fields[i], knownStays, othersStay))
            {
                block[copied..fields[i].Start].CopyTo(target[written..]);
                written += fields[i].Start - copied;
                copied = fields[i].End;
            }
        }

        block[copied..].CopyTo(target[written..]);
        written += block.Length - copied;
        int payload = written - Http2Frame.HeaderLength;
        target[0] = (byte)(payload >> 16);
        target[1] = (byte)(payload >> 8);
        target[2] = (byte)payload;
        return written;
    }
}
