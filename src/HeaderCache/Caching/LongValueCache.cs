using System.Diagnostics;
using System.Text;

namespace HeaderCache.Caching;

/// <summary>The few values of one connection longer than its <see cref="HeaderStringCache"/> of values takes (bearer
/// tokens, cookies), held within a budget of characters: at most <see cref="SlotCount"/> strings, together no longer than
/// <see cref="Budget"/>. Used by one request at a time (no locks); storage is allocated on the first insert.</summary>
/// <remarks>A lookup returns a string only after the exact byte-for-character compare <see cref="HeaderStringCache"/>
/// makes, with the same <see cref="HeaderStringCache.Fingerprint"/>, so a hit is also the bytes' validation. A miss
/// validates the bytes before it makes the string, then empties slots by CLOCK until the newcomer has a slot and fits in
/// the budget: a value sent on every request (a token) is visited between two passes of the hand and stays.</remarks>
internal sealed class LongValueCache
{
    // The bounds of the configurable budget and its default: room for a token and a cookie of several KB each.
    public const int MaxBudget = 65536, DefaultBudget = 16384;

    // A connection's long values are few (a token, a cookie); fewer slots keep the scan of a lookup short.
    public const int SlotCount = 4;

    private readonly int _budget;
    private readonly uint _seed;

    private uint[]? _fingerprints;
    private string?[]? _strings;   // null: an empty slot
    private bool[]? _visited;
    private int _held;             // characters of the strings held, at most _budget
    private int _hand;

    public CacheCounters Counters;

    /// <summary>An empty cache of values of at most <paramref name="budget"/> characters together (0: none is cached);
    /// <paramref name="seed"/> is random unless a test fixes it.</summary>
    public LongValueCache(int budget, uint? seed = null)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(budget);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(budget, MaxBudget);
        _budget = budget;
        _seed = seed ?? (uint)Random.Shared.Next();
    }

    /// <summary>The most characters the strings held take together, and so the longest value cached.</summary>
    public int Budget => _budget;

    /// <summary>Lets go of the slots and their strings; the counters stay. The next insert allocates again.</summary>
    public void Release()
    {
        ConnectionArrays.Return(_fingerprints);
        ConnectionArrays.Return(_strings);
        ConnectionArrays.Return(_visited);
        (_fingerprints, _strings, _visited) = (null, null, null);
        (_held, _hand) = (0, 0);
    }

    /// <summary>The string for <paramref name="bytes"/>: the one the cache holds (<paramref name="hit"/>), else
    /// <paramref name="offered"/> (a string equal to the bytes), else a new one (<paramref name="created"/> set), admitted. <see langword="null"/> for bytes longer than <see cref="Budget"/> or
    /// not all VCHAR, SP or HTAB.</summary>
    public string? GetOrAdd(ReadOnlySpan<byte> bytes, out bool hit, ref bool created, string? offered = null)
    {
        hit = false;
        if (bytes.Length > _budget)
        {
            return null;
        }

        uint fingerprint = HeaderStringCache.Fingerprint(bytes, _seed);
        if (_strings is not null)
        {
            for (int slot = 0; slot < SlotCount; slot++)
            {
                if (_fingerprints![slot] == fingerprint && _strings[slot] is { } candidate
                    && candidate.Length == bytes.Length && Ascii.Equals(bytes, candidate))
                {
                    _visited![slot] = true;
                    Counters.Hits++;
                    hit = true;
                    return candidate;
                }
            }
        }

        string? value = HeaderStringCache.DecodeIfValid(bytes, offered);
        if (value is null)
        {
            return null;
        }

        Counters.Misses++;
        created |= offered is null;
        Admit(fingerprint, value);
        return value;
    }

    private void Admit(uint fingerprint, string value)
    {
        if (_strings is null)
        {
            _fingerprints = ConnectionArrays.Rent<uint>(SlotCount);
            _strings = ConnectionArrays.Rent<string?>(SlotCount);
            _visited = ConnectionArrays.Rent<bool>(SlotCount);
        }

        int slot = Array.IndexOf(_strings, null, 0, SlotCount);
        while (slot < 0 || _held + value.Length > _budget)
        {
            slot = Evict();
        }

        _fingerprints![slot] = fingerprint;
        _strings[slot] = value;
        _visited![slot] = false;
        _held += value.Length;
    }

    // CLOCK over the slots that hold a string: the hand clears a visited slot and empties the first one it finds not
    // visited. The loop ends: Admit asks only while a string is held (every slot full, or the held ones over budget with
    // the newcomer, which alone fits).
    private int Evict()
    {
        Debug.Assert(_held > 0);
        while (true)
        {
            int slot = _hand;
            _hand = slot + 1 == SlotCount ? 0 : slot + 1;
            if (_strings![slot] is not { } held)
            {
                continue;
            }

            if (_visited![slot])
            {
                _visited[slot] = false;
                continue;
            }

            _held -= held.Length;
            _strings[slot] = null;
            Counters.Evictions++;
            return slot;
        }
    }
}
