using HeaderCache.Benchmarks.ConnectionPath;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// Bytes allocated per request (server and in-memory client together) on connections of 1, 6, 48 and 384 requests (or
/// the lengths given) of a profile, each connection opened, used and closed, HeaderCache against Kestrel alone, both with the profile's headers
/// and with the pseudo-headers or Host alone (bare): a new connection's own cost, and how soon the cache pays it back.
/// The header-driven bytes are those beyond the bare row; the share removed is (alone - HeaderCache) / (alone - bare).
/// On HTTP/2 each connection has a new HPACK encoder of the chosen client's rules (<see cref="HpackEncoding"/>).
/// </summary>
internal static class ConnectionLengths
{
    public const string Command = "dotnet benchmarks/HeaderCache.Benchmarks/bin/Release/net10.0/HeaderCache.Benchmarks.dll connection-lengths <h1|h2> <profile> [chrome|nghttp2|httpclient] [crumbs] [lengths=1,6,48,384]";

    // Requests per row: enough connections of each length that every row counts the same number of requests.
    private const int RequestsPerRow = 3072;

    /// <summary>The lengths every run measures unless others are given: a new connection, a page's worth, and long ones.</summary>
    public static readonly int[] DefaultLengths = [1, 6, 48, 384];

    public static void Run(bool http2, string profileName, string encoder, bool shortCrumbs, int[] lengths, TextWriter output)
    {
        TrafficProfile profile = TrafficProfile.Load(profileName);
        HpackEncoding policy = Enum.Parse<HpackEncoding>(encoder, ignoreCase: true);
        output.WriteLine(Invariant($"{(http2 ? $"h2c, {encoder}'s HPACK" : "HTTP/1.1")}, profile {profileName}{(shortCrumbs ? " with short cookie crumbs and a token" : "")}: bytes allocated per request, {RequestsPerRow} requests per row, in process, .NET {Environment.Version}, server GC {System.Runtime.GCSettings.IsServerGC}."));
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
                foreach (int length in lengths)
                {
                    ConnectionBytes.PerRequest(servers[(headerCache, bare)], profile, http2, policy, bare, length, connections: Math.Max(4, 768 / length), seed: 1_000_000, shortCrumbs);
                }
            }
        }

        foreach (int length in lengths)
        {
            int connections = RequestsPerRow / length;
            var bytes = new Dictionary<(bool HeaderCache, bool Bare), double>();
            foreach (bool bare in (bool[])[false, true])
            {
                foreach (bool headerCache in (bool[])[false, true])
                {
                    bytes[(headerCache, bare)] = ConnectionBytes.PerRequest(servers[(headerCache, bare)], profile, http2, policy, bare, length, connections, seed: 0, shortCrumbs);
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
}
