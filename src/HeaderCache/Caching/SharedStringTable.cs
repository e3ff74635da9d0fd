using System.Diagnostics.CodeAnalysis;
using System.Text;

namespace HeaderCache.Caching;

/// <summary>
/// A process-wide, bounded, read-mostly table from header bytes to a string, behind the connections' own caches:
/// a connection that misses its own cache for a value many other connections sent gets their string instead of
/// making one.
/// </summary>
/// <remarks>
/// <para>Reading takes no lock and writes nothing: a fingerprint of the bytes selects a set of <see cref="Ways"/>
/// entries, and an entry is returned only after an exact compare with the bytes. An entry is a string, published by
/// one reference write, so a reader sees an entry whole or not at all; an entry replaced while it is read is at worst
/// compared in vain (a miss), never returned for other bytes. Strings in the table were created from bytes that
/// were validated, so an equal compare also validates the bytes of a hit.</para>
/// <para>Writing (counting candidates, admitting) happens only on a miss, and only when the write lock is free at
/// once: a connection that finds it taken skips sharing for that value rather than wait.</para>
/// <para>A string enters only after <see cref="SharedAdmission.ConnectionsToAdmit"/> distinct connections offered it
/// (<see cref="SharedAdmission"/>). Which bytes may be offered at all (the allow-list of headers) is the caller's
/// decision: the table knows nothing of headers.</para>
/// </remarks>
internal sealed class SharedStringTable
{
    /// <summary>Entries per set: a set is what a fingerprint selects and what an admission replaces in.</summary>
    public const int Ways = 4;

    private readonly string?[] _entries;
    private readonly int _setMask;
    private readonly int _maxLength;
    private readonly uint _seed = (uint)Random.Shared.Next();
    private readonly Lock _writeLock = new();
    private readonly SharedAdmission _admission;
    private int _replace;
    private int _count;

    /// <summary>Creates an empty table.</summary>
    /// <param name="capacity">Entries, a power of two and a multiple of <see cref="Ways"/>.</param>
    /// <param name="maxLength">Longest string admitted, in characters (bytes).</param>
    public SharedStringTable(int capacity, int maxLength)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, Ways);
        if (!int.IsPow2(capacity))
        {
            throw new ArgumentOutOfRangeException(nameof(capacity), capacity, "The capacity must be a power of two.");
        }

        _entries = new string?[capacity];
        _setMask = (capacity / Ways) - 1;
        _maxLength = maxLength;
        _admission = new SharedAdmission(capacity);
    }

    /// <summary>The most entries the table holds.</summary>
    public int Capacity => _entries.Length;

    /// <summary>The longest string the table admits.</summary>
    public int MaxLength => _maxLength;

    /// <summary>Entries published so far (read under no lock: a moment stale at worst).</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>The fingerprint function, replaceable by tests that force collisions.</summary>
    internal Func<ReadOnlySpan<byte>, uint, uint>? FingerprintOverride { get; set; }

    /// <summary>
    /// The most managed bytes the table can keep alive on 64-bit .NET, whatever clients send: every entry and every
    /// candidate holding a string of <see cref="MaxLength"/> characters, the arrays included.
    /// </summary>
    public long MaxRetainedBytes =>
        ArrayBytes(_entries.Length, IntPtr.Size) + ((long)_entries.Length * HeaderStringCache.StringSize(_maxLength))
        + SharedAdmission.MaxRetainedBytes(_entries.Length, _maxLength);

    /// <summary>The table's string for exactly <paramref name="bytes"/>, if it holds one. Takes no lock.</summary>
    /// <param name="bytes">The header bytes.</param>
    /// <param name="value">The string, equal to the bytes.</param>
    /// <param name="fingerprint">The bytes' fingerprint, for <see cref="Offer"/> after a miss.</param>
    public bool TryFind(ReadOnlySpan<byte> bytes, [NotNullWhen(true)] out string? value, out uint fingerprint)
    {
        fingerprint = FingerprintOverride is { } fingerprinter ? fingerprinter(bytes, _seed) : HeaderStringCache.Fingerprint(bytes, _seed);
        if (bytes.Length <= _maxLength)
        {
            // Each element is read once: an entry replaced meanwhile is compared as it was read, or not at all.
            foreach (string? candidate in _entries.AsSpan(Set(fingerprint), Ways))
            {
                if (candidate is not null && candidate.Length == bytes.Length && Ascii.Equals(bytes, candidate))
                {
                    value = candidate;
                    return true;
                }
            }
        }

        value = null;
        return false;
    }

    /// <summary>
    /// Tells the table that <paramref name="connection"/> created <paramref name="value"/> after
    /// <see cref="TryFind"/> missed: the value enters once enough distinct connections did. Never waits: when another
    /// connection is writing, the offer is dropped.
    /// </summary>
    /// <param name="fingerprint">What <see cref="TryFind"/> gave for the value's bytes.</param>
    /// <param name="value">A string created from validated bytes.</param>
    /// <param name="connection">The offering connection's id (<see cref="SharedAdmission.NewConnectionId"/>).</param>
    /// <returns>Whether this offer admitted the value.</returns>
    public bool Offer(uint fingerprint, string value, long connection)
    {
        if (value.Length > _maxLength || !_writeLock.TryEnter())
        {
            return false;
        }

        try
        {
            if (!_admission.Count(fingerprint, value, connection))
            {
                return false;
            }

            Publish(fingerprint, value);
            return true;
        }
        finally
        {
            _writeLock.Exit();
        }
    }

    /// <summary>Runs <paramref name="action"/> holding the write lock, as a writing connection would: for the test that
    /// an offer meanwhile is dropped, not queued.</summary>
    internal void WhileWriting(Action action)
    {
        lock (_writeLock)
        {
            action();
        }
    }

    // Arrays on 64-bit .NET: 24 bytes of header and length, elements, rounded up to 8.
    internal static long ArrayBytes(int length, int elementSize) => (24L + ((long)length * elementSize) + 7) & ~7L;

    private int Set(uint fingerprint) => (int)(fingerprint & (uint)_setMask) * Ways;

    // Under the write lock. A set's entries are replaced in turn: recency would need a write on every read, by every
    // core, to one shared line.
    private void Publish(uint fingerprint, string value)
    {
        Span<string?> set = _entries.AsSpan(Set(fingerprint), Ways);
        if (set.Contains(value))
        {
            return;
        }

        int way = set.IndexOf((string?)null);
        if (way < 0)
        {
            way = _replace;
            _replace = (_replace + 1) % Ways;
        }
        else
        {
            Volatile.Write(ref _count, _count + 1);
        }

        // The string is complete before this write makes it visible (a release).
        Volatile.Write(ref set[way], value);
    }
}
