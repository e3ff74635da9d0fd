using System.Collections.Concurrent;
using System.Reflection;
using System.Text;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Connection;
using HeaderCache.Traffic;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// A connection that waits long for its next request lets go of its memo of lines and its queue (<see cref="IdleTrim"/>):
/// the requests after that are answered and seen exactly as by Kestrel alone, the cache's strings stay, and no trim
/// happens while a request runs.
/// </summary>
public sealed class IdleTrimTests
{
    private static readonly TimeSpan TrimDeadline = TimeSpan.FromSeconds(10);

    [Fact]
    public async Task Requests_after_trims_get_what_Kestrel_alone_gives_and_keep_the_cached_strings()
    {
        var seenOn = new HeaderRecorder();
        var connections = new ConnectionCatcher();
        await using SampleServer on = await SampleServer.StartAsync(CacheMode.On, builder =>
        {
            seenOn.Install(builder);
            connections.Install(builder);
        });
        var seenAlone = new HeaderRecorder();
        await using SampleServer alone = await SampleServer.StartAsync(CacheMode.KestrelAlone, seenAlone.Install);
        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(11);
        var batches = Enumerable.Range(0, 8).Select(i => (IReadOnlyList<byte[]>)[traffic.Render(i)]).ToList();

        // After every even request the connection is trimmed: the memo, which held the request's lines, holds none after.
        var remembered = new List<(int Before, int After)>();
        List<string> trimmed = await RawHttp.ExchangeAsync(on.EndPoint, batches, RawHttp.RandomSplit(5), afterBatch: async index =>
        {
            HeaderCacheConnection connection = connections.Single();
            int before = Remembered(connection, batches[index][0]);
            if (index % 2 == 0)
            {
                await TrimAsync(connection);
            }

            remembered.Add((before, Remembered(connection, batches[index][0])));
        });
        List<string> kestrel = await RawHttp.ExchangeAsync(alone.EndPoint, batches, RawHttp.RandomSplit(5));

        Assert.Equal(kestrel, trimmed);
        Assert.Equal(9, trimmed.Count);
        Assert.Equal(seenAlone.Requests.Select(r => r.Headers), seenOn.Requests.Select(r => r.Headers));
        Assert.All(remembered, counts => Assert.True(counts.Before > 5, $"{counts.Before} lines remembered"));
        Assert.Equal([0, 0, 0, 0], remembered.Where((_, head) => head % 2 == 0).Select(counts => counts.After));
        Assert.All(remembered.Where((_, head) => head % 2 == 1), counts => Assert.Equal(counts.Before, counts.After));

        // The caches stay: every request got the one string the cache holds, where Kestrel alone made one each time.
        Assert.Single(seenOn.Requests.Select(r => Value(r, "sec-ch-ua")).Distinct(ReferenceEqualityComparer.Instance));
        Assert.Equal(8, seenAlone.Requests.Select(r => Value(r, "sec-ch-ua")).Distinct(ReferenceEqualityComparer.Instance).Count());
    }

    [Fact]
    public async Task No_trim_while_a_request_runs_after_reading_its_whole_body()
    {
        var connections = new ConnectionCatcher();
        var hold = new HoldingEndpoint();
        await using SampleServer on = await SampleServer.StartAsync(CacheMode.On, builder =>
        {
            connections.Install(builder);
            hold.Install(builder);
        });
        byte[] request = Encoding.ASCII.GetBytes(
            "POST /hold HTTP/1.1\r\nHost: localhost\r\nsec-ch-ua: \"Chromium\";v=\"131\"\r\nx-trace: 1\r\nContent-Length: 5\r\n\r\nhello");
        Task<List<string>> exchange = RawHttp.ExchangeAsync(on.EndPoint, [[request], [request]], RawHttp.Whole, afterBatch: async index =>
        {
            if (index == 0)
            {
                await TrimAsync(connections.Single());
            }
        });

        // The first request: its body is read, and the application holds it while the heartbeat beats on.
        await hold.Entered.WaitAsync(TrimDeadline);
        HeaderCacheConnection connection = connections.Single();
        for (int beat = 0; beat < 3 * IdleTrim.HeartbeatsBeforeTrim; beat++)
        {
            Assert.False(connection.OnHeartbeat(), $"trimmed at beat {beat} while the request ran");
            await Task.Delay(2);
        }

        Assert.True(connection.Hits + connection.Misses > 0);
        hold.Release();
        List<string> transcript = await exchange;
        Assert.Equal(["hello", "hello"], transcript.Take(2).Select(RawHttp.Body));
    }

    [Fact]
    public async Task Kestrels_own_heartbeat_trims_a_connection_that_waits()
    {
        var connections = new ConnectionCatcher();
        await using SampleServer on = await SampleServer.StartAsync(CacheMode.On, connections.Install);
        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(12);
        var batches = Enumerable.Range(0, 3).Select(i => (IReadOnlyList<byte[]>)[traffic.Render(i)]).ToList();
        var remembered = new List<int>();
        await RawHttp.ExchangeAsync(on.EndPoint, batches, RawHttp.Whole, afterBatch: async index =>
        {
            remembered.Add(Remembered(connections.Single(), batches[index][0]));
            if (index == 1)
            {
                // Kestrel beats once a second; two more beats cover the first beat's phase and a slow machine.
                await Task.Delay(TimeSpan.FromSeconds(IdleTrim.HeartbeatsBeforeTrim + 2));
                remembered.Add(Remembered(connections.Single(), batches[index][0]));
            }
        });

        // The memo held the lines of the first two heads, none after the wait, and the lines of the head after it.
        Assert.True(remembered[0] > 5 && remembered[1] > 5, string.Join(", ", remembered));
        Assert.Equal(0, remembered[2]);
        Assert.True(remembered[3] > 5, string.Join(", ", remembered));
    }

    // How many of a request's header lines the connection's memo holds.
    private static int Remembered(HeaderCacheConnection connection, byte[] request) =>
        Encoding.ASCII.GetString(request).Split("\r\n", StringSplitOptions.RemoveEmptyEntries).Skip(1)
            .Count(line => Memo(connection).Find(Encoding.ASCII.GetBytes(line)) >= 0);

    // The memo of lines of a live connection's HTTP/1.1 reader, which nothing in the library hands out: read from the
    // fields that hold it.
    private static LineMemo Memo(HeaderCacheConnection connection)
    {
        object http1 = Field(connection, "_http1");
        return (LineMemo)Field(Field(http1, "_compactor"), "_memo");
    }

    private static object Field(object owner, string name) =>
        owner.GetType().GetField(name, BindingFlags.Instance | BindingFlags.NonPublic)!.GetValue(owner)
            ?? throw new InvalidOperationException($"{owner.GetType().Name}.{name} is null");

    // Beats until the connection, once it waits for its next request, is trimmed.
    private static async Task TrimAsync(HeaderCacheConnection connection)
    {
        DateTime deadline = DateTime.UtcNow + TrimDeadline;
        while (!connection.OnHeartbeat())
        {
            Assert.True(DateTime.UtcNow < deadline, "the connection was not trimmed");
            await Task.Delay(1);
        }
    }

    private static string Value(HeaderRecorder.Request request, string name) =>
        request.Headers.Single(h => string.Equals(h.Name, name, StringComparison.OrdinalIgnoreCase)).Value;

    // Keeps the HeaderCache part of every connection a request came on.
    private sealed class ConnectionCatcher
    {
        private readonly ConcurrentDictionary<string, HeaderCacheConnection> _connections = new();

        public void Install(WebApplicationBuilder builder) => FirstMiddleware.Install(builder, (context, next) =>
        {
            _connections.TryAdd(context.Connection.Id, (HeaderCacheConnection)context.Features.Get<IHeaderStringCacheFeature>()!);
            return next(context);
        });

        public HeaderCacheConnection Single() => _connections.Values.Single();
    }

    // POST /hold: reads the whole body, then holds the first request until released, and echoes the body.
    private sealed class HoldingEndpoint
    {
        private readonly TaskCompletionSource _entered = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly TaskCompletionSource _released = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task Entered => _entered.Task;

        public void Install(WebApplicationBuilder builder) => FirstMiddleware.Install(builder, async (context, next) =>
        {
            if (!context.Request.Path.Equals("/hold", StringComparison.Ordinal))
            {
                await next(context);
                return;
            }

            using var body = new StreamReader(context.Request.Body);
            string text = await body.ReadToEndAsync();
            _entered.TrySetResult();
            await _released.Task;
            await context.Response.WriteAsync(text);
        });

        public void Release() => _released.TrySetResult();
    }
}
