using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;

namespace HeaderCache.Caching;

/// <summary>A small fixed-size cache from header bytes to the string they decode to, owned by one connection and used
/// by one request at a time (no locks). Storage is allocated on the first insert, for <see cref="InitialSlots"/> slots,
/// and grows, keeping every string in its slot, as strings fill it, up to the slot count.</summary>
/// <remarks>A lookup finds the slots with the bytes' <see cref="Fingerprint"/> and returns a string only after an exact
/// byte-for-character compare, which also validates a hit: a cached string holds only valid characters, and
/// <see cref="Ascii.Equals(ReadOnlySpan{byte}, ReadOnlySpan{char})"/> never equates a non-ASCII byte with a character.
/// A miss validates the bytes before it makes the string and admits it by CLOCK. Fingerprints of different bytes
/// collide when the length and the bytes read agree: that costs one more compare, never a wrong string.</remarks>
internal sealed class HeaderStringCache
{
    // The bounds of the configurable slot count and longest value, and their defaults: lookups scan the fingerprints
    // linearly, so slots are few.
    public const int MinSlotCount = 1, MaxSlotCount = 256, DefaultSlotCount = 25;
    public const int MaxMaxLength = 8192, DefaultMaxLength = 256;

    // The cache of the names Kestrel has no constant for: real names are far shorter than NameMaxLength, which bounds
    // what a client can make a connection hold in names.
    public const int NameSlotCount = 32;
    public const int NameMaxLength = 64;

    // The slots the storage starts with: the shared pool's smallest arrays. A connection's first requests seldom fill
    // more (well-known values take none), and an idle connection holds what its strings fill, not the slot count.
    public const int InitialSlots = 16;

    private readonly int _slotCount;
    private readonly int _maxLength;
    private uint _seed;
    private readonly WellKnownStrings? _wellKnown;

    private uint[]? _fingerprints;
    private string[]? _strings;
    private bool[]? _visited;
    private int _count;
    private int _hand;

    public CacheCounters Counters;

    /// <summary>An empty cache. A miss takes one of <paramref name="wellKnown"/>'s strings, if it has one, instead of
    /// making a new one; <paramref name="seed"/> is random unless a test fixes it.</summary>
    public HeaderStringCache(int slotCount = DefaultSlotCount, int maxLength = DefaultMaxLength, WellKnownStrings? wellKnown = null, uint? seed = null)
    {
        _wellKnown = wellKnown;
        ArgumentOutOfRangeException.ThrowIfLessThan(slotCount, MinSlotCount);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(slotCount, MaxSlotCount);
        ArgumentOutOfRangeException.ThrowIfNegative(maxLength);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(maxLength, MaxMaxLength);
        _slotCount = slotCount;
        _maxLength = maxLength;
        _seed = seed ?? (uint)Random.Shared.Next();
    }

    public int SlotCount => _slotCount;
    public int MaxLength => _maxLength;

    /// <summary>Empties the cache for another connection: no slot, string or count of the last one stays, and
    /// fingerprints take a new seed.</summary>
    public void Reset()
    {
        Release();
        Counters = default;
        _seed = (uint)Random.Shared.Next();
    }

    /// <summary>Lets go of the slots and their strings; the counters stay. The next insert allocates again.</summary>
    public void Release()
    {
        ConnectionArrays.Return(_fingerprints);
        ConnectionArrays.Return(_strings);
        ConnectionArrays.Return(_visited);
        (_fingerprints, _strings, _visited) = (null, null, null);
        (_count, _hand) = (0, 0);
    }

    /// <summary>The string for <paramref name="bytes"/>: the one the cache holds (<paramref name="hit"/>), else a
    /// well-known one, else <paramref name="offered"/> (a string equal to the bytes), else a new one
    /// (<paramref name="created"/> set); any of the last three is admitted, in
    /// <paramref name="slot"/>. <see langword="null"/>, and slot -1, for bytes longer than <see cref="MaxLength"/> or
    /// not all VCHAR, SP or HTAB.</summary>
    public string? GetOrAdd(ReadOnlySpan<byte> bytes, out int slot, out bool hit, ref bool created, string? offered = null)
    {
        slot = -1;
        hit = false;
        if (bytes.Length > _maxLength)
        {
            return null;
        }

        uint fingerprint = Fingerprint(bytes, _seed);
        if (_fingerprints is not null)
        {
            int found = Find(bytes, fingerprint);
            if (found >= 0)
            {
                slot = found;
                hit = true;
                return Touch(found);
            }
        }

        if (_wellKnown is null || !_wellKnown.TryGet(bytes, out string? value))
        {
            value = DecodeIfValid(bytes, offered);
            if (value is null)
            {
                return null;
            }

            Counters.Misses++;
            created |= offered is null;
        }

        slot = Admit(fingerprint, value);
        return value;
    }

    /// <summary>The string the cache holds for <paramref name="bytes"/>, counted as a hit, or <see langword="null"/>: a
    /// look-up that makes no string and admits nothing.</summary>
    public string? Get(ReadOnlySpan<byte> bytes)
    {
        if (bytes.Length > _maxLength || _fingerprints is null)
        {
            return null;
        }

        int found = Find(bytes, Fingerprint(bytes, _seed));
        return found >= 0 ? Touch(found) : null;
    }

    /// <summary>The string in <paramref name="slot"/>, or <see langword="null"/> when the slot holds none.</summary>
    public string? StringAt(int slot) => (uint)slot < (uint)_count ? _strings![slot] : null;

    /// <summary>The string in <paramref name="slot"/>, counted as a lookup that found it there would be, for a caller
    /// that already knows the bytes equal it (the string itself is not read).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public string Touch(int slot)
    {
        _visited![slot] = true;
        Counters.Hits++;
        return _strings![slot];
    }

    /// <summary>Managed heap bytes of a string of <paramref name="length"/> characters on 64-bit .NET: 0 for the empty
    /// string, which is always <see cref="string.Empty"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int StringSize(int length) => length == 0 ? 0 : (22 + (2 * length) + 7) & ~7;

    /// <summary>The string Kestrel would make of VCHAR, SP and HTAB bytes; <see langword="null"/> for any other.</summary>
    internal static string? DecodeIfValid(ReadOnlySpan<byte> bytes) => DecodeIfValid(bytes, offered: null);

    /// <summary><see cref="DecodeIfValid(ReadOnlySpan{byte})"/>, but <paramref name="offered"/>, a string equal to
    /// <paramref name="bytes"/>, where there is one, instead of a new string.</summary>
    internal static string? DecodeIfValid(ReadOnlySpan<byte> bytes, string? offered) =>
        bytes.ContainsAnyExcept(HttpBytes.FieldContent) ? null : offered ?? Decode(bytes);

    internal static string Decode(ReadOnlySpan<byte> bytes) =>
        string.Create(bytes.Length, bytes, static (chars, source) => Ascii.ToUtf16(source, chars, out _));

    /// <summary>The length, the seed and the first, middle and last 8 bytes (fewer, overlapping, when shorter), mixed
    /// by multiplies and a xor-shift finish: the cost does not grow with the length, as hashing every byte would cost
    /// more than the compare that must follow anyway.</summary>
    internal static uint Fingerprint(ReadOnlySpan<byte> bytes, uint seed)
    {
        ulong head, middle, tail;
        int length = bytes.Length;
        if (length >= 8)
        {
            head = MemoryMarshal.Read<ulong>(bytes);
            middle = MemoryMarshal.Read<ulong>(bytes[((length / 2) - 4)..]);
            tail = MemoryMarshal.Read<ulong>(bytes[^8..]);
        }
        else if (length >= 4)
        {
            head = MemoryMarshal.Read<uint>(bytes);
            middle = 0;
            tail = MemoryMarshal.Read<uint>(bytes[^4..]);
        }
        else
        {
            head = length == 0 ? 0 : bytes[0] | ((ulong)bytes[length / 2] << 8) | ((ulong)bytes[^1] << 16);
            middle = 0;
            tail = 0;
        }

        ulong x = (head * 0x9E3779B97F4A7C15UL)
            ^ BitOperations.RotateLeft(middle * 0xC2B2AE3D27D4EB4FUL, 21)
            ^ BitOperations.RotateLeft(tail * 0x165667B19E3779F9UL, 42)
            ^ (((ulong)(uint)length << 32) | seed);
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9UL;
        x ^= x >> 32;
        return (uint)x;
    }

    private int Find(ReadOnlySpan<byte> bytes, uint fingerprint)
    {
        ReadOnlySpan<uint> fingerprints = _fingerprints.AsSpan(0, _count);
        int offset = 0;
        while (true)
        {
            int i = fingerprints[offset..].IndexOf(fingerprint);
            if (i < 0)
            {
                return -1;
            }

            int slot = offset + i;
            string candidate = _strings![slot];
            if (candidate.Length == bytes.Length && Ascii.Equals(bytes, candidate))
            {
                return slot;
            }

            offset = slot + 1;
        }
    }

    private int Admit(uint fingerprint, string value)
    {
        if (_fingerprints is null)
        {
            int slots = Math.Min(_slotCount, InitialSlots);
            _fingerprints = ConnectionArrays.Rent<uint>(slots);
            _strings = ConnectionArrays.Rent<string>(slots);
            _visited = ConnectionArrays.Rent<bool>(slots);
        }

        int slot;
        if (_count < _slotCount)
        {
            if (_count == Math.Min(_fingerprints.Length, Math.Min(_strings!.Length, _visited!.Length)))
            {
                Grow();
            }

            slot = _count++;
        }
        else
        {
            slot = Evict();
            Counters.Evictions++;
        }

        _fingerprints[slot] = fingerprint;
        _strings![slot] = value;
        _visited![slot] = false;
        return slot;
    }

    // Every slot in use stays where it is, so a slot a caller keeps (the memo's entries, a taken line's name, the history
    // of a name's values) names the same string.
    // The hand has not moved yet: it first moves once every slot is in use, and the storage then holds them all.
    private void Grow()
    {
        int slots = Math.Min(_slotCount, 2 * _count);
        ConnectionArrays.Grow(ref _fingerprints!, slots, _count);
        ConnectionArrays.Grow(ref _strings!, slots, _count);
        ConnectionArrays.Grow(ref _visited!, slots, _count);
    }

    // CLOCK: evicting in place needs no order of inserts to keep (docs/eviction.md compares the policies). The hand
    // starts at slot 0, the oldest insert, and moves past the newcomer, so a new string gets a whole sweep to be used.
    private int Evict()
    {
        Debug.Assert(_count == _slotCount);
        bool[] visited = _visited!;
        while (visited[_hand])
        {
            visited[_hand] = false;
            _hand = Next(_hand);
        }

        int slot = _hand;
        _hand = Next(slot);
        return slot;
    }

    private int Next(int slot) => slot + 1 == _slotCount ? 0 : slot + 1;
}
