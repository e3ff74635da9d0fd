namespace HeaderCache.Caching;

/// <summary>
/// The shared tier of a process (one per HeaderCache runtime): a <see cref="SharedStringTable"/> of header values and
/// one of header names, behind every connection's caches of values and names.
/// </summary>
/// <remarks>
/// Worst case with these sizes, whatever clients send (<see cref="MaxRetainedBytes"/>): 1,024 values of at most 256
/// characters and as many candidates, 64 names of at most 64 characters and as many candidates: 1,165,248 bytes.
/// </remarks>
internal sealed class SharedStrings
{
    /// <summary>Values held: the popular values of a server (user agents, languages, client hints, accept lists)
    /// number in the hundreds.</summary>
    public const int ValueCapacity = 1024;

    /// <summary>Names held: only names on the allow-list are offered, in the few casings clients send.</summary>
    public const int NameCapacity = 64;

    /// <summary>Creates both tables, empty.</summary>
    public SharedStrings()
        : this(shareNames: true)
    {
    }

    /// <summary>Creates the tables; without <paramref name="shareNames"/> only values are shared, for the eviction study,
    /// which measures what sharing names adds.</summary>
    internal SharedStrings(bool shareNames) =>
        Names = shareNames ? new SharedStringTable(NameCapacity, HeaderStringCache.NameMaxLength) : null;

    /// <summary>The shared values, of at most <see cref="HeaderStringCache.DefaultMaxLength"/> characters.</summary>
    public SharedStringTable Values { get; } = new(ValueCapacity, HeaderStringCache.DefaultMaxLength);

    /// <summary>The shared names (of headers Kestrel has no constant for), of at most
    /// <see cref="HeaderStringCache.NameMaxLength"/> characters; <see langword="null"/> only in the study.</summary>
    public SharedStringTable? Names { get; }

    /// <summary>The most managed bytes both tables can keep alive.</summary>
    public long MaxRetainedBytes => Values.MaxRetainedBytes + (Names?.MaxRetainedBytes ?? 0);
}
