using System.Text;
using HeaderCache.Caching;
using HeaderCache.Testing;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Caching;

/// <summary>Values fixed by their specifications: one string for the process, no slot of a connection's cache.</summary>
public sealed class WellKnownValuesTests
{
    [Fact]
    public void Every_value_in_the_list_is_found_as_its_own_string_and_nothing_else_is()
    {
        Assert.NotEmpty(WellKnownValues.All);
        foreach (string value in WellKnownValues.All)
        {
            byte[] bytes = Encoding.ASCII.GetBytes(value);
            Assert.True(WellKnownValues.TryGet(bytes, out string? found), value);
            Assert.Same(WellKnownValues.All.First(v => v == value), found);
            Assert.InRange(value.Length, 1, WellKnownValues.MaxLength);

            // One byte more, one byte less, another case, a byte above ASCII in place of the last: not in the list.
            foreach (byte[] other in (byte[][])[[.. bytes, (byte)'x'], bytes[..^1], Encoding.ASCII.GetBytes(value.ToUpperInvariant()), [.. bytes[..^1], 0xE9]])
            {
                string decoded = Encoding.Latin1.GetString(other);
                if (!WellKnownValues.All.Contains(decoded))
                {
                    Assert.False(WellKnownValues.TryGet(other, out _), decoded);
                }
            }
        }

        Assert.False(WellKnownValues.TryGet([], out _));
        Assert.False(WellKnownValues.TryGet(Encoding.ASCII.GetBytes(new string('a', 300)), out _));
    }

    [Fact]
    public void Two_connections_get_the_same_string_for_a_well_known_value_from_their_first_request_and_no_slot_is_used()
    {
        byte[] head = Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nSec-Fetch-Mode: cors\r\nX-Mode: CORS\r\npriority: u=1, i\r\n\r\n");
        var values = new List<StringValuesPair>();
        for (int connection = 0; connection < 2; connection++)
        {
            using var driver = new ReaderDriver();
            driver.Send(head);
            var headers = new HeaderDictionary();
            Assert.True(driver.Queue.TryApply(headers));
            Assert.Equal(["Sec-Fetch-Mode", "X-Mode", "priority"], headers.Keys);
            values.Add(new(headers["Sec-Fetch-Mode"].ToString(), headers["X-Mode"].ToString(), headers["priority"].ToString()));

            // Only "CORS" went through the connection's cache, and missed; the two others were served.
            Assert.Equal((1, 0, 1), (driver.Cache.Count, driver.Cache.Counters.Hits, driver.Cache.Counters.Misses));
        }

        Assert.Same(values[0].Mode, values[1].Mode);
        Assert.Same(values[0].Priority, values[1].Priority);
        Assert.Equal(values[0].Other, values[1].Other);
        Assert.NotSame(values[0].Other, values[1].Other);
    }

    [Fact]
    public void An_excluded_name_gets_a_new_string_even_for_a_well_known_value()
    {
        using var driver = new ReaderDriver(excluded: ["sec-fetch-mode"]);
        driver.Send(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: h\r\nSec-Fetch-Mode: cors\r\n\r\n"));
        var headers = new HeaderDictionary();
        Assert.True(driver.Queue.TryApply(headers));
        Assert.Equal("cors", headers["Sec-Fetch-Mode"].ToString());
        Assert.False(WellKnownValues.TryGet("cors"u8, out string? wellKnown) && ReferenceEquals(wellKnown, headers["Sec-Fetch-Mode"].ToString()));
        Assert.Equal(1, driver.Compactor.LinesCreated);
    }

    private sealed record StringValuesPair(string Mode, string Other, string Priority);
}
