using System.Security.Cryptography;
using System.Text;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// Bodies and message framing, cache on vs off on the same bytes: Content-Length bodies (including bodies
/// that look like request heads) with requests pipelined after them, chunked bodies with extensions and
/// trailers, Expect: 100-continue, HTTP/1.0, Connection: close, Transfer-Encoding with Content-Length.
/// </summary>
[Collection(ServerPairGroup.Name)]
public sealed class BodyAndFramingTests(ServerPair servers)
{
    private static readonly Dictionary<string, byte[]> BodyCases = new()
    {
        ["empty"] = [],
        ["one byte"] = "x"u8.ToArray(),
        ["five bytes"] = "hello"u8.ToArray(),
        ["64 KiB of random bytes"] = RandomBytes(64 * 1024, seed: 7),
        ["a request head"] = "GET / HTTP/1.1\r\nX: y\r\n\r\n"u8.ToArray(),
        ["two requests with a body"] = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /y HTTP/1.1\r\nHost: x\r\nUser-Agent: evil\r\n\r\n"u8.ToArray(),
        ["an unfinished head"] = "GET / HTTP/1.1\r\nHost: x\r\nsec-ch-ua: \"x\"\r\n"u8.ToArray(),
        ["only line ends"] = "\r\n\r\n\n\r"u8.ToArray(),
        ["a TLS record byte"] = [0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x02],
        ["a chunked body"] = "5\r\nhello\r\n0\r\n\r\n"u8.ToArray(),
    };

    public static TheoryData<string> Bodies => new(BodyCases.Keys);

    public static TheoryData<string> ChunkedBodies => new(ChunkedCases.Keys);

    private static Dictionary<string, (string Chunked, string Decoded)> ChunkedCases => new()
    {
        ["one chunk"] = ("5\r\nhello\r\n0\r\n\r\n", "hello"),
        ["several chunks"] = ("3\r\nhel\r\n2\r\nlo\r\n1\r\n!\r\n0\r\n\r\n", "hello!"),
        ["chunk extensions"] = ("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello"),
        ["quoted chunk extension"] = ("5;a=\"b;c\"\r\nhello\r\n0\r\n\r\n", "hello"),
        ["trailers"] = ("5\r\nhello\r\n0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n", "hello"),
        ["uppercase hex and leading zeros"] = ("00A\r\n0123456789\r\n000\r\n\r\n", "0123456789"),
        ["a request head inside a chunk"] = ("18\r\nGET / HTTP/1.1\r\nX: y\r\n\r\n\r\n0\r\n\r\n", "GET / HTTP/1.1\r\nX: y\r\n\r\n"),
        ["no data"] = ("0\r\n\r\n", ""),
    };

    [Theory]
    [MemberData(nameof(Bodies))]
    public async Task Content_length_body_then_pipelined_requests(string bodyName)
    {
        byte[] body = BodyCases[bodyName];
        byte[][] requests =
        [
            Post("/first", body),
            Get("/after-body"),
            Post("/second", body, "X-Second: yes\r\n"),
            Get("/last"),
            End,
        ];
        byte[] all = requests.SelectMany(r => r).ToArray();

        using var activity = new CacheActivity(servers.On);
        List<string> transcript = await Edge.SendAllBothAsync(servers, all, seeds: 3, maxPiece: body.Length > 1000 ? 3000 : 24);
        if (body.Length <= 64)
        {
            Assert.Equal(transcript, await Differential.AssertSameAsync(servers, endPoint => RawHttp.SendAllAsync(endPoint, all, RawHttp.Bytewise, halfClose: false)));
        }

        Assert.Equal("200,200,200,200,200|closed", Edge.Summary(transcript));
        for (int i = 0; i < requests.Length; i++)
        {
            Differential.AssertAnswers(requests[i], transcript[i]);
        }

        AssertBody(transcript[0], body);
        AssertBody(transcript[1], []);
        AssertBody(transcript[2], body);

        // The heads after the bodies were compacted: their lines came from the connection's cache.
        Assert.True(activity.LinesServed > 0, "no header line was served from the cache");
    }

    [Fact]
    public async Task Body_larger_than_the_transport_buffer_then_pipelined_requests()
    {
        // 3 MiB: more than the socket transport's 1 MiB pause threshold, so back-pressure is part of the run.
        byte[] body = RandomBytes(3 * 1024 * 1024, seed: 3);
        byte[] all = [.. Post("/big", body), .. Get("/after"), .. Post("/big-again", body), .. End];
        List<string> transcript = await Edge.SendAllBothAsync(servers, all, seeds: 1, maxPiece: 256 * 1024);
        Assert.Equal("200,200,200,200|closed", Edge.Summary(transcript));
        AssertBody(transcript[0], body);
        AssertBody(transcript[2], body);
        Differential.AssertAnswers(Get("/after"), transcript[1]);
    }

    [Fact]
    public async Task Content_length_body_arriving_with_the_head_or_byte_by_byte_after_it()
    {
        byte[] body = "GET /inside HTTP/1.1\r\nHost: x\r\n\r\n"u8.ToArray();
        byte[] head = Post("/p", body)[..^body.Length];

        // Head and body in separate writes, the body one byte at a time, then a request in the same write as the last byte.
        List<string> transcript = await Differential.AssertSameAsync(servers, async endPoint =>
        {
            var pieces = new List<byte[]> { head };
            pieces.AddRange(body.SkipLast(1).Select(b => new[] { b }));
            pieces.Add([body[^1], .. Get("/next"), .. End]);
            return await RawHttp.SendAllAsync(endPoint, pieces.SelectMany(p => p).ToArray(), RawHttp.Pieces(pieces.Select(p => p.Length)), halfClose: false);
        });

        Assert.Equal("200,200,200|closed", Edge.Summary(transcript));
        AssertBody(transcript[0], body);
        Assert.StartsWith("GET /next HTTP/1.1\n", RawHttp.Body(transcript[1]), StringComparison.Ordinal);
    }

    [Theory]
    [MemberData(nameof(ChunkedBodies))]
    public async Task Chunked_body_then_more_requests_on_the_connection(string chunkedName)
    {
        (string chunked, string decoded) = ChunkedCases[chunkedName];
        byte[][] requests =
        [
            Get("/before"),
            Edge.Bytes($"POST /chunked HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Transfer-Encoding: chunked\r\n\r\n{chunked}"),
            Get("/after"),
            Post("/after-with-body", "abc"u8.ToArray()),
            End,
        ];
        byte[] all = requests.SelectMany(r => r).ToArray();
        List<string> transcript = await Edge.SendAllBothAsync(servers, all, seeds: 3);

        Assert.Equal("200,200,200,200,200|closed", Edge.Summary(transcript));
        AssertBody(transcript[1], Encoding.ASCII.GetBytes(decoded));
        Differential.AssertAnswers(requests[0], transcript[0]);
        Differential.AssertAnswers(requests[2], transcript[2]);
        Differential.AssertAnswers(requests[3], transcript[3]);
    }

    [Fact]
    public async Task Chunked_body_on_http10_and_chunked_request_answered_request_by_request()
    {
        byte[] http10 = Edge.Bytes($"POST /c10 HTTP/1.0\r\nHost: x\r\n{Edge.Cacheable}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. http10, .. Get("/never")]);
        Assert.Equal("200|closed", Edge.Summary(transcript));
        AssertBody(transcript[0], "hello"u8.ToArray());

        byte[] chunked = Edge.Bytes($"PUT /c HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        // Two requests first: the cache serves the second before the chunked one leaves the connection to Kestrel.
        List<string> exchange = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [[Get("/1")], [Get("/2")], [chunked], [Get("/3")], [chunked, Get("/4")]], RawHttp.Whole));
        Assert.Equal("200,200,200,200,200,200|closed", Edge.Summary(exchange));
    }

    [Theory]
    [InlineData("100-continue")]
    [InlineData("100-Continue")]
    public async Task Expect_100_continue_sends_the_body_after_the_interim_response(string expect)
    {
        byte[] body = "{\"some\":\"json\"}"u8.ToArray();
        byte[] head = Edge.Bytes($"POST /upload HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Expect: {expect}\r\nContent-Type: application/json\r\nContent-Length: {body.Length}\r\n\r\n");

        // Head, wait for "100 Continue", then the body together with a pipelined request.
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [[Get("/warm-up")], [head], [body, Get("/after")]], RawHttp.Whole));

        Assert.Equal("200,100,200,200|closed", Edge.Summary(transcript));
        Assert.StartsWith("HTTP/1.1 100 Continue\r\n", transcript[1], StringComparison.Ordinal);
        AssertBody(transcript[2], body);
        Assert.Contains($"Expect: {expect}\n", RawHttp.Body(transcript[2]), StringComparison.Ordinal);
        Differential.AssertAnswers(Get("/after"), transcript[3]);

        // A client that does not wait, body in the same write: Kestrel sends "100 Continue" only when it has to
        // wait for body bytes, so there is none here.
        List<string> eager = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.SendAllAsync(endPoint, [.. head, .. body, .. Get("/after"), .. End], RawHttp.Whole, halfClose: false));
        Assert.Equal("200,200,200|closed", Edge.Summary(eager));
        AssertBody(eager[0], body);
    }

    [Fact]
    public async Task Expect_100_continue_with_an_empty_body_or_on_http10_sends_no_interim_response()
    {
        byte[] empty = Edge.Bytes($"POST /e HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Expect: 100-continue\r\nContent-Length: 0\r\n\r\n");
        byte[] http10 = Edge.Bytes($"POST /e10 HTTP/1.0\r\nHost: x\r\n{Edge.Cacheable}Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc");
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [[empty], [Get("/after")], [http10]], RawHttp.Whole));
        Assert.Equal("200,200,200|closed", Edge.Summary(transcript));
        AssertBody(transcript[2], "abc"u8.ToArray());
    }

    [Fact]
    public async Task Expect_100_continue_when_the_application_never_reads_the_body()
    {
        // GET /plaintext does not read the body: no "100 Continue"; the body sent after the response is drained.
        byte[] head = Edge.Bytes($"GET /plaintext HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Expect: 100-continue\r\nContent-Length: 5\r\n\r\n");
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [[head], [[.. "hello"u8, .. Get("/after")]]], RawHttp.Whole));
        Assert.Equal("200,200|closed", Edge.Summary(transcript));
        Assert.Equal("Hello, World!", RawHttp.Body(transcript[0]));
        Differential.AssertAnswers(Get("/after"), transcript[1]);
    }

    [Fact]
    public async Task Http10_closes_after_the_response_unless_keep_alive_is_asked_for()
    {
        byte[] plain = Edge.Bytes($"GET /one HTTP/1.0\r\n{Edge.Cacheable}\r\n");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. plain, .. Get("/never")]);
        Assert.Equal("200|closed", Edge.Summary(transcript));
        Assert.StartsWith("GET /one HTTP/1.0\n", RawHttp.Body(transcript[0]), StringComparison.Ordinal);
        Assert.Contains("\r\nConnection: close\r\n", Edge.Head(transcript[0]), StringComparison.Ordinal);

        // Keep-alive holds for as long as Kestrel can frame the responses. An echo with a Content-Length keeps
        // the connection; one without ends it (HTTP/1.0 has no chunking), and then only HEAD keeps it. HeaderCache leaves
        // HTTP/1.0 heads to Kestrel.
        byte[] getKeepAlive = Edge.Bytes($"GET /ka HTTP/1.0\r\nConnection: keep-alive\r\n{Edge.Cacheable}\r\n");
        List<string> probe = await Differential.AssertSameSteppingAsideAsync(servers, "version", endPoint => RawHttp.ExchangeAsync(endPoint, [[getKeepAlive]], RawHttp.Whole));
        bool echoKeepsAlive = Edge.Head(probe[0]).Contains("\r\nConnection: keep-alive\r\n", StringComparison.Ordinal);
        byte[] keepAlive = echoKeepsAlive ? getKeepAlive : Edge.Bytes($"HEAD /ka HTTP/1.0\r\nConnection: keep-alive\r\n{Edge.Cacheable}\r\n");
        byte[] postKeepAlive = Edge.Bytes($"POST /ka HTTP/1.0\r\nConnection: keep-alive\r\n{Edge.Cacheable}Content-Length: 5\r\n\r\nhello");
        List<string> kept = await Edge.SendAllBothAsync(servers, [.. Get("/11"), .. keepAlive, .. keepAlive, .. postKeepAlive, .. plain, .. Get("/never")]);
        Assert.Contains("\r\nConnection: keep-alive\r\n", Edge.Head(kept[1]), StringComparison.Ordinal);
        Assert.Contains("\r\nConnection: keep-alive\r\n", Edge.Head(kept[2]), StringComparison.Ordinal);
        Assert.StartsWith("POST /ka HTTP/1.0\n", RawHttp.Body(kept[3]), StringComparison.Ordinal);
        AssertBody(kept[3], "hello"u8.ToArray());
        Assert.Equal(echoKeepsAlive ? "200,200,200,200,200|closed" : "200,200,200,200|closed", Edge.Summary(kept));
        if (echoKeepsAlive)
        {
            Assert.StartsWith("GET /one HTTP/1.0\n", RawHttp.Body(kept[4]), StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData("close")]
    [InlineData("Close")]
    [InlineData("keep-alive, close")]
    public async Task Connection_close_ends_the_connection_after_the_response(string connection)
    {
        byte[] closing = Edge.Bytes($"POST /bye HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Connection: {connection}\r\nContent-Length: 2\r\n\r\nok");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. Get("/first"), .. closing, .. Get("/never")]);
        Assert.Equal("200,200|closed", Edge.Summary(transcript));
        Assert.Contains("\r\nConnection: close\r\n", Edge.Head(transcript[1]), StringComparison.Ordinal);
        AssertBody(transcript[1], "ok"u8.ToArray());

        // The server closes even though the client keeps its side open; the cache serves the closing request's lines.
        List<string> open = await Differential.AssertSameAsync(servers, endPoint => RawHttp.SendAllAsync(endPoint, [.. Get("/first"), .. closing], RawHttp.Whole, halfClose: false));
        Assert.Equal("200,200|closed", Edge.Summary(open));
    }

    [Theory]
    [InlineData("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")]
    [InlineData("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n")]
    [InlineData("Content-Length: 100\r\nTransfer-Encoding: chunked\r\n")]
    public async Task Transfer_encoding_with_content_length_is_framed_as_chunked_and_closes_the_connection(string framing)
    {
        // Kestrel reads the body as chunked, moves Content-Length to X-Content-Length, and closes after the response.
        byte[] smuggle = Edge.Bytes($"POST /te-cl HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}{framing}\r\n5\r\nhello\r\n0\r\n\r\n");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. Get("/first"), .. smuggle, .. Get("/never"), .. End], seeds: 3);
        Assert.Equal("200,200|closed", Edge.Summary(transcript));
        Assert.Contains("\r\nConnection: close\r\n", Edge.Head(transcript[1]), StringComparison.Ordinal);
        AssertBody(transcript[1], "hello"u8.ToArray());
        Assert.Contains("\nX-Content-Length: ", RawHttp.Body(transcript[1]), StringComparison.Ordinal);
        Assert.DoesNotContain("\nContent-Length: ", RawHttp.Body(transcript[1]), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("POST")]
    [InlineData("PUT")]
    [InlineData("DELETE")]
    public async Task Request_without_a_body_is_an_empty_body(string method)
    {
        byte[] request = Edge.Bytes($"{method} /nobody HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}\r\n");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. request, .. request, .. Get("/after"), .. End]);
        Assert.Equal("200,200,200,200|closed", Edge.Summary(transcript));
        AssertBody(transcript[0], []);
        Differential.AssertAnswers(request, transcript[1]);

        // HTTP/1.0 needs a length for these.
        byte[] http10 = Edge.Bytes($"{method} /nobody HTTP/1.0\r\nHost: x\r\n{Edge.Cacheable}\r\n");
        List<string> rejected = await Edge.SendAllBothAsync(servers, [.. Get("/ok"), .. http10]);
        Assert.Equal(method == "DELETE" ? "200,200|closed" : "200,400|closed", Edge.Summary(rejected));
    }

    [Fact]
    public async Task Body_the_application_never_reads_is_drained_before_the_next_request()
    {
        // The sample answers GET /plaintext without reading the body; Kestrel drains it.
        byte[] unread = Edge.Bytes($"GET /plaintext HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Content-Length: 33\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. unread, .. Get("/after"), .. unread, .. End]);
        Assert.Equal("200,200,200,200|closed", Edge.Summary(transcript));
        Assert.Equal("Hello, World!", RawHttp.Body(transcript[0]));
        Assert.StartsWith("GET /after HTTP/1.1\n", RawHttp.Body(transcript[1]), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Body_over_the_size_limit_is_rejected_the_same()
    {
        // Kestrel's MaxRequestBodySize is 30,000,000 bytes.
        byte[] huge = Edge.Bytes($"POST /huge HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Content-Length: 40000000\r\n\r\nsome of it");
        List<string> transcript = await Edge.SendAllBothAsync(servers, [.. Get("/first"), .. huge]);
        Assert.Equal("200,413|closed", Edge.Summary(transcript));
    }

    private static readonly byte[] End = Edge.Bytes(Edge.Terminator);

    private static byte[] Get(string target) => Edge.Bytes($"GET {target} HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}\r\n");

    private static byte[] Post(string target, byte[] body, string extra = "") =>
        [.. Edge.Bytes($"POST {target} HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}{extra}Content-Length: {body.Length}\r\n\r\n"), .. body];

    private static void AssertBody(string response, byte[] body)
    {
        string echo = RawHttp.Body(response);
        Assert.Contains($"\nbody-length: {body.Length}\n", echo, StringComparison.Ordinal);
        Assert.Contains($"\nbody-sha256: {Convert.ToHexStringLower(SHA256.HashData(body))}\n", echo, StringComparison.Ordinal);
    }

    private static byte[] RandomBytes(int length, int seed)
    {
        byte[] bytes = new byte[length];
        new Random(seed).NextBytes(bytes);
        return bytes;
    }
}
