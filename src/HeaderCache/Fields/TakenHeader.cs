using System.Buffers.Binary;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace HeaderCache.Fields;

/// <summary>One header line of the section being read (or one field of an HTTP/2 header block): where it is in the
/// section and, when it is taken out, its name and value strings (<see cref="Value"/> is <see langword="null"/> for a
/// line that stays for Kestrel), which the request made from that head reads once its reader hands the line on.</summary>
internal struct TakenHeader
{
    // Offsets in the section of the line and just past its CRLF (of a field offered back on HTTP/2, Start is its table
    // entry's serial, or Http2StreamHandoff.JoinedCookie).
    public int Start;
    public int End;

    /// <summary>A cheap key for spotting repeated names: the length and the first and last four bytes, case-folded, so
    /// that names equal but for case have equal keys and a browser's names (<c>sec-fetch-mode</c>, <c>sec-fetch-site</c>)
    /// rarely share one. Sixteen bits: the memo of lines keeps it for every line it remembers.</summary>
    public ushort Key;

    /// <summary>The <see cref="Known"/> of a name Kestrel keeps among its other names under a constant of its own
    /// (<c>FieldNames.Interned</c>).</summary>
    public const short InternedName = -3;

    public short Known;      // a known name's position among FieldNames' known names, or a negative FieldNames kind
    public short NameSlot;   // the slot of the cache of names that holds a name Kestrel has no constant for, or -1

    // The strings to put back. Name is also set on a line left to Kestrel, whose value it reuses; Value is null while
    // the line stays in the bytes, which no line of a published head does (a compacted head takes all its lines).
    public string? Name;
    public string? Value;

    // So that what the line's strings cost is known without reading them; the value's without the whitespace around it.
    public ushort NameLength;
    public ushort ValueLength;

    public bool Repeat;            // an earlier line of the section has the same name: the value is appended to its
    public bool Created;           // a new name or value string was made (a miss, or a string no cache holds)
    public bool ReusedByKestrel;   // Kestrel alone would have handed back its previous string for the value

    // HTTP/2: a field of another name that stayed in its block for Kestrel's table, carried among the taken fields in
    // arrival order; its Value is Kestrel's string (null until the request reads it) or the caches' for the same octets.
    public bool LeftInBlock;

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
