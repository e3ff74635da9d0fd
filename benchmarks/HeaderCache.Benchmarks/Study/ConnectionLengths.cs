using System.Text;
using HeaderCache.Benchmarks.ConnectionPath;
using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// Bytes allocated per request (server and in-memory client together) on connections of 1, 6, 48 and 384 requests of a
/// profile, each connection opened, used and closed, HeaderCache against Kestrel alone, both with the profile's headers
/// and with the pseudo-headers or Host alone (bare): a new connection's own cost, and how soon the cache pays it back.
/// The header-driven bytes are those beyond the bare row; the share removed is (alone - HeaderCache) / (alone - bare).
/// Every connection renders the profile from its own seed; on HTTP/2 each has a new HPACK encoder, as a client's would.
/// </summary>
/// <remarks>Encoders: <c>chrome</c> indexes every field but <c>:path</c> (a literal without indexing); <c>nghttp2</c>
/// (curl, Node, grpc-js, h2load) does the same but sends <c>authorization</c> and every cookie crumb shorter than 20
/// bytes as never-indexed literals; <c>httpclient</c> (.NET) sends every field as a literal without indexing.</remarks>
internal static class ConnectionLengths
{
    public const string Command = "dotnet benchmarks/HeaderCache.Benchmarks/bin/Release/net10.0/HeaderCache.Benchmarks.dll connection-lengths <h1|h2> <profile> [chrome|nghttp2|httpclient]";

    // Requests per row: enough connections of each length that every row counts the same number of requests.
    private const int RequestsPerRow = 3072;

    private static readonly int[] Lengths = [1, 6, 48, 384];

    public static void Run(bool http2, string profileName, string encoder, TextWriter output)
    {
        TrafficProfile profile = TrafficProfile.Load(profileName);
        output.WriteLine(Invariant($"{(http2 ? $"h2c, {encoder}'s HPACK" : "HTTP/1.1")}, profile {profileName}: bytes allocated per request, {RequestsPerRow} requests per row, in process, .NET {Environment.Version}, server GC {System.Runtime.GCSettings.IsServerGC}."));
        output.WriteLine(Invariant($"Command: `{Command}`"));
        output.WriteLine();
        output.WriteLine("| requests per connection | Kestrel alone | HeaderCache | ratio | bare: alone / HeaderCache | header-driven bytes removed |");
        output.WriteLine("|---:|---:|---:|---:|---:|---:|");

        var servers = new Dictionary<(bool HeaderCache, bool Bare), InMemoryKestrel>();
        foreach (bool headerCache in (bool[])[false, true])
        {
            foreach (bool bare in (bool[])[false, true])
            {
                var mode = headerCache ? ConnectionPathBenchmarks.Mode.HeaderCache : ConnectionPathBenchmarks.Mode.KestrelDefault;
                servers[(headerCache, bare)] = ConnectionPathBenchmarks.Start(mode, hostLogging: false, http2);

                // Warm-up: every length once, so that the JIT's tiering is over before anything is counted.
                foreach (int length in Lengths)
                {
                    Measure(servers[(headerCache, bare)], profile, http2, encoder, bare, length, connections: Math.Max(4, 768 / length), seed: 1_000_000);
                }
            }
        }

        foreach (int length in Lengths)
        {
            int connections = RequestsPerRow / length;
            var bytes = new Dictionary<(bool HeaderCache, bool Bare), double>();
            foreach (bool bare in (bool[])[false, true])
            {
                foreach (bool headerCache in (bool[])[false, true])
                {
                    bytes[(headerCache, bare)] = Measure(servers[(headerCache, bare)], profile, http2, encoder, bare, length, connections, seed: 0);
                }
            }

            double alone = bytes[(false, false)], cached = bytes[(true, false)], aloneBare = bytes[(false, true)], cachedBare = bytes[(true, true)];
            output.WriteLine(Invariant(
                $"| {length} | {alone:N0} | {cached:N0} | {cached / alone:0.000} | {aloneBare:N0} / {cachedBare:N0} | {(alone - cached) / (alone - aloneBare):P1} |"));
        }

        foreach (InMemoryKestrel server in servers.Values)
        {
            server.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }
    }

    private static double Measure(InMemoryKestrel server, TrafficProfile profile, bool http2, string encoder, bool bare, int length, int connections, int seed)
    {
        // Every request rendered (and on HTTP/2 encoded) before anything is counted.
        byte[][][] requests = [.. Enumerable.Range(0, connections).Select(c => Render(profile, http2, encoder, bare, length, seed + c))];
        GC.Collect();
        GC.WaitForPendingFinalizers();
        long before = GC.GetTotalAllocatedBytes(precise: true);
        foreach (byte[][] connection in requests)
        {
            RunConnectionAsync(server, http2, connection).GetAwaiter().GetResult();
        }

        return (GC.GetTotalAllocatedBytes(precise: true) - before) / (double)(connections * length);
    }

    private static async Task RunConnectionAsync(InMemoryKestrel server, bool http2, byte[][] requests)
    {
        InMemoryClient client = server.Connect();
        if (http2)
        {
            Http2Exchange exchange = await Http2Exchange.OpenAsync(client);
            foreach (byte[] request in requests)
            {
                await exchange.RoundTripAsync(request);
            }
        }
        else
        {
            foreach (byte[] request in requests)
            {
                await client.Output.WriteAsync(request);
                await client.ReadHeadAsync();
            }
        }

        await client.CompleteAsync();
        while (true)
        {
            System.IO.Pipelines.ReadResult result = await client.Input.ReadAsync();
            client.Input.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                break;
            }
        }

        await client.Input.CompleteAsync();
    }

    private static byte[][] Render(TrafficProfile profile, bool http2, string encoder, bool bare, int length, int seed)
    {
        TrafficProfile.Connection connection = profile.Connect(seed);
        if (!http2)
        {
            return [.. Enumerable.Range(0, length).Select(i => bare ? BareHead(connection.RenderText(i)) : connection.Render(i))];
        }

        var hpack = new HpackEncoder();
        return [.. Enumerable.Range(0, length).Select(i => HeadersFrame(hpack, Http2ConnectionPathBenchmarks.ToHttp2(connection.RenderText(i), bare), encoder))];
    }

    // The request line and Host alone.
    private static byte[] BareHead(string head)
    {
        string[] lines = head.Split("\r\n");
        string host = lines.First(line => line.StartsWith("Host:", StringComparison.OrdinalIgnoreCase));
        return Encoding.ASCII.GetBytes($"{lines[0]}\r\n{host}\r\n\r\n");
    }

    private static byte[] HeadersFrame(HpackEncoder hpack, List<(string Name, string Value)> fields, string encoder)
    {
        var block = new List<byte>();
        foreach ((string name, string value) in fields)
        {
            bool huffman = Huffman.Encode(Encoding.Latin1.GetBytes(value)).Length < value.Length;
            FieldKind kind = encoder switch
            {
                _ when name == ":path" => FieldKind.WithoutIndexing,
                "httpclient" => FieldKind.WithoutIndexing,
                "nghttp2" when name == "authorization" || (name == "cookie" && value.Length < 20) => FieldKind.NeverIndexed,
                "chrome" or "nghttp2" => FieldKind.Indexed,
                _ => throw new ArgumentException($"unknown encoder '{encoder}': chrome, nghttp2 or httpclient", nameof(encoder)),
            };

            // A field too big for three quarters of the table is never added to it (nghttp2's rule; Chrome's is alike).
            if (kind == FieldKind.Indexed && 32 + name.Length + value.Length > hpack.Table.MaxSize * 3 / 4)
            {
                kind = FieldKind.WithoutIndexing;
            }

            hpack.Field(block, name, value, kind, huffman);
        }

        var frame = new FrameWriter();
        frame.Headers(streamId: 0, [.. block], endStream: true, endHeaders: true);
        return [.. frame.Bytes];
    }
}
