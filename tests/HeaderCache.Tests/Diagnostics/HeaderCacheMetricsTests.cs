using System.Diagnostics.Metrics;
using System.Text;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Tests.Integration;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Tests.Diagnostics;

/// <summary>
/// The instruments: what each counts, over a real server, to the byte; open connections read when observed, ended
/// ones kept, none counted twice.
/// </summary>
public sealed class HeaderCacheMetricsTests : IDisposable
{
    // The managed size of a string of three characters: every name and value below is one.
    private static readonly int Three = HeaderStringCache.StringSize(3);

    private readonly ServiceProvider _services = new ServiceCollection().AddMetrics().AddSingleton<HeaderCacheMetrics>().BuildServiceProvider();

    private HeaderCacheMetrics Metrics => _services.GetRequiredService<HeaderCacheMetrics>();

    [Fact]
    public void The_instruments_are_named_with_their_unit_apart()
    {
        var published = new List<(string Name, string? Unit, string Kind)>();
        object scope = _services.GetRequiredService<IMeterFactory>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                if (instrument.Meter.Name == HeaderCacheOptions.MeterName && ReferenceEquals(instrument.Meter.Scope, scope))
                {
                    published.Add((instrument.Name, instrument.Unit, instrument.GetType().Name));
                }
            },
        };
        _ = Metrics;
        listener.Start();

        Assert.Equal(
            [
                ("headercache.allocation.avoided", "By", "ObservableCounter`1"),
                ("headercache.connections", "{connection}", "Counter`1"),
                ("headercache.evictions", "{string}", "ObservableCounter`1"),
                ("headercache.lines", "{line}", "ObservableCounter`1"),
            ],
            published.OrderBy(i => i.Name, StringComparer.Ordinal));
    }

    [Fact]
    public void Each_instrument_reports_its_counter()
    {
        using var activity = new CacheActivity(_services);
        var connection = new FakeConnection { Current = new() { LinesServed = 1, LinesCreated = 2, AvoidedBytes = 3, ValueEvictions = 4, NameEvictions = 5 } };
        Metrics.Register(connection.Entry);

        Assert.Equal(
            (1, 2, 3, 4, 5),
            (activity.Get("headercache.lines|served"), activity.Get("headercache.lines|created"), activity.Get("headercache.allocation.avoided"),
                activity.Get("headercache.evictions|value"), activity.Get("headercache.evictions|name")));
    }

    [Fact]
    public void Totals_read_open_connections_and_keep_them_once_they_end()
    {
        using var activity = new CacheActivity(_services);
        var first = new FakeConnection();
        var second = new FakeConnection();
        Metrics.Register(first.Entry);
        Metrics.Register(second.Entry);

        first.Current.LinesServed = 5;
        second.Current.LinesServed = 3;
        Assert.Equal(8, activity.LinesServed);

        // Nothing is published: the next observation reads what the open connections did since.
        first.Current.LinesServed = 7;
        Assert.Equal(10, activity.LinesServed);

        Metrics.Unregister(first.Entry);
        Assert.Equal(10, activity.LinesServed);

        // An ended connection is kept as it was when it ended, and no longer read.
        first.Current.LinesServed = 100;
        second.Current.LinesServed = 4;
        Assert.Equal(11, activity.LinesServed);

        Metrics.Unregister(second.Entry);
        Assert.Equal(11, activity.LinesServed);

        // A connection in the middle of the list leaves it whole.
        var third = new FakeConnection { Current = new() { LinesServed = 1 } };
        var fourth = new FakeConnection { Current = new() { LinesServed = 2 } };
        var fifth = new FakeConnection { Current = new() { LinesServed = 4 } };
        Metrics.Register(third.Entry);
        Metrics.Register(fourth.Entry);
        Metrics.Register(fifth.Entry);
        Metrics.Unregister(fourth.Entry);
        third.Current.LinesServed = 10;
        fifth.Current.LinesServed = 40;
        Assert.Equal(11 + 10 + 2 + 40, activity.LinesServed);
    }

    [Fact]
    public void An_activity_made_later_counts_only_what_happened_while_it_was_alive()
    {
        var ended = new FakeConnection { Current = new() { LinesServed = 6 } };
        var open = new FakeConnection { Current = new() { LinesServed = 4 } };
        Metrics.Register(ended.Entry);
        Metrics.Register(open.Entry);
        Metrics.Unregister(ended.Entry);

        using var activity = new CacheActivity(_services);
        Assert.Equal(0, activity.LinesServed);

        open.Current.LinesServed = 5;
        Assert.Equal(1, activity.LinesServed);
    }

    [Fact]
    public async Task Over_a_real_server_lines_and_avoided_bytes_are_exactly_those_computed_by_hand()
    {
        var withCache = new HeaderRecorder();
        await using SampleServer server = await SampleServer.StartAsync(CacheMode.On, withCache.Install);
        using var activity = new CacheActivity(server);

        // Host stays for Kestrel and is never counted. Accept is a known header (Kestrel's constant, no name string);
        // x-a and x-e are not (Kestrel alone makes their name string on every request); x-e's value is empty (string.Empty).
        string[] heads =
        [
            // Every string is new: three lines created, nothing avoided.
            "x-a: bbb\r\nAccept: a/1\r\nx-e:\r\n",

            // x-a served: its name and value (32 + 32). Accept: a/2 is new, created. x-e served: its name (32), the empty value costs nothing.
            "x-a: bbb\r\nAccept: a/2\r\nx-e:\r\n",

            // Accept: a/1 differs from the previous request's a/2, so Kestrel alone would make it again: served, its value only (32).
            "x-a: bbb\r\nAccept: a/1\r\nx-e:\r\n",

            // Accept repeats the previous request's single value: Kestrel reuses its string on its own, the line stays for it.
            "x-a: bbb\r\nAccept: a/1\r\nx-e:\r\n",

            // A second Accept line: Kestrel alone would reuse its string for the first and make one for the second. Both are
            // taken out now, to be put back in order, and served; only the second avoids anything (32).
            "x-a: bbb\r\nAccept: a/1\r\nAccept: a/1\r\nx-e:\r\n",
        ];
        await SendAsync(server, heads);
        Assert.Equal(1, await activity.ConnectionsAsync("cached"));

        int xa = Three + Three;
        int xe = Three;
        int accept = Three;
        Assert.Equal(
            (Served: 0 + 2 + 3 + 2 + 4, Created: 3 + 1, Avoided: (xa + xe) + (xa + accept + xe) + (xa + xe) + (xa + 0 + accept + xe)),
            (Served: activity.Get("headercache.lines|served"), Created: activity.Get("headercache.lines|created"), Avoided: activity.Get("headercache.allocation.avoided")));
        Assert.Equal(448, activity.Get("headercache.allocation.avoided"));

        // The hand count's model of Kestrel, checked against Kestrel: the same heads without HeaderCache give the
        // application exactly that many more bytes of new header strings.
        var alone = new HeaderRecorder();
        await using (SampleServer kestrel = await SampleServer.StartAsync(CacheMode.KestrelAlone, alone.Install))
        {
            await SendAsync(kestrel, heads);
        }

        Assert.Equal(448, NewStringBytes(alone) - NewStringBytes(withCache));
    }

    [Fact]
    public async Task Over_a_real_server_evictions_are_counted_by_the_kind_of_string()
    {
        await using SampleServer server = await SampleServer.StartAsync(CacheMode.On, null, "--HeaderCache:SlotCount=1");
        using var activity = new CacheActivity(server);

        // One value slot: each new value evicts the one before; the two names fit in the cache of names. x-b: v2 finds
        // its value in the cache but needs a new name string: the line is created and avoids nothing.
        string[] heads = ["x-a: v1\r\n", "x-a: v2\r\n", "x-b: v2\r\n", "x-b: v3\r\n"];
        await SendAsync(server, heads);
        Assert.Equal(1, await activity.ConnectionsAsync("cached"));

        Assert.Equal((Values: 2, Names: 0), (Values: activity.Get("headercache.evictions|value"), Names: activity.Get("headercache.evictions|name")));
        Assert.Equal(
            (Served: 0, Created: 4, Avoided: 0),
            (Served: activity.Get("headercache.lines|served"), Created: activity.Get("headercache.lines|created"), Avoided: activity.Get("headercache.allocation.avoided")));
    }

    public void Dispose() => _services.Dispose();

    // One GET per head, in turn, on one keep-alive connection.
    private static async Task SendAsync(SampleServer server, string[] heads)
    {
        var batches = heads.Select(h => (IReadOnlyList<byte[]>)[Encoding.ASCII.GetBytes($"GET / HTTP/1.1\r\nHost: x\r\n{h}\r\n")]).ToList();
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, batches, RawHttp.Whole);
        Assert.Equal(heads.Length + 1, transcript.Count);
        Assert.All(transcript.SkipLast(1), r => Assert.Equal(200, RawHttp.Status(r)));
    }

    // The managed bytes of the header name and value strings the application received new: each instance counted
    // the first time it arrives on the connection, constants (interned, as Kestrel's names and string.Empty) never.
    private static long NewStringBytes(HeaderRecorder recorder)
    {
        var seen = new HashSet<string>(ReferenceEqualityComparer.Instance);
        return recorder.Requests
            .SelectMany(r => r.Headers)
            .SelectMany(h => new[] { h.Name, h.Value })
            .Where(s => !ReferenceEquals(string.IsInterned(s), s) && seen.Add(s))
            .Sum(s => (long)HeaderStringCache.StringSize(s.Length));
    }

    private sealed class FakeConnection : MeteredConnection
    {
        public MeteredCounts Current;

        public MeteredConnection Entry => this;

        public override MeteredCounts Counters => Current;
    }
}
