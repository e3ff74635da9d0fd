using BenchmarkDotNet.Attributes;
using HeaderCache.Compaction;
using HeaderCache.Testing;
using HeaderCache.Traffic;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// HeaderCache's own work per request head, without Kestrel and without threads: the compacting reader over an
/// in-memory pipe, read the way Kestrel reads it, and the taken lines taken for the request. This is the cost the
/// layer adds in front of Kestrel's parser; <see cref="ConnectionPathBenchmarks"/> shows what it saves Kestrel.
/// </summary>
[MemoryDiagnoser]
#pragma warning disable CA1063 // BenchmarkDotNet needs the class unsealed; GlobalCleanup is the whole disposal.
public class ReaderBenchmarks : IDisposable
#pragma warning restore CA1063
{
    private ReaderDriver _driver = null!;
    private byte[][] _requests = [];
    private int _next;

    [Params("chrome", "proxy-pool", "plaintext", "churn")]
    public string Profile { get; set; } = "chrome";

    /// <summary>Whether lines sent before are served from the memo of lines (what the memo saves).</summary>
    [Params(true, false)]
    public bool RecallsLines { get; set; } = true;

    [GlobalSetup]
    public void Setup()
    {
        TrafficProfile profile = TrafficProfile.Load(Profile);
        TrafficProfile.Connection connection = profile.Connect(seed: 1);
        int count = profile.Count * Math.Max(1, 256 / profile.Count);
        _requests = Enumerable.Range(0, count).Select(connection.Render).ToArray();
        _driver = new ReaderDriver(recordSeen: false);
        _driver.Compactor.RecallsLines = RecallsLines;
        for (int i = 0; i < 2 * count; i++)
        {
            Head();
        }
    }

    /// <summary>The connection's compactor, whose counters say what became of the lines.</summary>
    internal HeadCompactor Compactor => _driver.Compactor;

    [GlobalCleanup]
    public void Dispose()
    {
        _driver.Dispose();
        GC.SuppressFinalize(this);
    }

    /// <summary>One request head of the profile, in turn.</summary>
    [Benchmark]
    public bool Head()
    {
        byte[] request = _requests[_next];
        _next = (_next + 1) % _requests.Length;
        _driver.Send(request);
        return _driver.Queue.TryTake();
    }
}
