using System.Net;
using HeaderCache.H2Client;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Http2;

/// <summary>Frame-level scenarios from a bare client against Kestrel alone and with HeaderCache: every frame the client
/// gets back (type, stream, flags, status, body, error codes) is the same, and the cache served fields.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2FrameTests(Http2ServerPair servers)
{
    [Fact]
    public async Task Cookie_crumbs_indexed_or_literal_are_joined_as_Kestrel_joins_them()
    {
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            await using H2cClient client = await H2cClient.ConnectAsync(endPoint);

            // The first request adds its crumbs and a name of its own to the table; the later ones refer to them.
            HeaderBlock first = new HeaderBlock().Request("GET", "/crumbs/1").Literal(FieldKind.IncrementalIndexing, 32, "a=1")
                .Literal(FieldKind.IncrementalIndexing, 32, "b=2").Incremental("x-seen", "first").Without("x-plain", "p");
            var transcript = await ExchangeAsync(client, 1, first);
            for (int stream = 3; stream <= 7; stream += 2)
            {
                HeaderBlock later = new HeaderBlock().Request("GET", $"/crumbs/{stream}").Indexed(64).Without("x-plain", "p").Indexed(63)
                    .Literal(FieldKind.WithoutIndexing, 32, "c=3").Indexed(62).Indexed(16);
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
            await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
            byte[] block = new HeaderBlock().Request("GET", "/continued").Incremental("x-cont", "one").Incremental("x-cont-two", "two")
                .Without("x-plain", "p").ToArray();
            int cut = block.Length / 2;
            var frames = new FrameWriter();
            frames.Headers(1, block.AsSpan(..cut), endStream: true, endHeaders: false);
            frames.Continuation(1, block.AsSpan(cut..), endHeaders: true);
            await client.SendAsync(frames);
            List<string> transcript = await client.ReadUntilAsync(t => EndsStream(t, 1));
            for (int stream = 3; stream <= 5; stream += 2)
            {
                HeaderBlock later = new HeaderBlock().Request("GET", "/continued/" + stream).Indexed(63).Indexed(62).Without("x-plain", "p");
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
        await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
        var transcript = await ExchangeAsync(client, 1, new HeaderBlock().Request("GET", "/warm").Without("x-mine", "warm"));
        transcript.AddRange(await ExchangeAsync(client, 3, new HeaderBlock().Request("GET", "/warm").Without("x-mine", "warm")));

        // Stream 5 opens, with a body still to come, and is reset in the same write as stream 7 opens.
        var frames = new FrameWriter();
        frames.Headers(5, new HeaderBlock().Request("POST", "/reset").Literal(FieldKind.WithoutIndexing, 28, "5").Without("x-mine", "reset-stream").ToArray(),
            endStream: false, endHeaders: true);
        frames.RstStream(5, 8);
        frames.Headers(7, new HeaderBlock().Request("GET", "/next").Without("x-mine", "next-stream").ToArray(), endStream: true, endHeaders: true);
        await client.SendAsync(frames);
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
            await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
            var open = new FrameWriter();
            for (int stream = 1; stream <= 201; stream += 2)
            {
                byte[] block = new HeaderBlock().Request("POST", $"/open/{stream}").Without("x-stream", stream.ToString(System.Globalization.CultureInfo.InvariantCulture))
                    .Without("x-common", "same").ToArray();
                open.Headers(stream, block, endStream: false, endHeaders: true);
            }

            await client.SendAsync(open);
            List<string> transcript = await client.ReadUntilAsync(t => t.Contains("RST_STREAM 201 7"));
            var ends = new FrameWriter();
            for (int stream = 1; stream <= 199; stream += 2)
            {
                ends.Data(stream, "body"u8, endStream: true);
            }

            await client.SendAsync(ends);
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
            await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
            var transcript = await ExchangeAsync(client, 1, new HeaderBlock().Request("GET", "/a").Without("x-mine", "a"));
            transcript.AddRange(await ExchangeAsync(client, 3, new HeaderBlock().Request("GET", "/b").Without("x-mine", "a")));
            HeaderBlock many = new HeaderBlock().Request("GET", "/many");
            for (int i = 0; i < 250; i++)
            {
                many.Without("x-many", "v");
            }

            await client.SendAsync(Whole(5, many));
            transcript.AddRange(await client.ReadUntilAsync(t => t.Contains("closed")));
            return transcript;
        });
    }

    /// <summary>A request in one HEADERS frame with END_HEADERS and END_STREAM.</summary>
    internal static FrameWriter Whole(int stream, HeaderBlock block)
    {
        var frames = new FrameWriter();
        frames.Headers(stream, block.ToArray(), endStream: true, endHeaders: true);
        return frames;
    }

    /// <summary>Whether the transcript holds the end of <paramref name="stream"/>: its last DATA, its RST_STREAM, a
    /// GOAWAY or the close.</summary>
    internal static bool EndsStream(List<string> transcript, int stream) =>
        transcript.Exists(line => line.StartsWith($"DATA {stream} 1", StringComparison.Ordinal) || line.StartsWith($"RST_STREAM {stream} ", StringComparison.Ordinal)
            || line.StartsWith("GOAWAY", StringComparison.Ordinal) || line == "closed");

    private static async Task<List<string>> ExchangeAsync(H2cClient client, int stream, HeaderBlock block)
    {
        await client.SendAsync(Whole(stream, block));
        return await client.ReadUntilAsync(t => EndsStream(t, stream));
    }
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
            await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
            var frames = new FrameWriter();
            frames.Headers(1, new HeaderBlock().Request("GET", "/split/1").Literal(FieldKind.IncrementalIndexing, 32, "a=1").Incremental("x-seen", "first")
                .Without("x-plain", "p").ToArray(), endStream: true, endHeaders: true);
            for (int stream = 3; stream <= 11; stream += 2)
            {
                frames.Headers(stream, new HeaderBlock().Request("GET", $"/split/{stream}").Indexed(63).Indexed(62).Without("x-plain", "p")
                    .Literal(FieldKind.WithoutIndexing, 32, "b=" + stream).ToArray(), endStream: true, endHeaders: true);
            }

            await client.SendSplitAsync(seed, maxPiece, frames);
            List<string> transcript = await client.ReadUntilAsync(t => t.Count(line => line.StartsWith("DATA ", StringComparison.Ordinal) && line.Split(' ')[2] == "1") == 6
                || t.Contains("closed") || t.Exists(line => line.StartsWith("GOAWAY", StringComparison.Ordinal)));

            // Streams sent without waiting answer in any order.
            transcript.Sort(StringComparer.Ordinal);
            return transcript;
        });
    }
}
