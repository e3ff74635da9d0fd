using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;
using HeaderCache.Caching;
using HeaderCache.Fields;

namespace HeaderCache.Http1;

/// <summary>The header lines a connection sent before, whole: a line that comes again byte for byte is known at once to
/// be valid, of which kind, and with which strings, without being parsed, classified and looked up name and value
/// apart.</summary>
/// <remarks><para>A lookup is a fingerprint of the line, a scan of <see cref="Size"/> fingerprints and one compare
/// against the line's bytes as remembered, which were checked then: being equal to them is the check. Only lines in the
/// layout nearly every client uses, <c>name: value</c> with one space and a non-empty value, are remembered, so that
/// the compare decides the whole line. The bytes sit together in one array, so a compare never reads a string.</para>
/// <para>An accelerator over the caches, not a cache of its own: an entry says where the caches held the line's
/// strings, and a line is served from it only while they still do, touching them as the lookups it saves would have;
/// otherwise it goes the long way and is remembered again. Entries are replaced oldest first, but for those found since
/// the hand last passed them (CLOCK's second chance).</para>
/// <para>A client sends its lines in much the same order from head to head, so each entry also names the entries whose
/// lines came after it (LineMemo.Followers.cs): the line expected next is found where the bytes are, without searching
/// for its end, fingerprinting it or scanning the fingerprints.</para></remarks>
internal sealed partial class LineMemo
{
    // At most 64: the entries found and the candidates of a lookup are bits of one ulong.
    public const int Size = 64;

    public const int MaxBytes = 8192;

    // A value the cache of values holds is at most 256 bytes by default.
    public const int MaxLineLength = 512;

    private const int MinBytes = 256;

    private uint _seed = (uint)Random.Shared.Next();
    private uint[] _fingerprints = [];
    private Entry[] _entries = [];
    private byte[] _bytes = [];
    private int _used;
    private int _hand;
    private uint _fingerprint;
    private int _found = -1;

    // One bit per entry found since the replacement hand last passed it.
    private ulong _foundSinceHand;

    public struct Entry
    {
        // The strings exactly as sent: the name is Kestrel's constant or the string in the cache of names. Both are
        // empty for a Kept line; a null Name marks an entry that holds no line.
        public string Name;
        public string Value;

        public sbyte Kind;         // a known name's index in FieldNames.KnownNames, or FieldNames.Other, or FieldNames.Kept
        public byte NameSlot;      // for FieldNames.Other: the slot of the cache of names that held Name
        public short ValueSlot;    // the cache of values' slot, FieldResolver.WellKnownSlot, or -1 (reused by Kestrel, kept)
        public byte NameLength;    // so that a recalled line never reads the name's string
        public ushort Key;         // the name's TakenHeader.Key
        public byte History;       // where the resolver keeps the name's history of values (ValueAdmission)

        // The entries whose lines came after this one, one a byte, the latest in the lowest (LineMemo.Followers.cs).
        public uint Next;

        // Where the line's bytes are in _bytes, and how many (name, ": ", value).
        internal ushort Offset;
        internal ushort Length;
    }

    public ref readonly Entry this[int index] => ref _entries[index];

    /// <summary>Makes the memo another connection's: nothing of the last one stays, and fingerprints take a new seed.</summary>
    public void Reset()
    {
        Release();
        (_fingerprint, _seed) = (0, (uint)Random.Shared.Next());
    }

    public void Release()
    {
        ConnectionArrays.Release(ref _fingerprints);
        ConnectionArrays.Release(ref _entries);
        ConnectionArrays.Release(ref _bytes);
        (_used, _hand, _found, _foundSinceHand) = (0, 0, -1, 0);
        (_previous, _first) = (-1, 0);
    }

    /// <summary>The entry whose line has exactly the bytes of <paramref name="line"/> (without CRLF), or -1.</summary>
    public int Find(ReadOnlySpan<byte> line)
    {
        _fingerprint = HeaderStringCache.Fingerprint(line, _seed);
        _found = -1;
        for (ulong candidates = Candidates(_fingerprint); candidates != 0; candidates &= candidates - 1)
        {
            int index = BitOperations.TrailingZeroCount(candidates);
            if (Matches(line, _entries[index]))
            {
                Hit(index);
                break;
            }
        }

        return _found;
    }

    /// <summary>Remembers <paramref name="line"/> (without CRLF), the line last given to <see cref="Find"/> or found by
    /// <see cref="FindNext"/>, with <paramref name="entry"/>'s strings: in place of the entry found for it (whose strings
    /// the caches no longer held there), else of the oldest. A line longer than <see cref="MaxLineLength"/>, or with no
    /// room left, is not.</summary>
    public void Remember(in Entry entry, ReadOnlySpan<byte> line)
    {
        if (line.Length > MaxLineLength)
        {
            return;
        }

        Debug.Assert(entry.Name.Length <= byte.MaxValue, "A name is Kestrel's constant or one the cache of names holds.");
        if (_entries.Length == 0)
        {
            _fingerprints = ConnectionArrays.Rent<uint>(Size);
            _entries = ConnectionArrays.Rent<Entry>(Size);
        }

        int index = _found;
        if (index >= 0)
        {
            // The same bytes: they stay where they are, and so do the lines that came after them.
            ref Entry same = ref _entries[index];
            (ushort offset, ushort length, uint next) = (same.Offset, same.Length, same.Next);
            same = entry;
            (same.Offset, same.Length, same.Next, same.NameLength) = (offset, length, next, (byte)entry.Name.Length);
            _foundSinceHand &= ~(1UL << index);
            return;
        }

        while ((_foundSinceHand & (1UL << _hand)) != 0)
        {
            _foundSinceHand &= ~(1UL << _hand);
            _hand = (_hand + 1) % Size;
        }

        index = _hand;
        _hand = (_hand + 1) % Size;
        ref Entry added = ref _entries[index];
        added.Name = null!;
        if (!TryReserve(line.Length, out int at))
        {
            return;
        }

        line.CopyTo(_bytes.AsSpan(at));
        _fingerprints[index] = _fingerprint;
        added = entry;
        (added.Offset, added.Length, added.Next, added.NameLength) = ((ushort)at, (ushort)line.Length, NoFollowers, (byte)entry.Name.Length);
        Follow(index);
    }

    /// <summary>Whether a line whose name and trimmed value have these lengths is in the layout this remembers:
    /// <c>name: value</c>, nothing around the value.</summary>
    public static bool IsPlainLayout(ReadOnlySpan<byte> content, int nameLength, int valueLength) =>
        valueLength > 0 && content.Length == nameLength + 2 + valueLength && content[nameLength + 1] == HttpBytes.SP;

    // One bit per entry whose fingerprint is this one.
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
            for (int i = 0; i < Size; i += Vector256<uint>.Count)
            {
                candidates |= (ulong)Vector256.Equals(Vector256.LoadUnsafe(ref first, (nuint)i), target).ExtractMostSignificantBits() << i;
            }

            return candidates;
        }

        ulong scalar = 0;
        for (int i = 0; i < Size; i++)
        {
            scalar |= _fingerprints[i] == fingerprint ? 1UL << i : 0;
        }

        return scalar;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool Matches(ReadOnlySpan<byte> line, in Entry entry) =>
        entry.Name is not null && line.Length == entry.Length && EqualBytes(line, _bytes.AsSpan(entry.Offset, entry.Length));

    // Lines are 16 to a few hundred bytes: a vector loop without SequenceEqual's call and its dispatch on the length.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool EqualBytes(ReadOnlySpan<byte> line, ReadOnlySpan<byte> remembered)
    {
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

        // In steps of MinBytes rather than doubling: an idle connection keeps the array until it is trimmed.
        int capacity = Math.Min(MaxBytes, (live + length + (live / 2) + MinBytes - 1) / MinBytes * MinBytes);
        Compact(capacity <= _bytes.Length ? _bytes : ConnectionArrays.Rent<byte>(capacity));
        at = _used;
        _used += length;
        return true;
    }

    // Moves the remembered lines to the start of target in the order they lie, so that in the same array no line is
    // overwritten before it has moved.
    private void Compact(byte[] target)
    {
        Span<byte> order = stackalloc byte[Size];
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

        if (target != _bytes)
        {
            ConnectionArrays.Return(_bytes);
        }

        _bytes = target;
        _used = used;
    }
}
