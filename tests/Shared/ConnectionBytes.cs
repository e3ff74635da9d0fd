using System.IO.Pipelines;
using System.Text;
using HeaderCache.H2Client;
using HeaderCache.Traffic;

namespace HeaderCache.InMemory;

/// <summary>Which fields an HTTP/2 client's HPACK encoder adds to the table.</summary>
internal enum HpackEncoding
{
    /// <summary>Every field but <c>:path</c> (a literal without indexing): Chrome's and Firefox's encoders.</summary>
    Chrome,

    /// <summary>As <see cref="Chrome"/>, but <c>authorization</c> and every cookie crumb shorter than 20 bytes are
    /// never-indexed literals: nghttp2's encoder (curl, Node's http2, grpc-js, h2load).</summary>
    Nghttp2,

    /// <summary>Every field a literal without indexing: .NET's HttpClient.</summary>
    HttpClient,
}

/// <summary>What a connection costs from its first request: bytes allocated per request on connections of a given
/// number of requests, each opened, used and closed, on an in-memory Kestrel. Every connection renders its profile from
/// a seed of its own; on HTTP/2 each has a new HPACK encoder, as a client's would.</summary>
internal static class ConnectionBytes
{
    /// <summary>The bytes the process allocates per request while <paramref name="connections"/> connections of
    /// <paramref name="length"/> requests of <paramref name="profile"/> (HTTP/2 requests encoded by
    /// <paramref name="encoder"/>'s rules; <paramref name="bare"/>: the request line and Host, or the pseudo-header
    /// fields, alone) are opened, used one request at a time and closed, one after another, the client included.
    /// Connection c renders the profile from seed <paramref name="seed"/> + c. With <paramref name="shortCrumbs"/>, every
    /// head's cookie is three short crumbs and an Authorization header is added (<see cref="ShortCrumbsAndToken"/>).</summary>
    public static double PerRequest(
        InMemoryKestrel server, TrafficProfile profile, bool http2, HpackEncoding encoder, bool bare, int length, int connections, int seed, bool shortCrumbs = false)
    {
        // Every request rendered (and on HTTP/2 encoded) before anything is counted.
        byte[][][] requests = [.. Enumerable.Range(0, connections).Select(c => Render(profile, http2, encoder, bare, length, seed + c, shortCrumbs))];
        GC.Collect();
        GC.WaitForPendingFinalizers();
        long before = GC.GetTotalAllocatedBytes(precise: true);
        foreach (byte[][] connection in requests)
        {
            RunConnectionAsync(server, http2, connection).GetAwaiter().GetResult();
        }

        return (GC.GetTotalAllocatedBytes(precise: true) - before) / (double)(connections * length);
    }

    /// <summary>Opens a connection to <paramref name="server"/>, sends <paramref name="requests"/> (on HTTP/2,
    /// <paramref name="streams"/> at a time), reads every response and closes it.</summary>
    public static async Task RunConnectionAsync(InMemoryKestrel server, bool http2, byte[][] requests, int streams = 1)
    {
        InMemoryClient client = server.Connect();
        if (http2 && streams == 1)
        {
            Http2Exchange exchange = await Http2Exchange.OpenAsync(client);
            foreach (byte[] request in requests)
            {
                await exchange.RoundTripAsync(request);
            }
        }
        else if (http2)
        {
            Http2Exchange exchange = await Http2Exchange.OpenAsync(client);
            foreach (byte[][] batch in requests.Chunk(streams))
            {
                await exchange.RoundTripsAsync(batch);
            }
        }
        else
        {
            foreach (byte[] request in requests)
            {
                await client.Output.WriteAsync(request);
                await client.ReadHeadAsync();
            }
        }

        await client.CompleteAsync();
        while (true)
        {
            ReadResult result = await client.Input.ReadAsync();
            client.Input.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                break;
            }
        }

        await client.Input.CompleteAsync();
    }

    /// <summary>The cookie and token <c>shortCrumbs</c> puts in every head: a cookie of crumbs of 24, 10 and 6 bytes (a
    /// session id, a language, an experiment), which nghttp2's encoder sends as never-indexed literals, and a short
    /// bearer token, which it always does.</summary>
    public const string ShortCrumbsAndToken = "Cookie: sid=0123456789abcdefghij; lang=en-US; ab=1-2\r\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl";

    /// <summary>The <paramref name="length"/> requests of one connection of <paramref name="profile"/> rendered from
    /// <paramref name="seed"/>: HTTP/1.1 heads, or HEADERS frames (stream id 0) of one HPACK encoder of
    /// <paramref name="encoder"/>'s rules; the other parameters as <see cref="PerRequest"/>'s.</summary>
    public static byte[][] Render(TrafficProfile profile, bool http2, HpackEncoding encoder, bool bare, int length, int seed, bool shortCrumbs)
    {
        TrafficProfile.Connection connection = profile.Connect(seed);
        string Head(int i)
        {
            string head = connection.RenderText(i);
            if (!shortCrumbs || bare)
            {
                return head;
            }

            // The profile's own cookie line goes; the crumbs and the token come before the empty line.
            string[] lines = [.. head.Split("\r\n").Where(line => !line.StartsWith("Cookie:", StringComparison.OrdinalIgnoreCase))];
            return string.Join("\r\n", lines[..^2]) + "\r\n" + ShortCrumbsAndToken + "\r\n\r\n";
        }

        if (!http2)
        {
            return [.. Enumerable.Range(0, length).Select(i => Encoding.ASCII.GetBytes(bare ? BareHead(Head(i)) : Head(i)))];
        }

        var hpack = new HpackEncoder();
        return [.. Enumerable.Range(0, length).Select(i => HeadersFrame(hpack, Http2Request.Fields(Head(i), bare), encoder))];
    }

    // The request line and Host alone.
    private static string BareHead(string head)
    {
        string[] lines = head.Split("\r\n");
        string host = lines.First(line => line.StartsWith("Host:", StringComparison.OrdinalIgnoreCase));
        return $"{lines[0]}\r\n{host}\r\n\r\n";
    }

    /// <summary>One request's HEADERS frame (stream 0, for <see cref="Http2Exchange"/> to number) as
    /// <paramref name="encoder"/>'s rules encode <paramref name="fields"/> against <paramref name="hpack"/>'s table.</summary>
    public static byte[] HeadersFrame(HpackEncoder hpack, List<(string Name, string Value)> fields, HpackEncoding encoder)
    {
        var block = new List<byte>();
        foreach ((string name, string value) in fields)
        {
            bool huffman = Huffman.Encode(Encoding.Latin1.GetBytes(value)).Length < value.Length;
            FieldKind kind = encoder switch
            {
                _ when name == ":path" => FieldKind.WithoutIndexing,
                HpackEncoding.HttpClient => FieldKind.WithoutIndexing,
                HpackEncoding.Nghttp2 when name == "authorization" || (name == "cookie" && value.Length < 20) => FieldKind.NeverIndexed,
                _ => FieldKind.Indexed,
            };

            // A field too big for three quarters of the table is never added to it (nghttp2's rule; Chrome's is alike).
            if (kind == FieldKind.Indexed && 32 + name.Length + value.Length > hpack.Table.MaxSize * 3 / 4)
            {
                kind = FieldKind.WithoutIndexing;
            }

            hpack.Field(block, name, value, kind, huffman);
        }

        var frame = new FrameWriter();
        frame.Headers(streamId: 0, [.. block], endStream: true, endHeaders: true);
        return [.. frame.Bytes];
    }
}
