using System.Net;
using System.Text;

namespace HeaderCache.Testing;

/// <summary>Runs the same client against HeaderCache and Kestrel alone and asserts the same transcript.</summary>
public static class Differential
{
    /// <summary>Runs <paramref name="client"/> on both servers; returns the (equal) transcript (<see cref="Edge.AssertSameAsync"/>).</summary>
    public static Task<List<string>> AssertSameAsync(ServerPair servers, Func<IPEndPoint, Task<List<string>>> client) =>
        Edge.AssertSameAsync(servers.On, servers.Alone, client);

    /// <inheritdoc cref="Edge.AssertSameSteppingAsideAsync"/>
    public static Task<List<string>> AssertSameSteppingAsideAsync(ServerPair servers, string reason, Func<IPEndPoint, Task<List<string>>> client) =>
        Edge.AssertSameSteppingAsideAsync(servers.On, servers.Alone, reason, client);

    /// <inheritdoc cref="Edge.AssertSameWithNothingServedAsync"/>
    public static Task<List<string>> AssertSameWithNothingServedAsync(ServerPair servers, Func<IPEndPoint, Task<List<string>>> client) =>
        Edge.AssertSameWithNothingServedAsync(servers.On, servers.Alone, client);

    /// <summary>
    /// The request's header lines as an independent oracle for the echo's content: for each name
    /// (case-insensitively) its OWS-trimmed values in request order. Order across names and the stored
    /// casing are Kestrel's business and are checked by comparing with Kestrel alone, not here.
    /// </summary>
    public static List<string> ExpectedHeaderLines(byte[] request)
    {
        string text = Encoding.Latin1.GetString(request);
        string head = text[..text.IndexOf("\r\n\r\n", StringComparison.Ordinal)];
        return Grouped(head.Split("\r\n").Skip(1).Select(line => line.Split(':', 2)).Select(parts => (parts[0], parts[1].Trim(' ', '\t'))));
    }

    /// <summary>
    /// Asserts that <paramref name="response"/> answers <paramref name="request"/>: the plaintext body for
    /// <c>GET /plaintext</c>, otherwise an echo that holds exactly the request's header lines.
    /// </summary>
    public static void AssertAnswers(byte[] request, string response)
    {
        Assert.Equal(200, RawHttp.Status(response));
        if (Encoding.ASCII.GetString(request).StartsWith("GET /plaintext ", StringComparison.Ordinal))
        {
            Assert.Equal("Hello, World!", RawHttp.Body(response));
            return;
        }

        Assert.Equal(ExpectedHeaderLines(request), Grouped(EchoedHeaders(response)));
    }

    /// <summary>The headers of an echo response body as the application enumerated them: names as stored, in order.</summary>
    public static List<(string Name, string Value)> EchoedHeaders(string response) =>
        RawHttp.Body(response).Split('\n').Skip(1).TakeWhile(l => !l.StartsWith('='))
            .Select(l => (l[..l.IndexOf(": ", StringComparison.Ordinal)], l[(l.IndexOf(": ", StringComparison.Ordinal) + 2)..]))
            .ToList();

    // One entry per name, case-insensitively, in order of the name's first line, with all its values in order.
    private static List<string> Grouped(IEnumerable<(string Name, string Value)> lines) =>
        lines.GroupBy(line => line.Name, StringComparer.OrdinalIgnoreCase)
            .Select(group => $"{group.Key.ToUpperInvariant()}: {string.Join(" | ", group.Select(line => line.Value))}")
            .Order(StringComparer.Ordinal)
            .ToList();
}
