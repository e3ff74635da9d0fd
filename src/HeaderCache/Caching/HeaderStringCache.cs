using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;

namespace HeaderCache.Caching;

/// <summary>
/// A small fixed-size cache from header bytes to the string those bytes decode to, owned by one
/// connection and used by one request at a time (no locks).
/// </summary>
/// <remarks>
/// <para>A lookup keys on a fingerprint of the length and at most 24 of the bytes (<see cref="Fingerprint"/>),
/// finds slots with the same fingerprint, and returns a cached string only after an exact byte-for-character
/// compare. That compare also validates a hit: a cached string holds only valid characters, and
/// <see cref="Ascii.Equals(ReadOnlySpan{byte}, ReadOnlySpan{char})"/> never equates a non-ASCII byte with a
/// character, so bytes equal to it are valid. So every byte of a hit is read once, by the compare; a miss reads
/// them again to validate them before it creates the string, and admits the string by CLOCK.</para>
/// <para>Fingerprints of different bytes collide when the length and the bytes read agree (request ids that
/// differ in the middle, or values a client crafts): a collision costs one more compare, never a wrong string.
/// Storage is allocated on the first insert, so a connection that never sends a cacheable header costs
/// nothing.</para>
/// </remarks>
internal sealed class HeaderStringCache
{
    /// <summary>Slots per connection unless configured.</summary>
    public const int DefaultSlotCount = 25;

    /// <summary>Slots of a connection's cache of header names, kept apart from its values.</summary>
    public const int NameSlotCount = 32;

    /// <summary>Longest header name cached: real names are far shorter, and the bound keeps what a client can
    /// make a connection hold in names small.</summary>
    public const int NameMaxLength = 64;

    /// <summary>Fewest slots allowed.</summary>
    public const int MinSlotCount = 1;

    /// <summary>Most slots allowed: lookups scan the fingerprints linearly, so keep this small.</summary>
    public const int MaxSlotCount = 256;

    /// <summary>Longest value (in bytes) cached unless configured.</summary>
    public const int DefaultMaxLength = 256;

    /// <summary>Upper bound for the configurable maximum length.</summary>
    public const int MaxMaxLength = 8192;

    private readonly int _slotCount;
    private readonly int _maxLength;
    private readonly uint _seed;
    private readonly WellKnownStrings? _wellKnown;

    private uint[]? _fingerprints;
    private string[]? _strings;
    private bool[]? _visited;
    private int _count;
    private int _hand;

    /// <summary>Counters since creation.</summary>
    public CacheCounters Counters;

    /// <summary>Creates an empty cache; nothing is allocated until the first insert.</summary>
    /// <param name="slotCount">Strings held.</param>
    /// <param name="maxLength">Longest byte sequence held.</param>
    /// <param name="wellKnown">Strings of the process a miss takes instead of making one (the cache of names keeps a
    /// slot per name, so a well-known name still takes one).</param>
    /// <param name="seed">The fingerprints' seed; random unless a test fixes it.</param>
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

    /// <summary>The number of slots.</summary>
    public int SlotCount => _slotCount;

    /// <summary>The longest byte sequence this cache stores.</summary>
    public int MaxLength => _maxLength;

    /// <summary>Strings currently held.</summary>
    public int Count => _count;

    /// <summary>Whether storage has been allocated (the first insert happened).</summary>
    public bool IsAllocated => _fingerprints is not null;

    /// <summary>
    /// Managed heap bytes this cache keeps alive on 64-bit .NET: its slot arrays and the strings in them
    /// (a string also referenced elsewhere, by Kestrel or the application, is counted too).
    /// </summary>
    public long RetainedBytes
    {
        get
        {
            if (_fingerprints is null)
            {
                return 0;
            }

            long bytes = SlotArrayBytes(_slotCount);
            foreach (string? s in _strings.AsSpan(0, _count))
            {
                bytes += StringSize(s!.Length);
            }

            return bytes;
        }
    }

    /// <summary>Lets go of the slots and the strings in them; the counters stay. The next insert allocates again.</summary>
    public void Release()
    {
        (_fingerprints, _strings, _visited) = (null, null, null);
        (_count, _hand) = (0, 0);
    }

    /// <summary>
    /// The most <see cref="RetainedBytes"/> can ever be for a cache of this shape, whatever a client sends: every
    /// slot holding a string of <paramref name="maxLength"/> characters.
    /// </summary>
    public static long MaxRetainedBytes(int slotCount = DefaultSlotCount, int maxLength = DefaultMaxLength) =>
        SlotArrayBytes(slotCount) + ((long)slotCount * StringSize(maxLength));

    /// <summary>
    /// The string for <paramref name="bytes"/>: the one the cache holds, else one of the process's well-known strings the
    /// cache was made with, else a new one. Either of the last two is admitted, so the next lookup of the bytes is a hit.
    /// </summary>
    /// <param name="bytes">The header bytes.</param>
    /// <param name="slot">The slot that holds the string now (on a miss it held another string before, or none), or -1
    /// when the bytes were refused.</param>
    /// <param name="hit">Whether the cache held the string (else it was admitted now).</param>
    /// <param name="created">Set when a new string was made.</param>
    /// <returns><see langword="null"/> when the bytes are longer than <see cref="MaxLength"/> or hold a byte other than
    /// VCHAR, SP or HTAB.</returns>
    public string? GetOrAdd(ReadOnlySpan<byte> bytes, out int slot, out bool hit, ref bool created)
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
            value = DecodeIfValid(bytes);
            if (value is null)
            {
                return null;
            }

            Counters.Misses++;
            created = true;
        }

        slot = Admit(fingerprint, value);
        return value;
    }

    /// <summary>The string in <paramref name="slot"/>, or <see langword="null"/> when the slot holds none.</summary>
    public string? StringAt(int slot) => (uint)slot < (uint)_count ? _strings![slot] : null;

    /// <summary>
    /// Returns the string in <paramref name="slot"/> and counts a hit on it, exactly as a lookup that found it there
    /// would: for a caller that already knows the bytes equal that string (the string itself, elsewhere in the heap,
    /// is not read).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public string Touch(int slot)
    {
        _visited![slot] = true;
        Counters.Hits++;
        return _strings![slot];
    }

    /// <summary>
    /// The managed heap bytes allocated for a string of <paramref name="length"/> characters on 64-bit .NET:
    /// 0 for the empty string, which is always the shared <see cref="string.Empty"/>.
    /// </summary>
    // Inlined: code compiled ahead otherwise calls it for every line served.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int StringSize(int length) => length == 0 ? 0 : (22 + (2 * length) + 7) & ~7;

    /// <summary>Creates the string for bytes of VCHAR, SP and HTAB only, as Kestrel would, without touching any cache;
    /// <see langword="null"/> for any other byte.</summary>
    internal static string? DecodeIfValid(ReadOnlySpan<byte> bytes) =>
        bytes.ContainsAnyExcept(HttpBytes.FieldContent) ? null : Decode(bytes);

    /// <summary>Creates the string for bytes already known to be valid, without touching any cache.</summary>
    internal static string Decode(ReadOnlySpan<byte> bytes) =>
        string.Create(bytes.Length, bytes, static (chars, source) => Ascii.ToUtf16(source, chars, out _));

    /// <summary>
    /// The length, the seed and the first, middle and last 8 bytes (fewer, overlapping, when shorter), mixed by
    /// multiplies and a xor-shift finish: a constant few nanoseconds whatever the length, where hashing every
    /// byte costs more than the compare that must follow anyway.
    /// </summary>
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

    // Arrays on 64-bit .NET: 24 bytes of header and length, elements, rounded up to 8.
    private static long SlotArrayBytes(int slots) =>
        ArrayBytes(slots, sizeof(uint)) + ArrayBytes(slots, IntPtr.Size) + ArrayBytes(slots, sizeof(bool));

    private static long ArrayBytes(int length, int elementSize) => (24L + ((long)length * elementSize) + 7) & ~7L;

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
            _fingerprints = new uint[_slotCount];
            _strings = new string[_slotCount];
            _visited = new bool[_slotCount];
        }

        int slot;
        if (_count < _slotCount)
        {
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

    // CLOCK rather than SIEVE: for proxy traffic at the default slot count SIEVE's hit rate swings with the number of
    // slots while CLOCK's stays near LRU's (docs/eviction.md), and evicting in place needs no order of inserts to keep.
    // The hand starts at slot 0, the oldest insert; it moves past the newcomer so that a new string gets a whole sweep
    // in which to be used.
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
