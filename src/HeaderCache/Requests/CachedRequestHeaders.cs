using HeaderCache.Fields;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Requests;

/// <summary>The request headers of an HTTP/1.1 connection: for each request whose head had lines of names Kestrel has
/// no field for taken out, the view the request reads (<see cref="RequestHeadersView"/>), set as its
/// <see cref="IHttpRequestFeature.Headers"/>.</summary>
/// <remarks>A request reads the lines its entry left in the queue (<see cref="HeaderInjectionQueue.Taken"/>) until
/// Kestrel creates the connection's next request, which it does only after disposing this one's context: HTTP/1.1
/// requests come one at a time on a connection, so one view serves them all.</remarks>
internal sealed class CachedRequestHeaders(HeaderInjectionQueue queue) : RequestHeadersView
{
    /// <summary>Takes the lines taken out of this request's head, if any, writes those of known names into Kestrel's
    /// collection, and makes this view the request's headers when lines of other names remain.</summary>
    public void Attach(IFeatureCollection requestFeatures)
    {
        if (queue.TryTake() && requestFeatures[typeof(IHttpRequestFeature)] is IHttpRequestFeature request && Show(request.Headers))
        {
            request.Headers = this;
        }
    }

    protected override ReadOnlySpan<TakenHeader> Lines => queue.Taken;
}
