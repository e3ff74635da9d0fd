using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Requests;

/// <summary>An HTTP/2 request's headers when fields of names Kestrel has no field for were taken out of its stream's
/// block: a view as on HTTP/1.1, borrowed from the connection's <see cref="Http2StreamHandoff"/> for the request and
/// given back once its response has completed.</summary>
/// <remarks><para>Without a view every taken field would be written into Kestrel's collection whether or not anything
/// reads it, and a stream Kestrel has just made (its pooled streams expire after 5 s idle, and a page load's burst
/// needs many at once) would make its dictionary for them too.</para>
/// <para>The view goes back from the response's <c>OnCompleted</c> callbacks, which Kestrel runs last to first, so
/// after every one the application registered. It keeps its fields until the connection lends it again, so what still
/// reads the request's headers after that (hosting's end of the request) reads them as they were; only a stream
/// starting in between could change them.</para></remarks>
internal sealed class Http2StreamHeaders(Http2StreamHandoff streams) : RequestHeadersView
{
    private readonly Http2StreamHandoff _streams = streams;

    private static readonly Func<object, Task> Completed = state =>
    {
        var view = (Http2StreamHeaders)state;
        view._streams.ReturnView(view);
        return Task.CompletedTask;
    };

    private ArraySegment<TakenHeader> _lines;

    protected override ReadOnlySpan<TakenHeader> Lines => _lines;

    /// <summary>Puts <paramref name="lines"/>, a stream's fields, into the request: those of known names into Kestrel's
    /// collection, the others through this view when there are any.</summary>
    public void Show(IHttpRequestFeature request, IHttpResponseFeature response, ArraySegment<TakenHeader> lines)
    {
        if (_lines.Array is { } previous)
        {
            _streams.Return(previous);
        }

        _lines = lines;
        if (Show(request.Headers))
        {
            request.Headers = this;
            response.OnCompleted(Completed, this);
            return;
        }

        // Everything is in Kestrel's collection: neither the view nor the array is needed any longer.
        _lines = default;
        _streams.Return(lines.Array!);
        _streams.ReturnView(this);
    }
}
