namespace HeaderCache.Compaction;

/// <summary>
/// One header line of the head being read: where it is in the head buffer and, when it may be taken
/// out, the cached name and value strings (<see cref="Value"/> is <see langword="null"/> otherwise).
/// </summary>
internal struct HeaderLine
{
    /// <summary>Offset of the line in the head buffer.</summary>
    public int Start;

    /// <summary>Offset just past the line's CRLF.</summary>
    public int End;

    /// <summary>Length of the name.</summary>
    public int NameLength;

    /// <summary>A cheap key for spotting repeated names: length and the first and last bytes, case-folded.</summary>
    public int Key;

    /// <summary>The name to re-inject under.</summary>
    public string? Name;

    /// <summary>The value to re-inject, or <see langword="null"/> when the line stays in the bytes.</summary>
    public string? Value;

    /// <summary>Whether an earlier line of the head has the same name: the value is appended to that name's.</summary>
    public bool Repeat;

    /// <summary>Describes the line at <paramref name="start"/>..<paramref name="end"/> named <paramref name="name"/>.</summary>
    public HeaderLine(int start, int end, ReadOnlySpan<byte> name)
    {
        Start = start;
        End = end;
        NameLength = name.Length;
        Key = (name.Length << 16) | ((name[0] | 0x20) << 8) | (name[^1] | 0x20);
    }

    /// <summary>The name's bytes in <paramref name="head"/>.</summary>
    public readonly ReadOnlySpan<byte> NameBytes(ReadOnlySpan<byte> head) => head.Slice(Start, NameLength);
}
