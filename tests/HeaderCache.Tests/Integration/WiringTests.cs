using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Connection;
using HeaderCache.Sample;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HeaderCache.Tests.Integration;

/// <summary>Wiring: half wirings lose nothing and say so once; the switch; live reconfiguration; metrics.</summary>
public sealed class WiringTests
{
    private static readonly byte[] Request = TrafficProfile.Load("chrome").Connect(11).Render(0);

    // Event 2: the connection part is on, the request part is not; event 3: the reverse.
    [Theory]
    [InlineData("connection part only", 2)]
    [InlineData("request part only", 3)]
    public async Task A_half_wiring_passes_everything_through_and_logs_one_error(string wiring, int eventId)
    {
        await using var server = await MinimalServer.StartAsync(builder =>
        {
            if (wiring == "connection part only")
            {
                builder.WebHost.ConfigureKestrel(k => k.UseHeaderStringCache());
            }
            else
            {
                builder.Services.AddHeaderStringCache();
            }
        });
        for (int connection = 0; connection < 3; connection++)
        {
            List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [[Request], [Request]], RawHttp.Whole);
            Differential.AssertAnswers(Request, transcript[0]);
            Differential.AssertAnswers(Request, transcript[1]);
        }

        Assert.False(server.SawCacheFeature);
        var errors = server.Logs.HeaderCache.Where(e => e.Level == LogLevel.Error).ToArray();
        Assert.Single(errors);
        Assert.Equal(eventId, errors[0].Id.Id);
    }

    // The re-injection happens inside CreateContext, so hosting's own readers of request headers (the
    // "Request starting" log reads Content-Type, the W3C propagator reads traceparent) already see the
    // cached strings, on the first request and on later ones served from the cache.
    [Fact]
    public async Task Hosting_diagnostics_see_the_headers_taken_out_of_the_head()
    {
        const string TraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
        const string ParentSpanId = "00f067aa0ba902b7";
        const string ContentType = "application/x-headercache-diagnostics";
        var traceIds = new ConcurrentQueue<string>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == "Microsoft.AspNetCore",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllData,
            ActivityStarted = activity =>
            {
                if (activity.ParentSpanId.ToHexString() == ParentSpanId)
                {
                    traceIds.Enqueue(activity.TraceId.ToHexString());
                }
            },
        };
        ActivitySource.AddActivityListener(listener);
        await using var server = await MinimalServer.StartAsync(builder =>
        {
            builder.WebHost.UseHeaderStringCache();
            builder.Logging.AddFilter("Microsoft.AspNetCore.Hosting.Diagnostics", LogLevel.Information);
        });
        byte[] request = Encoding.ASCII.GetBytes(
            $"POST /diag HTTP/1.1\r\nHost: x\r\ntraceparent: 00-{TraceId}-{ParentSpanId}-01\r\nContent-Type: {ContentType}\r\nContent-Length: 2\r\n\r\nhi");

        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [[request], [request], [request]], RawHttp.Whole);

        Assert.All(transcript.Take(3), response => Assert.Equal(200, RawHttp.Status(response)));
        Assert.True(server.SawCacheFeature);
        // traceparent and Content-Type of the first request; the next two repeat them, and Kestrel reuses its own strings.
        Assert.Equal(2, server.StrippedLines);
        Assert.Equal([TraceId, TraceId, TraceId], traceIds.ToArray());
        string[] starting = server.Logs.Entries
            .Where(e => e.Category == "Microsoft.AspNetCore.Hosting.Diagnostics" && e.Message.StartsWith("Request starting", StringComparison.Ordinal))
            .Select(e => e.Message)
            .ToArray();
        Assert.Equal(3, starting.Length);
        Assert.All(starting, message => Assert.Contains(ContentType, message, StringComparison.Ordinal));
    }

    [Fact]
    public async Task Full_wiring_puts_the_cache_on_connections_and_logs_no_error()
    {
        await using var server = await MinimalServer.StartAsync(builder => builder.WebHost.UseHeaderStringCache());
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [[Request], [Request]], RawHttp.Whole);
        Differential.AssertAnswers(Request, transcript[1]);
        Assert.True(server.SawCacheFeature);
        Assert.DoesNotContain(server.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
    }

    [Fact]
    public async Task A_connection_with_nothing_to_cache_is_left_to_Kestrel_after_16_heads()
    {
        await using var server = await MinimalServer.StartAsync(builder => builder.WebHost.UseHeaderStringCache());
        // Accept is taken from the first head only: from the second on Kestrel reuses its string on its own.
        byte[] plain = "GET / HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"u8.ToArray();
        int requests = CompactingPipeReader.HeadsWithNothingToTake + 3;
        List<string> transcript = await RawHttp.ExchangeAsync(
            server.EndPoint, [.. Enumerable.Repeat<IReadOnlyList<byte[]>>([plain], requests)], RawHttp.Whole);

        Assert.All(transcript.Take(requests), answer => Differential.AssertAnswers(plain, answer));
        string?[] reasons = [.. server.InactiveReasons];
        Assert.Equal(requests, reasons.Length);
        // The 17th head is the 16th with nothing to take: Kestrel has taken it, and the reader stepped aside, before the
        // application runs for it.
        int active = CompactingPipeReader.HeadsWithNothingToTake;
        Assert.All(reasons[..active], reason => Assert.Null(reason));
        Assert.All(reasons[active..], reason => Assert.Equal("nothing_to_cache", reason));
    }

    [Fact]
    public async Task A_connection_whose_values_do_not_repeat_is_left_to_Kestrel_from_the_head_that_ends_a_window_without_hits()
    {
        await using var server = await MinimalServer.StartAsync(builder => builder.WebHost.UseHeaderStringCache());
        // Eight lines of names and values never sent before in every head: eight value lookups a head, none a hit.
        const int LinesPerHead = 8;
        int requests = (ValueAdmission.ValueWindow / LinesPerHead) + 2;
        byte[][] heads = [.. Enumerable.Range(0, requests).Select(i => Encoding.ASCII.GetBytes(
            "GET / HTTP/1.1\r\nHost: x\r\n" + string.Concat(Enumerable.Range(0, LinesPerHead).Select(k => $"X-N{i}-{k}: v{i}-{k}\r\n")) + "\r\n"))];
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [.. heads.Select(head => (IReadOnlyList<byte[]>)[head])], RawHttp.Whole);

        for (int i = 0; i < requests; i++)
        {
            Differential.AssertAnswers(heads[i], transcript[i]);
        }

        string?[] reasons = [.. server.InactiveReasons];
        Assert.Equal(requests, reasons.Length);
        // The window ends at the last line of the eighth head: Kestrel gets that head as it was sent.
        int active = (ValueAdmission.ValueWindow / LinesPerHead) - 1;
        Assert.All(reasons[..active], reason => Assert.Null(reason));
        Assert.All(reasons[active..], reason => Assert.Equal("values_do_not_repeat", reason));
    }

    [Fact]
    public async Task Disabled_puts_no_wrapper_on_connections()
    {
        await using var server = await MinimalServer.StartAsync(builder => builder.WebHost.UseHeaderStringCache(o => o.Enabled = false));
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [[Request], [Request]], RawHttp.Whole);
        Differential.AssertAnswers(Request, transcript[1]);
        Assert.False(server.SawCacheFeature);
        Assert.Equal("disabled", server.InactiveReason);
        Assert.DoesNotContain(server.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
        Assert.Contains(server.Logs.HeaderCache, e => e.Id.Id == 8 && e.Level == LogLevel.Information);
    }

    [Fact]
    public async Task Startup_logs_which_endpoints_have_the_cache()
    {
        await using var server = await MinimalServer.StartAsync(builder => builder.WebHost.UseHeaderStringCache());
        var covered = server.Logs.HeaderCache.Where(e => e.Id.Id == 6).ToArray();
        Assert.Single(covered);
        Assert.Equal(LogLevel.Information, covered[0].Level);
        Assert.Contains($"http://127.0.0.1:{server.EndPoint.Port}", covered[0].Message, StringComparison.Ordinal);
        Assert.DoesNotContain(server.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
    }

    // Kestrel keeps only the last ConfigureEndpointDefaults callback. HeaderCache sets none: it decorates Kestrel's
    // listeners, so the application's own defaults after the one line replace nothing of HeaderCache's, and an endpoint
    // that also calls UseHeaderStringCache() itself gets the same one layer.
    [Fact]
    public async Task Endpoints_with_the_applications_own_defaults_after_the_line_are_all_cached_and_named_at_startup()
    {
        await using var server = await MinimalServer.StartAsync(builder =>
        {
            builder.WebHost.UseHeaderStringCache();
            builder.WebHost.ConfigureKestrel(kestrel =>
            {
                kestrel.ConfigureEndpointDefaults(listen => listen.UseConnectionLogging());
                kestrel.Listen(IPAddress.Loopback, 0);
                kestrel.Listen(IPAddress.Loopback, 0, listen => listen.UseHeaderStringCache());
            });
        });

        string[] addresses = [.. server.Addresses];
        Assert.Equal(2, addresses.Length);
        Assert.DoesNotContain(server.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
        var covered = server.Logs.HeaderCache.Where(e => e.Id.Id == 6).ToArray();
        Assert.Single(covered);
        foreach (string address in addresses)
        {
            Assert.Contains(address, covered[0].Message, StringComparison.Ordinal);
            var endPoint = new IPEndPoint(IPAddress.Loopback, new Uri(address).Port);
            List<string> transcript = await RawHttp.ExchangeAsync(endPoint, [[Request], [Request]], RawHttp.Whole);
            Differential.AssertAnswers(Request, transcript[1]);
            Assert.Equal("yes", await MinimalServer.HasCacheAsync(endPoint));
        }
    }

    // Only the request-level part and one endpoint's own call: the other endpoint is named, with why it has no cache
    // and what to write, in a warning of its own.
    [Fact]
    public async Task An_endpoint_left_without_the_cache_is_named_with_the_cause_and_what_to_write()
    {
        await using var server = await MinimalServer.StartAsync(builder =>
        {
            builder.Services.AddHeaderStringCache();
            builder.WebHost.ConfigureKestrel(kestrel =>
            {
                kestrel.Listen(IPAddress.Loopback, 0);
                kestrel.Listen(IPAddress.Loopback, 0, listen => listen.UseHeaderStringCache());
            });
        });

        string[] addresses = [.. server.Addresses];
        var covered = server.Logs.HeaderCache.Single(e => e.Id.Id == 6);
        string with = addresses.Single(address => covered.Message.Contains(address, StringComparison.Ordinal));
        string without = addresses.Single(address => address != with);
        var named = server.Logs.HeaderCache.Where(e => e.Id.Id == 9).ToArray();
        Assert.Single(named);
        Assert.Equal(LogLevel.Warning, named[0].Level);
        Assert.Contains($"HeaderCache is not on {without}: only endpoints whose ListenOptions call UseHeaderStringCache() get HeaderCache", named[0].Message, StringComparison.Ordinal);
        Assert.Contains("write builder.WebHost.UseHeaderStringCache()", named[0].Message, StringComparison.Ordinal);
        Assert.DoesNotContain(with, named[0].Message, StringComparison.Ordinal);
        Assert.Contains(without, server.Logs.HeaderCache.Single(e => e.Id.Id == 7).Message, StringComparison.Ordinal);
        Assert.Equal("yes", await MinimalServer.HasCacheAsync(new IPEndPoint(IPAddress.Loopback, new Uri(with).Port)));
        Assert.Equal("no", await MinimalServer.HasCacheAsync(new IPEndPoint(IPAddress.Loopback, new Uri(without).Port)));
    }

    // The one line cannot decorate Kestrel's listeners when the application registers the server through a factory of its
    // own: every endpoint is named with that cause, and served by Kestrel alone.
    [Fact]
    public async Task Endpoints_of_a_server_registered_through_a_factory_are_named_with_the_cause()
    {
        await using var server = await MinimalServer.StartAsync(builder =>
        {
            ServiceDescriptor kestrel = builder.Services.Last(d => d.ServiceType == typeof(IServer));
            builder.Services.Remove(kestrel);
            builder.Services.AddSingleton<IServer>(sp => (IServer)ActivatorUtilities.CreateInstance(sp, kestrel.ImplementationType!));
            builder.WebHost.UseHeaderStringCache();
        });

        string address = server.Addresses.Single();
        var named = server.Logs.HeaderCache.Single(e => e.Id.Id == 9);
        Assert.Equal(LogLevel.Warning, named.Level);
        Assert.Contains($"HeaderCache is not on {address}: the registered IServer is not Kestrel registered by its own type", named.Message, StringComparison.Ordinal);
        Assert.Contains("write listenOptions.UseHeaderStringCache() on this endpoint", named.Message, StringComparison.Ordinal);
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [[Request], [Request]], RawHttp.Whole);
        Differential.AssertAnswers(Request, transcript[1]);
        Assert.Equal("no", await MinimalServer.HasCacheAsync(server.EndPoint));
    }

    [Fact]
    public async Task Changing_Enabled_in_appsettings_json_applies_to_new_connections_without_a_restart()
    {
        string folder = Directory.CreateTempSubdirectory("headercache-").FullName;
        string settings = Path.Combine(folder, "appsettings.json");
        await File.WriteAllTextAsync(settings, """{ "HeaderCache": { "Enabled": true } }""");
        try
        {
            await using var server = await MinimalServer.StartAsync(builder =>
            {
                builder.Configuration.AddJsonFile(settings, optional: false, reloadOnChange: true);
                builder.WebHost.UseHeaderStringCache();
            });

            // A connection opened while enabled keeps its cache; new ones after the switch get none.
            using var early = new System.Net.Sockets.TcpClient { NoDelay = true };
            await early.ConnectAsync(server.EndPoint);
            Assert.True(await MinimalServer.ConnectionHasCacheAsync(early));

            await File.WriteAllTextAsync(settings, """{ "HeaderCache": { "Enabled": false } }""");
            Assert.True(await server.EventuallyAsync(hasCache: false), "new connections still get the cache 10 s after Enabled=false");
            Assert.True(await MinimalServer.ConnectionHasCacheAsync(early));

            await File.WriteAllTextAsync(settings, """{ "HeaderCache": { "Enabled": true } }""");
            Assert.True(await server.EventuallyAsync(hasCache: true), "new connections still lack the cache 10 s after Enabled=true");
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }

    // Switched off, on, broken and valid again while the server runs, through a configuration source whose reload the test
    // triggers: each change is logged once, when it is made, whether or not a connection comes in between.
    [Fact]
    public async Task Each_change_of_state_at_runtime_is_logged_once_when_it_is_made()
    {
        var source = new ReloadableSource();
        source.Values["HeaderCache:Enabled"] = "true";
        await using var server = await MinimalServer.StartAsync(builder =>
        {
            ((IConfigurationBuilder)builder.Configuration).Add(source);
            builder.WebHost.UseHeaderStringCache();
        });
        Assert.DoesNotContain(server.Logs.HeaderCache, e => e.Id.Id is 5 or 10 or 11 or 12);

        await ChangeAsync("HeaderCache:Enabled", "false", loggedAs: 12);
        Assert.True(await server.EventuallyAsync(hasCache: false));
        await ChangeAsync("HeaderCache:Enabled", "true", loggedAs: 11);
        Assert.True(await server.EventuallyAsync(hasCache: true));
        await ChangeAsync("HeaderCache:SlotCount", "0", loggedAs: 5);
        Assert.True(await server.EventuallyAsync(hasCache: true));
        await ChangeAsync("HeaderCache:SlotCount", "64", loggedAs: 10);

        // More connections and reloads without a change add nothing.
        for (int connection = 0; connection < 5; connection++)
        {
            Assert.True(await server.EventuallyAsync(hasCache: true));
        }

        source.Provider.Reload();
        await Task.Delay(200);
        Assert.Equal([12, 11, 5, 10], server.Logs.HeaderCache.Where(e => e.Id.Id is 5 or 10 or 11 or 12).Select(e => e.Id.Id));
        Assert.Equal(LogLevel.Error, server.Logs.HeaderCache.Single(e => e.Id.Id == 5).Level);
        Assert.Contains("SlotCount 64", server.Logs.HeaderCache.Single(e => e.Id.Id == 10).Message, StringComparison.Ordinal);

        async Task ChangeAsync(string key, string value, int loggedAs)
        {
            int before = server.Logs.HeaderCache.Count(e => e.Id.Id == loggedAs);
            source.Provider.Set(key, value);
            try
            {
                source.Provider.Reload();
            }
            catch (AggregateException reload) when (reload.Flatten().InnerExceptions.All(e => e is OptionsValidationException))
            {
                // The options monitor validates a changed configuration as the reload calls it back, and throws into the
                // reload when it is invalid; the server carries on with the last valid options.
            }

            for (int waited = 0; server.Logs.HeaderCache.Count(e => e.Id.Id == loggedAs) == before; waited += 20)
            {
                Assert.True(waited < 10_000, $"event {loggedAs} not logged 10 s after {key}={value}");
                await Task.Delay(20);
            }
        }
    }

    [Fact]
    public async Task Out_of_range_settings_at_startup_are_named_with_their_values()
    {
        OptionsValidationException thrown = await Assert.ThrowsAsync<OptionsValidationException>(() =>
            SampleServer.StartAsync(CacheMode.On, null, "--HeaderCache:SlotCount=0", "--HeaderCache:MaxValueLength=9000"));
        Assert.Equal(
            ["HeaderCache:SlotCount is 0; it must be 1 to 256.", "HeaderCache:MaxValueLength is 9000; it must be 0 to 8192."],
            thrown.Failures);
    }

    [Fact]
    public async Task Bad_configuration_edited_in_while_running_costs_no_connection_and_is_logged_once_per_change_by_name()
    {
        string folder = Directory.CreateTempSubdirectory("headercache-").FullName;
        string settings = Path.Combine(folder, "appsettings.json");
        await File.WriteAllTextAsync(settings, """{ "HeaderCache": { "Enabled": true, "SlotCount": 25 } }""");
        try
        {
            await using var server = await MinimalServer.StartAsync(builder =>
            {
                builder.Configuration.AddJsonFile(settings, optional: false, reloadOnChange: true);
                builder.WebHost.UseHeaderStringCache();
            });

            string[] faults =
            [
                """{ "HeaderCache": { "Enabled": true, "SlotCount": "abc" } }""",
                """{ "HeaderCache": { "Enabled": "nope", "SlotCount": 25 } }""",
                """{ "HeaderCache": { "Enabled": true, "SlotCount": 0 } }""",
            ];
            string[] named =
            [
                "HeaderCache:SlotCount is \"abc\"; it must be a whole number from 1 to 256.",
                "HeaderCache:Enabled is \"nope\"; it must be true or false.",
                "HeaderCache:SlotCount is 0; it must be 1 to 256.",
            ];
            for (int i = 0; i < faults.Length; i++)
            {
                await File.WriteAllTextAsync(settings, faults[i]);

                // Every new connection is served, with the last valid options (the cache on), while the fault is logged.
                for (int attempt = 0; InvalidOptionsLogged(server).Count <= i; attempt++)
                {
                    Assert.True(attempt < 100, $"no log line for fault {i} after 10 s");
                    Assert.True(await server.EventuallyAsync(hasCache: true));
                    await Task.Delay(100);
                }

                for (int connection = 0; connection < 20; connection++)
                {
                    Assert.True(await server.EventuallyAsync(hasCache: true));
                }

                IReadOnlyList<string> logged = InvalidOptionsLogged(server);
                Assert.Equal(i + 1, logged.Count);
                Assert.Contains(named[i], logged[i], StringComparison.Ordinal);
            }
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }

        static IReadOnlyList<string> InvalidOptionsLogged(MinimalServer server) =>
            server.Logs.HeaderCache.Where(e => e.Id.Id == 5).Select(e => e.Message).ToArray();
    }

    [Fact]
    public async Task Metrics_count_hits_misses_saved_bytes_and_pass_through_by_reason()
    {
        await using SampleServer server = await SampleServer.StartAsync(CacheMode.On);
        object scope = server.App.Services.GetRequiredService<IMeterFactory>();
        var totals = new Dictionary<string, long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "HeaderCache" && ReferenceEquals(instrument.Meter.Scope, scope))
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            string key = instrument.Name + string.Concat(tags.ToArray().Select(t => $"|{t.Value}"));
            lock (totals)
            {
                // Observable counters report running totals; plain ones report increments.
                totals[key] = instrument.IsObservable ? value : totals.GetValueOrDefault(key) + value;
            }
        });
        listener.Start();

        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(2);
        var batches = Enumerable.Range(0, 12).Select(i => (IReadOnlyList<byte[]>)[traffic.Render(i)]).ToList();
        await RawHttp.ExchangeAsync(server.EndPoint, batches, RawHttp.Whole);
        // No half-close: a FIN that arrives with the request can make Kestrel abort before it reads.
        string chunked = await RawHttp.SendAllRawAsync(server.EndPoint,
            Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            RawHttp.Whole, TimeSpan.FromSeconds(5));
        Assert.StartsWith("HTTP/1.1 200", chunked, StringComparison.Ordinal);

        // The chunked connection is counted when it ends, a moment after the client saw the close.
        for (int waited = 0; waited < 5000 && Total("headercache.connections|passed_through|transfer_encoding") == 0; waited += 20)
        {
            await Task.Delay(20);
        }

        listener.RecordObservableInstruments();
        lock (totals)
        {
            Assert.Equal(1, totals.GetValueOrDefault("headercache.connections|passed_through|transfer_encoding"));

            // Twelve chrome requests on one connection: after the first, most lines come back without a new string,
            // and each spares at least a 32-byte string but for the rare empty value.
            long served = totals.GetValueOrDefault("headercache.lines|served");
            Assert.True(served > totals.GetValueOrDefault("headercache.lines|created"), "lines served");
            Assert.True(totals.GetValueOrDefault("headercache.lines|created") > 0, "lines created");
            Assert.True(totals.GetValueOrDefault("headercache.allocation.avoided") > served * 24, $"avoided {totals.GetValueOrDefault("headercache.allocation.avoided")} B for {served} lines");
        }

        long Total(string key)
        {
            lock (totals)
            {
                return totals.GetValueOrDefault(key);
            }
        }
    }

    [Fact]
    public async Task Metrics_include_open_connections_and_neither_drop_nor_double_count_them_when_they_close()
    {
        await using SampleServer server = await SampleServer.StartAsync(CacheMode.On);
        using var activity = new CacheActivity(server);

        (long Served, long Taken, long Avoided) Read() => (activity.LinesServed, activity.LinesTaken, activity.Get("headercache.allocation.avoided"));

        (long Served, long Taken, long Avoided) first;
        using (await KeepAliveAsync(server.EndPoint))
        {
            first = Read();
            Assert.True(first.Served > 0 && first.Avoided > 0, $"the open connection's lines are not in the totals: {first}");
            Assert.Equal(0, await activity.ConnectionsAsync("cached", ended: 0));
        }

        Assert.Equal(1, await activity.ConnectionsAsync("cached"));
        Assert.Equal(first, Read());

        // The same requests on a new connection (new caches) take out the same lines: counted once more, open or closed.
        var twice = (2 * first.Served, 2 * first.Taken, 2 * first.Avoided);
        using (await KeepAliveAsync(server.EndPoint))
        {
            Assert.Equal(twice, Read());
        }

        Assert.Equal(2, await activity.ConnectionsAsync("cached", ended: 2));
        Assert.Equal(twice, Read());

        // Twelve chrome requests, each answered before the next: the connection stays open for the caller.
        static async Task<System.Net.Sockets.TcpClient> KeepAliveAsync(IPEndPoint endPoint)
        {
            var client = new System.Net.Sockets.TcpClient { NoDelay = true };
            await client.ConnectAsync(endPoint);
            var reader = new RawHttp.ResponseReader(client.GetStream());
            TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(2);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            for (int i = 0; i < 12; i++)
            {
                await client.GetStream().WriteAsync(traffic.Render(i), timeout.Token);
                string? response = await reader.ReadAsync(timeout.Token);
                Assert.Equal(200, response is null ? 0 : RawHttp.Status(response));
            }

            return client;
        }
    }

    /// <summary>A minimal app (not the sample) so each test chooses exactly what is wired.</summary>
    private sealed class MinimalServer : IAsyncDisposable
    {
        private readonly WebApplication _app;
        private volatile bool _sawCacheFeature;
        private readonly ConcurrentQueue<string?> _inactiveReasons = new();
        private volatile string? _inactiveReason;
        private long _strippedLines;

        private MinimalServer(WebApplication app, CapturingLoggerProvider logs)
        {
            _app = app;
            Logs = logs;
        }

        public CapturingLoggerProvider Logs { get; }

        public IPEndPoint EndPoint { get; private set; } = null!;

        public IReadOnlyList<string> Addresses { get; private set; } = [];

        public bool SawCacheFeature => _sawCacheFeature;

        /// <summary>What the connection feature of the last request said about why the cache is not on.</summary>
        public string? InactiveReason => _inactiveReason;

        /// <summary>What the connection feature said about why the cache is not on, request by request.</summary>
        public IEnumerable<string?> InactiveReasons => _inactiveReasons;

        /// <summary>Header lines the compactor had taken out, as of the last request that saw the cache.</summary>
        public long StrippedLines => Interlocked.Read(ref _strippedLines);

        public static async Task<MinimalServer> StartAsync(Action<WebApplicationBuilder> wire)
        {
            var logs = new CapturingLoggerProvider();
            var builder = WebApplication.CreateBuilder(["--urls", "http://127.0.0.1:0"]);
            builder.Logging.ClearProviders();
            builder.Logging.AddProvider(logs);
            wire(builder);
            WebApplication app = builder.Build();
            var server = new MinimalServer(app, logs);
            app.Run(async context =>
            {
                IHeaderStringCacheFeature? published = context.Features.Get<IHeaderStringCacheFeature>();
                server._inactiveReason = published?.InactiveReason;
                server._inactiveReasons.Enqueue(published?.InactiveReason);
                HeaderCacheConnection? feature = published as HeaderCacheConnection;
                if (feature is not null)
                {
                    server._sawCacheFeature = true;
                    Interlocked.Exchange(ref server._strippedLines, feature.Hits + feature.Misses);
                }

                if (context.Request.Path == "/has-cache")
                {
                    await context.Response.WriteAsync(feature is not null ? "yes" : "no");
                    return;
                }

                await context.Response.WriteAsync(SampleApp.Describe(context, []));
            });
            await app.StartAsync();
            server.Addresses = [.. app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses];
            server.EndPoint = new IPEndPoint(IPAddress.Loopback, new Uri(server.Addresses[0]).Port);
            return server;
        }

        public static async Task<string> HasCacheAsync(IPEndPoint endPoint)
        {
            using var client = new System.Net.Sockets.TcpClient();
            await client.ConnectAsync(endPoint);
            return await ConnectionHasCacheAsync(client) ? "yes" : "no";
        }

        public static async Task<bool> ConnectionHasCacheAsync(System.Net.Sockets.TcpClient client)
        {
            await client.GetStream().WriteAsync("GET /has-cache HTTP/1.1\r\nHost: x\r\n\r\n"u8.ToArray());
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            string response = await new RawHttp.ResponseReader(client.GetStream()).ReadAsync(timeout.Token) ?? "";
            return RawHttp.Body(response) == "yes";
        }

        public async Task<bool> EventuallyAsync(bool hasCache)
        {
            for (int attempt = 0; attempt < 100; attempt++)
            {
                using var client = new System.Net.Sockets.TcpClient { NoDelay = true };
                await client.ConnectAsync(EndPoint);
                if (await ConnectionHasCacheAsync(client) == hasCache)
                {
                    return true;
                }

                await Task.Delay(100);
            }

            return false;
        }

        public async ValueTask DisposeAsync()
        {
            await _app.StopAsync();
            await _app.DisposeAsync();
        }
    }
}

/// <summary>A configuration source in memory whose reload a test triggers, as a file watcher would.</summary>
internal sealed class ReloadableSource : IConfigurationSource
{
    public Dictionary<string, string?> Values { get; } = [];

    public ReloadableProvider Provider { get; private set; } = null!;

    public IConfigurationProvider Build(IConfigurationBuilder builder) => Provider = new ReloadableProvider(Values);
}

/// <summary>The provider of <see cref="ReloadableSource"/>.</summary>
internal sealed class ReloadableProvider(Dictionary<string, string?> values) : ConfigurationProvider
{
    public override void Load() => Data = new Dictionary<string, string?>(values, StringComparer.OrdinalIgnoreCase);

    public override void Set(string key, string? value) => values[key] = value;

    /// <summary>Loads the values and tells every listener that the configuration changed.</summary>
    public void Reload()
    {
        Load();
        OnReload();
    }
}
