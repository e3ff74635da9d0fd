using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Requests;

/// <summary>The requests of an HTTP/2 connection: each stream's fields wait in the connection's hand-off until Kestrel
/// creates the stream's request, which then reads them through the view of Kestrel's stream object
/// (<see cref="Http2StreamHeaders"/>).</summary>
internal sealed class Http2RequestHeaders(Http2StreamHandoff streams) : ConnectionHeaders.IPart
{
    /// <summary>Whether Kestrel created a request on the connection, which it does only when it speaks HTTP/2 there.</summary>
    public bool SawRequest { get; private set; }

    /// <inheritdoc />
    public void Attach(IFeatureCollection requestFeatures)
    {
        SawRequest = true;
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
