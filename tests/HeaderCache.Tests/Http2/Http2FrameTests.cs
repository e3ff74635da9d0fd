using System.Net;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Http2;

/// <summary>Frame-level scenarios from a bare client against Kestrel alone and with HeaderCache: every frame the client
/// gets back (type, stream, flags, status, body, error codes) is the same, and the cache served fields.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2FrameTests(Http2ServerPair servers)
{
    private const byte Whole = RawHttp2.EndHeaders | RawHttp2.EndStream;

    [Fact]
    public async Task Cookie_crumbs_indexed_or_literal_are_joined_as_Kestrel_joins_them()
    {
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);

            // The first request adds its crumbs and a name of its own to the table; the later ones refer to them.
            byte[] first = new BlockWriter().Request("GET", "/crumbs/1").Literal(0x40, 6, 32, "a=1").Literal(0x40, 6, 32, "b=2")
                .Incremental("x-seen", "first").Without("x-plain", "p").ToArray();
            var transcript = await ExchangeAsync(client, 1, first);
            for (int stream = 3; stream <= 7; stream += 2)
            {
                byte[] later = new BlockWriter().Request("GET", $"/crumbs/{stream}").Indexed(64).Without("x-plain", "p").Indexed(63)
                    .Literal(0x00, 4, 32, "c=3").Indexed(62).Indexed(16).ToArray();
                transcript.AddRange(await ExchangeAsync(client, stream, later));
            }

            return transcript;
        });

        Assert.Contains("\nCookie: a=1; b=2; c=3\n", transcript[^1], StringComparison.Ordinal);
        Assert.Contains("\nx-plain: p\nx-seen: first\n", transcript[^1], StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_block_continued_in_continuation_frames_updates_the_mirror()
    {
        await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);
            byte[] block = new BlockWriter().Request("GET", "/continued").Incremental("x-cont", "one").Incremental("x-cont-two", "two")
                .Without("x-plain", "p").ToArray();
            int cut = block.Length / 2;
            await client.SendAsync(
                RawHttp2.Frame(RawHttp2.Headers, RawHttp2.EndStream, 1, block[..cut]),
                RawHttp2.Frame(RawHttp2.Continuation, RawHttp2.EndHeaders, 1, block[cut..]));
            List<string> transcript = await client.ReadUntilAsync(t => EndsStream(t, 1));
            for (int stream = 3; stream <= 5; stream += 2)
            {
                byte[] later = new BlockWriter().Request("GET", "/continued/" + stream).Indexed(63).Indexed(62).Without("x-plain", "p").ToArray();
                transcript.AddRange(await ExchangeAsync(client, stream, later));
            }

            return transcript;
        });
    }

    [Fact]
    public async Task A_stream_reset_before_its_request_ran_leaks_nothing_into_the_next()
    {
        await Edge.AssertSameAsync(servers.On, servers.Alone, ResetScenarioAsync);
    }

    internal static async Task<List<string>> ResetScenarioAsync(IPEndPoint endPoint)
    {
        await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);
        var transcript = await ExchangeAsync(client, 1, new BlockWriter().Request("GET", "/warm").Without("x-mine", "warm").ToArray());
        transcript.AddRange(await ExchangeAsync(client, 3, new BlockWriter().Request("GET", "/warm").Without("x-mine", "warm").ToArray()));

        // Stream 5 opens, with a body still to come, and is reset in the same write as stream 7 opens.
        byte[] reset = new BlockWriter().Request("POST", "/reset").Literal(0x00, 4, 28, "5").Without("x-mine", "reset-stream").ToArray();
        byte[] next = new BlockWriter().Request("GET", "/next").Without("x-mine", "next-stream").ToArray();
        await client.SendAsync(
            RawHttp2.Frame(RawHttp2.Headers, RawHttp2.EndHeaders, 5, reset),
            RawHttp2.Rst(5, 8),
            RawHttp2.Frame(RawHttp2.Headers, Whole, 7, next));
        List<string> rest = await client.ReadUntilAsync(t => EndsStream(t, 7));

        // Whether Kestrel answered stream 5 before it saw the reset is a race, with or without HeaderCache.
        transcript.AddRange(rest.Where(line => line.Split(' ')[1] != "5"));
        return transcript;
    }

    [Fact]
    public async Task A_stream_over_MaxStreamsPerConnection_is_refused_as_alone()
    {
        await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);
            var open = new List<byte[]>();
            for (int stream = 1; stream <= 201; stream += 2)
            {
                byte[] block = new BlockWriter().Request("POST", $"/open/{stream}").Without("x-stream", stream.ToString(System.Globalization.CultureInfo.InvariantCulture))
                    .Without("x-common", "same").ToArray();
                open.Add(RawHttp2.Frame(RawHttp2.Headers, RawHttp2.EndHeaders, stream, block));
            }

            await client.SendAsync([.. open]);
            List<string> transcript = await client.ReadUntilAsync(t => t.Contains("RST_STREAM 201 7"));
            var ends = new List<byte[]>();
            for (int stream = 1; stream <= 199; stream += 2)
            {
                ends.Add(RawHttp2.Frame(RawHttp2.Data, RawHttp2.EndStream, stream, "body"u8.ToArray()));
            }

            await client.SendAsync([.. ends]);
            transcript.AddRange(await client.ReadUntilAsync(t => t.Count(line => line.StartsWith("DATA ", StringComparison.Ordinal) && line.Split(' ')[2] == "1") == 100));

            // Concurrent streams answer in any order.
            transcript.Sort(StringComparer.Ordinal);
            return transcript;
        });
    }

    [Fact]
    public async Task A_block_over_twice_the_header_count_ends_the_connection_as_alone()
    {
        await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);
            var transcript = await ExchangeAsync(client, 1, new BlockWriter().Request("GET", "/a").Without("x-mine", "a").ToArray());
            transcript.AddRange(await ExchangeAsync(client, 3, new BlockWriter().Request("GET", "/b").Without("x-mine", "a").ToArray()));
            BlockWriter many = new BlockWriter().Request("GET", "/many");
            for (int i = 0; i < 250; i++)
            {
                many.Without("x-many", "v");
            }

            await client.SendAsync(RawHttp2.Frame(RawHttp2.Headers, Whole, 5, many.ToArray()));
            transcript.AddRange(await client.ReadUntilAsync(t => t.Contains("closed")));
            return transcript;
        });
    }

    private static async Task<List<string>> ExchangeAsync(RawHttp2 client, int stream, byte[] block)
    {
        await client.SendAsync(RawHttp2.Frame(RawHttp2.Headers, Whole, stream, block));
        return await client.ReadUntilAsync(t => EndsStream(t, stream));
    }

    private static bool EndsStream(List<string> transcript, int stream) =>
        transcript.Exists(line => line.StartsWith($"DATA {stream} 1", StringComparison.Ordinal) || line.StartsWith($"RST_STREAM {stream} ", StringComparison.Ordinal)
            || line.StartsWith("GOAWAY", StringComparison.Ordinal) || line == "closed");
}

/// <summary>The same requests with their bytes cut into small writes: frame headers and held HEADERS frames arrive in
/// pieces.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2SplitFrameTests(Http2ServerPair servers)
{
    [Theory]
    [InlineData(1, 3)]
    [InlineData(2, 11)]
    [InlineData(3, 40)]
    public async Task Requests_cut_anywhere_see_what_Kestrel_alone_gives(int seed, int maxPiece)
    {
        await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            await using RawHttp2 client = await RawHttp2.ConnectAsync(endPoint);
            var frames = new List<byte[]>
            {
                RawHttp2.Frame(RawHttp2.Headers, RawHttp2.EndHeaders | RawHttp2.EndStream, 1, new BlockWriter().Request("GET", "/split/1")
                    .Literal(0x40, 6, 32, "a=1").Incremental("x-seen", "first").Without("x-plain", "p").ToArray()),
            };
            for (int stream = 3; stream <= 11; stream += 2)
            {
                frames.Add(RawHttp2.Frame(RawHttp2.Headers, RawHttp2.EndHeaders | RawHttp2.EndStream, stream, new BlockWriter().Request("GET", $"/split/{stream}")
                    .Indexed(63).Indexed(62).Without("x-plain", "p").Literal(0x00, 4, 32, "b=" + stream).ToArray()));
            }

            await client.SendSplitAsync(seed, maxPiece, [.. frames]);
            List<string> transcript = await client.ReadUntilAsync(t => t.Count(line => line.StartsWith("DATA ", StringComparison.Ordinal) && line.Split(' ')[2] == "1") == 6
                || t.Contains("closed") || t.Exists(line => line.StartsWith("GOAWAY", StringComparison.Ordinal)));

            // Streams sent without waiting answer in any order.
            transcript.Sort(StringComparer.Ordinal);
            return transcript;
        });
    }
}
