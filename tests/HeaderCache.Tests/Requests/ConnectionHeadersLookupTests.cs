using HeaderCache.Requests;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Tests.Requests;

/// <summary>How a request finds its connection's request-level part: through its features, which fall back to the
/// connection's, as Kestrel's do; nothing else (no thread's record) leads to a connection.</summary>
public sealed class ConnectionHeadersLookupTests
{
    [Fact]
    public void A_request_gets_its_own_connections_part_and_only_through_its_features()
    {
        var (a, featuresA) = Connection();
        var (b, featuresB) = Connection();
        Assert.Same(a, ConnectionHeaders.Of(featuresA));
        Assert.Same(b, ConnectionHeaders.Of(featuresB));
        Assert.Null(ConnectionHeaders.Of(new FeatureCollection()));

        // The features no longer lead to the connection's part: nothing finds it.
        Forget(featuresA);
        Assert.Null(ConnectionHeaders.Of(featuresA));
        Assert.Same(b, ConnectionHeaders.Of(featuresB));
    }

    // A connection's part, set in the connection's features, and a request's features that fall back to those, as
    // Kestrel's do.
    private static (ConnectionHeaders Headers, RequestFeatures Features) Connection()
    {
        var headers = new ConnectionHeaders { Part = new Http2StreamHandoff(capacity: 4, pooledArrays: 4) };
        var connection = new FeatureCollection();
        connection[typeof(ConnectionHeaders)] = headers;
        return (headers, new RequestFeatures(connection));
    }

    private static void Forget(RequestFeatures request) => request.Connection[typeof(ConnectionHeaders)] = null;

    private sealed class RequestFeatures(FeatureCollection connection) : FeatureCollection(connection)
    {
        public FeatureCollection Connection => connection;
    }
}
