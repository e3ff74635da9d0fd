using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Tests.Integration;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Tests.Diagnostics;

/// <summary>The observable instruments: open connections are read when observed, ended ones kept, none counted twice.</summary>
public sealed class HeaderCacheMetricsTests : IDisposable
{
    private readonly ServiceProvider _services = new ServiceCollection().AddMetrics().AddSingleton<HeaderCacheMetrics>().BuildServiceProvider();

    private HeaderCacheMetrics Metrics => _services.GetRequiredService<HeaderCacheMetrics>();

    [Fact]
    public void Each_instrument_reports_its_counter()
    {
        using var activity = new CacheActivity(_services);
        var connection = new FakeConnection { Current = new() { Hits = 1, Misses = 2, Evictions = 3, BytesSaved = 4, LinesServed = 5, LinesCreated = 6 } };
        Metrics.Register(connection);

        Assert.Equal(
            (1, 2, 3, 4, 5, 6),
            (activity.Get("headercache.hits"), activity.Get("headercache.misses"), activity.Get("headercache.evictions"),
                activity.Get("headercache.saved_bytes"), activity.Get("headercache.lines|served"), activity.Get("headercache.lines|created")));
    }

    [Fact]
    public void Totals_read_open_connections_and_keep_them_once_they_end()
    {
        using var activity = new CacheActivity(_services);
        var first = new FakeConnection();
        var second = new FakeConnection();
        Metrics.Register(first);
        Metrics.Register(second);

        first.Current.Hits = 5;
        second.Current.Hits = 3;
        Assert.Equal(8, activity.Hits);

        // Nothing is published: the next observation reads what the open connections did since.
        first.Current.Hits = 7;
        Assert.Equal(10, activity.Hits);

        Metrics.Unregister(first);
        Assert.Equal(10, activity.Hits);

        // An ended connection is kept as it was when it ended, and no longer read.
        first.Current.Hits = 100;
        second.Current.Hits = 4;
        Assert.Equal(11, activity.Hits);

        Metrics.Unregister(second);
        Assert.Equal(11, activity.Hits);

        // A connection in the middle of the list leaves it whole.
        var third = new FakeConnection { Current = new() { Hits = 1 } };
        var fourth = new FakeConnection { Current = new() { Hits = 2 } };
        var fifth = new FakeConnection { Current = new() { Hits = 4 } };
        Metrics.Register(third);
        Metrics.Register(fourth);
        Metrics.Register(fifth);
        Metrics.Unregister(fourth);
        third.Current.Hits = 10;
        fifth.Current.Hits = 40;
        Assert.Equal(11 + 10 + 2 + 40, activity.Hits);
    }

    [Fact]
    public void An_activity_made_later_counts_only_what_happened_while_it_was_alive()
    {
        var ended = new FakeConnection { Current = new() { Hits = 6 } };
        var open = new FakeConnection { Current = new() { Hits = 4 } };
        Metrics.Register(ended);
        Metrics.Register(open);
        Metrics.Unregister(ended);

        using var activity = new CacheActivity(_services);
        Assert.Equal(0, activity.Hits);

        open.Current.Hits = 5;
        Assert.Equal(1, activity.Hits);
    }

    public void Dispose() => _services.Dispose();

    private sealed class FakeConnection : MeteredConnection
    {
        public CacheCounters Current;

        public override CacheCounters Counters => Current;
    }
}
