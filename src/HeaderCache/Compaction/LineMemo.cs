using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;
using HeaderCache.Caching;

namespace HeaderCache.Compaction;

/// <summary>
/// The header lines a connection sent before, whole: a line that comes again byte for byte is known at once to be
/// valid, of which kind, and with which strings, without being parsed, classified and looked up name and value
/// apart.
/// </summary>
/// <remarks>
/// <para>Browsers and proxies send most lines of a head exactly as in an earlier head, so this is the common case.
/// A lookup is a fingerprint of the line (length and 24 bytes, as the caches use), a scan of 32 fingerprints (64 once
/// grown) and one compare of bytes against the line as it was remembered; being equal to bytes that were checked when
/// they were remembered is also the check of the bytes. Only lines in the layout nearly every client uses are remembered,
/// <c>name: value</c> with one space and a non-empty value, so that the compare decides the whole line.</para>
/// <para>The remembered lines' bytes sit together in one array, mostly in the order they came: the compares read it
/// from start to end as the head does, and never the strings, which lie each elsewhere in the heap (under load, with
/// other connections and the kernel between two requests of a connection, reading those cost more than comparing).
/// The array grows to what the lines need, up to <see cref="MaxBytes"/>, and is compacted in place when full.</para>
/// <para>This is an accelerator over the caches, not a cache of its own: an entry says where the caches held the
/// line's strings, and the compactor serves the line from it only while they still do, touching them as the
/// lookups it saves would have; otherwise the line goes the long way and is remembered again. Entries are replaced
/// oldest first, but for those found since the replacement hand last passed them (a second chance, as CLOCK gives).
/// Storage is allocated at the first line remembered.</para>
/// <para>A client sends its lines in the same order from head to head, so each entry also names the last four entries
/// that came after it, the latest first: when the bytes that follow a line are one of those entries' line and CRLF, the
/// line is found with a compare or a few, without searching for its end, fingerprinting it or scanning the
/// fingerprints. Four, because the line after a given one changes in turn: a browser's <c>Accept</c>,
/// <c>Sec-Fetch-Dest</c> and <c>Priority</c> go with the kind of resource (page, script, image, style sheet), and a
/// proxy's pooled connection interleaves users whose browsers order their lines differently. A wrong guess costs
/// little: it mostly differs in length, so the CR it expects is not there.</para>
/// <para>A line whose name's values never come back (a request id, a trace id) is remembered by its name alone,
/// <c>name: </c>: found where it is expected, its name is known at once and only its value is searched and created,
/// and the lines after it are still found in order. A line whose value changed since (a proxy's client address, more of
/// them than the cache of values holds) is known by the name of a line expected where it came: it skips the long way's
/// search of its name, and its value goes the long way.</para>
/// </remarks>
internal sealed class LineMemo
{
    /// <summary>Lines remembered per connection at first: a browser connection sends about 30 distinct lines.</summary>
    public const int Size = 32;

    /// <summary>Lines remembered per connection once lines push each other out: a reverse proxy's pooled connection,
    /// carrying many users, sends more than twice as many distinct lines as a browser's (at 32 lines the proxy-pool
    /// profile's lines pushed each other out and cost 10-15 % more CPU per request in memory), and a browser whose
    /// requests vary (resource types, a few cookies) can send a few more than 32.</summary>
    public const int GrownSize = 64;

    // The memo grows when more than MaxReplacedPerCheck lines were replaced over HeadsPerCheck heads. A line is
    // remembered only when its strings could be served (the caches, the well-known strings, Kestrel's previous
    // request), not when they were just created, so a replaced line is mostly one that came back after being pushed
    // out. Chrome's profile (26 lines, and one of 8 cookies per request) replaced a line in 45 % of its heads at 32
    // lines, 7 in 16 heads, under the one a head this used to wait for, and each such line went the long way and was
    // copied into the memo again.
    private const int HeadsPerCheck = 16;
    private const int MaxReplacedPerCheck = 4;

    /// <summary>Most bytes of remembered lines: a browser's lines take about 1.5 KB, a proxy's about 4 KB.</summary>
    public const int MaxBytes = 8192;

    /// <summary>Longest line remembered: a value the cache of values holds is at most 256 bytes by default.</summary>
    public const int MaxLineLength = 512;

    private const int MinBytes = 256;

    /// <summary>The <see cref="Entry.ValueSlot"/> of a value from <see cref="WellKnownStrings.Values"/>, which is in no slot.</summary>
    public const short WellKnownValue = -2;

    /// <summary>The <see cref="Entry.ValueSlot"/> of an entry that remembers a line by its name alone, <c>name: </c>,
    /// for a name whose values are created each time (see <see cref="RememberName"/>).</summary>
    public const short CreatedValue = -3;

    // A byte of Entry.Next that names no entry: entries number at most GrownSize.
    private const uint NoEntry = 0xFF;

    private readonly uint _seed = (uint)Random.Shared.Next();
    private uint[] _fingerprints = [];
    private Entry[] _entries = [];
    private byte[] _bytes = [];
    private int _used;
    private int _next;
    private int _heads;
    private int _replaced;
    private uint _fingerprint;
    private int _found = -1;

    // One bit per entry found since the replacement hand last passed it (entries number at most 64): kept apart from
    // the entries so that an entry fits in 32 bytes.
    private ulong _foundSinceHand;

    // The entry of the last line of the current head found or remembered (-1 before the first), and the entry that
    // was first in the last head.
    private int _previous = -1;
    private int _first;

    /// <summary>One remembered line.</summary>
    public struct Entry
    {
        /// <summary>The name exactly as sent: Kestrel's constant, or the string in the cache of names; empty for a
        /// <see cref="HeaderNameTable.Kept"/> line. Null marks an entry that holds no line.</summary>
        public string Name;

        /// <summary>The value exactly as sent; empty for a <see cref="HeaderNameTable.Kept"/> line and a line remembered
        /// by its name alone.</summary>
        public string Value;

        /// <summary>A known name's position in <see cref="HeaderNameTable.KnownNames"/>, or
        /// <see cref="HeaderNameTable.Other"/>, or <see cref="HeaderNameTable.Kept"/>.</summary>
        public sbyte Kind;

        /// <summary>For <see cref="HeaderNameTable.Other"/>: the slot of the cache of names that held <see cref="Name"/>.</summary>
        public byte NameSlot;

        /// <summary>The slot of the cache of values that held <see cref="Value"/>, or <see cref="WellKnownValue"/>, or
        /// <see cref="CreatedValue"/>, or -1 (a value Kestrel reused, a kept line).</summary>
        public short ValueSlot;

        /// <summary>The entries whose lines came next the last four times this one came and another came next than the
        /// time before, one a byte, the latest in the lowest; <see cref="NoEntry"/> where there was none.</summary>
        public uint Next;

        /// <summary>Length of <see cref="Name"/>, set when remembered: read without reading the string. A byte: the names
        /// remembered are Kestrel's constants and names the cache of names holds (at most
        /// <see cref="HeaderStringCache.NameMaxLength"/> bytes).</summary>
        public byte NameLength;

        /// <summary>The name's <see cref="HeaderLine.Key"/>: a recalled line has it without reading its name.</summary>
        public ushort Key;

        /// <summary>Where the compactor keeps the name's history of values (its per-name admission): a recalled line
        /// finds it without working it out from its kind and slot.</summary>
        public byte History;

        // Where the line's bytes are in _bytes, and how many (name, ": ", value).
        internal ushort Offset;
        internal ushort Length;
    }

    /// <summary>The entry <see cref="Find"/> returned.</summary>
    public ref readonly Entry this[int index] => ref _entries[index];

    /// <summary>The entry <see cref="Find"/> or <see cref="FindNext"/> found last, or -1.</summary>
    public int Found => _found;

    /// <summary>Starts a new head: its first line is expected to be the last head's first.</summary>
    public void Begin()
    {
        _previous = -1;
        if (++_heads == HeadsPerCheck)
        {
            if (_replaced > MaxReplacedPerCheck && _entries.Length == Size)
            {
                Grow();
            }

            _heads = _replaced = 0;
        }
    }

    /// <summary>Lets go of every remembered line and their bytes: the connection reads no more heads. Another head
    /// would start from an empty memo of <see cref="Size"/> lines.</summary>
    public void Release()
    {
        (_fingerprints, _entries, _bytes) = ([], [], []);
        (_used, _next, _heads, _replaced, _first) = (0, 0, 0, 0, 0);
        (_found, _previous, _foundSinceHand) = (-1, -1, 0);
    }

    /// <summary>
    /// The length of the line <paramref name="rest"/> starts with when it is one of the four lines that came after the
    /// last one found (the first of the last head, at the start of a head) and is followed by CRLF, else -1. Being
    /// equal to a remembered line, it has no CR or LF of its own, so it ends there; a line remembered by its name ends
    /// at the first CR or LF after it, which must be CRLF.
    /// </summary>
    public int FindNext(ReadOnlySpan<byte> rest)
    {
        _found = -1;
        if (_entries.Length == 0 || rest.IsEmpty || rest[0] == (byte)'\r')
        {
            // The empty line (or a line Kestrel rejects): no remembered line starts with CR.
            return -1;
        }

        for (uint next = Expected(); (next & NoEntry) != NoEntry; next = (next >> 8) | (NoEntry << 24))
        {
            int index = (int)(next & NoEntry);
            ref Entry entry = ref _entries[index];
            int length = entry.Length;
            if (entry.ValueSlot == CreatedValue)
            {
                length = length < rest.Length && Matches(rest[..length], entry) ? EndOfValue(rest, length) : -1;
            }
            else if (length + 1 >= rest.Length || rest[length] != (byte)'\r' || rest[length + 1] != (byte)'\n' || !Matches(rest[..length], entry))
            {
                length = -1;
            }

            if (length >= 0)
            {
                Hit(index);
                return length;
            }
        }

        return -1;
    }

    /// <summary>
    /// The entry of one of the lines <see cref="FindNext"/> expected whose name and <c>": "</c> start
    /// <paramref name="line"/> (without CRLF), or -1: the same header with another value, as a proxy's client address
    /// or a browser's <c>Referer</c> comes. The entry is not the line's, so it is not <see cref="Found"/>.
    /// </summary>
    public int FindName(ReadOnlySpan<byte> line)
    {
        if (_entries.Length == 0)
        {
            return -1;
        }

        for (uint next = Expected(); (next & NoEntry) != NoEntry; next = (next >> 8) | (NoEntry << 24))
        {
            int index = (int)(next & NoEntry);
            ref Entry entry = ref _entries[index];
            int nameEnd = entry.NameLength + 2;

            // A line remembered by its name alone was already compared this far by FindNext.
            if (entry.Kind != HeaderNameTable.Kept && entry.ValueSlot != CreatedValue && nameEnd < line.Length && entry.Name is not null
                && line[..nameEnd].SequenceEqual(_bytes.AsSpan(entry.Offset, nameEnd)))
            {
                return index;
            }
        }

        return -1;
    }

    /// <summary>The entry whose line has exactly the bytes of <paramref name="line"/> (without CRLF), or -1.</summary>
    public int Find(ReadOnlySpan<byte> line)
    {
        _fingerprint = HeaderStringCache.Fingerprint(line, _seed);
        _found = -1;
        for (ulong candidates = Candidates(_fingerprint); candidates != 0; candidates &= candidates - 1)
        {
            int index = BitOperations.TrailingZeroCount(candidates);
            // A name alone is not a line: bytes equal to it (an empty value) are another line.
            if (Matches(line, _entries[index]) && _entries[index].ValueSlot != CreatedValue)
            {
                Hit(index);
                break;
            }
        }

        return _found;
    }

    /// <summary>
    /// Remembers <paramref name="line"/> (without CRLF), the line last given to <see cref="Find"/> or found by
    /// <see cref="FindNext"/>, with <paramref name="entry"/>'s strings: in place of the entry found for it (whose strings
    /// the caches no longer held), else in place of the oldest. A line longer than <see cref="MaxLineLength"/>, or one
    /// there is no room for, is not remembered.
    /// </summary>
    public void Remember(in Entry entry, ReadOnlySpan<byte> line)
    {
        if (line.Length > MaxLineLength)
        {
            return;
        }

        Debug.Assert(entry.Name.Length <= byte.MaxValue, "A name is Kestrel's constant or one the cache of names holds.");

        if (_entries.Length == 0)
        {
            _fingerprints = new uint[Size];
            _entries = new Entry[Size];
        }

        int index = _found;
        if (index >= 0 && _entries[index].Length == line.Length)
        {
            // The same line again, already followed: its bytes stay, and it keeps the entries that came after it.
            ref Entry same = ref _entries[index];
            (ushort offset, ushort length, uint kept) = (same.Offset, same.Length, same.Next);
            same = entry;
            (same.Offset, same.Length, same.Next, same.NameLength) = (offset, length, kept, (byte)entry.Name.Length);
            // Remembered anew, it waits for the hand again, as a line remembered in a new entry does.
            _foundSinceHand &= ~(1UL << index);
            return;
        }

        bool followed = index >= 0;
        if (followed)
        {
            // Found by its name alone, the line is now remembered whole, or the other way round: the entry takes the
            // new bytes, whose fingerprint Find did not take, and keeps its place in the order of lines.
            _fingerprint = HeaderStringCache.Fingerprint(line, _seed);
        }
        else
        {
            // Second chance: a line found since the hand last passed stays (Host and Connection come in every head).
            while ((_foundSinceHand & (1UL << _next)) != 0)
            {
                _foundSinceHand &= ~(1UL << _next);
                _next = (_next + 1) % _entries.Length;
            }

            index = _next;
            _next = (_next + 1) % _entries.Length;
            _replaced += _entries[index].Name is null ? 0 : 1;
        }

        ref Entry added = ref _entries[index];
        uint followers = added.Next;
        added.Name = null!;
        if (!TryReserve(line.Length, out int at))
        {
            return;
        }

        line.CopyTo(_bytes.AsSpan(at));
        _fingerprints[index] = _fingerprint;
        added = entry;
        (added.Offset, added.Length, added.NameLength) = ((ushort)at, (ushort)line.Length, (byte)entry.Name.Length);
        if (followed)
        {
            added.Next = followers;
        }
        else
        {
            added.Next = uint.MaxValue;
            Follow(index);
        }
    }

    /// <summary>
    /// Remembers the line last given to <see cref="Find"/> or found by <see cref="FindNext"/> by its name alone: the
    /// first <see cref="Entry.NameLength"/> + 2 bytes of <paramref name="line"/> (<c>name: </c>), with
    /// <paramref name="entry"/>'s name and <see cref="CreatedValue"/>.
    /// </summary>
    public void RememberName(in Entry entry, ReadOnlySpan<byte> line)
    {
        // Its fingerprint is of the bytes it keeps, as every entry's is: Find tells it from a line by its kind alone.
        ReadOnlySpan<byte> name = line[..(entry.Name.Length + 2)];
        _fingerprint = HeaderStringCache.Fingerprint(name, _seed);
        Remember(entry, name);
    }

    /// <summary>Whether a line whose name and trimmed value have these lengths is in the layout this remembers:
    /// <c>name: value</c>, nothing around the value.</summary>
    public static bool IsPlainLayout(ReadOnlySpan<byte> content, int nameLength, int valueLength) =>
        valueLength > 0 && content.Length == nameLength + 2 + valueLength && content[nameLength + 1] == (byte)' ';

    // The length of the line whose name and ": " are the first nameEnd bytes of rest, when it ends with CRLF within
    // rest, else -1 (the search for the line's end decides what else it is).
    private static int EndOfValue(ReadOnlySpan<byte> rest, int nameEnd)
    {
        int end = rest[nameEnd..].IndexOfAny((byte)'\r', (byte)'\n');
        if (end < 0)
        {
            return -1;
        }

        end += nameEnd;
        return end + 1 < rest.Length && rest[end] == (byte)'\r' && rest[end + 1] == (byte)'\n' ? end : -1;
    }

    // The entries of the lines that came after the last one found, one a byte, the latest in the lowest. At the start of a
    // head the one line expected is the last head's first: its index with three bytes of NoEntry. This, Hit and Follow
    // are inlined: code compiled ahead otherwise calls them for every line.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private uint Expected() => _previous < 0 ? ~NoEntry | (uint)_first : _entries[_previous].Next;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Hit(int index)
    {
        _foundSinceHand |= 1UL << index;
        _found = index;
        Follow(index);
    }

    // The entry comes after the previous line's: the next head is expected to send them in this order, or in one of the
    // three orders before. Mostly it already came first after it, so that check is kept small enough to be inlined.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Follow(int index)
    {
        if (_previous < 0)
        {
            _first = index;
        }
        else if ((_entries[_previous].Next & NoEntry) != (uint)index)
        {
            MoveToFront(ref _entries[_previous].Next, index);
        }

        _previous = index;
    }

    // The entry moves to the front of the followers, from where it was or in place of the oldest.
    private static void MoveToFront(ref uint next, int index)
    {
        ulong rest = next;
        for (int shift = 8; shift < 32; shift += 8)
        {
            if (((rest >> shift) & NoEntry) == (uint)index)
            {
                rest = (rest & ((1UL << shift) - 1)) | ((rest >> (shift + 8)) << shift);
                break;
            }
        }

        next = (uint)(rest << 8) | (uint)index;
    }

    // One bit per entry whose fingerprint is this one: four vector compares in place of a search call per line.
    private ulong Candidates(uint fingerprint)
    {
        if (_fingerprints.Length == 0)
        {
            return 0;
        }

        if (Vector256.IsHardwareAccelerated)
        {
            ref uint first = ref MemoryMarshal.GetArrayDataReference(_fingerprints);
            Vector256<uint> target = Vector256.Create(fingerprint);
            ulong candidates = 0;
            for (int i = 0; i < _fingerprints.Length; i += 8)
            {
                candidates |= (ulong)Vector256.Equals(Vector256.LoadUnsafe(ref first, (nuint)i), target).ExtractMostSignificantBits() << i;
            }

            return candidates;
        }

        ulong scalar = 0;
        for (int i = 0; i < _fingerprints.Length; i++)
        {
            scalar |= _fingerprints[i] == fingerprint ? 1UL << i : 0;
        }

        return scalar;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool Matches(ReadOnlySpan<byte> line, in Entry entry) =>
        entry.Name is not null && line.Length == entry.Length && EqualBytes(line, _bytes.AsSpan(entry.Offset, entry.Length));

    // Compared here for the lengths lines have (16 to a few hundred bytes): SequenceEqual, which tier 1 does not inline,
    // costs about as much in its call and its dispatch on the length as the compare of a 40-byte line, once a line.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool EqualBytes(ReadOnlySpan<byte> line, ReadOnlySpan<byte> remembered)
    {
        Debug.Assert(line.Length == remembered.Length, "The lengths were compared.");
        if (!Vector128.IsHardwareAccelerated || line.Length < Vector128<byte>.Count)
        {
            return line.SequenceEqual(remembered);
        }

        ref byte sent = ref MemoryMarshal.GetReference(line);
        ref byte kept = ref MemoryMarshal.GetReference(remembered);
        nuint last = (nuint)(line.Length - Vector128<byte>.Count);
        for (nuint i = 0; i < last; i += (nuint)Vector128<byte>.Count)
        {
            if (Vector128.LoadUnsafe(ref sent, i) != Vector128.LoadUnsafe(ref kept, i))
            {
                return false;
            }
        }

        // The last 16 bytes, overlapping the loop's last load.
        return Vector128.LoadUnsafe(ref sent, last) == Vector128.LoadUnsafe(ref kept, last);
    }

    // The new entries are replaced first, as they are empty.
    private void Grow()
    {
        Array.Resize(ref _fingerprints, GrownSize);
        Array.Resize(ref _entries, GrownSize);
        _next = Size;
    }

    // Room for a line of this length at the end of _bytes: when there is none, the lines still remembered move to the
    // start, in the array as it is or in a larger one, which leaves room for half as much again as they take.
    private bool TryReserve(int length, out int at)
    {
        at = _used;
        if (_used + length <= _bytes.Length)
        {
            _used += length;
            return true;
        }

        int live = 0;
        foreach (ref readonly Entry entry in _entries.AsSpan())
        {
            live += entry.Name is null ? 0 : entry.Length;
        }

        if (live + length > MaxBytes)
        {
            return false;
        }

        // In steps of MinBytes rather than doubling: an idle connection keeps the array.
        int capacity = Math.Min(MaxBytes, (live + length + (live / 2) + MinBytes - 1) / MinBytes * MinBytes);
        Compact(capacity <= _bytes.Length ? _bytes : new byte[capacity]);
        at = _used;
        _used += length;
        return true;
    }

    // Moves the remembered lines to the start of target in the order they lie, so that in the same array no line is
    // overwritten before it has moved.
    private void Compact(byte[] target)
    {
        Span<byte> order = stackalloc byte[GrownSize];
        int count = 0;
        for (int i = 0; i < _entries.Length; i++)
        {
            if (_entries[i].Name is null)
            {
                continue;
            }

            int j = count++;
            for (; j > 0 && _entries[order[j - 1]].Offset > _entries[i].Offset; j--)
            {
                order[j] = order[j - 1];
            }

            order[j] = (byte)i;
        }

        int used = 0;
        foreach (byte i in order[..count])
        {
            ref Entry entry = ref _entries[i];
            _bytes.AsSpan(entry.Offset, entry.Length).CopyTo(target.AsSpan(used));
            entry.Offset = (ushort)used;
            used += entry.Length;
        }

        _bytes = target;
        _used = used;
    }
}
