using System.Net;
using HeaderCache.H2Client;
using HeaderCache.Tests.Integration;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Http2;

/// <summary>Frames and header blocks the reader must follow, rewrite or stop at, after requests it served: padding,
/// trailers, never-indexed fields, size updates, and the errors Kestrel ends the connection for. The client gets the
/// same frames as from Kestrel alone.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2EdgeFrameTests(Http2ServerPair servers)
{
    public static TheoryData<string> Scenarios => new()
    {
        "padded block that adds to the table",
        "trailers that add to the table",
        "never-indexed fields of a new name and of a static name",
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

    [Theory]
    [InlineData("frame over MaxFrameSize", "FrameRejected")]
    [InlineData("index beyond the table", "BlockUndecodable")]
    [InlineData("client ends mid-frame", "ClientEnded")]
    public async Task What_stopped_the_reader_is_logged_at_Debug(string scenario, string cause)
    {
        int before = StopsLogged().Count;
        await RunAsync(servers.On.EndPoint, scenario);

        // Logged on the read that stopped the reader, before Kestrel answered the frame; the wait only covers a slow log.
        for (int i = 0; i < 100 && StopsLogged().Count == before; i++)
        {
            await Task.Delay(50);
        }

        (LogLevel level, string message) = Assert.Single(StopsLogged().Skip(before));
        Assert.Equal(LogLevel.Debug, level);
        Assert.EndsWith($"the HTTP/2 reader stopped following the connection ({cause}).", message, StringComparison.Ordinal);
    }

    private List<(LogLevel Level, string Message)> StopsLogged() =>
        [.. servers.On.Logs.HeaderCache.Where(entry => entry.Id.Id == 16).Select(entry => (entry.Level, entry.Message))];

    private static async Task<List<string>> RunAsync(IPEndPoint endPoint, string scenario)
    {
        await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
        var transcript = new List<string>();

        // Two requests the cache serves the second of.
        for (int stream = 1; stream <= 3; stream += 2)
        {
            await client.SendAsync(Http2FrameTests.Whole(stream, Plain("/warm")));
            transcript.AddRange(await client.ReadUntilAsync(t => Http2FrameTests.EndsStream(t, stream)));
        }

        (FrameWriter frames, int last) = Frames(scenario);
        await client.SendAsync(frames);
        if (scenario == "client ends mid-frame")
        {
            client.ShutdownSend();
        }

        // Streams sent together answer in any order: wait for all, and sort what they answered.
        List<string> rest = await client.ReadUntilAsync(t => Enumerable.Range(5, last - 4).Where(s => s % 2 == 1).All(s => Http2FrameTests.EndsStream(t, s)));
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
    private static (FrameWriter Frames, int Last) Frames(string scenario)
    {
        var frames = new FrameWriter();
        switch (scenario)
        {
            case "padded block that adds to the table":
                frames.Headers(5, Plain("/padded").Incremental("x-added", "by-padded").ToArray(), endStream: true, endHeaders: true, padding: 3);
                Whole(frames, 7, Plain("/after").Indexed(62));
                return (frames, 7);

            case "trailers that add to the table":
                frames.Headers(5, new HeaderBlock().Request("POST", "/trailers").Without("x-mine", "warm").ToArray(), endStream: false, endHeaders: true);
                frames.Data(5, "body"u8, endStream: false);
                Whole(frames, 5, new HeaderBlock().Incremental("x-trailer", "t1"));
                Whole(frames, 7, Plain("/after").Indexed(62));
                return (frames, 7);

            case "never-indexed fields of a new name and of a static name":
                Whole(frames, 5, Plain("/never").Literal(FieldKind.NeverIndexed, 0, "secret", "x-token").Without("x-token", "plain"));
                Whole(frames, 7, Plain("/after").Literal(FieldKind.NeverIndexed, 23, "Bearer a"));
                return (frames, 7);

            case "size update to zero then a fresh table":
                Whole(frames, 5, Plain("/zero", sizeUpdate: 0).Incremental("x-new", "one"));
                Whole(frames, 7, Plain("/grown", sizeUpdate: 4096).Incremental("x-new", "two").Indexed(62));
                return (frames, 7);

            case "index beyond the table":
                Whole(frames, 5, Plain("/beyond").Indexed(70));
                return (frames, 5);

            case "frame over MaxFrameSize":
                Whole(frames, 5, Plain("/big").Without("x-big", new string('b', 17000)));
                return (frames, 5);

            case "uppercase name":
                Whole(frames, 5, Plain("/upper").Without("X-Upper", "u"));
                return (frames, 5);

            case "pseudo-header after a regular field":
                Whole(frames, 5, new HeaderBlock().Indexed(2).Indexed(6).Without("x-mine", "warm").Literal(FieldKind.WithoutIndexing, 4, "/late")
                    .Literal(FieldKind.WithoutIndexing, 1, "localhost"));
                return (frames, 5);

            default:
                // The frame's header declares the whole block; its last 3 octets never come.
                byte[] cut = Plain("/cut").ToArray();
                frames.Frame(FrameType.Headers, FrameFlags.EndHeaders | FrameFlags.EndStream, 5, cut.AsSpan(..^3), declaredLength: cut.Length);
                return (frames, 5);
        }
    }

    private static void Whole(FrameWriter frames, int stream, HeaderBlock block) =>
        frames.Headers(stream, block.ToArray(), endStream: true, endHeaders: true);

    private static HeaderBlock Plain(string path, int? sizeUpdate = null)
    {
        var block = new HeaderBlock();
        if (sizeUpdate is { } size)
        {
            block.SizeUpdate(size);
        }

        return block.Request("GET", path).Without("x-mine", "warm").Without("accept-language", "en").Indexed(16);
    }
}
