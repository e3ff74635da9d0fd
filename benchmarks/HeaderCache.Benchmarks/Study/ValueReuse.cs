using HeaderCache.InMemory;
using HeaderCache.Traffic;
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

        AppVisibleReuse.Counts? atLength48 = null;
        foreach (int length in Lengths)
        {
            int connections = RequestsPerRow / length;
            AppVisibleReuse.Counts alone = AppVisibleReuse.Measure(headerCache: false, http2, profile, policy, shortCrumbs, streams, length, connections);
            AppVisibleReuse.Counts cached = AppVisibleReuse.Measure(headerCache: true, http2, profile, policy, shortCrumbs, streams, length, connections);
            atLength48 = length == 48 ? cached : atLength48;
            output.WriteLine(Invariant(
                $"| {length} | {alone.Repeated / (double)(connections * length):0.00} | {alone.Share:0.000} | {cached.Share:0.000} |"));
        }

        output.WriteLine();
        output.WriteLine("HeaderCache on 48-request connections, the headers whose repeated values were not the earlier instance:");
        output.WriteLine();
        output.WriteLine("| header | repeated | not the same instance |");
        output.WriteLine("|---|---:|---:|");
        foreach ((string name, (long repeated, long same)) in atLength48!.ByName.Where(m => m.Value.SameInstance < m.Value.Repeated).OrderByDescending(m => m.Value.Repeated - m.Value.SameInstance))
        {
            output.WriteLine(Invariant($"| {name} | {repeated} | {repeated - same} |"));
        }
    }
}
