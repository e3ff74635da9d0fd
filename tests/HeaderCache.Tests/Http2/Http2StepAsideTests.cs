using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Traffic;

namespace HeaderCache.Tests.Http2;

/// <summary>An HTTP/2 connection whose values do not repeat steps aside as an HTTP/1.1 one does
/// (<c>values_do_not_repeat</c>), whatever its client's HPACK encoder does with them, and so does one whose blocks hold
/// only what Kestrel acts on (<c>nothing_to_cache</c>, the profiles' bare heads); one whose values come back stays.</summary>
public sealed class Http2StepAsideTests
{
    [Theory]
    [InlineData("churn", "chrome", false, "values_do_not_repeat")]
    [InlineData("churn", "nghttp2", false, "values_do_not_repeat")]
    [InlineData("churn", "httpclient", false, "values_do_not_repeat")]
    [InlineData("chrome", "chrome", false, null)]
    [InlineData("firefox", "httpclient", false, null)]
    [InlineData("proxy-pool", "chrome", false, null)]
    [InlineData("proxy-pool", "httpclient", false, null)]
    [InlineData("safari", "nghttp2", false, null)]
    [InlineData("chrome", "chrome", true, "nothing_to_cache")]
    [InlineData("proxy-pool", "nghttp2", true, "nothing_to_cache")]
    [InlineData("safari", "httpclient", true, "nothing_to_cache")]
    public async Task A_connection_steps_aside_only_where_its_values_do_not_repeat_or_it_has_nothing_to_cache(string profileName, string encoder, bool bare, string? reason)
    {
        await using InMemoryKestrel server = await InMemoryKestrel.StartHttp2Async(headerCache: true, static _ => Task.CompletedTask);
        InMemoryClient client = server.Connect();
        Http2Exchange exchange = await Http2Exchange.OpenAsync(client);
        TrafficProfile.Connection connection = TrafficProfile.Load(profileName).Connect(7);
        var hpack = new HpackEncoder();
        HpackEncoding encoding = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        for (int i = 0; i < 48; i++)
        {
            await exchange.RoundTripAsync(ConnectionBytes.HeadersFrame(hpack, Http2Request.Fields(connection.RenderText(i), bare), encoding));
        }

        IHeaderStringCacheFeature feature = client.ServerFeatures.Get<IHeaderStringCacheFeature>()!;
        Assert.Equal(reason, feature.InactiveReason);
        await client.CompleteAsync();
    }
}
