using HeaderCache.Compaction;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Tests.Requests;

/// <summary>A request finds its connection's headers through the connection's flow, and only where the features
/// agree: a flow never hands one connection's lines to another's request.</summary>
public sealed class CachedRequestHeadersFlowTests
{
    [Fact]
    public async Task A_request_of_the_connection_the_flow_carries_finds_its_headers_without_the_features_after_the_first()
    {
        var headers = new CachedRequestHeaders(new HeaderInjectionQueue());
        var features = new FeatureCollection();
        features.Set(headers);

        await Task.Run(async () =>
        {
            CachedRequestHeaders.Flow(headers);
            Assert.Same(headers, CachedRequestHeaders.Find(features));

            // Gone from the features, it is still found: the second request took the shortcut.
            features.Set<CachedRequestHeaders>(null);
            await Task.Yield();
            Assert.Same(headers, CachedRequestHeaders.Find(features));
        });

        // Outside that flow only the features count.
        Assert.Null(CachedRequestHeaders.Find(features));
    }

    [Fact]
    public async Task A_flow_carrying_another_connections_headers_is_not_trusted()
    {
        var mine = new CachedRequestHeaders(new HeaderInjectionQueue());
        var other = new CachedRequestHeaders(new HeaderInjectionQueue());
        var myFeatures = new FeatureCollection();
        myFeatures.Set(mine);
        var otherFeatures = new FeatureCollection();
        otherFeatures.Set(other);

        await Task.Run(() =>
        {
            CachedRequestHeaders.Flow(other);
            Assert.Same(other, CachedRequestHeaders.Find(otherFeatures));
            Assert.Same(mine, CachedRequestHeaders.Find(myFeatures));
            Assert.Null(CachedRequestHeaders.Find(new FeatureCollection()));
        });
    }
}
