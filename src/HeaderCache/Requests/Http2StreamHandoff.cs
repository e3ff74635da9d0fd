using System.Diagnostics.CodeAnalysis;
using HeaderCache.Caching;
using HeaderCache.Fields;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Requests;

/// <summary>The header fields taken out of HTTP/2 header blocks, per stream, waiting for the request Kestrel creates
/// for that stream, and the arrays they travel in, which return here once nothing reads them: at once when every field
/// went into Kestrel's collection, else when Kestrel starts the next request on the same stream object
/// (<see cref="Http2StreamHeaders"/>).</summary>
/// <remarks><para>An entry's segment holds the fields taken out; after it in its array, up to the first empty
/// element, come fields that stayed in the block with the strings the reader gave them, to replace Kestrel's; from the
/// array's end down to the first empty element, fields that stayed, added to the HPACK table or referred to it, and had
/// no string in the caches, each with its entry's serial in <see cref="TakenHeader.Start"/> (a cookie in crumbs that
/// stayed, with <see cref="JoinedCookie"/>).</para>
/// <para>The reader rents and adds on the connection's frame loop; Kestrel creates streams' requests on the
/// thread pool, concurrently, so both sides take a lock: a <see cref="Lock"/>, as an object's monitor allocates when
/// the two contend. Stream ids are never reused on a connection, so an entry reaches only its own stream's
/// request.</para>
/// <para>The other way go the strings Kestrel made for fields that stayed in their block and added to the HPACK
/// table without a string in the caches (<see cref="Offer"/>): the reader gives them to the table's entries, whose
/// later references then cost no new string.</para>
/// <para>Bounded: a full hand-off refuses, and the block passes unchanged; nothing is evicted, as an entry may be a live
/// stream's. An entry whose stream never reaches the application (reset before it ran, refused) stays until the
/// connection ends. The arrays a stream's fields travel in live from the frame loop to the request's creation, so a
/// connection needs about as many as it has streams opening at once (a page load's burst arrives in one read): it keeps
/// up to <paramref name="pooledArrays"/> of them empty until it idles. The arrays come from the process's shared pool
/// (<see cref="ConnectionArrays"/>), and those no stream holds go back there when the connection idles or ends; an array
/// a request still reads when its connection ends is never given back.</para>
/// </remarks>
internal sealed class Http2StreamHandoff(int capacity, int pooledArrays) : ConnectionHeaders.IPart
{
    private readonly Lock _lock = new();
    private int[] _ids = [];
    private ArraySegment<TakenHeader>[] _lines = [];
    private int _count;
    private TakenHeader[]?[] _free = [];
    private int _freeCount;
    private Offered[] _offers = [];
    private int _offerCount;
    private Http2StreamHeaders?[] _over = [];   // views whose request hosting has ended, and which still hold its array
    private int _overCount;
    private bool _ended;                        // the connection ended (Clear)

    // Offers waiting for the reader: as many as a block's fields that can add to the table, at most.
    private const int MaxOffers = 64;

    // Views whose request has ended kept until the connection idles or ends: a page load's burst of streams.
    private const int MaxEndedViews = 16;

    /// <summary>The serial an offer of a cookie's crumbs joined carries: for the cache of values, not a table entry.</summary>
    public const int JoinedCookie = int.MinValue;

    private readonly record struct Offered(int Serial, string Value);

    /// <summary>Whether Kestrel created a request on the connection, which it does only when it speaks HTTP/2 there.</summary>
    public bool SawRequest { get; private set; }

    /// <summary>The request Kestrel is creating with <paramref name="requestFeatures"/> takes its stream's fields, which
    /// it then reads through the view of Kestrel's stream object (<see cref="Http2StreamHeaders"/>): that view, to be
    /// told when hosting has ended the request, or <see langword="null"/>.</summary>
    public ConnectionHeaders.IRequestEnd? Attach(IFeatureCollection requestFeatures)
    {
        SawRequest = true;
        if (requestFeatures[typeof(IHttp2StreamIdFeature)] is not IHttp2StreamIdFeature id
            || Take(id.StreamId) is not { Array: { } array } lines)
        {
            return null;
        }

        if (requestFeatures[typeof(IHttpRequestFeature)] is IHttpRequestFeature request)
        {
            return Http2StreamHeaders.Show(requestFeatures, request, lines, this);
        }

        Return(array);
        return null;
    }

    /// <summary>Makes <paramref name="lines"/> what <paramref name="view"/> shows, for the request Kestrel is creating on
    /// its stream object; the array of the stream object's previous request goes back (Kestrel has disposed its
    /// context).</summary>
    public void Show(Http2StreamHeaders view, ArraySegment<TakenHeader> lines)
    {
        TakenHeader[]? previous;
        lock (_lock)
        {
            previous = view.Held.Array;
            view.Held = lines;
            if (view.RequestOver)
            {
                view.RequestOver = false;
                int at = Array.IndexOf(_over, view, 0, _overCount);
                _over[at] = _over[--_overCount];
                _over[_overCount] = null;
            }
        }

        if (previous is not null)
        {
            Return(previous);
        }
    }

    /// <summary>Hosting has ended the request whose fields <paramref name="view"/> shows: its array goes back when the
    /// connection idles or ends, or now if it has ended, unless the stream object's next request comes first. Beyond
    /// <see cref="MaxEndedViews"/> such views (a connection that has made many stream objects) the array is left to the
    /// view, which goes with its stream object.</summary>
    public void RequestEnded(Http2StreamHeaders view)
    {
        TakenHeader[]? array = null;
        lock (_lock)
        {
            if (view.RequestOver || view.Held.Array is null)
            {
                return;
            }

            if (_ended)
            {
                array = view.Held.Array;
                view.Held = default;
            }
            else if (_overCount < MaxEndedViews)
            {
                if (_overCount == _over.Length)
                {
                    ConnectionArrays.Grow(ref _over, MaxEndedViews);
                }

                view.RequestOver = true;
                _over[_overCount++] = view;
            }
        }

        // Past the connection's end: straight to the shared pool, which empties it.
        ConnectionArrays.Return(array);
    }

    /// <summary>Kestrel's string for the value of a field that stayed in a block and added table entry
    /// <paramref name="serial"/>, from the request created for that block, for the reader to take; dropped when too many
    /// wait.</summary>
    public void Offer(int serial, string value)
    {
        lock (_lock)
        {
            if (_offerCount == _offers.Length)
            {
                if (_offerCount == MaxOffers)
                {
                    return;
                }

                ConnectionArrays.Grow(ref _offers, Math.Min(MaxOffers, Math.Max(16, 2 * _offerCount)), _offerCount);
            }

            _offers[_offerCount] = new Offered(serial, value);
            Volatile.Write(ref _offerCount, _offerCount + 1);
        }
    }

    /// <summary>Takes a string offered (<see cref="Offer"/>); false when none waits.</summary>
    public bool TryTakeOffer(out int serial, [NotNullWhen(true)] out string? value)
    {
        (serial, value) = (0, null);
        if (Volatile.Read(ref _offerCount) == 0)
        {
            return false;
        }

        lock (_lock)
        {
            if (_offerCount == 0)
            {
                return false;
            }

            (serial, value) = _offers[--_offerCount];
            _offers[_offerCount] = default;
            return true;
        }
    }

    /// <summary>Whether an entry could be added now.</summary>
    public bool HasRoom
    {
        get
        {
            lock (_lock)
            {
                return _count < capacity;
            }
        }
    }

    /// <summary>An empty array of at least <paramref name="length"/> fields, to be added or returned.</summary>
    public TakenHeader[] Rent(int length)
    {
        TakenHeader[]? lines = null;
        lock (_lock)
        {
            if (_freeCount != 0)
            {
                lines = _free[--_freeCount];
                _free[_freeCount] = null;
            }
        }

        // One too short goes back, so the arrays kept grow to the connection's longest blocks. The shared pool's arrays
        // come in powers of two, so one has room for a longer block but at a power of two, and one too short goes back
        // there, for the pool to lend again.
        if (lines is not null && lines.Length >= length)
        {
            return lines;
        }

        ConnectionArrays.Return(lines);
        return ConnectionArrays.Rent<TakenHeader>(length);
    }

    /// <summary>Takes back an array from <see cref="Rent"/> once nothing reads it.</summary>
    public void Return(TakenHeader[] lines)
    {
        // Empty, as a new array is: the resolver only ever sets a field's flags, and no string outlives its request here.
        Array.Clear(lines);
        lock (_lock)
        {
            if (_freeCount == _free.Length && _freeCount < pooledArrays)
            {
                ConnectionArrays.Grow(ref _free, Math.Min(pooledArrays, Math.Max(8, 2 * _free.Length)), _freeCount);
            }

            // The pool's array may be longer than asked: the connection keeps no more than it may.
            if (_freeCount < Math.Min(_free.Length, pooledArrays))
            {
                _free[_freeCount++] = lines;
                return;
            }
        }

        ConnectionArrays.Return(lines);
    }

    /// <summary>Adds stream <paramref name="streamId"/>'s fields; false when full.</summary>
    public bool TryAdd(int streamId, ArraySegment<TakenHeader> lines)
    {
        lock (_lock)
        {
            if (_count == capacity)
            {
                return false;
            }

            if (_count == _ids.Length || _count == _lines.Length)
            {
                int size = Math.Min(capacity, Math.Max(8, _count * 2));
                ConnectionArrays.Grow(ref _ids, size, _count);
                ConnectionArrays.Grow(ref _lines, size, _count);
            }

            _ids[_count] = streamId;
            _lines[_count] = lines;
            _count++;
            return true;
        }
    }

    /// <summary>Takes stream <paramref name="streamId"/>'s fields, or an empty segment (no array) when none wait.</summary>
    public ArraySegment<TakenHeader> Take(int streamId)
    {
        lock (_lock)
        {
            for (int i = 0; i < _count; i++)
            {
                if (_ids[i] == streamId)
                {
                    ArraySegment<TakenHeader> lines = _lines[i];
                    _count--;
                    _ids[i] = _ids[_count];
                    _lines[i] = _lines[_count];
                    _lines[_count] = default;
                    return lines;
                }
            }

            return default;
        }
    }

    /// <summary>The connection idles: lets go of the arrays no stream holds, the arrays of views whose request hosting
    /// has ended, and the strings offered.</summary>
    public void Trim()
    {
        lock (_lock)
        {
            foreach (TakenHeader[]? lines in _free.AsSpan(0, _freeCount))
            {
                ConnectionArrays.Return(lines);
            }

            ConnectionArrays.Release(ref _free);
            ConnectionArrays.Release(ref _offers);
            (_freeCount, _offerCount) = (0, 0);
            GiveBackEndedViews();
        }
    }

    /// <summary>The connection ended: lets go of every entry, and of the arrays of views whose request hosting has
    /// ended (a request still running keeps its array until hosting ends it, <see cref="RequestEnded"/>). The arrays go
    /// back to the shared pool, which empties them; from here the table is empty, as it is for a request Kestrel creates
    /// after the end.</summary>
    public void Clear()
    {
        Trim();
        lock (_lock)
        {
            _ended = true;
            ConnectionArrays.Release(ref _ids);
            ConnectionArrays.Release(ref _lines);
            _count = 0;
        }
    }

    // Under the lock: the views whose request hosting has ended give their arrays back to the shared pool and show
    // nothing of their own until their stream object's next request.
    private void GiveBackEndedViews()
    {
        foreach (Http2StreamHeaders? view in _over.AsSpan(0, _overCount))
        {
            ConnectionArrays.Return(view!.Held.Array);
            (view.Held, view.RequestOver) = (default, false);
        }

        ConnectionArrays.Release(ref _over);
        _overCount = 0;
    }
}
