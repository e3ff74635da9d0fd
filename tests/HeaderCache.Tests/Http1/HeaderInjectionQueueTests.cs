using System.Text;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Testing;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Http1;

/// <summary>The queue holds the lines of the heads it waits with, recorded in place: entries keep their lines whatever
/// is recorded after them.</summary>
public sealed class HeaderInjectionQueueTests
{
    [Fact]
    public void Waiting_entries_keep_their_lines_while_the_array_grows_and_moves_them_to_its_front()
    {
        var queue = new HeaderInjectionQueue();
        foreach (string head in new[] { "a", "b", "c", "d", "e" })
        {
            Publish(queue, head, 10);
        }

        foreach (string head in new[] { "a", "b", "c", "d" })
        {
            Assert.Equal(Lines(head, 10), Take(queue));
        }

        // Fifty lines in an array of 64, forty of them taken: g's lines fill it, and the ones waiting move to its front.
        foreach (string head in new[] { "f", "g", "h" })
        {
            Publish(queue, head, 10);
        }

        foreach (string head in new[] { "e", "f", "g", "h" })
        {
            Assert.Equal(Lines(head, 10), Take(queue));
        }

        Assert.False(queue.TryTake());
    }

    [Fact]
    public void Lines_discarded_are_not_published_and_the_next_head_records_over_them()
    {
        var queue = new HeaderInjectionQueue();
        Record(queue, "a", 3);
        queue.Discard();
        Assert.True(queue.Recorded.IsEmpty);
        Assert.False(queue.TryTake());

        Publish(queue, "b", 2);
        Assert.Equal(Lines("b", 2), Take(queue));
    }

    [Fact]
    public void A_head_that_passes_through_leaves_the_waiting_entries_as_they_are()
    {
        var queue = new HeaderInjectionQueue();
        Publish(queue, "a", 3);
        Record(queue, "b", 20);
        queue.StopRecording();
        Assert.Equal(Lines("a", 3), Take(queue));
        Assert.False(queue.TryTake());

        Record(queue, "c", 2);
        queue.StopRecording();
        Assert.True(queue.Taken.IsEmpty);
        Assert.False(queue.TryTake());
    }

    [Fact]
    public void A_head_read_after_a_compacted_one_and_passing_through_leaves_that_one_its_lines()
    {
        using var driver = new ReaderDriver();
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nAccept: a\r\n\r\nGET / HTTP/1.1\r\nX-B: 2\r\nX C: 3\r\n\r\n"));
        Assert.Equal(PassThroughReason.Malformed, driver.Reader.PassThroughReason);
        var headers = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(headers));
        Assert.Equal(["Accept=a", "X-A=1"], headers.Select(h => $"{h.Key}={h.Value}").Order());
        Assert.False(driver.Queue.TryTake());
    }

    private static void Record(HeaderInjectionQueue queue, string head, int count)
    {
        foreach (string line in Lines(head, count))
        {
            queue.NextLine() = new TakenHeader { Name = line[..line.IndexOf('=', StringComparison.Ordinal)], Value = line, Known = -1 };
            queue.Record();
        }
    }

    private static void Publish(HeaderInjectionQueue queue, string head, int count)
    {
        Record(queue, head, count);
        queue.Publish();
    }

    private static List<string> Take(HeaderInjectionQueue queue)
    {
        Assert.True(queue.TryTake());
        var lines = new List<string>();
        foreach (ref readonly TakenHeader line in queue.Taken)
        {
            lines.Add(line.Value!);
        }

        return lines;
    }

    private static List<string> Lines(string head, int count) => [.. Enumerable.Range(0, count).Select(i => $"X-{i}={head}")];
}
