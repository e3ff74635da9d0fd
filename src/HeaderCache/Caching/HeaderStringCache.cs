using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Text;

namespace HeaderCache.Caching;

/// <summary>
/// A small fixed-size cache from header bytes to the string those bytes decode to, owned by one
/// connection and used by one request at a time (no locks).
/// </summary>
/// <remarks>
/// A lookup validates and hashes the bytes in one pass (<see cref="AsciiHash"/>), finds slots with
/// the same hash and length, and returns a cached string only after an exact byte-for-character
/// compare. A miss creates the string once and admits it by the eviction policy. Storage is
/// allocated on the first insert, so a connection that never sends a cacheable header costs nothing.
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

    /// <summary>Most slots allowed: lookups scan the hashes linearly, so keep this small.</summary>
    public const int MaxSlotCount = 256;

    /// <summary>Longest value (in bytes) cached unless configured.</summary>
    public const int DefaultMaxLength = 256;

    /// <summary>Upper bound for the configurable maximum length.</summary>
    public const int MaxMaxLength = 8192;

    private readonly int _slotCount;
    private readonly int _maxLength;
    private readonly uint _seed;
    private readonly EvictionPolicy _policy;

    private uint[]? _hashes;
    private string[]? _strings;
    private int[]? _marks;   // LRU: last-use stamp; CLOCK and SIEVE: visited bit.
    private byte[]? _order;  // SIEVE: slot numbers from oldest insert to newest.
    private int _count;
    private int _hand;
    private int _clock;

    /// <summary>Counters since creation.</summary>
    public CacheCounters Counters;

    /// <summary>Creates an empty cache; nothing is allocated until the first insert.</summary>
    public HeaderStringCache(
        int slotCount = DefaultSlotCount,
        int maxLength = DefaultMaxLength,
        uint? seed = null,
        EvictionPolicy policy = EvictionPolicy.Sieve)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(slotCount, MinSlotCount);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(slotCount, MaxSlotCount);
        ArgumentOutOfRangeException.ThrowIfNegative(maxLength);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(maxLength, MaxMaxLength);
        _slotCount = slotCount;
        _maxLength = maxLength;
        _seed = seed ?? (uint)Random.Shared.Next();
        _policy = policy;
    }

    /// <summary>The number of slots.</summary>
    public int SlotCount => _slotCount;

    /// <summary>The longest byte sequence this cache stores.</summary>
    public int MaxLength => _maxLength;

    /// <summary>Strings currently held.</summary>
    public int Count => _count;

    /// <summary>Whether storage has been allocated (the first insert happened).</summary>
    public bool IsAllocated => _hashes is not null;

    /// <summary>
    /// Managed heap bytes this cache keeps alive on 64-bit .NET: its slot arrays and the strings in them
    /// (a string also referenced elsewhere, by Kestrel or the application, is counted too).
    /// </summary>
    public long RetainedBytes
    {
        get
        {
            if (_hashes is null)
            {
                return 0;
            }

            long bytes = SlotArrayBytes(_slotCount, _order is not null);
            foreach (string? s in _strings.AsSpan(0, _count))
            {
                bytes += StringSize(s!.Length);
            }

            return bytes;
        }
    }

    /// <summary>
    /// The most <see cref="RetainedBytes"/> can ever be for a cache of this shape (SIEVE or CLOCK/LRU), whatever
    /// a client sends: every slot holding a string of <paramref name="maxLength"/> characters.
    /// </summary>
    public static long MaxRetainedBytes(int slotCount = DefaultSlotCount, int maxLength = DefaultMaxLength, EvictionPolicy policy = EvictionPolicy.Sieve) =>
        SlotArrayBytes(slotCount, policy == EvictionPolicy.Sieve) + ((long)slotCount * StringSize(maxLength));

    /// <summary>The hash function, replaceable by tests that need to force collisions.</summary>
    internal Func<ReadOnlySpan<byte>, uint, (bool Valid, uint Hash)>? HashOverride { get; set; }

    /// <summary>
    /// Returns the cached string for <paramref name="bytes"/>, creating and admitting it on a miss.
    /// </summary>
    /// <returns><see langword="false"/> when the bytes are longer than <see cref="MaxLength"/> or hold a
    /// byte other than visible ASCII, SP or HTAB; the caller then leaves them to Kestrel.</returns>
    public bool TryGetOrAdd(ReadOnlySpan<byte> bytes, [NotNullWhen(true)] out string? value)
    {
        if (bytes.Length > _maxLength || !Hash(bytes, out uint hash))
        {
            value = null;
            return false;
        }

        if (_hashes is not null)
        {
            int found = Find(bytes, hash);
            if (found >= 0)
            {
                Touch(found);
                Counters.Hits++;
                Counters.BytesSaved += StringSize(bytes.Length);
                value = _strings![found];
                return true;
            }
        }

        value = Decode(bytes);
        Counters.Misses++;
        Admit(hash, value);
        return true;
    }

    /// <summary>
    /// The managed heap bytes allocated for a string of <paramref name="length"/> characters on 64-bit .NET:
    /// 0 for the empty string, which is always the shared <see cref="string.Empty"/>.
    /// </summary>
    public static int StringSize(int length) => length == 0 ? 0 : (22 + (2 * length) + 7) & ~7;

    // Arrays on 64-bit .NET: 24 bytes of header and length, elements, rounded up to 8.
    private static long SlotArrayBytes(int slots, bool sieve) =>
        ArrayBytes(slots, sizeof(uint)) + ArrayBytes(slots, IntPtr.Size) + ArrayBytes(slots, sizeof(int)) + (sieve ? ArrayBytes(slots, 1) : 0);

    private static long ArrayBytes(int length, int elementSize) => (24L + ((long)length * elementSize) + 7) & ~7L;

    /// <summary>Creates the string for bytes already known to be valid, without touching any cache.</summary>
    internal static string Decode(ReadOnlySpan<byte> bytes) =>
        string.Create(bytes.Length, bytes, static (chars, source) => Ascii.ToUtf16(source, chars, out _));

    private bool Hash(ReadOnlySpan<byte> bytes, out uint hash)
    {
        if (HashOverride is { } hasher)
        {
            (bool valid, hash) = hasher(bytes, _seed);
            return valid;
        }

        return AsciiHash.TryHash(bytes, _seed, out hash);
    }

    private int Find(ReadOnlySpan<byte> bytes, uint hash)
    {
        ReadOnlySpan<uint> hashes = _hashes.AsSpan(0, _count);
        int offset = 0;
        while (true)
        {
            int i = hashes[offset..].IndexOf(hash);
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

    private void Touch(int slot)
    {
        _marks![slot] = _policy == EvictionPolicy.Lru ? ++_clock : 1;
    }

    private void Admit(uint hash, string value)
    {
        if (_hashes is null)
        {
            _hashes = new uint[_slotCount];
            _strings = new string[_slotCount];
            _marks = new int[_slotCount];
            if (_policy == EvictionPolicy.Sieve)
            {
                _order = new byte[_slotCount];
            }
        }

        int slot;
        if (_count < _slotCount)
        {
            slot = _count++;
            if (_order is not null)
            {
                _order[slot] = (byte)slot;
            }
        }
        else
        {
            slot = _policy switch
            {
                EvictionPolicy.Lru => EvictLru(),
                EvictionPolicy.Clock => EvictClock(),
                _ => EvictSieve(),
            };
            Counters.Evictions++;
        }

        _hashes[slot] = hash;
        _strings![slot] = value;
        _marks![slot] = _policy == EvictionPolicy.Lru ? ++_clock : 0;
    }

    private int EvictLru()
    {
        int[] marks = _marks!;
        int victim = 0;
        for (int i = 1; i < marks.Length; i++)
        {
            if (marks[i] < marks[victim])
            {
                victim = i;
            }
        }

        return victim;
    }

    private int EvictClock()
    {
        int[] marks = _marks!;
        while (marks[_hand] != 0)
        {
            marks[_hand] = 0;
            _hand = (_hand + 1) % _slotCount;
        }

        int victim = _hand;
        _hand = (_hand + 1) % _slotCount;
        return victim;
    }

    private int EvictSieve()
    {
        int[] marks = _marks!;
        byte[] order = _order!;
        while (true)
        {
            if (_hand >= _slotCount)
            {
                _hand = 0;
            }

            int slot = order[_hand];
            if (marks[slot] == 0)
            {
                // Remove from its place in insertion order; the new string becomes the newest.
                // The hand stays where it is, which now holds the next newer survivor, unless the
                // victim was the newest: then the hand wraps to the oldest.
                Array.Copy(order, _hand + 1, order, _hand, _slotCount - _hand - 1);
                order[_slotCount - 1] = (byte)slot;
                if (_hand >= _slotCount - 1)
                {
                    _hand = 0;
                }

                Debug.Assert(_count == _slotCount);
                return slot;
            }

            marks[slot] = 0;
            _hand++;
        }
    }
}
