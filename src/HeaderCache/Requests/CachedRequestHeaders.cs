using System.Collections;
using System.Diagnostics.CodeAnalysis;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Requests;

/// <summary>A request's headers as the application sees them when lines were taken out of its head: Kestrel's own
/// collection, with the taken lines of known names written into it, and the taken lines of other names, which are
/// copied in only when a caller needs the whole collection. One per connection, set as the request's
/// <see cref="IHttpRequestFeature.Headers"/> for each request that had such lines taken out.</summary>
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
internal sealed class CachedRequestHeaders : IHeaderDictionary
{
    // Until the first request with taken lines there is no Kestrel collection to stand for.
    private static readonly IHeaderDictionary None = new HeaderDictionary();

    // The connection whose head was last shown to Kestrel on this thread: Kestrel parses a head and creates its request's
    // context on the thread its read completed on, so this is nearly always the request's connection, found without the
    // lookup through Kestrel's features and the connection's. The request's feature collection tells whether it is.
    [ThreadStatic]
    private static CachedRequestHeaders? t_shown;

    private readonly HeaderInjectionQueue _queue;   // HTTP/1.1 requests come one at a time on a connection
    private IFeatureCollection? _requestFeatures;
    private IHeaderDictionary _kestrel = None;

    // One bit per length (modulo 64) of the names held here and not yet copied into Kestrel's collection; none once they
    // are. Names of different lengths never match ignoring case, so a read of a name never held here (the host reads
    // User-Agent and traceparent on every request) goes to Kestrel's collection without comparing every held line.
    private ulong _nameLengths;

    /// <summary>The view of an HTTP/1.1 connection, set for each of its requests that had lines taken out.</summary>
    public CachedRequestHeaders(HeaderInjectionQueue queue) => _queue = queue;

    /// <summary>On an HTTP/2 connection, the fields taken out of each stream's header block, else
    /// <see langword="null"/>.</summary>
    public Http2StreamHandoff? Streams { get; set; }

    /// <summary>The request-level part of the connection of the request whose context is being created, or
    /// <see langword="null"/> when its connection has none.</summary>
    public static CachedRequestHeaders? Of(IFeatureCollection requestFeatures)
    {
        CachedRequestHeaders? headers = t_shown;
        if (headers is not null && ReferenceEquals(headers._requestFeatures, requestFeatures))
        {
            return headers;
        }

        // Kestrel's request features fall back to the connection's, where the middleware put the connection's view.
        // The indexer, not Get<T>: a generic method called through an interface costs a runtime dictionary lookup.
        headers = requestFeatures[typeof(CachedRequestHeaders)] as CachedRequestHeaders;
        if (headers is not null)
        {
            headers._requestFeatures = requestFeatures;
        }

        return headers;
    }

    public void OnHeadShown() => t_shown = this;

    /// <summary>The connection ended: nothing refers to its request features from here.</summary>
    public void Detach()
    {
        _requestFeatures = null;
        if (t_shown == this)
        {
            t_shown = null;
        }
    }

    /// <summary>Takes the lines taken out of this request's head, if any, writes those of known names into Kestrel's
    /// collection, and makes a view the request's headers when lines of other names remain. On HTTP/2 all of a stream's
    /// fields go into Kestrel's collection.</summary>
    public void Attach(IFeatureCollection requestFeatures)
    {
        if (Streams is { } streams)
        {
            AttachStream(requestFeatures, streams);
            return;
        }

        if (!_queue.TryTake() || requestFeatures[typeof(IHttpRequestFeature)] is not IHttpRequestFeature request)
        {
            return;
        }

        IHeaderDictionary headers = request.Headers;
        bool repeats = WriteKnown(headers, _queue.Taken, out ulong nameLengths);
        _kestrel = headers;
        _nameLengths = nameLengths;
        if (repeats)
        {
            Kestrel();
        }
        else if (nameLengths != 0)
        {
            request.Headers = this;
        }
    }

    // A stream's fields all go into Kestrel's collection at once, and their array back to the connection: a view would
    // have to live as long as the request, which ends where nothing here is called.
    private static void AttachStream(IFeatureCollection requestFeatures, Http2StreamHandoff streams)
    {
        if (requestFeatures[typeof(IHttp2StreamIdFeature)] is not IHttp2StreamIdFeature id
            || streams.Take(id.StreamId) is not { Array: { } array } lines)
        {
            return;
        }

        if (requestFeatures[typeof(IHttpRequestFeature)] is IHttpRequestFeature request)
        {
            IHeaderDictionary headers = request.Headers;
            foreach (ref readonly TakenHeader line in lines.AsSpan())
            {
                Write(headers, line);
            }
        }

        streams.Return(array);
    }

    // Writes the lines of known names into Kestrel's collection; whether a line of another name repeats an earlier one.
    private static bool WriteKnown(IHeaderDictionary headers, ReadOnlySpan<TakenHeader> lines, out ulong nameLengths)
    {
        nameLengths = 0;
        bool repeats = false;
        foreach (ref readonly TakenHeader line in lines)
        {
            if (line.Known >= 0)
            {
                Write(headers, line);
            }
            else
            {
                nameLengths |= 1UL << line.NameLength;
                repeats |= line.Repeat;
            }
        }

        return repeats;
    }

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

    // Kestrel's collection with the taken lines in it: from here on it answers everything.
    private IHeaderDictionary Kestrel()
    {
        if (_nameLengths != 0)
        {
            _nameLengths = 0;
            foreach (ref readonly TakenHeader line in _queue.Taken)
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
            foreach (ref readonly TakenHeader line in _queue.Taken)
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
