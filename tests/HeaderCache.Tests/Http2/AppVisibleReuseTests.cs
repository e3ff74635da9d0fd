using HeaderCache.InMemory;
using HeaderCache.Traffic;

namespace HeaderCache.Tests.Http2;

/// <summary>
/// On HTTP/2 the application gets one instance per header value a connection repeats, whether the reader took the
/// field out of its block or left it for Kestrel: a field that adds to the table, or a reference to the table among
/// names that stay, gets the entry's strings in place of Kestrel's. The headers are Kestrel alone's, in Kestrel alone's
/// order; Kestrel alone reuses only a known header's value the same stream object had in its previous request.
/// </summary>
public sealed class AppVisibleReuseTests
{
    [Theory]
    [InlineData("chrome", "nghttp2", false)]
    [InlineData("chrome", "nghttp2", true)]
    [InlineData("firefox", "chrome", false)]
    [InlineData("safari", "nghttp2", true)]
    public void Every_repeated_value_is_the_first_instance_and_the_headers_are_Kestrel_alones(string profileName, string encoder, bool shortCrumbs)
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

        // The first request's fields all add to the table and stay for Kestrel; the second's refer to them and are taken.
        // Host is Kestrel's (from :authority), as every name it acts on: it reuses it when the request has its previous
        // stream object, alone or not.
        Assert.Equal(alone.Repeated, cached.Repeated);
        Assert.All(cached.ByName.Where(name => name.Key != "host"), name => Assert.True(name.Value.Repeated == name.Value.SameInstance, $"{name.Key}: {name.Value}"));
        Assert.True(alone.Share < 0.6, $"Kestrel alone: {alone.Share:0.000}");
    }

    [Theory]
    [InlineData(false, 1)]
    [InlineData(true, 1)]
    [InlineData(false, 6)]
    [InlineData(true, 6)]
    public void With_nghttp2s_encoder_at_least_95_percent_of_repeated_values_are_the_earlier_instance(bool shortCrumbs, int streams)
    {
        TrafficProfile profile = TrafficProfile.Load("chrome");
        AppVisibleReuse.Counts cached = AppVisibleReuse.Measure(headerCache: true, http2: true, profile, HpackEncoding.Nghttp2, shortCrumbs, streams, length: 48, connections: 8);

        Assert.True(cached.Share >= 0.95, $"HeaderCache: {cached.Share:0.000} of {cached.Repeated}");
    }
}
