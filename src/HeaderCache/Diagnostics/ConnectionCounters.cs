namespace HeaderCache.Diagnostics;

/// <summary>The counts of all connections so far, for the observable instruments: those of connections that ended,
/// added up as each ends, plus those of the open ones, read when the instruments are observed. A connection takes the
/// lock when it opens and when it ends, never per request.</summary>
internal sealed class ConnectionCounters
{
    private readonly Lock _lock = new();
    private MeteredConnection? _first;
    private MeteredCounts _ended;

    /// <summary>Counts <paramref name="connection"/> from now on, while it is open.</summary>
    public void Add(MeteredConnection connection)
    {
        lock (_lock)
        {
            connection.Next = _first;
            _first?.Previous = connection;
            _first = connection;
        }
    }

    /// <summary>Keeps the counts of <paramref name="connection"/>, which has ended, and stops reading it.</summary>
    public void Remove(MeteredConnection connection)
    {
        lock (_lock)
        {
            // Under the lock an observation takes: it sees the connection either open or ended, so the totals
            // neither drop nor count it twice.
            _ended += connection.Counters;
            if (connection.Previous is null)
            {
                _first = connection.Next;
            }
            else
            {
                connection.Previous.Next = connection.Next;
            }

            connection.Next?.Previous = connection.Previous;
            connection.Previous = null;
            connection.Next = null;
        }
    }

    /// <summary>The counts of every connection so far, ended or open. An open connection's counters are plain fields its
    /// own thread writes: each only grows, so a reading is at worst a moment stale, and the final values are read by the
    /// thread that ends the connection (<see cref="Remove"/>). (A 32-bit process could read a value torn as it crosses a
    /// multiple of 2^32.)</summary>
    public MeteredCounts Totals()
    {
        lock (_lock)
        {
            MeteredCounts totals = _ended;
            for (MeteredConnection? connection = _first; connection is not null; connection = connection.Next)
            {
                totals += connection.Counters;
            }

            return totals;
        }
    }
}
