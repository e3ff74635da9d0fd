using HeaderCache.Fields;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Requests;

/// <summary>The request-level part of a connection: found from each request's features when Kestrel creates its
/// context, it puts the lines taken out of the request's head back. On HTTP/1.1 it is also the view the request reads
/// (<see cref="RequestHeadersView"/>), set as the request's <see cref="IHttpRequestFeature.Headers"/> for each request
/// that had lines of names Kestrel has no field for taken out; on HTTP/2 each of Kestrel's stream objects has a view of
/// its own (<see cref="Http2StreamHeaders"/>).</summary>
/// <remarks>An HTTP/1.1 request reads the lines its entry left in the queue (<see cref="HeaderInjectionQueue.Taken"/>)
/// until Kestrel creates the connection's next request, which it does only after disposing this one's context.</remarks>
internal sealed class CachedRequestHeaders : RequestHeadersView
{
    private readonly HeaderInjectionQueue _queue;   // HTTP/1.1 requests come one at a time on a connection

    /// <summary>The view of an HTTP/1.1 connection, set for each of its requests that had lines taken out.</summary>
    public CachedRequestHeaders(HeaderInjectionQueue queue) => _queue = queue;

    /// <summary>On an HTTP/2 connection, the fields taken out of each stream's header block, else
    /// <see langword="null"/>.</summary>
    public Http2StreamHandoff? Streams { get; set; }

    /// <summary>The request-level part of the connection of the request whose context is being created, or
    /// <see langword="null"/> when its connection has none.</summary>
    /// <remarks>Kestrel's request features fall back to the connection's, where the middleware put this. The indexer, not
    /// <c>Get&lt;T&gt;</c>: a generic method called through an interface costs a runtime dictionary lookup.</remarks>
    public static CachedRequestHeaders? Of(IFeatureCollection requestFeatures) =>
        requestFeatures[typeof(CachedRequestHeaders)] as CachedRequestHeaders;

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

    // A stream's fields wait in the connection's hand-off until its request is created.
    private static void AttachStream(IFeatureCollection requestFeatures, Http2StreamHandoff streams)
    {
        if (requestFeatures[typeof(IHttp2StreamIdFeature)] is not IHttp2StreamIdFeature id
            || streams.Take(id.StreamId) is not { Array: { } array } lines)
        {
            return;
        }

        if (requestFeatures[typeof(IHttpRequestFeature)] is IHttpRequestFeature request)
        {
            Http2StreamHeaders.Show(requestFeatures, request, lines, streams);
        }
        else
        {
            streams.Return(array);
        }
    }
}
