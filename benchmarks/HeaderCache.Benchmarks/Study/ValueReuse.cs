using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// App-visible reuse on connections of 6, 48 and 384 requests of a profile, HeaderCache against Kestrel alone: of the
/// header values the application reads (enumerating the request's headers) that equal, byte for byte, a value of the
/// same header in an earlier request on the same connection, the share that is a string instance the application got
/// for that header and value before. On HTTP/2 each connection has a new HPACK encoder of the chosen client's rules
/// (<see cref="HpackEncoding"/>), and sends its requests one at a time or a number of streams at once. Counts, not
/// time: the same on any machine but for the order in which concurrent streams reach the application.
/// </summary>
internal static class ValueReuse
{
    public const string Command = "dotnet benchmarks/HeaderCache.Benchmarks/bin/Release/net10.0/HeaderCache.Benchmarks.dll reuse <h1|h2> <profile> [chrome|nghttp2|httpclient] [crumbs] [streams]";

    // Requests per row: enough connections of each length that every row counts the same number of requests.
    private const int RequestsPerRow = 3072;

    private static readonly int[] Lengths = [6, 48, 384];

    public static void Run(bool http2, string profileName, string encoder, bool shortCrumbs, int streams, TextWriter output)
    {
        TrafficProfile profile = TrafficProfile.Load(profileName);
        HpackEncoding policy = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        output.WriteLine(Invariant($"{(http2 ? $"h2c, {encoder}'s HPACK, {streams} stream(s) at a time" : "HTTP/1.1")}, profile {profileName}{(shortCrumbs ? " with short cookie crumbs and a token" : "")}: app-visible reuse, {RequestsPerRow} requests per row, in process."));
        output.WriteLine(Invariant($"Command: `{Command}`"));
        output.WriteLine();
        output.WriteLine("| requests per connection | repeated values per request | Kestrel alone | HeaderCache |");
        output.WriteLine("|---:|---:|---:|---:|");

        var misses = new Dictionary<string, (long Repeated, long Missed)>(StringComparer.OrdinalIgnoreCase);
        foreach (int length in Lengths)
        {
            int connections = RequestsPerRow / length;
            Counts alone = Measure(headerCache: false, http2, profile, policy, shortCrumbs, streams, length, connections, misses: null);
            Counts cached = Measure(headerCache: true, http2, profile, policy, shortCrumbs, streams, length, connections, length == 48 ? misses : null);
            output.WriteLine(Invariant(
                $"| {length} | {alone.Repeated / (double)(connections * length):0.00} | {alone.Share:0.000} | {cached.Share:0.000} |"));
        }

        output.WriteLine();
        output.WriteLine("HeaderCache on 48-request connections, the headers whose repeated values were not the earlier instance:");
        output.WriteLine();
        output.WriteLine("| header | repeated | not the same instance |");
        output.WriteLine("|---|---:|---:|");
        foreach ((string name, (long repeated, long missed)) in misses.Where(m => m.Value.Missed > 0).OrderByDescending(m => m.Value.Missed))
        {
            output.WriteLine(Invariant($"| {name} | {repeated} | {missed} |"));
        }
    }

    private static Counts Measure(
        bool headerCache, bool http2, TrafficProfile profile, HpackEncoding encoder, bool shortCrumbs, int streams, int length, int connections,
        Dictionary<string, (long Repeated, long Missed)>? misses)
    {
        var recorder = new Recorder(misses);
        InMemoryKestrel server = http2
            ? InMemoryKestrel.StartHttp2Async(headerCache, recorder.Record).GetAwaiter().GetResult()
            : InMemoryKestrel.StartAsync(headerCache, recorder.Record).GetAwaiter().GetResult();
        try
        {
            for (int c = 0; c < connections; c++)
            {
                byte[][] requests = ConnectionBytes.Render(profile, http2, encoder, bare: false, length, seed: c, shortCrumbs);
                RunConnectionAsync(server, http2, requests, streams).GetAwaiter().GetResult();
            }
        }
        finally
        {
            server.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }

        return recorder.Totals;
    }

    private static async Task RunConnectionAsync(InMemoryKestrel server, bool http2, byte[][] requests, int streams)
    {
        InMemoryClient client = server.Connect();
        if (http2)
        {
            Http2Exchange exchange = await Http2Exchange.OpenAsync(client);
            foreach (byte[][] batch in requests.Chunk(streams))
            {
                await exchange.RoundTripsAsync(batch);
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
            var result = await client.Input.ReadAsync();
            client.Input.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                break;
            }
        }

        await client.Input.CompleteAsync();
    }

    private readonly record struct Counts(long Repeated, long SameInstance)
    {
        public double Share => Repeated == 0 ? double.NaN : SameInstance / (double)Repeated;
    }

    // Per connection, per header name (any casing) and value: the instances the application got. Streams of one
    // connection run at once, so a connection's record is locked.
    private sealed class Recorder(Dictionary<string, (long Repeated, long Missed)>? misses)
    {
        private readonly Dictionary<string, Dictionary<(string Name, string Value), HashSet<string>>> _connections = new(StringComparer.Ordinal);
        private long _repeated;
        private long _sameInstance;

        public Counts Totals => new(_repeated, _sameInstance);

        public Task Record(HttpContext context)
        {
            lock (_connections)
            {
                if (!_connections.TryGetValue(context.Connection.Id, out Dictionary<(string Name, string Value), HashSet<string>>? seen))
                {
                    seen = [];
                    _connections[context.Connection.Id] = seen;
                }

                foreach (KeyValuePair<string, StringValues> header in context.Request.Headers)
                {
                    foreach (string? value in header.Value)
                    {
                        if (value is null)
                        {
                            continue;
                        }

                        var key = (header.Key.ToLowerInvariant(), value);
                        if (!seen.TryGetValue(key, out HashSet<string>? instances))
                        {
                            seen[key] = new HashSet<string>(ReferenceEqualityComparer.Instance) { value };
                            continue;
                        }

                        bool same = !instances.Add(value);
                        _repeated++;
                        _sameInstance += same ? 1 : 0;
                        if (misses is not null)
                        {
                            misses.TryGetValue(key.Item1, out (long Repeated, long Missed) counts);
                            misses[key.Item1] = (counts.Repeated + 1, counts.Missed + (same ? 0 : 1));
                        }
                    }
                }
            }

            return Task.CompletedTask;
        }
    }
}
