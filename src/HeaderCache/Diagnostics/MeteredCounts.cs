namespace HeaderCache.Diagnostics;

/// <summary>What one connection (or several, added up) has done, in the units the instruments report.</summary>
internal struct MeteredCounts
{
    /// <summary>Header lines taken out of heads and put back without a new string.</summary>
    public long LinesServed;

    /// <summary>Header lines taken out of heads for which a new name or value string was made.</summary>
    public long LinesCreated;

    /// <summary>Managed bytes of the strings Kestrel alone would have allocated for the lines served.</summary>
    public long AvoidedBytes;

    /// <summary>Values dropped from the connection's cache of values to make room for another.</summary>
    public long ValueEvictions;

    /// <summary>Names dropped from the connection's cache of names to make room for another.</summary>
    public long NameEvictions;

    /// <summary>The counts of two connections together.</summary>
    public static MeteredCounts operator +(MeteredCounts left, MeteredCounts right) => new()
    {
        LinesServed = left.LinesServed + right.LinesServed,
        LinesCreated = left.LinesCreated + right.LinesCreated,
        AvoidedBytes = left.AvoidedBytes + right.AvoidedBytes,
        ValueEvictions = left.ValueEvictions + right.ValueEvictions,
        NameEvictions = left.NameEvictions + right.NameEvictions,
    };
}
