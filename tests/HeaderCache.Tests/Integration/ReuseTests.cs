using System.Collections.Concurrent;
using HeaderCache.Connection;
using HeaderCache.Traffic;

namespace HeaderCache.Tests.Integration;

/// <summary>Reuse is real: on one connection the same bytes come back as the same string instance.</summary>
public sealed class ReuseTests
{
    [Fact]
    public async Task Repeated_values_and_names_on_one_connection_are_the_same_instances_only_with_the_cache()
    {
        // 64 slots hold the whole chrome working set, so every repeat is a hit.
        Dictionary<string, int> on = await CountDistinctInstancesAsync(CacheMode.On, "--HeaderCache:SlotCount=64");
        Dictionary<string, int> off = await CountDistinctInstancesAsync(CacheMode.KestrelAlone);

        // Unknown headers: Kestrel alone allocates name and value on every request (12 requests here).
        Assert.Equal(12, off["value sec-ch-ua"]);
        Assert.Equal(12, off["name sec-ch-ua"]);
        Assert.Equal(12, off["value Sec-Fetch-Dest"]);

        // With the cache: one instance per distinct value on the connection.
        Assert.Equal(1, on["value sec-ch-ua"]);
        Assert.Equal(1, on["name sec-ch-ua"]);
        Assert.Equal(1, on["name Sec-Fetch-Site"]);
        Assert.Equal(5, on["value Sec-Fetch-Dest"]); // document, style, script, image, empty
        Assert.Equal(4, on["value Accept"]);         // html, css, */*, image: defeats Kestrel's single slot
        Assert.True(off["value Accept"] > 4, $"Kestrel alone: {off["value Accept"]} Accept instances");
    }

    [Fact]
    public async Task With_the_default_25_slots_chrome_allocates_fewer_instances_than_Kestrel_alone()
    {
        Dictionary<string, int> on = await CountDistinctInstancesAsync(CacheMode.On);
        Dictionary<string, int> off = await CountDistinctInstancesAsync(CacheMode.KestrelAlone);
        int onTotal = on.Values.Sum();
        int offTotal = off.Values.Sum();
        Assert.True(onTotal < offTotal / 2, $"instances with the cache {onTotal}, without {offTotal}");
        Assert.Equal(1, on["value sec-ch-ua"]);
    }

    [Fact]
    public async Task Two_connections_never_share_a_string_made_from_what_a_client_sent()
    {
        // Through sockets; the second connection opens once the first has given its reading state back, the only one in
        // the pool, and reads with it (ReadingStatePoolTests has the same in process, on both protocols).
        var recorder = new HeaderRecorder();
        var connections = new ConcurrentDictionary<string, (HeaderCacheConnection Connection, ReadingState State)>();
        await using SampleServer server = await SampleServer.StartAsync(CacheMode.On, builder =>
        {
            recorder.Install(builder);
            FirstMiddleware.Install(builder, (context, next) =>
            {
                var connection = (HeaderCacheConnection)context.Features.Get<IHeaderStringCacheFeature>()!;
                connections.TryAdd(context.Connection.Id, (connection, ReadingStatePoolTests.StateOf(connection)!));
                return next(context);
            });
        });
        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(5);
        byte[] request = traffic.Render(1);
        var states = new List<ReadingState>();
        var idle = new List<ReadingState[]>();
        foreach (int _ in new[] { 1, 2 })
        {
            List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [[request], [request]], RawHttp.Whole);
            Assert.All(transcript.SkipLast(1), r => Assert.Equal(200, RawHttp.Status(r)));
            (HeaderCacheConnection connection, ReadingState state) = connections[recorder.Requests.Last().ConnectionId];
            states.Add(state);
            await ReadingStatePoolTests.WaitUntilEndedAsync(connection);
            idle.Add(ReadingStatePoolTests.IdleStates(connection));
        }

        Assert.Equal([states[0]], idle[0]);
        Assert.Same(states[0], states[1]);
        var byConnection = recorder.Requests.GroupBy(r => r.ConnectionId).ToArray();
        Assert.Equal(2, byConnection.Length);
        string Value(IGrouping<string, HeaderRecorder.Request> connection) =>
            connection.First().Headers.Single(h => h.Name == "sec-ch-ua").Value;
        Assert.Equal(Value(byConnection[0]), Value(byConnection[1]));
        Assert.False(ReferenceEquals(Value(byConnection[0]), Value(byConnection[1])));
    }

    private static async Task<Dictionary<string, int>> CountDistinctInstancesAsync(CacheMode mode, params string[] settings)
    {
        var recorder = new HeaderRecorder();
        await using SampleServer server = await SampleServer.StartAsync(mode, recorder.Install, settings);
        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(3);
        var batches = Enumerable.Range(0, 12).Select(i => (IReadOnlyList<byte[]>)[traffic.Render(i)]).ToList();
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, batches, RawHttp.Whole);
        Assert.Equal(13, transcript.Count);

        var requests = recorder.Requests.ToArray();
        Assert.Equal(12, requests.Length);
        Assert.Single(requests.Select(r => r.ConnectionId).Distinct());
        return requests
            .SelectMany(r => r.Headers.SelectMany(h => new[] { ("name " + h.Name, (object)h.Name), ("value " + h.Name, h.Value) }))
            .GroupBy(e => e.Item1, StringComparer.OrdinalIgnoreCase)
            .ToDictionary(g => g.Key, g => g.Select(e => e.Item2).Distinct(ReferenceEqualityComparer.Instance).Count(), StringComparer.OrdinalIgnoreCase);
    }
}
