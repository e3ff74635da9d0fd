using System.Text;
using HeaderCache.Caching;
using HeaderCache.Testing;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Caching;

/// <summary>Names and values fixed by their specifications: one string for the process; a value takes no slot of the
/// connection's cache, a name takes its slot but no new string.</summary>
public sealed class WellKnownStringsTests
{
    public static TheoryData<string> Lists => ["values", "names"];

    [Theory]
    [MemberData(nameof(Lists))]
    public void Every_string_in_a_list_is_found_as_itself_and_nothing_else_is(string list)
    {
        WellKnownStrings strings = list == "values" ? WellKnownStrings.Values : WellKnownStrings.Names;
        Assert.NotEmpty(strings.All);
        foreach (string value in strings.All)
        {
            byte[] bytes = Encoding.ASCII.GetBytes(value);
            Assert.True(strings.TryGet(bytes, out string? found), value);
            Assert.Same(strings.All.First(v => v == value), found);
            Assert.InRange(value.Length, 1, strings.MaxLength);

            // One byte more, one byte less, another case, a byte above ASCII in place of the last: not in the list.
            foreach (byte[] other in (byte[][])[[.. bytes, (byte)'x'], bytes[..^1], Encoding.ASCII.GetBytes(value.ToUpperInvariant()), [.. bytes[..^1], 0xE9]])
            {
                string decoded = Encoding.Latin1.GetString(other);
                if (!strings.All.Contains(decoded))
                {
                    Assert.False(strings.TryGet(other, out _), decoded);
                }
            }
        }

        Assert.False(strings.TryGet([], out _));
        Assert.False(strings.TryGet(Encoding.ASCII.GetBytes(new string('a', 300)), out _));
    }

    [Fact]
    public void Two_connections_get_the_same_strings_for_well_known_names_and_values_from_their_first_request()
    {
        byte[] head = Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nSec-Fetch-Mode: cors\r\nX-Mode: CORS\r\npriority: u=1, i\r\nSEC-CH-UA: a\r\n\r\n");
        var seen = new List<KeyValuePair<string, string>[]>();
        for (int connection = 0; connection < 2; connection++)
        {
            using var driver = new ReaderDriver();
            driver.Send(head);
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal(["Sec-Fetch-Mode", "X-Mode", "priority", "SEC-CH-UA"], headers.Keys);
            seen.Add([.. headers.Select(header => KeyValuePair.Create(header.Key, header.Value.ToString()))]);

            // Values: only "CORS" and "a" went through the connection's cache, and missed; "cors" and "u=1, i" took no slot.
            // Names: all four took a slot; two came from the list, "X-Mode" and the upper-case "SEC-CH-UA" were created.
            // Lines: Sec-Fetch-Mode and priority came without a new string.
            Assert.Equal((2, 0, 2), (driver.Cache.Count, driver.Cache.Counters.Hits, driver.Cache.Counters.Misses));
            Assert.Equal((4, 0, 2), (driver.Names.Count, driver.Names.Counters.Hits, driver.Names.Counters.Misses));
            Assert.Equal((2, 2), (driver.Compactor.LinesServed, driver.Compactor.LinesCreated));
        }

        for (int i = 0; i < 4; i++)
        {
            Assert.Equal(seen[0][i], seen[1][i]);
        }

        Assert.Same(seen[0][0].Key, seen[1][0].Key);
        Assert.Same(seen[0][0].Value, seen[1][0].Value);
        Assert.NotSame(seen[0][1].Key, seen[1][1].Key);
        Assert.NotSame(seen[0][1].Value, seen[1][1].Value);
        Assert.Same(seen[0][2].Key, seen[1][2].Key);
        Assert.Same(seen[0][2].Value, seen[1][2].Value);
        Assert.NotSame(seen[0][3].Key, seen[1][3].Key);
    }

    [Fact]
    public void A_browsers_default_Accept_is_the_same_string_on_every_connection_and_takes_no_slot()
    {
        // A document, then a style sheet, then an image, as Chromium asks for them: Kestrel alone reuses none of these
        // (each differs from the request before it).
        string[] accepts =
        [
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
            "text/css,*/*;q=0.1",
            "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
        ];
        var seen = new List<string>();
        for (int connection = 0; connection < 2; connection++)
        {
            using var driver = new ReaderDriver();
            foreach (string accept in accepts)
            {
                driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: " + accept + "\r\n\r\n"));
                IHeaderDictionary headers = new HeaderDictionary();
                Assert.True(driver.Queue.TryApply(headers));
                Assert.Equal(accept, headers.Accept.ToString());
                seen.Add(headers.Accept.ToString());
            }

            Assert.Equal((0, 0), (driver.Cache.Count, driver.Cache.Counters.Misses));
            Assert.Equal((3, 0), (driver.Compactor.LinesServed, driver.Compactor.LinesCreated));
        }

        for (int i = 0; i < accepts.Length; i++)
        {
            Assert.Same(seen[i], seen[i + accepts.Length]);
        }
    }

    [Fact]
    public void An_excluded_name_gets_a_new_string_even_for_a_well_known_value()
    {
        using var driver = new ReaderDriver(excluded: ["sec-fetch-mode"]);
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nSec-Fetch-Mode: cors\r\n\r\n"));
        var headers = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(headers));
        Assert.Equal("cors", headers["Sec-Fetch-Mode"].ToString());
        Assert.True(WellKnownStrings.Values.TryGet("cors"u8, out string? wellKnown));
        Assert.NotSame(wellKnown, headers["Sec-Fetch-Mode"].ToString());
        Assert.Equal(1, driver.Compactor.LinesCreated);
    }
}
