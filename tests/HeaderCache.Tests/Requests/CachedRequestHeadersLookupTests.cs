using HeaderCache.Requests;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Tests.Requests;

/// <summary>How a request finds its connection's request-level part: through its features, which fall back to the
/// connection's, as Kestrel's do; nothing else (no thread's record) leads to a connection.</summary>
public sealed class CachedRequestHeadersLookupTests
{
    [Fact]
    public void A_request_gets_its_own_connections_part_and_only_through_its_features()
    {
        var (a, featuresA) = Connection();
        var (b, featuresB) = Connection();
        Assert.Same(a, CachedRequestHeaders.Of(featuresA));
        Assert.Same(b, CachedRequestHeaders.Of(featuresB));
        Assert.Null(CachedRequestHeaders.Of(new FeatureCollection()));

        // The features no longer lead to the connection's part: nothing finds it.
        Forget(featuresA);
        Assert.Null(CachedRequestHeaders.Of(featuresA));
        Assert.Same(b, CachedRequestHeaders.Of(featuresB));
    }

    // A connection's part, set in the connection's features, and a request's features that fall back to those, as
    // Kestrel's do.
    private static (CachedRequestHeaders Headers, RequestFeatures Features) Connection()
    {
        var headers = new CachedRequestHeaders(new HeaderInjectionQueue());
        var connection = new FeatureCollection();
        connection[typeof(CachedRequestHeaders)] = headers;
        return (headers, new RequestFeatures(connection));
    }

    private static void Forget(RequestFeatures request) => request.Connection[typeof(CachedRequestHeaders)] = null;

    private sealed class RequestFeatures(FeatureCollection connection) : FeatureCollection(connection)
    {
        public FeatureCollection Connection => connection;
    }
}
