using System.Text;
using HeaderCache.Fields;
using HeaderCache.Http1;

namespace HeaderCache.Tests.Http1;

/// <summary>The memo's order of lines: a line that comes where the memo expects it is found where it ends, and only
/// then.</summary>
public sealed class LineMemoFollowersTests
{
    [Fact]
    public void Lines_sent_in_the_order_of_the_last_head_are_found_where_they_end_without_a_search()
    {
        var memo = new LineMemo();
        string[] lines = ["Host: h", "X-A: 1", "X-B: two"];
        foreach (string line in lines)
        {
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(line)));
            memo.Remember(Entry(line), Encoding.ASCII.GetBytes(line));
        }

        memo.Begin();
        byte[] head = Encoding.ASCII.GetBytes("Host: h\r\nX-A: 1\r\nX-B: two\r\n\r\n");
        int at = 0;
        foreach (string line in lines)
        {
            Assert.Equal(line.Length, memo.FindNext(head.AsSpan(at), out int found));
            Assert.Equal(line, memo[found].Name + ": " + memo[found].Value);
            at += line.Length + 2;
        }

        Assert.Equal(-1, memo.FindNext(head.AsSpan(at), out _));

        // Bytes that only start like the expected line, or a line not followed by CRLF yet, are left to the search.
        memo.Begin();
        Assert.Equal(-1, memo.FindNext("Host: hh\r\n"u8, out _));
        Assert.Equal(-1, memo.FindNext("Host: h\r"u8, out _));
        Assert.Equal(-1, memo.FindNext("Host: h\rX"u8, out _));
        Assert.Equal(-1, memo.FindNext("X-A: 1\r\n"u8, out _));

        // Found by the search in another order, the lines are expected in that order next time.
        memo.Begin();
        Assert.NotEqual(-1, memo.Find("X-B: two"u8));
        Assert.NotEqual(-1, memo.Find("Host: h"u8));
        memo.Begin();
        Assert.Equal(8, memo.FindNext("X-B: two\r\nHost: h\r\n"u8, out _));
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8, out _));
    }

    [Fact]
    public void A_line_that_differs_from_the_one_expected_in_any_one_byte_is_not_found_at_any_length()
    {
        // The memo compares 16 bytes at a time and the last 16 overlapping: every length up to a few loads, every byte.
        for (int length = 6; length <= 70; length++)
        {
            string line = "X-L: " + new string('v', length - 5);
            var memo = new LineMemo();
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(line)));
            memo.Remember(Entry(line), Encoding.ASCII.GetBytes(line));
            byte[] sent = Encoding.ASCII.GetBytes(line + "\r\n");
            for (int changed = 0; changed < length; changed++)
            {
                sent[changed] ^= 0x01;
                memo.Begin();
                Assert.Equal(-1, memo.FindNext(sent, out int found));
                Assert.Equal(-1, found);
                sent[changed] ^= 0x01;
            }

            memo.Begin();
            Assert.Equal(length, memo.FindNext(sent, out _));
        }
    }

    [Fact]
    public void A_line_followed_by_one_of_four_lines_in_turn_finds_each_where_it_ends()
    {
        // A browser's Accept after the same line changes with the kind of resource: page, script, image, style sheet.
        var memo = new LineMemo();
        Assert.Equal(-1, memo.Find("Host: h"u8));
        memo.Remember(Entry("Host: h"), "Host: h"u8);
        foreach (string accept in new[] { "Accept: a", "Accept: bb", "Accept: ccc", "Accept: dddd", "Accept: eeeee" })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8, out _));
            Assert.Equal(-1, memo.FindNext(Encoding.ASCII.GetBytes(accept + "\r\n"), out _));
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(accept)));
            memo.Remember(Entry(accept), Encoding.ASCII.GetBytes(accept));
        }

        // The last four, in any order, as often as they come.
        foreach (string next in new[] { "Accept: eeeee", "Accept: bb", "Accept: ccc", "Accept: dddd", "Accept: bb", "Accept: eeeee" })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8, out _));
            Assert.Equal(next.Length, memo.FindNext(Encoding.ASCII.GetBytes(next + "\r\n"), out int found));
            Assert.Equal(next, memo[found].Name + ": " + memo[found].Value);
        }

        // A fifth (found by the search) takes the place of the one that came longest ago, ccc; dddd is still expected.
        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8, out _));
        Assert.Equal(-1, memo.FindNext("Accept: a\r\n"u8, out _));
        Assert.NotEqual(-1, memo.Find("Accept: a"u8));
        foreach ((string next, int expected) in new[] { ("Accept: ccc", -1), ("Accept: dddd", 12), ("Accept: a", 9) })
        {
            memo.Begin();
            Assert.Equal(7, memo.FindNext("Host: h\r\n"u8, out _));
            Assert.Equal(expected, memo.FindNext(Encoding.ASCII.GetBytes(next + "\r\n"), out _));
        }
    }

    [Fact]
    public void A_line_remembered_again_in_place_keeps_the_lines_that_came_after_it()
    {
        var memo = new LineMemo();
        foreach (string line in new[] { "Host: h", "X-A: 1" })
        {
            Assert.Equal(-1, memo.Find(Encoding.ASCII.GetBytes(line)));
            memo.Remember(Entry(line), Encoding.ASCII.GetBytes(line));
        }

        // Host found where expected, then remembered again (its strings were let go of by the caches since).
        memo.Begin();
        Assert.Equal(7, memo.FindNext("Host: h\r\n"u8, out _));
        memo.Remember(Entry("Host: h"), "Host: h"u8);
        Assert.Equal(6, memo.FindNext("X-A: 1\r\n"u8, out _));

        // After a trim the order starts again.
        memo.Release();
        memo.Begin();
        Assert.Equal(-1, memo.FindNext("Host: h\r\n"u8, out _));
    }

    private static LineMemo.Entry Entry(string line)
    {
        string[] parts = line.Split(": ");
        return new LineMemo.Entry { Name = parts[0], Value = parts[1], Kind = FieldNames.Kept, ValueSlot = -1 };
    }
}
