using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Testing;

/// <summary>Small helpers shared by the edge-case differential tests.</summary>
internal static class Edge
{
    /// <summary>Header lines the cache takes out of a head (known and unknown names).</summary>
    public const string Cacheable = "User-Agent: edge-test/1.0\r\nsec-ch-ua: \"Edge\";v=\"1\"\r\nAccept-Language: en\r\nX-Request-Kind: edge\r\n";

    /// <summary>A last request after which the server closes the connection: it ends a test's bytes without a FIN.</summary>
    public const string Terminator = "GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

    /// <summary>
    /// Two requests with the <see cref="Cacheable"/> lines: the first head of a connection gets new strings, so only after
    /// these has the cache served lines, and the lines of a head that follows are recalled.
    /// </summary>
    public const string WarmUp = Warm + Warm;

    private const string Warm = "GET /warm HTTP/1.1\r\nHost: x\r\n" + Cacheable + "\r\n";

    /// <summary>The bytes of <paramref name="text"/>, one byte per char (so "\u00ff" is the byte 0xFF).</summary>
    public static byte[] Bytes(string text) => Encoding.Latin1.GetBytes(text);

    /// <summary>
    /// A transcript in one line: the status of each response (<c>raw</c> for bytes that are not an HTTP/1.x
    /// response), then how the connection ended, e.g. <c>200,400|closed</c>.
    /// </summary>
    public static string Summary(IReadOnlyList<string> transcript)
    {
        IEnumerable<string> statuses = transcript.SkipLast(1).Select(r => r.StartsWith("<raw:", StringComparison.Ordinal)
            ? "raw"
            : RawHttp.Status(r).ToString(System.Globalization.CultureInfo.InvariantCulture));
        string end = transcript[^1] switch
        {
            RawHttp.Closed => "closed",
            RawHttp.Reset => "reset",
            _ => "open",
        };
        return string.Join(',', statuses) + "|" + end;
    }

    /// <summary>A response's status line and headers, each line ending in CRLF (the echo's body uses LF only).</summary>
    public static string Head(string response) => response[..(response.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 2)];

    /// <summary>The ways the tests cut the same bytes into writes.</summary>
    public static IEnumerable<(string Name, Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> Split)> Splits(int seeds = 2, int maxPiece = 24)
    {
        yield return ("whole", RawHttp.Whole);
        for (int seed = 1; seed <= seeds; seed++)
        {
            yield return ($"random({seed})", RawHttp.RandomSplit(seed, maxPiece));
        }
    }

    /// <summary>
    /// Sends <paramref name="bytes"/> whole and in random pieces to both servers, asserting identical transcripts
    /// each time, and once more after <see cref="WarmUp"/>, where the cache serves. Without <paramref name="fin"/> the
    /// client never half-closes: the bytes must make the server close (end them with <see cref="Terminator"/> or a
    /// request Kestrel rejects).
    /// </summary>
    /// <returns>The transcript of the whole send on a new connection.</returns>
    public static Task<List<string>> SendAllBothAsync(ServerPair servers, byte[] bytes, int seeds = 2, int maxPiece = 24, bool fin = false) =>
        SendAllBothAsync(servers.On, servers.Alone, bytes, seeds, maxPiece, fin);

    /// <inheritdoc cref="SendAllBothAsync(ServerPair, byte[], int, int, bool)"/>
    public static async Task<List<string>> SendAllBothAsync(SampleServer on, SampleServer alone, byte[] bytes, int seeds = 2, int maxPiece = 24, bool fin = false)
    {
        using var activity = new CacheActivity(on);
        List<string>? first = null;
        foreach (var (name, split) in Splits(seeds, maxPiece))
        {
            List<string> transcript = await CompareAsync(on, alone, endPoint => RawHttp.SendAllAsync(endPoint, bytes, split, halfClose: fin));
            if (first is null)
            {
                first = transcript;
            }
            else
            {
                // How the bytes were cut never changes the outcome.
                Assert.True(first.SequenceEqual(transcript), $"split {name} changed the transcript: {Summary(transcript)} vs {Summary(first)}");
            }
        }

        // A connection's first head gets new strings: only bytes after heads the cache served meet it serving. The warm-up
        // is answered before they come, as a FIN leaves the heads not yet read to Kestrel.
        List<string> warm = await CompareAsync(on, alone, endPoint =>
            RawHttp.SendAllAsync(endPoint, bytes, RawHttp.RandomSplit(seeds + 1, maxPiece), halfClose: fin, answeredFirst: [Bytes(Warm), Bytes(Warm)]));
        Assert.StartsWith("200,200", Summary(warm), StringComparison.Ordinal);
        await activity.AssertEngagedAsync();
        return first!;
    }

    /// <summary>Runs <paramref name="client"/> on Kestrel alone, then with HeaderCache; asserts the same transcript.</summary>
    /// <remarks>Also asserts that a connection served lines from the cache (<see cref="CacheActivity.Engaged"/>), so the
    /// comparison cannot pass because HeaderCache never did anything Kestrel alone would not.</remarks>
    public static async Task<List<string>> AssertSameAsync(SampleServer on, SampleServer alone, Func<IPEndPoint, Task<List<string>>> client)
    {
        using var activity = new CacheActivity(on);
        List<string> transcript = await CompareAsync(on, alone, client);
        await activity.AssertEngagedAsync();
        return transcript;
    }

    /// <summary>
    /// Runs <paramref name="client"/> on Kestrel alone, then with HeaderCache, for bytes HeaderCache leaves to Kestrel:
    /// asserts the same transcript, and that HeaderCache's reader met them and stepped aside for <paramref name="reason"/>.
    /// </summary>
    public static async Task<List<string>> AssertSameSteppingAsideAsync(SampleServer on, SampleServer alone, string reason, Func<IPEndPoint, Task<List<string>>> client)
    {
        using var activity = new CacheActivity(on);
        List<string> transcript = await CompareAsync(on, alone, client);
        Assert.True(await activity.ConnectionsAsync("passed_through", reason) == 1, $"HeaderCache did not step aside for {reason}: {activity}");
        Assert.False(activity.Engaged, activity.ToString());
        return transcript;
    }

    /// <summary>
    /// Runs <paramref name="client"/> on Kestrel alone, then with HeaderCache, for traffic with nothing to serve: asserts
    /// the same transcript, and that HeaderCache took lines out and put them back with new strings, serving none.
    /// </summary>
    public static async Task<List<string>> AssertSameWithNothingServedAsync(SampleServer on, SampleServer alone, Func<IPEndPoint, Task<List<string>>> client)
    {
        using var activity = new CacheActivity(on);
        List<string> transcript = await CompareAsync(on, alone, client);
        Assert.True(activity.LinesTaken > 0, $"HeaderCache took no line out: the comparison did not exercise it ({activity})");
        Assert.False(activity.Engaged, activity.ToString());
        return transcript;
    }

    private static async Task<List<string>> CompareAsync(SampleServer on, SampleServer alone, Func<IPEndPoint, Task<List<string>>> client)
    {
        List<string> aloneTranscript = await client(alone.EndPoint);
        List<string> onTranscript = await client(on.EndPoint);
        Assert.Equal(aloneTranscript, onTranscript);
        return onTranscript;
    }

    /// <summary>
    /// Runs every client against both servers, all at the same time (for tests that wait on server timers), and asserts
    /// the same transcript from each client, and that a connection served lines from the cache.
    /// </summary>
    /// <returns>Each client's (equal) transcript.</returns>
    public static async Task<List<string>[]> AssertSameConcurrentlyAsync(SampleServer on, SampleServer alone, params Func<IPEndPoint, Task<List<string>>>[] clients)
    {
        using var activity = new CacheActivity(on);
        Task<List<string>[]> onRuns = Task.WhenAll(clients.Select(client => client(on.EndPoint)));
        Task<List<string>[]> aloneRuns = Task.WhenAll(clients.Select(client => client(alone.EndPoint)));
        List<string>[] onTranscripts = await onRuns;
        List<string>[] aloneTranscripts = await aloneRuns;
        for (int i = 0; i < clients.Length; i++)
        {
            Assert.Equal(aloneTranscripts[i], onTranscripts[i]);
        }

        await activity.AssertEngagedAsync();
        return onTranscripts;
    }
}

/// <summary>What one server's HeaderCache did while this object was alive (from its own meter).</summary>
/// <remarks>
/// A plain counter reports each increment, and those are summed. An observable counter reports its running total
/// when asked: each read asks, keeps the latest total, and takes away the total seen at construction, so that traffic
/// from before this object was made is not counted.
/// </remarks>
internal sealed class CacheActivity : IDisposable
{
    private readonly MeterListener _listener = new();
    private readonly Dictionary<string, long> _sums = [];
    private readonly Dictionary<string, long> _observed = [];
    private readonly Dictionary<string, long> _baseline;

    public CacheActivity(SampleServer server)
        : this(server.App.Services)
    {
    }

    public CacheActivity(IServiceProvider services)
    {
        object scope = services.GetRequiredService<IMeterFactory>();
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == "HeaderCache" && ReferenceEquals(instrument.Meter.Scope, scope))
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            string key = instrument.Name + string.Concat(tags.ToArray().Select(t => $"|{t.Value}"));
            lock (_sums)
            {
                if (instrument.IsObservable)
                {
                    _observed[key] = value;
                }
                else
                {
                    _sums[key] = _sums.GetValueOrDefault(key) + value;
                }
            }
        });
        _listener.Start();
        _listener.RecordObservableInstruments();
        lock (_sums)
        {
            _baseline = new Dictionary<string, long>(_observed);
        }
    }

    /// <summary>Header lines taken out of heads and served without a new string.</summary>
    public long LinesServed => Get("headercache.lines|served");

    /// <summary>Header lines taken out of heads, served or created.</summary>
    public long LinesTaken => LinesServed + Get("headercache.lines|created");

    /// <summary>
    /// Whether a connection served lines from the cache. Only then did a comparison with Kestrel alone run through what
    /// HeaderCache adds: a connection it passed through, or whose lines all got new strings, gives the application what
    /// Kestrel alone would have made.
    /// </summary>
    public bool Engaged => LinesServed > 0;

    /// <summary>
    /// Asserts <see cref="Engaged"/>. An open connection's lines are read as its own thread counts them, so this waits
    /// up to 5 s for a count a moment stale.
    /// </summary>
    public async Task AssertEngagedAsync()
    {
        for (int waited = 0; !Engaged && waited < 5000; waited += 20)
        {
            await Task.Delay(20);
        }

        Assert.True(Engaged, $"No connection served a line from the cache: the comparison did not exercise it ({this})");
    }

    /// <summary>
    /// Connections counted with <paramref name="outcome"/> (and <paramref name="reason"/>), the metric's tags, once
    /// at least <paramref name="ended"/> connections were counted: a connection is counted a moment after the client
    /// saw it close, so this waits up to 5 s for that.
    /// </summary>
    public async Task<long> ConnectionsAsync(string outcome, string? reason = null, int ended = 1)
    {
        for (int waited = 0; EndedConnections < ended && waited < 5000; waited += 20)
        {
            await Task.Delay(20);
        }

        return Get($"headercache.connections|{outcome}" + (reason is null ? "" : "|" + reason));
    }

    private long EndedConnections =>
        Totals().Where(t => t.Key.StartsWith("headercache.connections|", StringComparison.Ordinal)).Sum(t => t.Value);

    public void Dispose() => _listener.Dispose();

    /// <summary>Every count above zero, for failure messages.</summary>
    public override string ToString() =>
        string.Join(", ", Totals().Where(t => t.Value > 0).OrderBy(t => t.Key, StringComparer.Ordinal).Select(t => $"{t.Key}: {t.Value}"));

    /// <summary>One instrument's count, by name and tag values: <c>headercache.lines|served</c>.</summary>
    public long Get(string key) => Totals().GetValueOrDefault(key);

    // What happened since construction, by instrument and tag values: observable instruments are asked first.
    private Dictionary<string, long> Totals()
    {
        _listener.RecordObservableInstruments();
        lock (_sums)
        {
            var totals = new Dictionary<string, long>(_sums);
            foreach (var (key, total) in _observed)
            {
                totals[key] = total - _baseline.GetValueOrDefault(key);
            }

            return totals;
        }
    }
}
