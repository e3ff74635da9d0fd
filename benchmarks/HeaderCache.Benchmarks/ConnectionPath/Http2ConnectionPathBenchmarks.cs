using System.Buffers;
using System.Buffers.Binary;
using System.IO.Pipelines;
using System.Text;
using BenchmarkDotNet.Attributes;
using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Traffic;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// The HTTP/2 twin of <see cref="ConnectionPathBenchmarks"/>: one h2c connection (prior knowledge) replaying a traffic
/// profile through the real Kestrel over in-memory pipes, one stream at a time, each request one HEADERS frame that ends
/// its stream. Each rendered HTTP/1.1 head becomes the request Chrome would send: <c>:method</c>, <c>:authority</c> from
/// Host, <c>:scheme</c> http, <c>:path</c>, then the other fields in lower case without the connection-specific ones,
/// the cookie in crumbs. A profile name ending in <c>-bare</c> (<c>chrome-bare</c>) sends the pseudo-header fields
/// alone: what a request costs Kestrel without header fields, the floor of "header-driven bytes".
/// </summary>
/// <remarks>
/// HPACK is Chrome's: a field goes into the dynamic table the first time and is indexed after, <c>:path</c> is a literal
/// without indexing. Replaying a pool of blocks forever needs a table that stops changing, so a field whose value varies
/// between the renderings of its head (ids, counters, the cookie and address picked per request) is a literal without
/// indexing every time. The table then fills in the pool's first round, and the blocks of its second round, all
/// indexes and literals that leave the table alone, are the ones replayed. Setup fails if the table would evict.
/// </remarks>
[MemoryDiagnoser]
public class Http2ConnectionPathBenchmarks : IConnectionPath
{
    private const string BareSuffix = "-bare";

    // SETTINGS_MAX_FRAME_SIZE's initial value: a bigger block would need CONTINUATION frames.
    private const int MaxFramePayload = 16384;

    private InMemoryKestrel? _server;
    private Http2Exchange _exchange = null!;
    private byte[][] _requests = [];
    private int _next;

    [ParamsAllValues]
    public ConnectionPathBenchmarks.Mode Server { get; set; }

    [Params("chrome", "firefox", "safari", "proxy-pool", "plaintext", "churn", "chrome-bare", "proxy-pool-bare")]
    public string Profile { get; set; } = "chrome";

    /// <summary>As <see cref="ConnectionPathBenchmarks.HostLogging"/>.</summary>
    internal bool HostLogging { get; set; }

    /// <summary>As <see cref="ConnectionPathBenchmarks.Evictor"/>.</summary>
    internal CacheEvictor? Evictor { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        (byte[][] firstRound, _requests) = Encode(Profile);
        _server = ConnectionPathBenchmarks.Start(Server, HostLogging, http2: true);
        _exchange = Http2Exchange.OpenAsync(_server.Connect()).GetAwaiter().GetResult();

        // Two rounds of the pool, as ConnectionPathBenchmarks warms up: the one that fills the table, then one replayed.
        foreach (byte[] request in firstRound.Concat(_requests))
        {
            RoundTripAsync(request).GetAwaiter().GetResult();
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _exchange.Client.Output.Complete();
        _server?.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }

    // One Task per invocation of 64 requests, as over HTTP/1.1.
    [Benchmark(OperationsPerInvoke = ConnectionPathBenchmarks.RequestsPerInvoke)]
    public async Task Request()
    {
        for (int i = 0; i < ConnectionPathBenchmarks.RequestsPerInvoke; i++)
        {
            byte[] request = _requests[_next];
            _next = (_next + 1) % _requests.Length;
            await RoundTripAsync(request);
        }
    }

    // The pool's HEADERS frames, stream id 0 until sent: the round that fills the table, then the round replayed.
    internal static (byte[][] FirstRound, byte[][] Replayed) Encode(string profileName)
    {
        bool bare = profileName.EndsWith(BareSuffix, StringComparison.Ordinal);
        TrafficProfile profile = TrafficProfile.Load(bare ? profileName[..^BareSuffix.Length] : profileName);
        TrafficProfile.Connection connection = profile.Connect(seed: 1);

        // Two renderings of every head at least, to tell its constant fields from its varying ones.
        int count = profile.Count * Math.Max(2, 256 / profile.Count);
        List<(string Name, string Value)>[] requests = [.. Enumerable.Range(0, count).Select(i => Http2Request.Fields(connection.RenderText(i), bare))];
        var constant = new HashSet<(string Name, string Value)>[profile.Count];
        for (int i = 0; i < count; i++)
        {
            if (constant[i % profile.Count] is { } fields)
            {
                fields.IntersectWith(requests[i]);
            }
            else
            {
                constant[i % profile.Count] = [.. requests[i]];
            }
        }

        var encoder = new HpackEncoder();
        byte[][] Round() => [.. Enumerable.Range(0, count).Select(i => HeadersFrame(encoder, requests[i], constant[i % profile.Count]))];
        byte[][] firstRound = Round();

        // An entry evicted in the first round would be inserted again in every round, so the replayed blocks would not
        // index what the server's table holds.
        foreach ((string name, string value) in constant.SelectMany(fields => fields).Where(field => field.Name != ":path"))
        {
            if (encoder.Table.Find(Encoding.Latin1.GetBytes(name), Encoding.Latin1.GetBytes(value), nameOnly: false) == 0)
            {
                throw new InvalidOperationException(
                    $"{profileName}: the fields that recur do not fit in the {encoder.Table.MaxSize}-byte HPACK table ('{name}' was evicted); the pool cannot be replayed.");
            }
        }

        return (firstRound, Round());
    }

    private static byte[] HeadersFrame(HpackEncoder encoder, List<(string Name, string Value)> fields, HashSet<(string Name, string Value)> constant)
    {
        var block = new List<byte>();
        foreach ((string name, string value) in fields)
        {
            // Huffman-coded when shorter, as Chrome's encoder and nghttp2's choose.
            bool huffman = Huffman.Encode(Encoding.Latin1.GetBytes(value)).Length < value.Length;
            FieldKind kind = name != ":path" && constant.Contains((name, value)) ? FieldKind.Indexed : FieldKind.WithoutIndexing;
            encoder.Field(block, name, value, kind, huffman);
        }

        if (block.Count > MaxFramePayload)
        {
            throw new InvalidOperationException($"A request's header block is {block.Count} bytes, more than one frame of {MaxFramePayload}.");
        }

        var frame = new FrameWriter();
        frame.Headers(streamId: 0, [.. block], endStream: true, endHeaders: true);
        return [.. frame.Bytes];
    }

    // The exchange's own task, not a second state machine around it: the client's allocations stay as they were.
    private Task RoundTripAsync(byte[] request)
    {
        Evictor?.Walk();
        return _exchange.RoundTripAsync(request);
    }
}
