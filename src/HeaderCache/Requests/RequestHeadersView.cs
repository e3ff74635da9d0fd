using System.Collections;
using System.Diagnostics.CodeAnalysis;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Requests;

/// <summary>A request's headers as the application sees them when lines were taken out of its head: Kestrel's own
/// collection, with the taken lines of known names written into it, and the taken lines of other names, which are
/// copied in only when a caller needs the whole collection. An HTTP/1.1 connection has one
/// (<see cref="CachedRequestHeaders"/>), an HTTP/2 stream borrows one from its connection
/// (<see cref="Http2StreamHeaders"/>).</summary>
/// <remarks><para>Copying a line of another name in costs what Kestrel's own insert costs, for every line, read or not,
/// while most requests read a few headers by name, or none. So a read by name is answered from those lines or from
/// Kestrel's collection, and everything else (enumeration, <c>Count</c>, <c>Keys</c>, <c>Values</c>, any change) first
/// copies them in, exactly as Kestrel's parser would have added them.</para>
/// <para>Known names go into Kestrel's fields at once, so Kestrel holds their values as the previous request's and
/// hands them back when the next request sends the same bytes. Kestrel enumerates its fields before the other names, so
/// writing the known ones first changes nothing a caller can see.</para>
/// <para>A read by name gives what Kestrel's collection would: a name is either among the lines held here or in
/// Kestrel's collection, never both (the lines Kestrel acts on are never taken, and all lines of a repeated name are
/// taken), and both match names case-insensitively. A head that repeats another name is copied at once: Kestrel keeps
/// such values in one array that every read returns, which a view could only imitate.</para></remarks>
internal abstract class RequestHeadersView : IHeaderDictionary
{
    // Until the first request with taken lines there is no Kestrel collection to stand for.
    private static readonly IHeaderDictionary None = new HeaderDictionary();

    private IHeaderDictionary _kestrel = None;

    // One bit per length (modulo 64) of the names held here and not yet copied into Kestrel's collection; none once they
    // are. Names of different lengths never match ignoring case, so a read of a name never held here (the host reads
    // User-Agent and traceparent on every request) goes to Kestrel's collection without comparing every held line.
    private ulong _nameLengths;

    /// <summary>The request's taken lines, of every name.</summary>
    protected abstract ReadOnlySpan<TakenHeader> Lines { get; }

    public StringValues this[string key]
    {
        get => TryGetTaken(key, out StringValues value) ? value : _kestrel[key];
        set => Kestrel()[key] = value;
    }

    StringValues IDictionary<string, StringValues>.this[string key]
    {
        get => TryGetTaken(key, out StringValues value) ? value : ((IDictionary<string, StringValues>)_kestrel)[key];
        set => ((IDictionary<string, StringValues>)Kestrel())[key] = value;
    }

    StringValues IHeaderDictionary.Host
    {
        // Host filtering reads it on every request. A line Kestrel acts on is never taken, so Kestrel's own property
        // answers, as it would alone.
        get => _kestrel.Host;
        set => Kestrel().Host = value;
    }

    public long? ContentLength
    {
        // Content-Length is never taken out.
        get => _kestrel.ContentLength;
        set => Kestrel().ContentLength = value;
    }

    public bool IsReadOnly => _kestrel.IsReadOnly;

    public bool ContainsKey(string key) => TryGetTaken(key, out _) || _kestrel.ContainsKey(key);

    public bool TryGetValue(string key, [MaybeNullWhen(false)] out StringValues value) =>
        TryGetTaken(key, out value) || _kestrel.TryGetValue(key, out value);

    // Everything else is Kestrel's collection's own answer once the taken lines are in it.
    public ICollection<string> Keys => Kestrel().Keys;
    public ICollection<StringValues> Values => Kestrel().Values;
    public int Count => Kestrel().Count;
#pragma warning disable ASP0019 // The view must forward Add as it is: it throws on a duplicate key as Kestrel's does.
    public void Add(string key, StringValues value) => Kestrel().Add(key, value);
#pragma warning restore ASP0019
    public void Add(KeyValuePair<string, StringValues> item) => Kestrel().Add(item);
    public bool Remove(string key) => Kestrel().Remove(key);
    public bool Remove(KeyValuePair<string, StringValues> item) => Kestrel().Remove(item);
    public void Clear() => Kestrel().Clear();
    public bool Contains(KeyValuePair<string, StringValues> item) => Kestrel().Contains(item);
    public void CopyTo(KeyValuePair<string, StringValues>[] array, int arrayIndex) => Kestrel().CopyTo(array, arrayIndex);
    public IEnumerator<KeyValuePair<string, StringValues>> GetEnumerator() => Kestrel().GetEnumerator();
    IEnumerator IEnumerable.GetEnumerator() => Kestrel().GetEnumerator();

    /// <summary>Adds one taken line to <paramref name="headers"/> as Kestrel's parser adds it: a repeated name's value
    /// after its earlier ones.</summary>
    internal static void Write(IHeaderDictionary headers, in TakenHeader line) =>
        headers[line.Name!] = line.Repeat ? StringValues.Concat(headers[line.Name!], line.Value) : line.Value;

    /// <summary>Writes <see cref="Lines"/> of known names into <paramref name="kestrel"/>, the request's own collection;
    /// false when the lines of other names went in too (there were none, or a name repeats), so that the request is to
    /// read Kestrel's collection and not this view.</summary>
    protected bool Show(IHeaderDictionary kestrel)
    {
        _kestrel = kestrel;
        ulong nameLengths = 0;
        bool repeats = false;
        foreach (ref readonly TakenHeader line in Lines)
        {
            if (line.Known >= 0)
            {
                Write(kestrel, line);
            }
            else
            {
                nameLengths |= 1UL << line.NameLength;
                repeats |= line.Repeat;
            }
        }

        _nameLengths = nameLengths;
        if (repeats)
        {
            Kestrel();
            return false;
        }

        return nameLengths != 0;
    }

    // Kestrel's collection with the taken lines in it: from here on it answers everything.
    private IHeaderDictionary Kestrel()
    {
        if (_nameLengths != 0)
        {
            _nameLengths = 0;
            foreach (ref readonly TakenHeader line in Lines)
            {
                if (line.Known < 0)
                {
                    Write(_kestrel, line);
                }
            }
        }

        return _kestrel;
    }

    private bool TryGetTaken(string key, out StringValues value)
    {
        if (key is not null && (_nameLengths & (1UL << key.Length)) != 0)
        {
            foreach (ref readonly TakenHeader line in Lines)
            {
                if (line.Known < 0 && string.Equals(line.Name, key, StringComparison.OrdinalIgnoreCase))
                {
                    value = line.Value;
                    return true;
                }
            }
        }

        value = default;
        return false;
    }
}
