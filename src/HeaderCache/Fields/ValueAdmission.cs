using System.Diagnostics;
using System.Runtime.CompilerServices;


namespace HeaderCache.Fields;

/// <summary>Which of a connection's values are worth looking up in its cache. Per name, values that keep missing
/// (request ids, per-file ETags, timestamps) would evict values that do come back: after
/// <see cref="MissesBeforeNameBypass"/> misses in a row a name's values are created directly, and only every
/// <see cref="NameProbeInterval"/>-th is looked up (and admitted) again, so a name whose values start repeating comes
/// back. Per connection, one whose values almost never repeat (a hostile or highly varied client) steps aside: taking
/// its fields costs more CPU than Kestrel's own work on them, for nothing but its names' strings.</summary>
internal struct ValueAdmission
{
    // A connection with fewer than one hit in MinValueHitRateInverse value lookups of a ValueWindow passes through.
    public const int ValueWindow = 64;
    public const int MinValueHitRateInverse = 8;

    // Requests in a row with nothing to take out after which a connection is left to Kestrel, on either protocol: a
    // client that sends only names Kestrel acts on and values Kestrel reuses itself gains nothing from the reading of
    // each head or header block.
    public const int RequestsWithNothingToTake = 16;

    public const int MissesBeforeNameBypass = 16;
    private const int NameProbeInterval = 8;

    private readonly int _nameSlots;

    // Per header name, how many of its values missed in a row. The last entry is shared by the names too long for the
    // cache of names, and is reset before each use, so their values are always looked up.
    private byte[] _nameMisses;
    private int _lookups;
    private int _hits;

    public ValueAdmission(int nameSlots)
    {
        Debug.Assert(FieldNames.KnownCount + nameSlots < byte.MaxValue, "An entry of the history is named in a byte.");
        _nameSlots = nameSlots;
        _nameMisses = [];
    }

    /// <summary>Whether the last window's lookups had too few hits: the connection steps aside once the current field is
    /// read.</summary>
    public bool ValuesDoNotRepeat { readonly get; private set; }

    public static bool IsBypassed(byte misses) => misses >= MissesBeforeNameBypass;

    /// <summary>Whether the known name <paramref name="known"/>'s values are created without a look-up now.</summary>
    public readonly bool IsBypassed(int known) => known < _nameMisses.Length && IsBypassed(_nameMisses[known]);

    /// <summary>Whether this value of a name with <paramref name="misses"/> misses in a row is created without a
    /// look-up: every <see cref="NameProbeInterval"/>-th of a bypassed name's values is looked up again.</summary>
    public static bool Bypasses(ref byte misses)
    {
        if (misses < MissesBeforeNameBypass)
        {
            return false;
        }

        if (++misses < MissesBeforeNameBypass + NameProbeInterval)
        {
            return true;
        }

        misses = MissesBeforeNameBypass - 1;
        return false;
    }

    public readonly ref byte Misses(int history) => ref _nameMisses[history];

    public ref byte Misses(in TakenHeader line)
    {
        int entry = History(line);
        if (entry == _nameMisses.Length - 1)
        {
            _nameMisses[entry] = 0;
        }

        return ref _nameMisses[entry];
    }

    /// <summary>The entry of the history of a line's name (a known name's index, else its slot in the cache of names
    /// after the known ones), which exists from here on: the memo keeps it for the lines it remembers.</summary>
    public byte History(in TakenHeader line)
    {
        int known = FieldNames.KnownCount;
        if (_nameMisses.Length == 0)
        {
            _nameMisses = new byte[known + _nameSlots + 1];
        }

        return (byte)(line.Known >= 0 ? line.Known : line.NameSlot >= 0 ? known + line.NameSlot : _nameMisses.Length - 1);
    }

    /// <summary>A slot of the cache of names now holds another name, or none held it before: its history starts again.</summary>
    public readonly void Restart(int nameSlot)
    {
        if (_nameMisses.Length != 0)
        {
            _nameMisses[FieldNames.KnownCount + nameSlot] = 0;
        }
    }

    /// <summary>Counts a value looked up, or served as a look-up would have, for the name whose misses these are.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Count(ref byte misses, bool hit)
    {
        misses = hit ? (byte)0 : (byte)Math.Min(misses + 1, MissesBeforeNameBypass);
        CountWindow(hit);
    }

    /// <summary>Counts, for the connection alone, a value whose encoding already says whether it repeats, without a
    /// lookup (HTTP/2: a reference to a table entry repeats, a literal the client adds to its table is new).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void CountWindow(bool hit)
    {
        _hits += hit ? 1 : 0;
        if (++_lookups == ValueWindow)
        {
            EndWindow();
        }
    }

    /// <summary>Forgets every name's misses; the array, which holds only counts, is kept for the next history.</summary>
    public readonly void Release() => Array.Clear(_nameMisses);

    /// <summary>Starts another connection's history: every name's misses and the window's counts go.</summary>
    public void Reset()
    {
        Release();
        (_lookups, _hits, ValuesDoNotRepeat) = (0, 0, false);
    }

    private void EndWindow()
    {
        if (_hits * MinValueHitRateInverse < ValueWindow)
        {
            ValuesDoNotRepeat = true;
        }

        _lookups = _hits = 0;
    }
}
