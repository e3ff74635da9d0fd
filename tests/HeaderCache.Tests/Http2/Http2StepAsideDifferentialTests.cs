using System.Globalization;
using System.Net;
using HeaderCache.Fields;
using HeaderCache.H2Client;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Http2;

/// <summary>A connection whose values stop repeating, to Kestrel alone and to Kestrel with HeaderCache (h2c with prior
/// knowledge): the reader steps aside between frames, and the application sees what Kestrel alone shows before, at and
/// after the step: a stream whose fields were taken before it ends after it, and blocks after it refer to table entries
/// added before it.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2StepAsideDifferentialTests(Http2ServerPair servers)
{
    // Fields of new values per churn block, and the churn blocks that bring the connection's window of 64 values below
    // one repeat in 8.
    private const int ChurnFields = 8;
    private const int ChurnBlocks = 9;

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Kestrel_answers_as_alone_before_at_and_after_the_step(bool splitReads)
    {
        using var activity = new CacheActivity(servers.On);
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, endPoint => RunAsync(endPoint, splitReads));
        Assert.Equal(1, await activity.ConnectionsAsync("passed_through", "values_do_not_repeat"));
        Assert.DoesNotContain(transcript, line => line.StartsWith("GOAWAY", StringComparison.Ordinal) || line.StartsWith("RST_STREAM", StringComparison.Ordinal));
        Assert.Contains(transcript, line => line.Contains("/in-flight", StringComparison.Ordinal) && line.Contains("\nx-mine: warm\nx-early: e1\nx-flight: f\n", StringComparison.Ordinal));
        Assert.Contains(transcript, line => line.Contains("/last", StringComparison.Ordinal) && line.Contains("\nx-early: e1\n", StringComparison.Ordinal));
        Assert.All(transcript.Where(line => line.StartsWith("HEADERS ", StringComparison.Ordinal)), line => Assert.EndsWith(" 200", line, StringComparison.Ordinal));
    }

    private static async Task<List<string>> RunAsync(IPEndPoint endPoint, bool splitReads)
    {
        await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
        (List<string> transcript, FrameWriter frames) = await WarmAsync(client);

        // New values only: the window ends below one repeat in 8 within the last of these blocks, and the reader steps
        // aside at the frame header after it.
        for (int block = 0; block < ChurnBlocks; block++)
        {
            HeaderBlock churn = new HeaderBlock().Request("GET", $"/churn/{block}");
            for (int field = 0; field < ChurnFields; field++)
            {
                churn.Incremental($"x-churn-{field}", string.Create(CultureInfo.InvariantCulture, $"v{block}-{field}"));
            }

            Http2FrameTests.Whole(7 + 2 * block, churn).Bytes.ForEach(frames.Bytes.Add);
        }

        // After the step: references to entries added before it (the newest churn field, the first, and x-early), a
        // literal the reader would have taken, and the end of the stream in flight.
        int after = 7 + 2 * ChurnBlocks;
        frames.Headers(after, Plain("/after").Indexed(62).Indexed(62 + ChurnFields - 1).Without("x-after", "a").ToArray(), endStream: true, endHeaders: true);
        frames.Data(5, "body"u8, endStream: true);
        if (splitReads)
        {
            await client.SendSplitAsync(seed: 5, maxPiece: 13, frames);
        }
        else
        {
            await client.SendAsync(frames);
        }

        List<string> rest = await client.ReadUntilAsync(t => Enumerable.Range(2, (after / 2) - 1).All(s => Http2FrameTests.EndsStream(t, 2 * s + 1)));

        // One more request on its own read, with a reference to x-early, which churn has not pushed out of the table.
        await client.SendAsync(Http2FrameTests.Whole(after + 2, Plain("/last").Indexed(62 + ChurnFields * ChurnBlocks)));
        rest.AddRange(await client.ReadUntilAsync(t => Http2FrameTests.EndsStream(t, after + 2)));

        // Streams sent together answer in any order.
        rest.Sort(StringComparer.Ordinal);
        transcript.AddRange(rest);
        return transcript;
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Kestrel_answers_as_alone_around_the_step_for_nothing_to_cache(bool splitReads)
    {
        using var activity = new CacheActivity(servers.On);
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, endPoint => RunBareAsync(endPoint, splitReads));
        Assert.Equal(1, await activity.ConnectionsAsync("passed_through", "nothing_to_cache"));
        Assert.Contains(transcript, line => line.Contains("/in-flight", StringComparison.Ordinal) && line.Contains("\nx-mine: warm\nx-early: e1\nx-flight: f\n", StringComparison.Ordinal));
        Assert.Contains(transcript, line => line.Contains("/after", StringComparison.Ordinal) && line.Contains("\nx-early: e1\nx-after: a\n", StringComparison.Ordinal));
        Assert.All(transcript.Where(line => line.StartsWith("HEADERS ", StringComparison.Ordinal)), line => Assert.EndsWith(" 200", line, StringComparison.Ordinal));
    }

    // After WarmAsync, blocks with only what Kestrel acts on, the last of which makes the reader step aside at the next frame header;
    // then a block referring to x-early with a literal the reader would have taken, and the body of the stream in flight.
    private static async Task<List<string>> RunBareAsync(IPEndPoint endPoint, bool splitReads)
    {
        await using H2cClient client = await H2cClient.ConnectAsync(endPoint);
        (List<string> transcript, FrameWriter frames) = await WarmAsync(client);
        int bare = ValueAdmission.RequestsWithNothingToTake;
        for (int block = 0; block < bare; block++)
        {
            Http2FrameTests.Whole(7 + 2 * block, new HeaderBlock().Request("GET", $"/bare/{block}")).Bytes.ForEach(frames.Bytes.Add);
        }

        int after = 7 + 2 * bare;
        frames.Headers(after, new HeaderBlock().Request("GET", "/after").Indexed(62).Without("x-after", "a").ToArray(), endStream: true, endHeaders: true);
        frames.Data(5, "body"u8, endStream: true);
        if (splitReads)
        {
            await client.SendSplitAsync(seed: 9, maxPiece: 11, frames);
        }
        else
        {
            await client.SendAsync(frames);
        }

        List<string> rest = await client.ReadUntilAsync(t => Enumerable.Range(2, (after / 2) - 1).All(s => Http2FrameTests.EndsStream(t, 2 * s + 1)));
        rest.Sort(StringComparer.Ordinal);
        transcript.AddRange(rest);
        return transcript;
    }

    // Served: fields the cache serves the second time; then a table entry (x-early). Then, not yet sent, a stream whose
    // fields are taken now (one of them a reference to x-early) and whose body ends after the step.
    private static async Task<(List<string> Transcript, FrameWriter Frames)> WarmAsync(H2cClient client)
    {
        var transcript = new List<string>();
        await client.SendAsync(Http2FrameTests.Whole(1, Plain("/warm")));
        transcript.AddRange(await client.ReadUntilAsync(t => Http2FrameTests.EndsStream(t, 1)));
        await client.SendAsync(Http2FrameTests.Whole(3, Plain("/early").Incremental("x-early", "e1")));
        transcript.AddRange(await client.ReadUntilAsync(t => Http2FrameTests.EndsStream(t, 3)));
        var frames = new FrameWriter();
        frames.Headers(5, new HeaderBlock().Request("POST", "/in-flight").Without("x-mine", "warm").Indexed(62).Without("x-flight", "f").ToArray(), endStream: false, endHeaders: true);
        return (transcript, frames);
    }

    private static HeaderBlock Plain(string path) => new HeaderBlock().Request("GET", path).Without("x-mine", "warm").Without("accept-language", "en");
}
