using System.Text.Json;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// The sample's <c>valueReuse</c> in <c>/stats</c> (the browser benchmark's same-instance share) counts what it says:
/// only values a connection repeats, only other connections than the one asking.
/// </summary>
public sealed class SampleValueReuseTests
{
    [Theory]
    [InlineData(CacheMode.On, 6)]
    // Kestrel alone reuses a known header's value when the previous request on the connection had the same one
    // (Host, Accept), never an unknown header's (X-Custom).
    [InlineData(CacheMode.KestrelAlone, 4)]
    public async Task Repeated_values_are_counted_by_instance(CacheMode mode, int sameInstance)
    {
        await using SampleServer server = await SampleServer.StartAsync(mode, settings: "--Sample:CacheStats=true");
        byte[] request = "GET /plaintext HTTP/1.1\r\nHost: localhost\r\nAccept: text/plain\r\nX-Custom: abc\r\n\r\n"u8.ToArray();
        await RawHttp.ExchangeAsync(server.EndPoint, [[request], [request], [request]], RawHttp.Whole);

        byte[] stats = "GET /stats HTTP/1.1\r\nHost: localhost\r\n\r\n"u8.ToArray();
        List<string> answers = await RawHttp.ExchangeAsync(server.EndPoint, [[stats], [stats]], RawHttp.Whole);

        // The second /stats, after the asking connection has sent a repeat of its own, still counts only the other.
        using JsonDocument document = JsonDocument.Parse(RawHttp.Body(answers[1]));
        JsonElement reuse = document.RootElement.GetProperty("valueReuse");
        Assert.Equal(6, reuse.GetProperty("repeated").GetInt64());
        Assert.Equal(sameInstance, reuse.GetProperty("sameInstance").GetInt64());
        Assert.Equal(1, reuse.GetProperty("connections").GetInt64());
        Assert.Equal(3, reuse.GetProperty("protocols").GetProperty("HTTP/1.1").GetInt64());
    }

    [Fact]
    public async Task Without_cache_stats_nothing_is_counted()
    {
        await using SampleServer server = await SampleServer.StartAsync(CacheMode.On);
        byte[] stats = "GET /stats HTTP/1.1\r\nHost: localhost\r\n\r\n"u8.ToArray();
        List<string> answers = await RawHttp.ExchangeAsync(server.EndPoint, [[stats]], RawHttp.Whole);

        using JsonDocument document = JsonDocument.Parse(RawHttp.Body(answers[0]));
        Assert.Equal(JsonValueKind.Null, document.RootElement.GetProperty("valueReuse").ValueKind);
    }
}
