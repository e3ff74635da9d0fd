using System.Collections;
using System.Diagnostics.CodeAnalysis;
using HeaderCache.Fields;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Requests;

/// <summary>A request's headers as the application sees them when lines were taken out of its head: Kestrel's own
/// collection, with the taken lines of known names written into it, and the taken lines of other names, which this view
/// answers for itself until a caller changes the collection. An HTTP/1.1 connection has one
/// (<see cref="CachedRequestHeaders"/>), an HTTP/2 stream of Kestrel's has one of its own
/// (<see cref="Http2StreamHeaders"/>).</summary>
/// <remarks><para>Copying a line of another name in costs what Kestrel's own insert costs, for every line, read or not,
/// while most requests read a few headers by name, or none. So every read (by name, enumeration, <c>Count</c>,
/// <c>Keys</c>, <c>Values</c>, <c>CopyTo</c>) is answered from those lines and Kestrel's collection together, and only a
/// change copies them in first, exactly as Kestrel's parser would have added them.</para>
/// <para>A read never writes: with Kestrel alone, threads that only read a request's headers can do so at the same
/// time, and so they can here. The lines are fixed before the application runs and stay until Kestrel is done with the
/// request (each owner says how), and nothing is copied in but by a change, which is no more safe alongside a read than
/// with Kestrel alone.</para>
/// <para>Known names go into Kestrel's fields at once, so Kestrel holds their values as the previous request's and
/// hands them back when the next request sends the same bytes. Kestrel enumerates its fields first, then the other
/// names in the order they were added; while this view holds lines of other names, Kestrel's collection holds none (a
/// reader takes all of a head's or block's lines of other names, or none; on HTTP/2 a field that stayed in its block
/// travels among them and leaves Kestrel's collection when the request is created, <see cref="Http2StreamHeaders"/>),
/// so Kestrel's enumeration followed by the lines is the order Kestrel alone gives. A change copies the lines back in
/// that order, and Kestrel's dictionary of other names fills the places such fields left, first to last, before it
/// adds beyond them.</para>
/// <para>A read by name gives what Kestrel's collection would: a name is either among the lines held here or in
/// Kestrel's collection, never both, and both match names case-insensitively. A head that repeats another name is
/// copied at once: Kestrel keeps such values in one array that every read returns, which a view could only imitate. So
/// is one with a name Kestrel stores under its own constant (<see cref="TakenHeader.InternedName"/>), so that Kestrel
/// names it.</para></remarks>
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

    // The whole collection is Kestrel's followed by the lines of other names held here, as Kestrel alone would list it;
    // Keys and Values are made as Kestrel's collection makes them.
    public ICollection<string> Keys => this.Select(header => header.Key).ToHashSet(StringComparer.OrdinalIgnoreCase);
    public ICollection<StringValues> Values => this.Select(header => header.Value).ToList();
    public int Count => _kestrel.Count + HeldCount();
    public bool Contains(KeyValuePair<string, StringValues> item) => TryGetValue(item.Key, out StringValues value) && value.Equals(item.Value);

    public void CopyTo(KeyValuePair<string, StringValues>[] array, int arrayIndex)
    {
        _kestrel.CopyTo(array, arrayIndex);
        int held = HeldCount();
        if (held == 0)
        {
            return;
        }

        // Kestrel's dictionary of other names checks the room for all its entries before it copies one.
        arrayIndex += _kestrel.Count;
        if (array.Length - arrayIndex < held)
        {
            throw new ArgumentException("Destination array is not long enough to copy all the items in the collection. Check array index and length.");
        }

        foreach (ref readonly TakenHeader line in Lines)
        {
            if (line.Known < 0)
            {
                array[arrayIndex++] = new(line.Name!, line.Value);
            }
        }
    }

    public IEnumerator<KeyValuePair<string, StringValues>> GetEnumerator() =>
        _nameLengths == 0 ? _kestrel.GetEnumerator() : new Enumerator(this, _kestrel.GetEnumerator());

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    // A change: from here on Kestrel's collection, with the lines in it, answers everything.
#pragma warning disable ASP0019 // The view must forward Add as it is: it throws on a duplicate key as Kestrel's does.
    public void Add(string key, StringValues value) => Kestrel().Add(key, value);
#pragma warning restore ASP0019
    public void Add(KeyValuePair<string, StringValues> item) => Kestrel().Add(item);
    public bool Remove(string key) => Kestrel().Remove(key);
    public bool Remove(KeyValuePair<string, StringValues> item) => Kestrel().Remove(item);
    public void Clear() => Kestrel().Clear();

    /// <summary>Adds one taken line to <paramref name="headers"/> as Kestrel's parser adds it: a repeated name's value
    /// after its earlier ones.</summary>
    internal static void Write(IHeaderDictionary headers, in TakenHeader line) =>
        headers[line.Name!] = line.Repeat ? StringValues.Concat(headers[line.Name!], line.Value) : line.Value;

    /// <summary>Writes <see cref="Lines"/> of known names into <paramref name="kestrel"/>, the request's own collection;
    /// false when the lines of other names went in too (there were none, a name repeats, or Kestrel names one under its
    /// own constant), so that the request is to read Kestrel's collection and not this view.</summary>
    protected bool Show(IHeaderDictionary kestrel)
    {
        _kestrel = kestrel;
        ulong nameLengths = 0;
        bool copied = false;
        foreach (ref readonly TakenHeader line in Lines)
        {
            if (line.Known >= 0)
            {
                Write(kestrel, line);
            }
            else
            {
                nameLengths |= 1UL << line.NameLength;
                copied |= line.Repeat || line.Known == TakenHeader.InternedName;
            }
        }

        _nameLengths = nameLengths;
        if (copied)
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

    // The lines of other names held here and not in Kestrel's collection: each name once, as a repeat is copied in.
    private int HeldCount()
    {
        int held = 0;
        if (_nameLengths != 0)
        {
            foreach (ref readonly TakenHeader line in Lines)
            {
                held += line.Known < 0 ? 1 : 0;
            }
        }

        return held;
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

    /// <summary>Kestrel's enumeration, then the lines of other names held here, in the order they were sent.</summary>
    private sealed class Enumerator(RequestHeadersView view, IEnumerator<KeyValuePair<string, StringValues>> kestrel)
        : IEnumerator<KeyValuePair<string, StringValues>>
    {
        // The next line to look at, or -1 while Kestrel's enumerator runs.
        private int _next = -1;

        public KeyValuePair<string, StringValues> Current { get; private set; }

        object IEnumerator.Current => Current;

        public bool MoveNext()
        {
            if (_next < 0)
            {
                if (kestrel.MoveNext())
                {
                    Current = kestrel.Current;
                    return true;
                }

                _next = 0;
            }

            // Lines a change has copied in are Kestrel's to list.
            ReadOnlySpan<TakenHeader> lines = view._nameLengths != 0 ? view.Lines : [];
            while (_next < lines.Length)
            {
                ref readonly TakenHeader line = ref lines[_next++];
                if (line.Known < 0)
                {
                    Current = new(line.Name!, line.Value);
                    return true;
                }
            }

            Current = default;
            return false;
        }

        public void Reset()
        {
            kestrel.Reset();
            _next = -1;
            Current = default;
        }

        public void Dispose() => kestrel.Dispose();
    }
}
