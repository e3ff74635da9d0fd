using System.Buffers.Binary;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace HeaderCache.Requests;

/// <summary>One header line of the section being read, recorded in the <see cref="HeaderInjectionQueue"/>: where it is
/// in the section and, when it is taken out, its name and value strings (<see cref="Value"/> is <see langword="null"/>
/// for a line that stays for Kestrel), which the head's request reads from the queue.</summary>
internal struct TakenHeader
{
    // Offsets in the section of the line and just past its CRLF.
    public int Start;
    public int End;

    /// <summary>A cheap key for spotting repeated names: the length and the first and last four bytes, case-folded, so
    /// that names equal but for case have equal keys and a browser's names (<c>sec-fetch-mode</c>, <c>sec-fetch-site</c>)
    /// rarely share one. Sixteen bits: the memo of lines keeps it for every line it remembers.</summary>
    public ushort Key;

    /// <summary>Position of a name Kestrel keeps in a field of its own among its known names (<c>FieldNames</c>), or
    /// -1.</summary>
    public short Known;

    /// <summary>The slot of the connection's cache of names that holds a name Kestrel has no constant for, or -1.</summary>
    public short NameSlot;

    /// <summary>The name to put back under (also set on a line left to Kestrel whose value it reuses).</summary>
    public string? Name;

    /// <summary>The value to put back, or <see langword="null"/> while the line stays in the bytes (never in a published
    /// head: a compacted head takes all its lines).</summary>
    public string? Value;

    // So that what the line's strings cost is known without reading them; the value's without the whitespace around it.
    public ushort NameLength;
    public ushort ValueLength;

    /// <summary>Whether an earlier line of the section has the same name: the value is appended to that name's.</summary>
    public bool Repeat;

    /// <summary>Whether a new string was made for the taken line's name or value (a miss, or a string the cache does
    /// not hold), as Kestrel alone would have made one.</summary>
    public bool Created;

    /// <summary>Whether Kestrel alone would have handed back its previous string for the value: the line was left to it
    /// until a later line of the section repeated its name.</summary>
    public bool ReusedByKestrel;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public TakenHeader(int start, int end, ReadOnlySpan<byte> name)
        : this(start, end, name.Length, KeyOf(name))
    {
    }

    // A line recalled from the memo of lines has its key from when it was remembered.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public TakenHeader(int start, int end, int nameLength, ushort key)
    {
        Start = start;
        End = end;
        Known = -1;
        NameSlot = -1;
        NameLength = (ushort)nameLength;
        Key = key;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static ushort KeyOf(ReadOnlySpan<byte> name)
    {
        // Setting 0x20 in every byte folds ASCII letters to one case and leaves the token's other bytes as they are.
        const uint Fold = 0x20202020;
        uint head = name.Length >= 4 ? BinaryPrimitives.ReadUInt32LittleEndian(name) : name[0] | ((uint)name[^1] << 8);
        uint tail = name.Length >= 4 ? BinaryPrimitives.ReadUInt32LittleEndian(name[^4..]) : 0;
        uint key = ((head | Fold) ^ BitOperations.RotateLeft(tail | Fold, 16)) + ((uint)name.Length * 0x9E3779B9u);
        return (ushort)(key ^ (key >> 16));
    }
}
