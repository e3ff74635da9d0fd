using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Tests.Integration;

/// <summary>Small helpers shared by the edge-case differential tests.</summary>
internal static class Edge
{
    /// <summary>Header lines the cache takes out of a head (known and unknown names).</summary>
    public const string Cacheable = "User-Agent: edge-test/1.0\r\nsec-ch-ua: \"Edge\";v=\"1\"\r\nAccept-Language: en\r\nX-Request-Kind: edge\r\n";

    /// <summary>A last request after which the server closes the connection: it ends a test's bytes without a FIN.</summary>
    public const string Terminator = "GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

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
    /// each time. Without <paramref name="fin"/> the client never half-closes: the bytes must make the server close
    /// (end them with <see cref="Terminator"/> or a request Kestrel rejects).
    /// </summary>
    /// <returns>The transcript of the whole send.</returns>
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

        await activity.AssertEngagedAsync();
        return first!;
    }

    /// <summary>Runs <paramref name="client"/> on Kestrel alone, then with HeaderCache; asserts the same transcript.</summary>
    /// <remarks>Also asserts that the connection went through HeaderCache's reader, so the comparison cannot pass
    /// because HeaderCache never ran.</remarks>
    public static async Task<List<string>> AssertSameAsync(SampleServer on, SampleServer alone, Func<IPEndPoint, Task<List<string>>> client)
    {
        using var activity = new CacheActivity(on);
        List<string> transcript = await CompareAsync(on, alone, client);
        await activity.AssertEngagedAsync();
        return transcript;
    }

    private static async Task<List<string>> CompareAsync(SampleServer on, SampleServer alone, Func<IPEndPoint, Task<List<string>>> client)
    {
        List<string> aloneTranscript = await client(alone.EndPoint);
        List<string> onTranscript = await client(on.EndPoint);
        Assert.Equal(aloneTranscript, onTranscript);
        return onTranscript;
    }

    /// <summary>Runs the same client against both servers at the same time (for tests that wait on server timers).</summary>
    public static async Task<List<string>> AssertSameConcurrentlyAsync(SampleServer on, SampleServer alone, Func<IPEndPoint, Task<List<string>>> client)
    {
        using var activity = new CacheActivity(on);
        Task<List<string>> onRun = client(on.EndPoint);
        Task<List<string>> aloneRun = client(alone.EndPoint);
        await Task.WhenAll(onRun, aloneRun);
        Assert.Equal(await aloneRun, await onRun);
        await activity.AssertEngagedAsync();
        return await onRun;
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

    /// <summary>Whether a connection went through HeaderCache's reader (it took lines out, stepped aside, or closed).</summary>
    public bool Engaged =>
        Totals().Any(t => t.Value > 0 && (t.Key.StartsWith("headercache.lines|", StringComparison.Ordinal) || IsReadConnection(t.Key)));

    /// <summary>
    /// Asserts that HeaderCache was on the path (<see cref="Engaged"/>). A connection is counted when it ends, a
    /// moment after the client saw the close, so this waits up to 5 s for it.
    /// </summary>
    public async Task AssertEngagedAsync()
    {
        for (int waited = 0; !Engaged && waited < 5000; waited += 20)
        {
            await Task.Delay(20);
        }

        Assert.True(Engaged, "No connection went through HeaderCache's reader: the comparison did not exercise it");
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

    // A connection HeaderCache's reader went through (not one it skipped).
    private static bool IsReadConnection(string key) =>
        key.StartsWith("headercache.connections|", StringComparison.Ordinal) && !key.StartsWith("headercache.connections|skipped", StringComparison.Ordinal);

    public void Dispose() => _listener.Dispose();

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
