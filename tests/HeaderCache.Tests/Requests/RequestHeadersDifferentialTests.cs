using System.Collections;
using System.Globalization;
using System.Text;
using System.IO.Pipelines;
using System.Net;
using HeaderCache.InMemory;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Tests.Requests;

/// <summary>
/// <c>HttpContext.Request.Headers</c> is Kestrel's own dictionary to every caller, whatever HeaderCache puts in
/// front of it: random header sets, sent a few times on one keep-alive connection so that later requests are
/// served from the cache, and random sequences of lookups, enumerations and mutations run by the same app on a
/// Kestrel with HeaderCache and on a Kestrel alone, must give the same response bytes.
/// </summary>
public sealed class RequestHeadersDifferentialTests
{
    // 4 base seeds x 75 connections: 300 header sets, each sent 3 to 6 times with its own operation sequence.
    private const int ConnectionsPerSeed = 75;

    private static readonly byte[] HitsRequest = "GET /hits HTTP/1.1\r\nHost: hits\r\n\r\n"u8.ToArray();

    // Names a client sends; whether a connection sends one is random, so each is present in some sets, absent in others.
    private static readonly string[] SentNames =
    [
        "Accept", "Accept-Encoding", "Accept-Language", "User-Agent", "Cookie", "Referer", "Cache-Control", "Origin",
        "If-None-Match", "Content-Type", "Upgrade-Insecure-Requests", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest",
        "Sec-Fetch-User", "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "priority", "x-forwarded-for",
        "x-request-id", "X-Requested-With", "DNT", "Pragma", "traceparent", "X-Custom-Thing", "x-tenant",
    ];

    // Lines HeaderCache leaves for Kestrel: the app must see them next to the lines it put back.
    private static readonly string[] KestrelNames = ["Host", "Content-Length", "Connection"];

    private static readonly string[] NeverSentNames =
    [
        "X-Absent", "If-Match", "Authorization", "Expect", "Transfer-Encoding", "Keep-Alive", "Upgrade", "TE", "Accept-Charset",
    ];

    private static readonly string[] LookupNames = [.. SentNames, .. KestrelNames, .. NeverSentNames];

    // Shared by many names and requests, so the same string is asked of the cache under different names.
    private static readonly string[] CommonValues =
    [
        "*/*", "gzip, deflate, br, zstd", "en-US,en;q=0.9", "?0", "?1", "\"Windows\"", "same-origin", "cors", "document",
        "u=0, i", "1", "no-cache", "text/html,application/xhtml+xml;q=0.9", "application/json",
    ];

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    public async Task Request_headers_answer_every_operation_as_with_Kestrel_alone(int baseSeed)
    {
        await using InMemoryKestrel cached = await InMemoryKestrel.StartAsync(headerCache: true, OperationsApp.HandleAsync);
        await using InMemoryKestrel alone = await InMemoryKestrel.StartAsync(headerCache: false, OperationsApp.HandleAsync);
        var seeds = new Random(baseSeed);
        long hits = 0;
        int connectionsWithHits = 0;
        for (int i = 0; i < ConnectionsPerSeed; i++)
        {
            ClientConnection connection = ClientConnection.Generate(seeds.Next());
            Exchange expected = await ExchangeAsync(alone, connection);
            Exchange actual = await ExchangeAsync(cached, connection);
            AssertSameResponses(baseSeed, connection, expected, actual);

            Assert.Equal("no feature", expected.Hits);
            Assert.True(long.TryParse(actual.Hits, NumberStyles.None, CultureInfo.InvariantCulture, out long connectionHits), $"HeaderCache's connection answered /hits with: {actual.Hits}");
            hits += connectionHits;
            connectionsWithHits += connectionHits > 0 ? 1 : 0;
        }

        // Without hits every line might have stayed with Kestrel, and the comparison would prove nothing.
        Assert.True(hits > 0, $"base seed {baseSeed}: no request was served from the cache");
        Assert.True(connectionsWithHits * 2 > ConnectionsPerSeed, $"base seed {baseSeed}: only {connectionsWithHits} of {ConnectionsPerSeed} connections had cache hits");
    }

    /// <summary>The same over HTTP/2 (h2c, .NET's HttpClient over the in-memory connection, its literals without indexing
    /// taken out of each block): each stream's request reads its fields through a view of its own, some streams at
    /// once.</summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    public Task Http2_request_headers_answer_every_operation_as_with_Kestrel_alone(int baseSeed) =>
        AssertHttp2AsOnKestrelAloneAsync(baseSeed, ConnectionsPerSeed / 3, ExchangeHttp2Async);

    /// <summary>The same over h2c with an encoder that adds every field but <c>:path</c> to its table, as Chrome's and
    /// nghttp2's do: a value changed between requests is a literal that adds to the table and stays in its block, and the
    /// fields of other names taken around it must still enumerate in arrival order (it travels among them,
    /// <see cref="HeaderCache.Fields.TakenHeader.LeftInBlock"/>), under every operation, mutations included.</summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public Task Http2_indexing_client_request_headers_answer_every_operation_as_with_Kestrel_alone(int baseSeed) =>
        AssertHttp2AsOnKestrelAloneAsync(baseSeed, ConnectionsPerSeed, (server, connection) => IndexingHttp2Exchange.RunAsync(server, connection));

    // Each generated connection to Kestrel alone and to HeaderCache through exchange: the same responses, and some
    // fields served from the cache, some requests through a stream's view.
    private static async Task AssertHttp2AsOnKestrelAloneAsync(int baseSeed, int connections, Func<InMemoryKestrel, ClientConnection, Task<Exchange>> exchange)
    {
        await using InMemoryKestrel cached = await InMemoryKestrel.StartHttp2Async(headerCache: true, OperationsApp.HandleAsync);
        await using InMemoryKestrel alone = await InMemoryKestrel.StartHttp2Async(headerCache: false, OperationsApp.HandleAsync);
        var seeds = new Random(baseSeed);
        long hits = 0;
        long viewsBefore = Interlocked.Read(ref OperationsApp.StreamViews);
        for (int i = 0; i < connections; i++)
        {
            ClientConnection connection = ClientConnection.Generate(seeds.Next());
            Exchange expected = await exchange(alone, connection);
            Exchange actual = await exchange(cached, connection);
            AssertSameResponses(baseSeed, connection, expected, actual);
            Assert.Equal("no feature", expected.Hits);
            hits += long.Parse(actual.Hits, NumberStyles.None, CultureInfo.InvariantCulture);
        }

        Assert.True(hits > 0, $"base seed {baseSeed}: no field was served from the cache");
        Assert.True(Interlocked.Read(ref OperationsApp.StreamViews) > viewsBefore, $"base seed {baseSeed}: no request read its headers through a stream's view");
    }

    /// <summary>A block whose fields of other names are served from the cache but for one with a new value, which adds
    /// to the table and stays: the others are taken all the same (the hits show it), and every request reads its
    /// headers, in the order sent, as on Kestrel alone, through the operations above, from its handler on.</summary>
    [Fact]
    public async Task Http2_fields_of_other_names_are_taken_around_one_that_stays_in_its_block()
    {
        await using InMemoryKestrel cached = await InMemoryKestrel.StartHttp2Async(headerCache: true, OperationsApp.HandleAsync);
        await using InMemoryKestrel alone = await InMemoryKestrel.StartHttp2Async(headerCache: false, OperationsApp.HandleAsync);
        var requests = new List<byte[]>();
        for (int i = 0; i < 6; i++)
        {
            // sec-ch-ua and x-tenant repeat; sec-fetch-site (a name the process has a string for) changes in between.
            string site = i % 2 == 0 ? "same-origin" : "x-site-" + i.ToString(CultureInfo.InvariantCulture);
            requests.Add(Encoding.ASCII.GetBytes(
                $"GET /ops?seed={i + 7} HTTP/1.1\r\nHost: h\r\nsec-ch-ua: \"Chromium\";v=\"146\"\r\nsec-fetch-site: {site}\r\nx-tenant: acme\r\naccept: */*\r\n\r\n"));
        }

        var connection = new ClientConnection(0, requests, Pipelined: false);
        Exchange expected = await IndexingHttp2Exchange.RunAsync(alone, connection, hitsAfterEach: true);
        Exchange actual = await IndexingHttp2Exchange.RunAsync(cached, connection, hitsAfterEach: true);
        AssertSameResponses(0, connection, expected, actual);

        // From the second request on sec-ch-ua and x-tenant are references to the table, taken with the cache's
        // strings, while every odd request's sec-fetch-site is new: taken around it, those two are hits too.
        long[] hits = [.. actual.Hits.Split(',').Select(hit => long.Parse(hit, NumberStyles.None, CultureInfo.InvariantCulture))];
        Assert.Equal(requests.Count, hits.Length);
        for (int i = 1; i < hits.Length; i += 2)
        {
            Assert.True(hits[i] - hits[i - 1] >= 2, $"request {i + 1}, whose sec-fetch-site is new, had {hits[i] - hits[i - 1]} hits: {actual.Hits}");
        }
    }

    // The connection's requests as HTTP/2 streams on one connection (those of a pipelined connection all at once), then
    // the cache's hits. HTTP/2 has no Connection field and its names are lower case: HttpClient sends them so.
    private static async Task<Exchange> ExchangeHttp2Async(InMemoryKestrel server, ClientConnection connection)
    {
        InMemoryClient client = server.Connect();
        using var http = new HttpClient(new SocketsHttpHandler
        {
            ConnectCallback = (_, _) => ValueTask.FromResult<Stream>(new DuplexPipeStream(client)),
        });
        Task<string>[] sends = new Task<string>[connection.Requests.Count];
        for (int i = 0; i < sends.Length; i++)
        {
            sends[i] = SendHttp2Async(http, connection.Requests[i]);
            if (!connection.Pipelined)
            {
                await sends[i];
            }
        }

        var responses = new List<string>(await Task.WhenAll(sends));
        string hits = await SendHttp2Async(http, HitsRequest);
        return new Exchange(responses, hits[(hits.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 4)..]);
    }

    private static async Task<string> SendHttp2Async(HttpClient http, byte[] head)
    {
        string[] lines = Encoding.Latin1.GetString(head).Split("\r\n");
        string[] requestLine = lines[0].Split(' ');
        int end = Array.IndexOf(lines, "");
        using var request = new HttpRequestMessage(new HttpMethod(requestLine[0]), "http://localhost" + requestLine[1])
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        string body = string.Join("\r\n", lines[(end + 1)..]);
        if (requestLine[0] == "POST")
        {
            request.Content = new ByteArrayContent(Encoding.Latin1.GetBytes(body));
        }

        foreach (string line in lines[1..end])
        {
            int colon = line.IndexOf(':', StringComparison.Ordinal);
            string name = line[..colon];
            if (name.Equals("Host", StringComparison.OrdinalIgnoreCase) || name.Equals("Connection", StringComparison.OrdinalIgnoreCase)
                || name.Equals("Content-Length", StringComparison.OrdinalIgnoreCase))
            {
                continue;
            }

            // HTTP/1.1 drops the whitespace around a value; an HTTP/2 field has none.
            string value = line[(colon + 1)..].Trim(' ');
            if (!request.Headers.TryAddWithoutValidation(name, value))
            {
                request.Content?.Headers.TryAddWithoutValidation(name, value);
            }
        }

        using HttpResponseMessage response = await http.SendAsync(request);
        return $"{(int)response.StatusCode}\r\n\r\n{await response.Content.ReadAsStringAsync()}";
    }

    private static void AssertSameResponses(int baseSeed, ClientConnection connection, Exchange expected, Exchange actual)
    {
        // A response Kestrel alone did not send, or one it sent and HeaderCache did not, is a difference too.
        Assert.True(
            expected.Responses.Count == actual.Responses.Count,
            $"base seed {baseSeed}, connection seed {connection.Seed}: Kestrel alone sent {expected.Responses.Count} responses, HeaderCache {actual.Responses.Count}" +
            $"\n--- Kestrel alone:\n{string.Join('\n', expected.Responses)}\n--- HeaderCache:\n{string.Join('\n', actual.Responses)}");
        for (int i = 0; i < expected.Responses.Count; i++)
        {
            if (expected.Responses[i] != actual.Responses[i])
            {
                string request = i < connection.Requests.Count ? Encoding.Latin1.GetString(connection.Requests[i]) : "(the client's FIN)";
                Assert.Fail(
                    $"base seed {baseSeed}, connection seed {connection.Seed}, request {i + 1} of {connection.Requests.Count}" +
                    $" ({(connection.Pipelined ? "pipelined" : "one at a time")}):\n{request}\n" +
                    $"--- Kestrel alone:\n{expected.Responses[i]}\n--- HeaderCache:\n{actual.Responses[i]}");
            }
        }
    }

    // Sends the connection's requests (all at once when pipelined), then asks for the cache's hits, then sends a FIN.
    private static async Task<Exchange> ExchangeAsync(InMemoryKestrel server, ClientConnection connection)
    {
        InMemoryClient client = server.Connect();
        var responses = new List<string>();
        if (connection.Pipelined)
        {
            await client.Output.WriteAsync(connection.Requests.SelectMany(request => request).ToArray());
            foreach (byte[] _ in connection.Requests)
            {
                responses.Add(await client.ReadResponseAsync() ?? ResponseText.Closed);
            }
        }
        else
        {
            foreach (byte[] request in connection.Requests)
            {
                await client.Output.WriteAsync(request);
                responses.Add(await client.ReadResponseAsync() ?? ResponseText.Closed);
            }
        }

        await client.Output.WriteAsync(HitsRequest);
        string hits = await client.ReadResponseAsync() ?? ResponseText.Closed;
        await client.Output.CompleteAsync();
        responses.AddRange(await client.ReadToEndAsync());
        return new Exchange(responses, hits[(hits.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 4)..]);
    }

    // Random letter casing, to make inputs only: every result is recorded with the casing it comes with.
    private static string Recase(Random random, string name)
    {
        int style = random.Next(4);
        if (style == 0)
        {
            return name;
        }

        return string.Create(name.Length, (name, style, random), static (chars, state) =>
        {
            for (int i = 0; i < chars.Length; i++)
            {
                char c = state.name[i];
                bool upper = state.style switch
                {
                    1 => true,
                    2 => false,
                    _ => state.random.Next(2) == 0,
                };
                chars[i] = upper ? char.ToUpperInvariant(c) : char.ToLowerInvariant(c);
            }
        });
    }

    // Printable ASCII with spaces inside; sometimes empty, only spaces, padded (Kestrel trims) or over MaxValueLength.
    private static string RandomValue(Random random)
    {
        string value = random.Next(20) switch
        {
            0 => "",
            1 => "   ",
            2 => RandomText(random, random.Next(257, 320)),
            < 9 => CommonValues[random.Next(CommonValues.Length)],
            _ => RandomText(random, random.Next(1, 40)),
        };

        if (random.Next(8) == 0)
        {
            value = new string(' ', random.Next(1, 3)) + value;
        }

        if (random.Next(8) == 0)
        {
            value += new string(' ', random.Next(1, 3));
        }

        return value;
    }

    private static string RandomText(Random random, int length) =>
        string.Create(length, random, static (chars, random) =>
        {
            for (int i = 0; i < chars.Length; i++)
            {
                bool edge = i == 0 || i == chars.Length - 1;
                chars[i] = !edge && random.Next(10) == 0 ? ' ' : (char)random.Next(0x21, 0x7F);
            }
        });

    /// <summary>
    /// What one connection sends: the same header set in every request (a few values changed between requests),
    /// each request with its own operation seed.
    /// </summary>
    private sealed record ClientConnection(int Seed, List<byte[]> Requests, bool Pipelined)
    {
        public static ClientConnection Generate(int seed)
        {
            var random = new Random(seed);
            double share = 0.2 + random.NextDouble() * 0.6;
            var lines = SentNames.Where(_ => random.NextDouble() < share).Select(name => new Line(Recase(random, name), RandomValue(random))).ToList();
            Shuffle(random, lines);

            // A repeated name, possibly in other casing: its values must come back in order, under the casing Kestrel keeps.
            for (int repeats = random.Next(4) == 0 ? random.Next(1, 3) : 0; repeats > 0 && lines.Count > 0; repeats--)
            {
                Line repeated = lines[random.Next(lines.Count)];
                lines.Insert(random.Next(lines.Count + 1), new Line(Recase(random, repeated.Name), RandomValue(random)));
            }

            lines.Insert(random.Next(lines.Count + 1), new Line(Recase(random, "Host"), random.Next(2) == 0 ? "example.test" : "localhost:5999"));
            if (random.Next(3) == 0)
            {
                lines.Insert(random.Next(lines.Count + 1), new Line(Recase(random, "Connection"), "keep-alive"));
            }

            // The line's value is set per request to the length of that request's body.
            Line? contentLength = null;
            if (random.Next(4) == 0)
            {
                contentLength = new Line(Recase(random, "Content-Length"), "");
                lines.Insert(random.Next(lines.Count + 1), contentLength);
            }

            var requests = new List<byte[]>();
            int count = random.Next(3, 7);
            for (int i = 0; i < count; i++)
            {
                if (i > 0)
                {
                    for (int j = 0; j < lines.Count; j++)
                    {
                        if (!ReferenceEquals(lines[j], contentLength) && !lines[j].Name.Equals("Host", StringComparison.OrdinalIgnoreCase) && random.Next(7) == 0)
                        {
                            lines[j] = lines[j] with { Value = RandomValue(random) };
                        }
                    }
                }

                string body = contentLength is null ? "" : RandomText(random, random.Next(0, 40));
                var head = new StringBuilder();
                head.Append(contentLength is null ? "GET" : "POST").Append(" /ops?seed=").Append(random.Next().ToString(CultureInfo.InvariantCulture)).Append(" HTTP/1.1\r\n");
                foreach (Line line in lines)
                {
                    string value = ReferenceEquals(line, contentLength) ? body.Length.ToString(CultureInfo.InvariantCulture) : line.Value;
                    head.Append(line.Name).Append(':').Append(random.Next(5) == 0 ? "" : " ").Append(value).Append("\r\n");
                }

                head.Append("\r\n").Append(body);
                requests.Add(Encoding.ASCII.GetBytes(head.ToString()));
            }

            return new ClientConnection(seed, requests, Pipelined: random.Next(3) == 0);
        }

        private static void Shuffle(Random random, List<Line> lines)
        {
            for (int i = lines.Count - 1; i > 0; i--)
            {
                int j = random.Next(i + 1);
                (lines[i], lines[j]) = (lines[j], lines[i]);
            }
        }

        private sealed record Line(string Name, string Value);
    }

    /// <summary>
    /// A connection's requests over h2c, each a HEADERS frame that ends its stream, encoded as Chrome's encoder does:
    /// every field but <c>:path</c> a reference to the table or a literal that adds to it, Huffman-coded when shorter.
    /// Names in lower case and values trimmed, as HTTP/2 carries them; the fields Kestrel takes from the pseudo-header
    /// fields (Host) or that HTTP/2 has not (Connection, Content-Length, and so the body) are not sent.
    /// </summary>
    private static class IndexingHttp2Exchange
    {
        private static readonly HashSet<string> NotSent = new(["host", "connection", "content-length"], StringComparer.Ordinal);

        public static async Task<Exchange> RunAsync(InMemoryKestrel server, ClientConnection connection, bool hitsAfterEach = false)
        {
            InMemoryClient client = server.Connect();
            var opening = new H2Client.FrameWriter();
            opening.Preface();
            opening.Settings();
            await client.Output.WriteAsync(opening.Bytes.ToArray());

            var encoder = new H2Client.HpackEncoder();
            var reader = new ResponseReader(client);
            var responses = new List<string>();
            var hits = new List<string>();
            int streamId = 1;
            if (connection.Pipelined)
            {
                var batch = new H2Client.FrameWriter();
                int first = streamId;
                foreach (byte[] request in connection.Requests)
                {
                    batch.Headers(streamId, Block(encoder, request), endStream: true, endHeaders: true);
                    streamId += 2;
                }

                await client.Output.WriteAsync(batch.Bytes.ToArray());
                for (int id = first; id < streamId; id += 2)
                {
                    responses.Add(await reader.ResponseAsync(id));
                }
            }
            else
            {
                foreach (byte[] request in connection.Requests)
                {
                    responses.Add(await RoundTripAsync(client, reader, encoder, request, streamId));
                    streamId += 2;
                    if (hitsAfterEach)
                    {
                        hits.Add(await HitsAsync(client, reader, encoder, streamId));
                        streamId += 2;
                    }
                }
            }

            if (!hitsAfterEach)
            {
                hits.Add(await HitsAsync(client, reader, encoder, streamId));
            }

            await client.CompleteAsync();
            return new Exchange(responses, string.Join(',', hits));
        }

        private static async Task<string> HitsAsync(InMemoryClient client, ResponseReader reader, H2Client.HpackEncoder encoder, int streamId)
        {
            string hits = await RoundTripAsync(client, reader, encoder, HitsRequest, streamId);
            return hits[(hits.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 4)..];
        }

        private static async Task<string> RoundTripAsync(InMemoryClient client, ResponseReader reader, H2Client.HpackEncoder encoder, byte[] request, int streamId)
        {
            var frame = new H2Client.FrameWriter();
            frame.Headers(streamId, Block(encoder, request), endStream: true, endHeaders: true);
            await client.Output.WriteAsync(frame.Bytes.ToArray());
            return await reader.ResponseAsync(streamId);
        }

        private static byte[] Block(H2Client.HpackEncoder encoder, byte[] head)
        {
            string[] lines = Encoding.Latin1.GetString(head).Split("\r\n");
            string[] requestLine = lines[0].Split(' ');
            var fields = new List<(string Name, string Value)> { (":method", requestLine[0]), (":scheme", "http"), (":authority", "localhost"), (":path", requestLine[1]) };
            foreach (string line in lines[1..Array.IndexOf(lines, "")])
            {
                int colon = line.IndexOf(':', StringComparison.Ordinal);
                string name = line[..colon].ToLowerInvariant();
                if (!NotSent.Contains(name))
                {
                    fields.Add((name, line[(colon + 1)..].Trim(' ')));
                }
            }

            var block = new List<byte>();
            foreach ((string name, string value) in fields)
            {
                bool huffman = H2Client.Huffman.Encode(Encoding.Latin1.GetBytes(value)).Length < value.Length;
                encoder.Field(block, name, value, name == ":path" ? H2Client.FieldKind.WithoutIndexing : H2Client.FieldKind.Indexed, huffman);
            }

            return [.. block];
        }

        // Reads frames until each asked stream's response has ended, keeping the others' for later; acks the server's
        // SETTINGS and decodes every header block in order, as the server's table moves with each.
        private sealed class ResponseReader(InMemoryClient client)
        {
            private readonly H2Client.HpackDecoder _decoder = new();
            private readonly Dictionary<int, StringBuilder> _open = [];
            private readonly Dictionary<int, string> _ended = [];
            private bool _closed;

            public async Task<string> ResponseAsync(int streamId)
            {
                while (!_ended.ContainsKey(streamId) && !_closed)
                {
                    ReadResult result = await client.Input.ReadAsync();
                    System.Buffers.ReadOnlySequence<byte> buffer = result.Buffer;
                    while (H2Client.Frame.TryRead(ref buffer, out H2Client.Frame? frame))
                    {
                        await OnFrameAsync(frame!);
                    }

                    client.Input.AdvanceTo(buffer.Start, buffer.End);
                    _closed |= result.IsCompleted;
                }

                return _ended.Remove(streamId, out string? response) ? response : ResponseText.Closed;
            }

            private async Task OnFrameAsync(H2Client.Frame frame)
            {
                switch (frame.Type)
                {
                    case H2Client.FrameType.Settings when !frame.Has(H2Client.FrameFlags.Ack):
                        var ack = new H2Client.FrameWriter();
                        ack.SettingsAck();
                        await client.Output.WriteAsync(ack.Bytes.ToArray());
                        return;
                    case H2Client.FrameType.Headers:
                        string status = _decoder.Decode(frame.Fragment()).Find(field => field.Name == ":status").Value ?? "?";
                        _open[frame.StreamId] = new StringBuilder(status).Append("\r\n\r\n");
                        break;
                    case H2Client.FrameType.Data when _open.TryGetValue(frame.StreamId, out StringBuilder? body):
                        body.Append(Encoding.UTF8.GetString(frame.Payload));
                        break;
                    case H2Client.FrameType.RstStream:
                        _ended[frame.StreamId] = "RST_STREAM " + frame.ErrorCode.ToString(CultureInfo.InvariantCulture);
                        return;
                    case H2Client.FrameType.GoAway:
                        _closed = true;
                        return;
                    default:
                        return;
                }

                if (frame.Has(H2Client.FrameFlags.EndStream) && _open.Remove(frame.StreamId, out StringBuilder? ended))
                {
                    _ended[frame.StreamId] = ended.ToString();
                }
            }
        }
    }

    /// <summary>The responses to a connection's requests, those after the client's FIN and its close; the cache's hits.</summary>
    private sealed record Exchange(List<string> Responses, string Hits);

    /// <summary>
    /// The app runs the operations on the request's headers and answers with their transcript. It reads the body
    /// before the operations, so that one setting Content-Length or clearing the headers cannot change what it reads.
    /// </summary>
    private static class OperationsApp
    {
        /// <summary>Requests that read their headers through an HTTP/2 stream's view, so the view's path was run.</summary>
        public static long StreamViews;

        public static async Task HandleAsync(HttpContext context)
        {
            if (context.Request.Headers is HeaderCache.Requests.Http2StreamHeaders)
            {
                Interlocked.Increment(ref StreamViews);
            }

            string body;
            if (context.Request.Path == "/hits")
            {
                body = context.Features.Get<IHeaderStringCacheFeature>() is { } feature
                    ? feature.Hits.ToString(CultureInfo.InvariantCulture)
                    : "no feature";
            }
            else
            {
                using var received = new MemoryStream();
                await context.Request.Body.CopyToAsync(received);
                var transcript = new StringBuilder();
                transcript.Append("body ").Append(Encoding.Latin1.GetString(received.ToArray())).Append('\n');
                int seed = int.Parse(context.Request.Query["seed"].ToString(), NumberStyles.None, CultureInfo.InvariantCulture);
                new HeaderOperations(new Random(seed), context.Request.Headers, transcript).Run();
                body = transcript.ToString();
            }

            byte[] bytes = Encoding.UTF8.GetBytes(body);
            context.Response.ContentLength = bytes.Length;
            await context.Response.Body.WriteAsync(bytes);
        }
    }

    /// <summary>A random sequence of what a caller can do with an <see cref="IHeaderDictionary"/>, recorded line by line.</summary>
    private sealed class HeaderOperations(Random random, IHeaderDictionary headers, StringBuilder transcript)
    {
        private static readonly (string Name, Func<IHeaderDictionary, StringValues> Get)[] TypedGetters =
        [
            ("Accept", h => h.Accept), ("AcceptEncoding", h => h.AcceptEncoding), ("AcceptLanguage", h => h.AcceptLanguage),
            ("UserAgent", h => h.UserAgent), ("Cookie", h => h.Cookie), ("Referer", h => h.Referer), ("Host", h => h.Host),
            ("Connection", h => h.Connection), ("ContentType", h => h.ContentType), ("CacheControl", h => h.CacheControl),
            ("Origin", h => h.Origin), ("IfNoneMatch", h => h.IfNoneMatch),
        ];

        private static readonly (string Name, Action<IHeaderDictionary, StringValues> Set)[] TypedSetters =
        [
            ("Accept", (h, v) => h.Accept = v), ("UserAgent", (h, v) => h.UserAgent = v), ("Cookie", (h, v) => h.Cookie = v),
            ("CacheControl", (h, v) => h.CacheControl = v), ("ContentType", (h, v) => h.ContentType = v), ("Origin", (h, v) => h.Origin = v),
            ("Host", (h, v) => h.Host = v),
        ];

        private IDictionary<string, StringValues> Dictionary => headers;

        private ICollection<KeyValuePair<string, StringValues>> Collection => headers;

        public void Run()
        {
            int count = random.Next(5, 41);

            // The view answers lookups from the taken lines without copying them into Kestrel's collection: most
            // sequences start with a run of lookups, some are nothing but lookups.
            int lookupsFirst = random.Next(4) == 0 ? 0 : random.Next(1, count + 1);
            for (int i = 0; i < count; i++)
            {
                transcript.Append(i.ToString(CultureInfo.InvariantCulture)).Append(' ');
                try
                {
                    if (i < lookupsFirst)
                    {
                        Lookup();
                    }
                    else
                    {
                        Any();
                    }
                }
                catch (Exception e)
                {
                    transcript.Append(" throws ").Append(e.GetType().Name);
                }

                transcript.Append('\n');
            }
        }

        private void Lookup()
        {
            string name = LookupName();
            switch (random.Next(9))
            {
                case 0:
                case 1:
                    Write($"this[{name}]", headers[name]);
                    break;
                case 2:
                    bool found = headers.TryGetValue(name, out StringValues values);
                    Write($"TryGetValue({name})", found).Append(' ');
                    Append(values);
                    break;
                case 3:
                    Write($"ContainsKey({name})", headers.ContainsKey(name));
                    break;
                case 4:
                    // The IDictionary indexer throws for an absent name where IHeaderDictionary's answers empty.
                    transcript.Append("IDictionary[").Append(name).Append("] = ");
                    Append(Dictionary[name]);
                    break;
                case 5:
                    var (property, get) = TypedGetters[random.Next(TypedGetters.Length)];
                    Write(property, get(headers));
                    break;
                case 6:
                    transcript.Append("ContentLength = ").Append(headers.ContentLength?.ToString(CultureInfo.InvariantCulture) ?? "null");
                    break;
                case 7:
                    StringValues value = random.Next(2) == 0 ? headers[name] : RandomValues();
                    transcript.Append("Contains(").Append(name).Append(", ");
                    Append(value);
                    Write(")", Collection.Contains(new(name, value)));
                    break;
                default:
                    transcript.Append("GetCommaSeparatedValues(").Append(name).Append(") = ").AppendJoin(", ", headers.GetCommaSeparatedValues(name).Select(Quote));
                    break;
            }
        }

        private void Any()
        {
            int pick = random.Next(100);
            switch (pick)
            {
                case < 30:
                    Lookup();
                    break;
                case < 35:
                    Write("Count", headers.Count);
                    break;
                case < 42:
                    transcript.Append("enumerate:");
                    foreach (KeyValuePair<string, StringValues> pair in headers)
                    {
                        AppendPair(pair);
                    }

                    break;
                case < 45:
                    transcript.Append("enumerate untyped:");
                    foreach (object? item in (IEnumerable)headers)
                    {
                        AppendPair((KeyValuePair<string, StringValues>)item!);
                    }

                    break;
                case < 49:
                    transcript.Append("Keys = ").AppendJoin(", ", headers.Keys.Select(Quote));
                    break;
                case < 53:
                    transcript.Append("Values =");
                    foreach (StringValues values in headers.Values)
                    {
                        transcript.Append(' ');
                        Append(values);
                    }

                    break;
                case < 56:
                    CopyTo();
                    break;
                case < 64:
                    Set(random.Next(2) == 0 ? LookupName() : NewName(), RandomValues());
                    break;
                case < 69:
                    string added = random.Next(2) == 0 ? LookupName() : NewName();
                    StringValues addedValue = RandomValues();
                    transcript.Append("Add(").Append(added).Append(", ");
                    Append(addedValue);
                    transcript.Append(')');
                    if (random.Next(2) == 0)
                    {
                        // The same member as headers.Add, called the way the analyzer (ASP0019) does not object to:
                        // its ArgumentException for a present name is what is being compared.
                        Dictionary.Add(added, addedValue);
                    }
                    else
                    {
                        Collection.Add(new(added, addedValue));
                    }

                    break;
                case < 75:
                    string removed = LookupName();
                    Write($"Remove({removed})", headers.Remove(removed));
                    break;
                case < 78:
                    string pairName = LookupName();
                    StringValues pairValue = random.Next(2) == 0 ? headers[pairName] : RandomValues();
                    transcript.Append("Remove(").Append(pairName).Append(", ");
                    Append(pairValue);
                    Write(")", Collection.Remove(new(pairName, pairValue)));
                    break;
                case < 85:
                    // How a middleware appends a value to a header that may already have some.
                    string appended = random.Next(4) == 0 ? NewName() : LookupName();
                    Set(appended, StringValues.Concat(headers[appended], RandomText(random, random.Next(1, 12))));
                    break;
                case < 89:
                    long? length = random.Next(4) == 0 ? null : random.Next(0, 100_000);
                    transcript.Append("ContentLength := ").Append(length?.ToString(CultureInfo.InvariantCulture) ?? "null");
                    headers.ContentLength = length;
                    break;
                case < 94:
                    var (property, set) = TypedSetters[random.Next(TypedSetters.Length)];
                    StringValues typedValue = RandomValues();
                    transcript.Append(property).Append(" := ");
                    Append(typedValue);
                    set(headers, typedValue);
                    break;
                case < 99:
                    Write("IsReadOnly", headers.IsReadOnly);
                    break;
                default:
                    // Rare: everything after it in the sequence would see an empty collection.
                    transcript.Append("Clear()");
                    headers.Clear();
                    break;
            }
        }

        private void Set(string name, StringValues value)
        {
            transcript.Append("this[").Append(name).Append("] := ");
            Append(value);
            headers[name] = value;
        }

        private void CopyTo()
        {
            // Sometimes one entry short, which Kestrel rejects.
            int offset = random.Next(3);
            var array = new KeyValuePair<string, StringValues>[Math.Max(0, headers.Count + offset + random.Next(-1, 2))];
            transcript.Append("CopyTo(").Append(array.Length.ToString(CultureInfo.InvariantCulture)).Append(", ").Append(offset.ToString(CultureInfo.InvariantCulture)).Append("):");
            Collection.CopyTo(array, offset);
            foreach (KeyValuePair<string, StringValues> pair in array)
            {
                AppendPair(pair);
            }
        }

        private string LookupName() => Recase(random, LookupNames[random.Next(LookupNames.Length)]);

        private string NewName() => Recase(random, "X-New-" + random.Next(4).ToString(CultureInfo.InvariantCulture));

        private StringValues RandomValues() => random.Next(8) switch
        {
            0 => StringValues.Empty,
            1 => new StringValues([RandomValue(random), RandomValue(random)]),
            _ => RandomValue(random),
        };

        private StringBuilder Write(string operation, StringValues result)
        {
            transcript.Append(operation).Append(" = ");
            return Append(result);
        }

        private StringBuilder Write(string operation, bool result) => transcript.Append(operation).Append(" = ").Append(result ? "true" : "false");

        private StringBuilder Write(string operation, int result) => transcript.Append(operation).Append(" = ").Append(result.ToString(CultureInfo.InvariantCulture));

        private void AppendPair(KeyValuePair<string, StringValues> pair)
        {
            transcript.Append(' ').Append(pair.Key is null ? "(no key)" : Quote(pair.Key)).Append(": ");
            Append(pair.Value);
        }

        private StringBuilder Append(StringValues values)
        {
            transcript.Append(values.Count.ToString(CultureInfo.InvariantCulture));
            foreach (string? value in values)
            {
                transcript.Append(' ').Append(value is null ? "null" : Quote(value));
            }

            return transcript;
        }

        private static string Quote(string value) => "\"" + value + "\"";
    }

    /// <summary>An in-memory connection's client end as the stream HttpClient reads and writes.</summary>
    internal sealed class DuplexPipeStream(InMemoryClient client) : Stream
    {
        private readonly Stream _input = client.Input.AsStream();
        private readonly Stream _output = client.Output.AsStream();

        public override bool CanRead => true;
        public override bool CanWrite => true;
        public override bool CanSeek => false;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) => _input.ReadAsync(buffer, cancellationToken);
        public override int Read(byte[] buffer, int offset, int count) => _input.Read(buffer, offset, count);
        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) => _output.WriteAsync(buffer, cancellationToken);
        public override void Write(byte[] buffer, int offset, int count) => _output.Write(buffer, offset, count);
        public override Task FlushAsync(CancellationToken cancellationToken) => _output.FlushAsync(cancellationToken);
        public override void Flush() => _output.Flush();
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                _output.Dispose();
                _input.Dispose();
            }

            base.Dispose(disposing);
        }
    }
}
