using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Tests.Requests;

/// <summary>How a request finds its connection's request-level part: the connection whose head was shown last on the
/// thread, when the request's features are that connection's, else the lookup through the features.</summary>
public sealed class CachedRequestHeadersLookupTests
{
    [Fact]
    public void A_request_gets_its_own_connections_part_whichever_connection_showed_a_head_last_on_the_thread()
    {
        var (a, featuresA) = Connection();
        var (b, featuresB) = Connection();
        var withoutHeaderCache = new FeatureCollection();

        a.OnHeadShown();
        Assert.Same(a, CachedRequestHeaders.Of(featuresA));
        Assert.Same(b, CachedRequestHeaders.Of(featuresB));
        Assert.Null(CachedRequestHeaders.Of(withoutHeaderCache));

        b.OnHeadShown();
        Assert.Same(a, CachedRequestHeaders.Of(featuresA));
        Assert.Same(b, CachedRequestHeaders.Of(featuresB));
        Assert.Null(CachedRequestHeaders.Of(withoutHeaderCache));

        // The features no longer lead to the connection's part: only the thread's record can find it, and does, for
        // that connection's own requests only.
        Forget(featuresA);
        Forget(featuresB);
        a.OnHeadShown();
        Assert.Same(a, CachedRequestHeaders.Of(featuresA));
        Assert.Null(CachedRequestHeaders.Of(featuresB));
        b.OnHeadShown();
        Assert.Same(b, CachedRequestHeaders.Of(featuresB));
        Assert.Null(CachedRequestHeaders.Of(featuresA));

        // A connection that ended is found by nothing but its features.
        b.Detach();
        Assert.Null(CachedRequestHeaders.Of(featuresB));
    }

    [Fact]
    public void The_thread_record_is_per_thread()
    {
        var (a, featuresA) = Connection();
        Assert.Same(a, CachedRequestHeaders.Of(featuresA));
        Forget(featuresA);
        a.OnHeadShown();

        // Another thread has not seen a's head: its lookup goes through the features, which no longer lead to a. (A
        // thread of its own, not an await, so that this test's thread stays the one that saw the head.)
        CachedRequestHeaders? elsewhere = a;
        var other = new Thread(() => elsewhere = CachedRequestHeaders.Of(featuresA));
        other.Start();
        other.Join();
        Assert.Null(elsewhere);
        Assert.Same(a, CachedRequestHeaders.Of(featuresA));
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
