using System.Net;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Http2;

/// <summary>Frames and header blocks the reader must follow without rewriting, or stop at, after requests it served:
/// padding, trailers, never-indexed fields, size updates, and the errors Kestrel ends the connection for. The client
/// gets the same frames as from Kestrel alone.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2EdgeFrameTests(Http2ServerPair servers)
{
    private const byte Whole = RawHttp2.EndHeaders | RawHttp2.EndStream;
    private const byte Padded = 0x8;

    public static TheoryData<string> Scenarios => new()
    {
        "padded block that adds to the table",
        "trailers that add to the table",
        "never-indexed field keeps its name in the frame",
        "size update to zero then a fresh table",
        "index beyond the table",
        "frame over MaxFrameSize",
        "uppercase name",
        "pseudo-header after a regular field",
        "client ends mid-frame",
    };

    [Theory]
    [MemberData(nameof(Scenarios))]
    public async Task Kestrel_answers_as_alone(string scenario)
    {
        await Edge.AssertSameAsync(servers.On, servers.Alone, endPoint => RunAsync(endPoint, scenario));
    }

    private static async Task<List<string>> RunAsync(IPEndPoint endPoint, string scenario)
    {
        await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);
        var transcript = new List<string>();

        // Two requests the cache serves the second of.
        for (int stream = 1; stream <= 3; stream += 2)
        {
            await client.SendAsync(RawHttp2.Frame(RawHttp2.Headers, Whole, stream, Plain("/warm").ToArray()));
            transcript.AddRange(await client.ReadUntilAsync(t => Ended(t, stream)));
        }

        (byte[][] frames, int last) = Frames(scenario);
        await client.SendAsync(frames);
        if (scenario == "client ends mid-frame")
        {
            await client.ShutdownSendAsync();
        }

        // Streams sent together answer in any order: wait for all, and sort what they answered.
        List<string> rest = await client.ReadUntilAsync(t => Enumerable.Range(5, last - 4).Where(s => s % 2 == 1).All(s => Ended(t, s)));
        rest.Sort(StringComparer.Ordinal);
        if (scenario == "client ends mid-frame")
        {
            // Kestrel alone sends GOAWAY(NO_ERROR) before it closes, or not, as its read of the end happens to fall.
            rest.RemoveAll(line => line.StartsWith("GOAWAY ", StringComparison.Ordinal) && line.EndsWith(" 0", StringComparison.Ordinal));
        }

        transcript.AddRange(rest);
        return transcript;
    }

    // The scenario's frames from stream 5 on, and the last stream: the exchange ends when all have (or the connection).
    private static (byte[][] Frames, int Last) Frames(string scenario)
    {
        switch (scenario)
        {
            case "padded block that adds to the table":
                byte[] block = Plain("/padded").Incremental("x-added", "by-padded").ToArray();
                return ([
                    RawHttp2.Frame(RawHttp2.Headers, Whole | Padded, 5, [3, .. block, 0, 0, 0]),
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 7, Plain("/after").Indexed(62).ToArray()),
                ], 7);

            case "trailers that add to the table":
                return ([
                    RawHttp2.Frame(RawHttp2.Headers, RawHttp2.EndHeaders, 5, new BlockWriter().Request("POST", "/trailers").Without("x-mine", "warm").ToArray()),
                    RawHttp2.Frame(RawHttp2.Data, 0, 5, "body"u8.ToArray()),
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 5, new BlockWriter().Incremental("x-trailer", "t1").ToArray()),
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 7, Plain("/after").Indexed(62).ToArray()),
                ], 7);

            case "never-indexed field keeps its name in the frame":
                return ([
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 5, Plain("/never").Literal(0x10, 4, 0, "secret", "x-token").Without("x-token", "plain").ToArray()),
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 7, Plain("/after").Literal(0x10, 4, 23, "Bearer a").ToArray()),
                ], 7);

            case "size update to zero then a fresh table":
                return ([
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 5, [0x20, .. Plain("/zero").Incremental("x-new", "one").ToArray()]),
                    RawHttp2.Frame(RawHttp2.Headers, Whole, 7, [0x3f, 0xe1, 0x1f, .. Plain("/grown").Incremental("x-new", "two").Indexed(62).ToArray()]),
                ], 7);

            case "index beyond the table":
                return ([RawHttp2.Frame(RawHttp2.Headers, Whole, 5, Plain("/beyond").Indexed(70).ToArray())], 5);

            case "frame over MaxFrameSize":
                return ([RawHttp2.Frame(RawHttp2.Headers, Whole, 5, Plain("/big").Without("x-big", new string('b', 17000)).ToArray())], 5);

            case "uppercase name":
                return ([RawHttp2.Frame(RawHttp2.Headers, Whole, 5, Plain("/upper").Without("X-Upper", "u").ToArray())], 5);

            case "pseudo-header after a regular field":
                return ([RawHttp2.Frame(RawHttp2.Headers, Whole, 5, new BlockWriter().Indexed(2).Indexed(6).Without("x-mine", "warm").Literal(0x00, 4, 4, "/late").Literal(0x00, 4, 1, "localhost").ToArray())], 5);

            default:
                byte[] cut = RawHttp2.Frame(RawHttp2.Headers, Whole, 5, Plain("/cut").ToArray());
                return ([cut[..^3]], 5);
        }
    }

    private static BlockWriter Plain(string path) =>
        new BlockWriter().Request("GET", path).Without("x-mine", "warm").Without("accept-language", "en").Indexed(16);

    private static bool Ended(List<string> transcript, int stream) =>
        transcript.Exists(line => line.StartsWith($"DATA {stream} 1", StringComparison.Ordinal) || line.StartsWith($"RST_STREAM {stream} ", StringComparison.Ordinal)
            || line.StartsWith("GOAWAY", StringComparison.Ordinal) || line == "closed");
}
