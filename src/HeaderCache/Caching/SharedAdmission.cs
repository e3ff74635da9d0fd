namespace HeaderCache.Caching;

/// <summary>
/// The doorkeeper of a <see cref="SharedStringTable"/>: a value is admitted only once it has been offered by
/// <see cref="ConnectionsToAdmit"/> distinct connections, so that no single connection can put a value in the table
/// or find out, by its own offers, whether another one sent it.
/// </summary>
/// <remarks>
/// A candidate keeps the ids of the connections that offered it, so a connection counts once per value however often
/// it offers it. Candidates are bounded (as many as the table has entries) and replaced in turn within a set when a new
/// value needs room: a flood of values that never come back costs the values that do only a later admission. Used
/// under the table's write lock only.
/// </remarks>
internal sealed class SharedAdmission
{
    /// <summary>
    /// Distinct connections that must have sent a value before any connection is served it from the shared table.
    /// Two would let a client learn with one connection of its own whether a single other connection sent a value;
    /// four makes a client open three connections to plant or probe one, and costs the first three connections of a
    /// process their sharing (see <c>docs/security.md</c>).
    /// </summary>
    public const int ConnectionsToAdmit = 4;

    private const int Ways = SharedStringTable.Ways;
    private const int Remembered = ConnectionsToAdmit - 1;

    private static long s_lastConnectionId;

    private readonly string?[] _values;
    private readonly uint[] _fingerprints;
    private readonly long[] _offeredBy;
    private readonly int _setMask;
    private int _replace;

    /// <summary>Creates room for <paramref name="capacity"/> candidates (a power of two, at least <see cref="Ways"/>).</summary>
    public SharedAdmission(int capacity)
    {
        _values = new string?[capacity];
        _fingerprints = new uint[capacity];
        _offeredBy = new long[capacity * Remembered];
        _setMask = (capacity / Ways) - 1;
    }

    /// <summary>A process-wide id for a new connection, never 0 and never given twice.</summary>
    public static long NewConnectionId() => Interlocked.Increment(ref s_lastConnectionId);

    /// <summary>The most managed bytes the candidates can keep alive: the arrays, and a string of
    /// <paramref name="maxLength"/> characters per candidate.</summary>
    public static long MaxRetainedBytes(int capacity, int maxLength) =>
        SharedStringTable.ArrayBytes(capacity, IntPtr.Size) + SharedStringTable.ArrayBytes(capacity, sizeof(uint))
        + SharedStringTable.ArrayBytes(capacity * Remembered, sizeof(long)) + ((long)capacity * HeaderStringCache.StringSize(maxLength));

    /// <summary>
    /// Counts an offer of <paramref name="value"/> by <paramref name="connection"/>; <see langword="true"/> when that
    /// makes <see cref="ConnectionsToAdmit"/> distinct connections, and the candidate is then forgotten.
    /// </summary>
    public bool Count(uint fingerprint, string value, long connection)
    {
        int set = (int)(fingerprint & (uint)_setMask) * Ways;
        int candidate = -1;
        for (int i = set; i < set + Ways; i++)
        {
            if (_fingerprints[i] == fingerprint && string.Equals(_values[i], value, StringComparison.Ordinal))
            {
                candidate = i;
                break;
            }
        }

        if (candidate < 0)
        {
            candidate = Array.IndexOf(_values, null, set, Ways);
            if (candidate < 0)
            {
                candidate = set + _replace;
                _replace = (_replace + 1) % Ways;
            }

            _values[candidate] = value;
            _fingerprints[candidate] = fingerprint;
            _offeredBy.AsSpan(candidate * Remembered, Remembered).Clear();
        }

        Span<long> offeredBy = _offeredBy.AsSpan(candidate * Remembered, Remembered);
        if (offeredBy.Contains(connection))
        {
            return false;
        }

        int free = offeredBy.IndexOf(0L);
        if (free >= 0)
        {
            offeredBy[free] = connection;
            return false;
        }

        _values[candidate] = null;
        return true;
    }
}
