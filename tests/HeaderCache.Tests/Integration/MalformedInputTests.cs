namespace HeaderCache.Tests.Integration;

/// <summary>
/// Malformed and edge-case request heads from Kestrel's HTTP/1.1 parsing rules and limits, cache on vs
/// off on the same bytes, sent whole and cut at random places. Each row also pins the outcome Kestrel gives
/// on its own (the statuses of the responses, then how the connection ended), so no row passes vacuously.
/// </summary>
/// <remarks>
/// Every row's heads carry cacheable lines, mostly before the line under test, so with the cache on the
/// compactor holds stripped candidates when it meets the odd byte. Unless a row ends with a FIN, a final
/// <c>Connection: close</c> request follows its bytes: its 200 shows the connection survived the row.
/// </remarks>
[Collection(ServerPairGroup.Name)]
public sealed class MalformedInputTests(ServerPair servers)
{
    private const string C = Edge.Cacheable;

    private static readonly Dictionary<string, Row> Rows = new Row[]
    {
        // Line ends: a bare LF is a line end for Kestrel (the DisableHttp1LineFeedTerminators switch is off by default).
        new("bare LF ends the request line", $"GET /m HTTP/1.1\nHost: x\r\n{C}\r\n", "200,200|closed"),
        new("bare LF ends a header line", $"GET /m HTTP/1.1\r\nHost: x\n{C}\r\n", "200,200|closed"),
        new("bare LF after cacheable lines", Req("X-Late: v\n"), "200,200|closed"),
        new("bare LF ends the head", $"GET /m HTTP/1.1\r\nHost: x\r\n{C}\n", "200,200|closed"),
        new("bare LF everywhere", "GET /m HTTP/1.1\nHost: x\nUser-Agent: edge\nsec-ch-ua: \"x\"\n\n", "200,200|closed"),
        new("bare CR in a value", Req("X-A: b\rc\r\n"), "400|closed"),
        new("bare CR in a name", Req("X\rA: b\r\n"), "400|closed"),
        new("bare CR starts a line", Req("\rX-A: b\r\n"), "400|closed"),
        new("CR CR LF ends a line", Req("X-A: b\r\r\n"), "400|closed"),
        new("CR CR LF ends the head", $"GET /m HTTP/1.1\r\nHost: x\r\n{C}\r\r\n", "400|closed"),
        new("bare CR in the target", $"GET /m\r HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),

        // Header line shapes.
        new("obs-fold with a space", Req("X-A: b\r\n c\r\n"), "400|closed"),
        new("obs-fold with a tab", Req("X-A: b\r\n\tc\r\n"), "400|closed"),
        new("obs-fold as the first header line", $"GET /m HTTP/1.1\r\n folded: x\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("space before the colon", Req("X-A : b\r\n"), "400|closed"),
        new("tab before the colon", Req("X-A\t: b\r\n"), "400|closed"),
        new("space before the colon of a cacheable name", $"GET /m HTTP/1.1\r\nHost: x\r\nUser-Agent : a\r\n\r\n", "400|closed"),
        new("empty name", Req(": b\r\n"), "400|closed"),
        new("missing colon after a space", Req("X-A b\r\n"), "400|closed"),
        new("missing colon", Req("XA\r\n"), "400|closed"),
        new("empty value and whitespace-only value", Req("X-Empty:\r\nX-Blank:  \t \r\n"), "200,200|closed"),
        new("value without whitespace and with inner tabs", Req("X-Tight:b\r\nX-Tabs: \ta\tb c\t \r\n"), "200,200|closed"),
        new("same name twice in different case", Req("X-Dup: 1\r\nx-dup: 2\r\n"), "200,200|closed"),
        new("same name twice, the second empty", Req("X-Dup: 1\r\nX-Dup:\r\n"), "200,200|closed"),
        new("same name twice, the first too long to cache", Req($"X-Dup: {new string('a', 300)}\r\nx-dup: short\r\n"), "200,200|closed"),
        new("same name twice, the second with a control byte", Req("X-Dup: 1\r\nX-Dup: \u0001\r\n"), "200,200|closed"),
        new("a known name twice", Req("Accept: a/b\r\nACCEPT: c/d\r\n"), "200,200|closed"),
        new("known and unknown names in odd case", "GET /m HTTP/1.1\r\nHost: x\r\nACCEPT: a/b\r\nuser-AGENT: ua\r\nGRPC-TIMEOUT: 1S\r\nalt-used: x\r\nX-FORWARDED-FOR: 1.2.3.4\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nCOOKIE: a=b\r\nsec-CH-ua: z\r\nCONTENT-TYPE: text/plain\r\n\r\n", "200,200|closed"),
        new("every name the cache re-injects as Kestrel's, lowercase", KnownNames(n => n.ToLowerInvariant()), "200,200|closed"),
        new("every name the cache re-injects as Kestrel's, uppercase", KnownNames(n => n.ToUpperInvariant()), "200,200|closed"),
        new("HeaderNames constants Kestrel does not keep in fields, in odd case", Req(string.Concat(new[]
        {
            "content-encoding", "CONTENT-LANGUAGE", "content-location", "Content-MD5", "content-range", "allow", "EXPIRES",
            "last-modified", "x-forwarded-proto", "X-FORWARDED-HOST", "x-requested-with", "dnt", "link", "ETAG", "accept-ranges",
            "last-event-id", "x-ua-compatible", "content-disposition", "server", "set-cookie", "location", "retry-after",
            "www-authenticate", "vary", "x-powered-by", "sec-websocket-protocol", "access-control-allow-origin", "age",
            "proxy-authenticate", "alt-svc", "x-xss-protection", "strict-transport-security", "content-security-policy",
        }.Select((name, i) => $"{name}: v{i}\r\n"))), "200,200|closed"),
        new("names Kestrel acts on, in odd case", "GET /m HTTP/1.1\r\nhOST: x\r\n" + C + "connection: keep-alive\r\nKEEP-ALIVE: timeout=5\r\nte: trailers\r\nTRAILER: x\r\nproxy-connection: keep-alive\r\nhttp2-settings: AAMAAABk\r\nexpect: 100-continue\r\n\r\n", "200,200|closed"),
        new("long name and value", Req($"X-{new string('n', 300)}: {new string('v', 600)}\r\nX-Long: {new string('w', 257)}\r\n"), "200,200|closed"),

        // NUL.
        new("NUL in a name", Req("X-\0A: b\r\n"), "400|closed"),
        new("NUL in a value", Req("X-A: b\0c\r\n"), "400|closed"),
        new("NUL in the target", $"GET /m\0 HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("NUL in the method", $"G\0T /m HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),

        // Control bytes: the parser does not check them; values and names may carry most of them.
        new("0x01 in a value", Req("X-A: b\u0001c\r\n"), "200,200|closed"),
        new("0x08 in a value", Req("X-A: \u0008\r\n"), "200,200|closed"),
        new("0x0B and 0x0C in a value", Req("X-A: b\u000b\u000cc\r\n"), "200,200|closed"),
        new("0x1F in a value", Req("X-A: b\u001f\r\n"), "200,200|closed"),
        new("0x7F in a value", Req("X-A: b\u007fc\r\n"), "200,200|closed"),
        new("0x01 at the edges of a value", Req("X-A:\u0001b\u0001\r\n"), "200,200|closed"),
        new("0x01 in a name", Req("X-\u0001A: b\r\n"), "200,200|closed"),
        new("0x7F in a name", Req("X-\u007fA: b\r\n"), "200,200|closed"),
        new("separators in a name", Req("X(A)@\"{}/[]?=,;<>: b\r\n"), "200,200|closed"),

        // Bytes over 0x7F.
        new("UTF-8 in a value", Req("X-A: caf\u00c3\u00a9\r\n"), "200,200|closed"),
        new("UTF-8 in a known header's value", Req("Accept-Charset: \u00e2\u0082\u00ac\r\n"), "200,200|closed"),
        new("invalid UTF-8 in a value", Req("X-A: \u00ff\u00fe\r\n"), "400|closed"),
        new("Latin-1 byte in a value", Req("X-A: caf\u00e9\r\n"), "400|closed"),
        new("overlong UTF-8 in a value", Req("X-A: \u00c0\u00af\r\n"), "400|closed"),
        new("UTF-8 in a name", Req("X-caf\u00c3\u00a9: b\r\n"), "400|closed"),
        new("invalid UTF-8 in a name", Req("X-\u00ff: b\r\n"), "400|closed"),
        new("UTF-8 in the target", $"GET /caf\u00c3\u00a9 HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),

        // Content-Length.
        new("two equal Content-Lengths", Post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello"), "400|closed"),
        new("two different Content-Lengths", Post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!"), "400|closed"),
        new("Content-Length +5", Post("Content-Length: +5\r\n", "hello"), "200,200|closed"),
        new("Content-Length -0", Post("Content-Length: -0\r\n", ""), "200,200|closed"),
        new("Content-Length -5", Post("Content-Length: -5\r\n", "hello"), "400|closed"),
        new("Content-Length with a space inside", Post("Content-Length: 5 5\r\n", "hello"), "400|closed"),
        new("Content-Length with a tab inside", Post("Content-Length: 5\t5\r\n", "hello"), "400|closed"),
        new("Content-Length with spaces and tabs around", Post("Content-Length: \t 5 \t\r\n", "hello"), "200,200|closed"),
        new("Content-Length with leading zeros", Post("Content-Length: 0005\r\n", "hello"), "200,200|closed"),
        new("Content-Length of 19 digits", Post("Content-Length: 0000000000000000005\r\n", "hello"), "200,200|closed"),
        new("Content-Length with a letter", Post("Content-Length: 5a\r\n", "hello"), "400|closed"),
        new("Content-Length in hex", Post("Content-Length: 0x5\r\n", "hello"), "400|closed"),
        new("Content-Length with an exponent", Post("Content-Length: 1e1\r\n", "0123456789"), "400|closed"),
        new("Content-Length that overflows", Post("Content-Length: 99999999999999999999\r\n", "hello"), "400|closed"),
        new("empty Content-Length", Post("Content-Length:\r\n", ""), "400|closed"),
        new("Content-Length list", Post("Content-Length: 5,5\r\n", "hello"), "400|closed"),
        new("Content-Length before the cacheable lines", $"POST /m HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n{C}\r\nhello", "200,200|closed"),

        // Transfer-Encoding.
        new("Transfer-Encoding gzip", Post("Transfer-Encoding: gzip\r\n", "5\r\nhello\r\n0\r\n\r\n"), "400|closed"),
        new("Transfer-Encoding chunked then gzip", Post("Transfer-Encoding: chunked, gzip\r\n", "5\r\nhello\r\n0\r\n\r\n"), "400|closed"),
        new("Transfer-Encoding identity", Post("Transfer-Encoding: identity\r\n", "hello"), "400|closed"),
        new("Transfer-Encoding gzip then chunked", Post("Transfer-Encoding: gzip, chunked\r\n", "5\r\nhello\r\n0\r\n\r\n"), "200,200|closed"),
        new("Transfer-Encoding CHUNKED", Post("Transfer-Encoding: CHUNKED\r\n", "5\r\nhello\r\n0\r\n\r\n"), "200,200|closed"),
        new("Transfer-Encoding gzip, TAB chunked", Post("Transfer-Encoding: gzip,\tchunked\r\n", "5\r\nhello\r\n0\r\n\r\n"), "400|closed"),
        new("two Transfer-Encoding lines", Post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n"), "200,200|closed"),
        new("chunked GET with no data", $"GET /m HTTP/1.1\r\nHost: x\r\n{C}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "200,200|closed"),
        new("bad chunk size", Post("Transfer-Encoding: chunked\r\n", "zz\r\nhello\r\n0\r\n\r\n"), "400|closed"),

        // Empty lines before a request.
        new("CRLF CRLF before the request", "\r\n\r\n" + Req(""), "200,200|closed"),
        new("CR CR LF LF before the request", "\r\r\n\n" + Req(""), "200,200|closed"),
        new("LF before the request", "\n" + Req(""), "200,200|closed"),
        new("CRLFs between pipelined requests", Req("") + "\r\n\r\n" + Req("X-B: 2\r\n") + "\n\r\n", "200,200,200|closed"),
        new("CRLF after a body", Post("Content-Length: 5\r\n", "hello") + "\r\n" + Req(""), "200,200,200|closed"),

        // Versions.
        new("HTTP/2.0 request line", $"GET /m HTTP/2.0\r\nHost: x\r\n{C}\r\n", "505|closed"),
        new("HTTP/2 prior-knowledge preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "raw|closed"),
        new("HTTP/1.2", $"GET /m HTTP/1.2\r\nHost: x\r\n{C}\r\n", "505|closed"),
        new("lowercase http/1.1", $"GET /m http/1.1\r\nHost: x\r\n{C}\r\n", "505|closed"),
        new("HTTP/0.9", $"GET /m HTTP/0.9\r\nHost: x\r\n{C}\r\n", "505|closed"),
        new("version of nine bytes", $"GET /m HTTP/1.10\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("no version", $"GET /m\r\nHost: x\r\n{C}\r\n", "400|closed"),

        // Methods and targets.
        // CONNECT is answered by the echo like any request (without a Content-Length, which Kestrel refuses
        // on a 2xx CONNECT response), and the connection goes on.
        new("CONNECT authority-form", $"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n{C}\r\n", "200,200|closed"),
        new("CONNECT origin-form", $"CONNECT /m HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),
        new("OPTIONS *", $"OPTIONS * HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),
        new("GET *", $"GET * HTTP/1.1\r\nHost: x\r\n{C}\r\n", "405|closed"),
        new("absolute-form target", $"GET http://x/m?q=1 HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),
        new("absolute-form target with another Host", $"GET http://y/m HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("authority-form GET", $"GET x:80 HTTP/1.1\r\nHost: x:80\r\n{C}\r\n", "405|closed"),
        new("lowercase method", $"get /m HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),
        new("method with a separator", $"GE(T /m HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("two spaces after the method", $"GET  /m HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("two spaces before the version", $"GET /m  HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),
        new("target starting with ?", $"GET ?q HTTP/1.1\r\nHost: x\r\n{C}\r\n", "400|closed"),
        new("target with a control byte", $"GET /m\u0001 HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200,200|closed"),

        // Host.
        new("missing Host", $"GET /m HTTP/1.1\r\n{C}\r\n", "400|closed"),
        new("missing Host on HTTP/1.0", $"GET /m HTTP/1.0\r\n{C}\r\n", "200|closed"),
        new("two equal Host lines", $"GET /m HTTP/1.1\r\nHost: x\r\n{C}Host: x\r\n\r\n", "400|closed"),
        new("two different Host lines", $"GET /m HTTP/1.1\r\nHost: x\r\n{C}Host: y\r\n\r\n", "400|closed"),
        new("empty Host", $"GET /m HTTP/1.1\r\nHost:\r\n{C}\r\n", "200,200|closed"),
        new("Host with a space", $"GET /m HTTP/1.1\r\nHost: a b\r\n{C}\r\n", "400|closed"),

        // Upgrades that are not taken.
        new("h2c upgrade request", $"GET /m HTTP/1.1\r\nHost: x\r\n{C}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n", "200,200|closed"),
        new("upgrade request with a body", $"POST /m HTTP/1.1\r\nHost: x\r\n{C}Connection: Upgrade\r\nUpgrade: foo\r\nContent-Length: 5\r\n\r\nhello", "200,200|closed"),

        // A good request, then a bad one on the same connection: the first is answered the same.
        new("valid then a space before the colon", Req("") + Req("X A: b\r\n"), "200,400|closed"),
        new("valid then a bare CR", Req("") + Req("X-A: b\rc\r\n"), "200,400|closed"),
        new("valid then NUL in a value", Req("") + Req("X-A: \0\r\n"), "200,400|closed"),
        new("valid then HTTP/2.0", Req("") + $"GET /m HTTP/2.0\r\nHost: x\r\n{C}\r\n", "200,505|closed"),
        new("valid then two Content-Lengths", Req("") + Post("Content-Length: 1\r\nContent-Length: 1\r\n", "x"), "200,400|closed"),
        new("valid then missing Host", Req("") + $"GET /m HTTP/1.1\r\n{C}\r\n", "200,400|closed"),
        new("valid, bare LF, valid", Req("") + $"GET /lf HTTP/1.1\nHost: x\n{C.Replace("\r\n", "\n", StringComparison.Ordinal)}\n" + Req(""), "200,200,200,200|closed"),
        new("valid, obs-text value, valid", Req("") + Req("X-A: \u00c3\u00a9\r\n") + Req(""), "200,200,200,200|closed"),

        // The client ends (FIN) inside a head, or sends nothing. Kestrel answers 400, but its reaction to the
        // FIN itself (it aborts the connection's output) races with writing that 400, so now and then the
        // connection just closes: see ClientEndsInsideAHeadTests.
        new("FIN after only empty lines", "\r\n\r\n\n", "|closed", Fin: true),
        

        // TLS bytes on a plaintext endpoint.
        new("TLS ClientHello", "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003" + new string('\u0042', 32) + "\r\n", "400|closed"),
        new("TLS ClientHello after a CRLF", "\r\n\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003\r\n", "400|closed"),
    }.ToDictionary(r => r.Name);

    public static TheoryData<string> Names => new(Rows.Keys);

    /// <summary>The bytes of the row named <paramref name="name"/> (without the final request).</summary>
    public static string Request(string name) => Rows[name].Request;

    /// <summary>Every row's bytes, as seeds for the fuzzer's mutations.</summary>
    public static IEnumerable<byte[]> Corpus => Rows.Values.Select(row => Edge.Bytes(row.Request));

    [Theory]
    [MemberData(nameof(Names))]
    public async Task Same_outcome_with_and_without_the_cache(string name)
    {
        Row row = Rows[name];
        byte[] bytes = Edge.Bytes(row.Fin ? row.Request : row.Request + Edge.Terminator);
        List<string> transcript = await Edge.SendAllBothAsync(servers, bytes, seeds: 2, fin: row.Fin);
        Assert.Contains(Edge.Summary(transcript), row.Expected.Split(" or "));
    }

    [Fact]
    public async Task Http2_preface_gets_a_goaway_but_after_a_crlf_in_the_same_read_a_505()
    {
        // Kestrel recognises the preface only at the very start of its read buffer, then answers with an
        // HTTP/2 GOAWAY (HTTP_1_1_REQUIRED). A CRLF before it in the same read hides it: a plain 505. (When the
        // CRLF and the preface arrive in separate reads, Kestrel alone answers either way, so both go in one write.)
        // HeaderCache leaves both connections to Kestrel at their first request line: there is nothing it could serve.
        List<string> preface = await Differential.AssertSameSteppingAsideAsync(servers, "http2", endPoint =>
            RawHttp.SendAllAsync(endPoint, Edge.Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), RawHttp.Whole, halfClose: false));
        Assert.Equal([RawHttp.Raw([0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0d]), RawHttp.Closed], preface);

        List<string> afterCrlf = await Differential.AssertSameSteppingAsideAsync(servers, "http2", endPoint =>
            RawHttp.SendAllAsync(endPoint, Edge.Bytes("\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), RawHttp.Whole, halfClose: false));
        Assert.Equal("505|closed", Edge.Summary(afterCrlf));
    }

    [Fact]
    public async Task Odd_but_accepted_heads_reach_the_application_as_sent()
    {
        // Spot checks on what the application saw for a few rows (the differential covers the rest).
        List<string> utf8 = await Edge.SendAllBothAsync(servers, Edge.Bytes(Rows["UTF-8 in a value"].Request + Edge.Terminator), seeds: 1);
        Assert.Contains("\nX-A: café\n", RawHttp.Body(utf8[0]), StringComparison.Ordinal);

        List<string> control = await Edge.SendAllBothAsync(servers, Edge.Bytes(Rows["0x01 at the edges of a value"].Request + Edge.Terminator), seeds: 1);
        Assert.Contains("\nX-A: \u0001b\u0001\n", RawHttp.Body(control[0]), StringComparison.Ordinal);

        List<string> dup = await Edge.SendAllBothAsync(servers, Edge.Bytes(Rows["same name twice in different case"].Request + Edge.Terminator), seeds: 1);
        Assert.Contains("\nX-Dup: 1\nX-Dup: 2\n", RawHttp.Body(dup[0]), StringComparison.Ordinal);

        List<string> casing = await Edge.SendAllBothAsync(servers, Edge.Bytes(Rows["known and unknown names in odd case"].Request + Edge.Terminator), seeds: 1);
        string echo = RawHttp.Body(casing[0]);
        Assert.Contains("\nAccept: a/b\n", echo, StringComparison.Ordinal);
        Assert.Contains("\nUser-Agent: ua\n", echo, StringComparison.Ordinal);
        Assert.Contains("\nGrpc-Timeout: 1S\n", echo, StringComparison.Ordinal);
        Assert.Contains("\nAlt-Used: x\n", echo, StringComparison.Ordinal);
        Assert.Contains("\nX-FORWARDED-FOR: 1.2.3.4\n", echo, StringComparison.Ordinal);
        Assert.Contains("\nsec-CH-ua: z\n", echo, StringComparison.Ordinal);

        List<string> plus = await Edge.SendAllBothAsync(servers, Edge.Bytes(Rows["Content-Length +5"].Request + Edge.Terminator), seeds: 1);
        Assert.Contains("\nbody-length: 5\n", RawHttp.Body(plus[0]), StringComparison.Ordinal);
    }

    private static string KnownNames(Func<string, string> casing) =>
        "GET /known HTTP/1.1\r\nHost: x\r\n"
        + string.Concat(Enumerable.Range(0, HeaderCache.Fields.FieldNames.KnownCount).Select(HeaderCache.Fields.FieldNames.KnownName).Select((name, i) => $"{casing(name)}: v{i}\r\n"))
        + "\r\n";

    private static string Req(string lines) => $"GET /m HTTP/1.1\r\nHost: x\r\n{C}{lines}\r\n";

    private static string Post(string framing, string body) => $"POST /m HTTP/1.1\r\nHost: x\r\n{C}{framing}\r\n{body}";

    private sealed record Row(string Name, string Request, string Expected, bool Fin = false);
}
