using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Requests;

/// <summary>The request-level part of a connection: found from each request's features when Kestrel creates its
/// context, it puts the lines taken out of the request's head back. On HTTP/1.1 it is also the view the request reads
/// (<see cref="RequestHeadersView"/>), set as the request's <see cref="IHttpRequestFeature.Headers"/> for each request
/// that had lines of names Kestrel has no field for taken out; an HTTP/2 stream borrows a view of its own
/// (<see cref="Http2StreamHeaders"/>).</summary>
internal sealed class CachedRequestHeaders : RequestHeadersView
{
    // The connection whose head was last shown to Kestrel on this thread: Kestrel parses a head and creates its request's
    // context on the thread its read completed on, so this is nearly always the request's connection, found without the
    // lookup through Kestrel's features and the connection's. The request's feature collection tells whether it is.
    [ThreadStatic]
    private static CachedRequestHeaders? t_shown;

    private readonly HeaderInjectionQueue _queue;   // HTTP/1.1 requests come one at a time on a connection
    private IFeatureCollection? _requestFeatures;

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

        // Not on HTTP/2: only the HTTP/1.1 reader shows heads (t_shown), and a stream's features are Kestrel's pooled
        // stream, which the connection would then keep after Kestrel let go of it (6.7 KB an idle connection).
        if (headers is { Streams: null })
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
    /// collection, and makes a view the request's headers when lines of other names remain; on HTTP/2 the same with the
    /// stream's fields.</summary>
    public void Attach(IFeatureCollection requestFeatures)
    {
        if (Streams is { } streams)
        {
            AttachStream(requestFeatures, streams);
            return;
        }

        if (_queue.TryTake() && requestFeatures[typeof(IHttpRequestFeature)] is IHttpRequestFeature request && Show(request.Headers))
        {
            request.Headers = this;
        }
    }

    protected override ReadOnlySpan<TakenHeader> Lines => _queue.Taken;

    // A stream's fields wait in the connection's hand-off until its request is created; the request then reads a view
    // borrowed from the connection, as an HTTP/1.1 request reads its connection's.
    private static void AttachStream(IFeatureCollection requestFeatures, Http2StreamHandoff streams)
    {
        if (requestFeatures[typeof(IHttp2StreamIdFeature)] is not IHttp2StreamIdFeature id
            || streams.Take(id.StreamId) is not { Array: { } array } lines)
        {
            return;
        }

        if (requestFeatures[typeof(IHttpRequestFeature)] is IHttpRequestFeature request
            && requestFeatures[typeof(IHttpResponseFeature)] is IHttpResponseFeature response)
        {
            streams.RentView().Show(request, response, lines);
        }
        else
        {
            streams.Return(array);
        }
    }
}
