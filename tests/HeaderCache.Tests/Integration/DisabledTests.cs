using HeaderCache.Traffic;

namespace HeaderCache.Tests.Integration;

/// <summary>HeaderCache registered but switched off behaves like Kestrel alone, and leaves no trace.</summary>
[Collection(ServerPairGroup.Name)]
public sealed class DisabledTests(ServerPair servers)
{
    [Fact]
    public async Task Registered_but_disabled_answers_as_Kestrel_alone_and_never_runs()
    {
        await using SampleServer disabled = await SampleServer.StartAsync(CacheMode.Disabled);
        using var activity = new CacheActivity(disabled);
        TrafficProfile.Connection chrome = TrafficProfile.Load("chrome").Connect(seed: 3);
        byte[][] requests = Enumerable.Range(0, 6).Select(chrome.Render).ToArray();
        byte[] odd = Edge.Bytes($"GET /m HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nX-Empty:\r\nx-a: 2\r\n\r\n");
        IReadOnlyList<IReadOnlyList<byte[]>> batches = [.. requests.Select(r => (IReadOnlyList<byte[]>)[r]), [odd]];

        // The same connection engages a cache that is on, so that nothing served below means switched off.
        List<string> alone = await Differential.AssertSameAsync(servers, endPoint => RawHttp.ExchangeAsync(endPoint, batches, RawHttp.RandomSplit(5)));
        List<string> off = await RawHttp.ExchangeAsync(disabled.EndPoint, batches, RawHttp.RandomSplit(5));

        Assert.Equal(alone, off);
        Assert.Equal(8, alone.Count);
        Assert.All(alone.SkipLast(1), response => Assert.Equal(200, RawHttp.Status(response)));
        Assert.Equal(1, await activity.ConnectionsAsync("skipped", "disabled"));
        Assert.Equal((0, false), (activity.LinesTaken, activity.Engaged));
    }
}
