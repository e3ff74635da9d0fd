using System.Net;
using System.Text;

namespace HeaderCache.Tests.Integration;

/// <summary>Runs the same client against the cache-on and cache-off servers and asserts the same transcript.</summary>
public static class Differential
{
    /// <summary>Runs <paramref name="client"/> on both servers; returns the (equal) transcript.</summary>
    public static async Task<List<string>> AssertSameAsync(ServerPair servers, Func<IPEndPoint, Task<List<string>>> client)
    {
        List<string> off = await client(servers.Off.EndPoint);
        List<string> on = await client(servers.On.EndPoint);
        Assert.Equal(off, on);
        return on;
    }

    /// <summary>
    /// The request's header lines as an independent oracle for the echo: lowercased names with their
    /// OWS-trimmed values, in the order an echo lists them (names sorted, values in request order).
    /// </summary>
    public static List<string> ExpectedHeaderLines(byte[] request)
    {
        string text = Encoding.Latin1.GetString(request);
        string head = text[..text.IndexOf("\r\n\r\n", StringComparison.Ordinal)];
        return head.Split("\r\n").Skip(1)
            .Select(line => (Name: line[..line.IndexOf(':', StringComparison.Ordinal)], Value: line[(line.IndexOf(':', StringComparison.Ordinal) + 1)..].Trim(' ', '\t')))
            .Select((h, index) => (h.Name, h.Value, index))
            .OrderBy(h => h.Name, StringComparer.OrdinalIgnoreCase).ThenBy(h => h.index)
            .Select(h => $"{h.Name.ToLowerInvariant()}: {h.Value}")
            .ToList();
    }

    /// <summary>
    /// Asserts that <paramref name="response"/> answers <paramref name="request"/>: the plaintext body for
    /// <c>GET /plaintext</c>, otherwise an echo whose header lines are exactly the request's.
    /// </summary>
    public static void AssertAnswers(byte[] request, string response)
    {
        Assert.Equal(200, RawHttp.Status(response));
        if (Encoding.ASCII.GetString(request).StartsWith("GET /plaintext ", StringComparison.Ordinal))
        {
            Assert.Equal("Hello, World!", RawHttp.Body(response));
            return;
        }

        Assert.Equal(ExpectedHeaderLines(request), EchoedHeaderLines(response));
    }

    /// <summary>The header lines of an echo response body, names lowercased.</summary>
    public static List<string> EchoedHeaderLines(string response)
    {
        string[] lines = RawHttp.Body(response).Split('\n', StringSplitOptions.RemoveEmptyEntries);
        return lines.Skip(1).TakeWhile(l => !l.StartsWith("body-length: ", StringComparison.Ordinal))
            .Select(l => l[..l.IndexOf(':', StringComparison.Ordinal)].ToLowerInvariant() + l[l.IndexOf(':', StringComparison.Ordinal)..])
            .ToList();
    }
}
