namespace HeaderCache.Tests.Integration;

/// <summary>
/// The client ends (FIN) inside a head, cache on vs off on the same bytes. Kestrel answers 400, but the FIN also makes
/// it abort the connection's output, and the two race: sometimes the connection just closes, with the cache on or off
/// alike, and the busier the machine the more often (docs/kestrel.md). So these tests run alone, and each server gets
/// tries until it has given the 400.
/// </summary>
[Collection(QuietServerPairGroup.Name)]
public sealed class ClientEndsInsideAHeadTests(ServerPair servers)
{
    private const int Tries = 100;

    [Theory]
    [InlineData("GET /m HTTP/1.1\r\n")]
    [InlineData("GET /m HT")]
    [InlineData("GET /m HTTP/1.1\r\nHost: x\r\n" + Edge.Cacheable)]
    [InlineData("GET /m HTTP/1.1\r\nHost: x\r\n" + Edge.Cacheable + "X-Partial: va")]
    [InlineData("GET /m HTTP/1.1\r\nHost: x\r\n" + Edge.Cacheable + "X-Partial: va\r")]
    public async Task Same_outcome_when_the_client_ends_inside_a_head(string request)
    {
        // Every try must end in the 400 or in a plain close, each server must give the 400 at least once, and every
        // 400 transcript must be the same.
        byte[] bytes = Edge.Bytes(request);
        var answered = new Dictionary<CacheMode, List<string>>();
        var seen = new List<string>();
        for (int attempt = 1; answered.Count < 2; attempt++)
        {
            Assert.True(attempt <= Tries, $"the 400 did not come from both servers in {Tries} tries: " + string.Join("; ", seen));
            foreach ((CacheMode mode, SampleServer server) in new[] { (CacheMode.KestrelAlone, servers.Alone), (CacheMode.On, servers.On) })
            {
                List<string> transcript = await RawHttp.SendAllAsync(server.EndPoint, bytes, attempt % 2 == 0 ? RawHttp.Whole : RawHttp.RandomSplit(attempt, 8));
                string summary = Edge.Summary(transcript);
                seen.Add($"{mode}: {summary}");
                Assert.True(summary is "400|closed" or "|closed", summary);
                if (summary == "400|closed")
                {
                    answered.TryAdd(mode, transcript);
                    Assert.Equal(answered[mode], transcript);
                }
            }

            if (answered.Count < 2)
            {
                await Task.Delay(Math.Min(10 * attempt, 200));
            }
        }

        Assert.Equal(answered[CacheMode.KestrelAlone], answered[CacheMode.On]);
    }
}
