using System.Net.Sockets;
using System.Text;
using HeaderCache.InMemory;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// The application enumerates the headers in the same order, with the same name casing and the same values per
/// name, as with Kestrel alone, whichever lines the cache serves and whichever it cannot.
/// </summary>
[Collection(ServerPairGroup.Name)]
public sealed class HeaderOrderTests(ServerPair servers)
{
    private static readonly string Long = new('L', 300);

    public static TheoryData<string, string[]> Heads => new()
    {
        // Empty and over-long values among cacheable ones (the case first reported).
        { $"X-A: 1\r\nX-Empty:\r\nX-B: 2\r\nX-Long: {Long}\r\nX-C: 3\r\n", ["Host", "X-A", "X-Empty", "X-B", "X-Long", "X-C"] },
        // A repeated name in other casing, interleaved with another repeated name.
        { "x-r: 1\r\nX-S: a\r\nX-R: 2\r\nx-s: b\r\nX-r: 3\r\n", ["Host", "x-r", "X-S"] },
        // Names Kestrel keeps in fields (enumerated first, in its own order) mixed with other names.
        { "X-1: a\r\nUser-Agent: ua\r\nX-2: b\r\nAccept: x/y\r\nX-3: c\r\naccept: z/w\r\nCookie: k=v\r\n", ["Accept", "Host", "User-Agent", "Cookie", "X-1", "X-2", "X-3"] },
        // Lines that stay in the bytes for Kestrel between lines the cache serves.
        { "X-1: a\r\nConnection: keep-alive\r\nX-2: b\r\nKeep-Alive: 5\r\nTE: trailers\r\nX-3: c\r\n", ["Connection", "Host", "Keep-Alive", "TE", "X-1", "X-2", "X-3"] },
        // Names Kestrel's HTTP/1.1 parser neither acts on nor keeps in a field.
        { "X-1: a\r\nTrailer: t\r\nX-2: b\r\nProxy-Connection: keep-alive\r\nHTTP2-Settings: AAMA\r\nX-3: c\r\n", ["Host", "X-1", "Trailer", "X-2", "Proxy-Connection", "HTTP2-Settings", "X-3"] },
        // HeaderNames constants that are not fields: Kestrel stores them under the constant's casing.
        { "x-requested-with: 1\r\nX-Other: 2\r\ncontent-disposition: 3\r\n", ["Host", "X-Requested-With", "X-Other", "Content-Disposition"] },
    };

    [Theory]
    [MemberData(nameof(Heads))]
    public async Task Headers_enumerate_as_with_Kestrel_alone(string lines, string[] keys)
    {
        byte[] request = Encoding.ASCII.GetBytes($"GET /order HTTP/1.1\r\nHost: x\r\n{lines}\r\n");
        foreach (var (_, split) in Edge.Splits(seeds: 2))
        {
            // Twice on one connection: the second request is served from the cache.
            List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
                RawHttp.ExchangeAsync(endPoint, [[request], [request]], split));
            Assert.Equal(keys, Differential.EchoedHeaders(transcript[1]).Select(h => h.Name).Distinct());
            Differential.AssertAnswers(request, transcript[1]);
        }
    }

    [Fact]
    public async Task An_excluded_name_keeps_its_place_among_the_lines_the_cache_serves()
    {
        await using SampleServer excluding = await SampleServer.StartAsync(CacheMode.On, settings: "--HeaderCache:ExcludedHeaders:0=x-secret");
        using var activity = new CacheActivity(excluding);
        byte[] request = Encoding.ASCII.GetBytes("GET /order HTTP/1.1\r\nHost: x\r\nX-1: a\r\nX-Secret: s\r\nX-2: b\r\n\r\n");

        List<string> alone = await RawHttp.ExchangeAsync(servers.Alone.EndPoint, [[request], [request]], RawHttp.Whole);
        List<string> on = await RawHttp.ExchangeAsync(excluding.EndPoint, [[request], [request]], RawHttp.Whole);

        Assert.Equal(alone, on);
        Assert.Equal(["Host", "X-1", "X-Secret", "X-2"], Differential.EchoedHeaders(on[1]).Select(h => h.Name));
        Assert.True(activity.LinesServed > 0, "the second request was not served from the cache");
    }

    [Theory]
    [InlineData("X-A: b\rc")]
    [InlineData("X-A: b\r\rc")]
    [InlineData("\rX")]
    [InlineData("X-A: b\r\n\rX")]
    public async Task A_CR_followed_by_anything_but_LF_is_rejected_as_soon_as_that_byte_arrives(string tail)
    {
        // No LF follows: Kestrel alone answers 400 at once. A layer holding bytes until the line ends would
        // leave the client waiting for the request-headers timeout (30 s) instead.
        byte[] bytes = Edge.Bytes($"GET /m HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}{tail}");
        using var activity = new CacheActivity(servers.On);
        string alone = await SendAndWaitAsync(servers.Alone, bytes);
        string on = await SendAndWaitAsync(servers.On, bytes);
        Assert.StartsWith("HTTP/1.1 400 Bad Request\r\n", alone, StringComparison.Ordinal);
        Assert.EndsWith("<closed>", alone, StringComparison.Ordinal);
        Assert.Equal(alone, on);
        Assert.Equal(1, await activity.ConnectionsAsync("passed_through", "malformed"));
    }

    // Sends the bytes without a FIN and reads until the server closes or 5 s pass.
    private static async Task<string> SendAndWaitAsync(SampleServer server, byte[] bytes)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        await socket.ConnectAsync(server.EndPoint);
        await socket.SendAsync(bytes);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(5));
        var received = new StringBuilder();
        var buffer = new byte[4096];
        try
        {
            while (await socket.ReceiveAsync(buffer, timeout.Token) is > 0 and var n)
            {
                received.Append(Encoding.Latin1.GetString(buffer, 0, n));
            }

            received.Append("<closed>");
        }
        catch (OperationCanceledException)
        {
            received.Append("<no answer in 5 s>");
        }

        return ResponseText.WithoutDate(received.ToString());
    }
}
