using System.Text;
using HeaderCache.Fields;
using HeaderCache.InMemory;
using HeaderCache.Traffic;

namespace HeaderCache.Tests.Http2;

/// <summary>
/// On HTTP/2 the application gets one instance per header value a connection repeats, whether the reader took the
/// field out of its block or left it for Kestrel: a field that adds to the table, or a reference to the table among
/// names that stay, gets the strings the caches hold for it in place of Kestrel's (never a new one: where the caches
/// hold none, Kestrel's stays, and the first reference to the entry gets the cache's). The headers are Kestrel alone's,
/// in Kestrel alone's order; Kestrel alone reuses only a known header's value the same stream object had in its
/// previous request.
/// </summary>
public sealed class AppVisibleReuseTests
{
    [Theory]
    [InlineData("chrome", "nghttp2", false)]
    [InlineData("chrome", "nghttp2", true)]
    [InlineData("firefox", "chrome", false)]
    [InlineData("safari", "nghttp2", true)]
    public void The_headers_are_Kestrel_alones_and_more_repeated_values_are_one_instance(string profileName, string encoder, bool shortCrumbs)
    {
        TrafficProfile profile = TrafficProfile.Load(profileName);
        HpackEncoding encoding = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        AppVisibleReuse.Counts alone = AppVisibleReuse.Measure(headerCache: false, http2: true, profile, encoding, shortCrumbs, streams: 1, length: 6, connections: 4);
        AppVisibleReuse.Counts cached = AppVisibleReuse.Measure(headerCache: true, http2: true, profile, encoding, shortCrumbs, streams: 1, length: 6, connections: 4);

        Assert.Equal(alone.Connections.Count, cached.Connections.Count);
        for (int c = 0; c < alone.Connections.Count; c++)
        {
            Assert.Equal(alone.Connections[c].Count, cached.Connections[c].Count);
            for (int r = 0; r < alone.Connections[c].Count; r++)
            {
                Assert.Equal(alone.Connections[c][r], cached.Connections[c][r]);
            }
        }

        // The first request's fields all add to the table and stay for Kestrel, and its request offers Kestrel's strings
        // back (to the table's entries; a cookie's crumbs joined, to the cache of values); the second's refer to them and
        // are taken, and get those strings: every repeated value is the first request's instance. The names Kestrel acts
        // on (Host, from :authority) stay Kestrel's, which reuses a value only on the same stream object (a busy
        // machine may give the next request another).
        Assert.Equal(alone.Repeated, cached.Repeated);
        Assert.True(cached.Share > alone.Share, $"HeaderCache {cached.Share:0.000}, Kestrel alone {alone.Share:0.000}");
        foreach ((string name, (long repeated, long same)) in cached.ByName)
        {
            if (FieldNames.Classify(Encoding.ASCII.GetBytes(name)) != FieldNames.Kept)
            {
                Assert.True(same == repeated, $"{name}: {same} of {repeated} the earlier instance");
            }
        }

        Assert.True(alone.Share < 0.6, $"Kestrel alone: {alone.Share:0.000}");
    }

    [Theory]
    [InlineData(false, 1)]
    [InlineData(true, 1)]
    [InlineData(false, 6)]
    [InlineData(true, 6)]
    public void With_nghttp2s_encoder_on_long_connections_at_least_95_percent_of_repeated_values_are_the_earlier_instance(bool shortCrumbs, int streams)
    {
        TrafficProfile profile = TrafficProfile.Load("chrome");
        AppVisibleReuse.Counts cached = AppVisibleReuse.Measure(headerCache: true, http2: true, profile, HpackEncoding.Nghttp2, shortCrumbs, streams, length: 384, connections: 2);

        Assert.True(cached.Share >= 0.95, $"HeaderCache: {cached.Share:0.000} of {cached.Repeated}");
    }
}
