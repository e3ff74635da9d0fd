namespace HeaderCache.Diagnostics;

/// <summary>What one connection (or several, added up) has done, in the units the instruments report.</summary>
internal struct MeteredCounts
{
    // As the reader of the connection's protocol counts them (HeadCompactor, HeaderBlockRewriter).
    public long LinesServed;
    public long LinesCreated;
    public long AvoidedBytes;
    public long ValueEvictions;
    public long NameEvictions;

    public static MeteredCounts operator +(MeteredCounts left, MeteredCounts right) => new()
    {
        LinesServed = left.LinesServed + right.LinesServed,
        LinesCreated = left.LinesCreated + right.LinesCreated,
        AvoidedBytes = left.AvoidedBytes + right.AvoidedBytes,
        ValueEvictions = left.ValueEvictions + right.ValueEvictions,
        NameEvictions = left.NameEvictions + right.NameEvictions,
    };
}
