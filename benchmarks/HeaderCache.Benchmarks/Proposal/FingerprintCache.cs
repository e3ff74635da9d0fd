using System.Buffers;
using System.Numerics;
using System.Runtime.InteropServices;
using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Benchmarks.Proposal;

/// <summary>
/// PROTOTYPE for <c>docs/benchmarks.md</c>, not product code: <see cref="HeaderStringCache"/> with SIEVE,
/// but the lookup key is a fingerprint of the length and three 8-byte reads instead of a hash of every byte,
/// and validation runs only on a miss.
/// </summary>
/// <remarks>
/// <para>A hit is still only returned after an exact compare, and that compare also validates: the cached
/// string holds only valid characters (it was validated when it was admitted), and
/// <see cref="Ascii.Equals(ReadOnlySpan{byte}, ReadOnlySpan{char})"/> never equates a non-ASCII byte, so
/// bytes equal to it are valid. A miss validates every byte (<see cref="SearchValues{T}"/>) before it
/// creates the string.</para>
/// <para>Fingerprints collide for values of equal length that agree on the read bytes; a collision costs
/// one more compare, never a wrong string. Someone who crafts colliding values can at most make a lookup
/// compare against every slot (25 compares, each stopping at the first differing vector).</para>
/// <para>Admission and eviction are the engine's SIEVE, so hit rates are the engine's.</para>
/// </remarks>
internal sealed class FingerprintCache
{
    private static readonly SearchValues<byte> FieldBytes = SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);

    private readonly int _slotCount;
    private readonly int _maxLength;
    private readonly uint _seed;
    private readonly uint[] _seenOnce;
    private int _seenNext;
    private uint[]? _fingerprints;
    private string[]? _strings;
    private bool[]? _visited;
    private byte[]? _order;
    private int _count;
    private int _hand;

    /// <summary>Counters since creation, as the engine keeps them.</summary>
    public CacheCounters Counters;

    /// <param name="slotCount">Strings held.</param>
    /// <param name="maxLength">Longest value cached.</param>
    /// <param name="seed">Fingerprint seed.</param>
    /// <param name="doorkeeper">0: admit every miss, like the engine. Otherwise the number of fingerprints of
    /// values missed once and not admitted: a value is admitted only when it misses again while its
    /// fingerprint is still among them, so values that never repeat neither take a slot nor stay referenced.</param>
    public FingerprintCache(int slotCount = HeaderStringCache.DefaultSlotCount, int maxLength = HeaderStringCache.DefaultMaxLength, uint seed = 0, int doorkeeper = 0)
    {
        _slotCount = slotCount;
        _maxLength = maxLength;
        _seed = seed;
        _seenOnce = new uint[doorkeeper];
    }

    public bool TryGetOrAdd(ReadOnlySpan<byte> bytes, out string? value)
    {
        if (bytes.Length > _maxLength)
        {
            value = null;
            return false;
        }

        uint fingerprint = Fingerprint(bytes, _seed);
        if (_fingerprints is not null)
        {
            ReadOnlySpan<uint> fingerprints = _fingerprints.AsSpan(0, _count);
            int offset = 0;
            int i;
            while ((i = fingerprints[offset..].IndexOf(fingerprint)) >= 0)
            {
                int slot = offset + i;
                string candidate = _strings![slot];
                if (candidate.Length == bytes.Length && Ascii.Equals(bytes, candidate))
                {
                    _visited![slot] = true;
                    Counters.Hits++;
                    Counters.BytesSaved += HeaderStringCache.StringSize(bytes.Length);
                    value = candidate;
                    return true;
                }

                offset = slot + 1;
            }
        }

        if (bytes.ContainsAnyExcept(FieldBytes))
        {
            value = null;
            return false;
        }

        value = HeaderValues.Decode(bytes);
        Counters.Misses++;
        if (_seenOnce.Length > 0 && _seenOnce.AsSpan().IndexOf(fingerprint | 1) < 0)
        {
            _seenOnce[_seenNext] = fingerprint | 1; // never 0, the value of an unused entry
            _seenNext = (_seenNext + 1) % _seenOnce.Length;
            return true;
        }

        Admit(fingerprint, value);
        return true;
    }

    /// <summary>Length, seed and the first, middle and last 8 bytes (fewer, overlapping, for short values).</summary>
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

    private void Admit(uint fingerprint, string value)
    {
        if (_fingerprints is null)
        {
            _fingerprints = new uint[_slotCount];
            _strings = new string[_slotCount];
            _visited = new bool[_slotCount];
            _order = new byte[_slotCount];
        }

        int slot;
        if (_count < _slotCount)
        {
            slot = _count++;
            _order![slot] = (byte)slot;
        }
        else
        {
            slot = EvictSieve();
            Counters.Evictions++;
        }

        _fingerprints[slot] = fingerprint;
        _strings![slot] = value;
        _visited![slot] = false;
    }

    private int EvictSieve()
    {
        bool[] visited = _visited!;
        byte[] order = _order!;
        while (true)
        {
            if (_hand >= _slotCount)
            {
                _hand = 0;
            }

            int slot = order[_hand];
            if (!visited[slot])
            {
                order.AsSpan(_hand + 1).CopyTo(order.AsSpan(_hand));
                order[^1] = (byte)slot;
                if (_hand >= _slotCount - 1)
                {
                    _hand = 0;
                }

                return slot;
            }

            visited[slot] = false;
            _hand++;
        }
    }
}
