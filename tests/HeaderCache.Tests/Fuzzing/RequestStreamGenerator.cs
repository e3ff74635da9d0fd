using System.Globalization;
using System.Text;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// Generates the bytes one client sends on one connection: a few pipelined requests, mostly valid,
/// with the things a head compactor can get wrong mixed in (random casing, OWS, boundary lengths,
/// duplicates, Kestrel-handled headers, bodies of both framings, and every kind of malformed line).
/// The same seed always gives the same bytes.
/// </summary>
public sealed class RequestStreamGenerator(int seed)
{
    private static readonly string[] Methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "PURGE"];

    private static readonly string[] Names =
    [
        "Accept", "Accept-Encoding", "Accept-Language", "User-Agent", "Cookie", "Referer", "Cache-Control", "Origin",
        "Content-Type", "traceparent", "tracestate", "baggage", "Authorization", "If-None-Match", "Upgrade-Insecure-Requests",
        "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest",
        "Priority", "X-Forwarded-For", "X-Forwarded-Proto", "X-Real-IP", "X-Request-ID", "DNT", "ETag", "X-Custom",
        "Connection", "Keep-Alive", "Expect", "TE", "Trailer", "Proxy-Connection", "HTTP2-Settings",
    ];

    private static readonly string[] CommonValues =
    [
        "?0", "?1", "\"Windows\"", "same-origin", "cors", "document", "image", "*/*", "gzip, deflate, br, zstd",
        "en-US,en;q=0.9", "u=0, i", "keep-alive", "close", "1", "https", "text/html,application/xhtml+xml;q=0.9",
    ];

    // Long values (a token, cookies, one longer than the default LongValueBudget) that repeat across the requests of a
    // connection, as a session's do, so the cache of long values hits, misses and evicts.
    private static readonly string[] LongValues =
    [
        "Bearer " + new string('j', 1017), string.Join("; ", Enumerable.Range(0, 25).Select(i => $"c{i:D2}={new string((char)('a' + i), 55)}")),
        new('q', 300), new('w', 4000), new('z', 17000),
    ];

    private readonly Random _random = new(seed);

    /// <summary>The seed this generator was made with.</summary>
    public int Seed { get; } = seed;

    /// <summary>The next connection's bytes.</summary>
    public byte[] Next()
    {
        var stream = new MemoryStream();
        int requests = _random.Next(1, 6);
        for (int i = 0; i < requests; i++)
        {
            if (Chance(0.1))
            {
                Write(stream, Pick(["\r\n", "\n", "\r\n\r\n"]));
            }

            WriteRequest(stream);
        }

        return stream.ToArray();
    }

    private void WriteRequest(MemoryStream stream)
    {
        var head = new StringBuilder();
        head.Append(RequestLine());
        var lines = new List<string>();
        int count = Chance(0.03) ? _random.Next(95, 105) : _random.Next(0, 18);
        for (int i = 0; i < count; i++)
        {
            lines.Add(TakenHeader());
        }

        if (Chance(0.95))
        {
            lines.Insert(_random.Next(lines.Count + 1), (Chance(0.5) ? "Host" : "host") + ": " + Pick(["localhost", "example.test", "a:1"]));
        }

        if (Chance(0.2) && lines.Count > 0)
        {
            // A duplicate of an earlier name, in another casing.
            string line = lines[_random.Next(lines.Count)];
            int colon = line.IndexOf(':', StringComparison.Ordinal);
            if (colon > 0)
            {
                lines.Add(RandomCase(line[..colon]) + ": " + Value());
            }
        }

        byte[] body = [];
        double framing = _random.NextDouble();
        if (framing < 0.2)
        {
            body = Encoding.ASCII.GetBytes(Value(_random.Next(0, 300)));
            lines.Add("Content-Length: " + ContentLengthValue(body.Length));
        }
        else if (framing < 0.28)
        {
            lines.Add("Transfer-Encoding: " + Pick(["chunked", "Chunked", "gzip, chunked", "chunked, gzip", "identity"]));
            body = Chunked();
        }
        else if (framing < 0.3)
        {
            body = Encoding.ASCII.GetBytes("abc");
            lines.Add("Content-Length: 3");
            lines.Add("Transfer-Encoding: chunked");
            body = [.. Chunked(), .. body];
        }

        foreach (string line in lines)
        {
            head.Append(line).Append(LineEnd());
        }

        head.Append(Chance(0.02) ? "\n" : "\r\n");
        Write(stream, head.ToString());
        stream.Write(body);
    }

    private string RequestLine()
    {
        if (Chance(0.01))
        {
            return Pick(["PRI * HTTP/2.0\r\n", "GET / HTTP/1.0\r\n", "GET / HTTP/1.2\r\n", "GET / http/1.1\r\n", "GET  / HTTP/1.1\r\n", "GET /\r\n", "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\r\n", "G@T / HTTP/1.1\r\n"]);
        }

        string method = Chance(0.02) ? "CONNECT" : Pick(Methods);
        string target = method == "CONNECT" ? "example.test:443" : Chance(0.02) ? "*" : Chance(0.03) ? "http://example.test/abs" : "/" + Token(_random.Next(0, 20)) + (Chance(0.3) ? "?q=" + Token(5) : "");
        string version = Chance(0.03) ? "HTTP/1.0" : "HTTP/1.1";
        return $"{method} {target} {version}{(Chance(0.005) ? "\n" : "\r\n")}";
    }

    private string TakenHeader()
    {
        double kind = _random.NextDouble();
        string name = Chance(0.8) ? RandomCase(Pick(Names)) : Token(_random.Next(1, 24));
        if (kind < 0.003)
        {
            return " folded continuation";
        }

        if (kind < 0.006)
        {
            return name + " : " + Value();
        }

        if (kind < 0.008)
        {
            return ": no name";
        }

        if (kind < 0.01)
        {
            return name + " no colon";
        }

        string ows = Pick(["", " ", " ", "  ", "\t", " \t "]);
        string trailing = Pick(["", "", "", " ", "\t", "  "]);
        return name + ":" + ows + Value() + trailing;
    }

    private string Value() =>
        Chance(0.4) ? Pick(CommonValues) : Chance(0.1) ? Pick(LongValues) : Value(Pick([0, 1, 15, 16, 31, 32, 33, 64, 255, 256, 257, 300, _random.Next(0, 80)]));

    private string Value(int length)
    {
        // One value in twenty may hold bytes Kestrel rejects or treats specially; the rest are clean.
        double dirt = Chance(0.05) ? 1 : 0;
        var value = new StringBuilder(length);
        for (int i = 0; i < length; i++)
        {
            double c = dirt == 0 ? 0.06 + (_random.NextDouble() * 0.94) : _random.NextDouble();
            value.Append(c switch
            {
                < 0.002 => '\0',
                < 0.004 => '\r',
                < 0.006 => '\n',
                < 0.010 => (char)_random.Next(1, 32),
                < 0.012 => '\u007f',
                < 0.016 => (char)_random.Next(0x80, 0x100),
                < 0.05 => ' ',
                < 0.06 => '\t',
                _ => (char)_random.Next(0x21, 0x7F),
            });
        }

        // Values do not end in OWS here; the line adds its own.
        return value.ToString().TrimEnd(' ', '\t');
    }

    private string ContentLengthValue(int length) => _random.NextDouble() switch
    {
        < 0.03 => "+" + length.ToString(CultureInfo.InvariantCulture),
        < 0.06 => "00" + length.ToString(CultureInfo.InvariantCulture),
        < 0.08 => length.ToString(CultureInfo.InvariantCulture) + ", " + length.ToString(CultureInfo.InvariantCulture),
        < 0.10 => (length + 1).ToString(CultureInfo.InvariantCulture),
        _ => length.ToString(CultureInfo.InvariantCulture),
    };

    private byte[] Chunked()
    {
        var body = new StringBuilder();
        int chunks = _random.Next(0, 4);
        for (int i = 0; i < chunks; i++)
        {
            string data = Value(_random.Next(1, 40));
            body.Append(data.Length.ToString("x", CultureInfo.InvariantCulture)).Append(Chance(0.1) ? ";ext=1" : "").Append("\r\n").Append(data).Append("\r\n");
        }

        body.Append("0\r\n");
        if (Chance(0.2))
        {
            body.Append("X-Trailer: t\r\n");
        }

        body.Append("\r\n");
        return Encoding.Latin1.GetBytes(body.ToString());
    }

    private string LineEnd() => _random.NextDouble() switch
    {
        < 0.003 => "\n",
        < 0.005 => "\r",
        _ => "\r\n",
    };

    private string Token(int length)
    {
        const string chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!";
        var token = new StringBuilder(length);
        for (int i = 0; i < length; i++)
        {
            token.Append(chars[_random.Next(chars.Length)]);
        }

        return token.ToString();
    }

    private string RandomCase(string text)
    {
        if (Chance(0.6))
        {
            return text;
        }

        var chars = text.ToCharArray();
        for (int i = 0; i < chars.Length; i++)
        {
            chars[i] = Chance(0.5) ? char.ToUpperInvariant(chars[i]) : char.ToLowerInvariant(chars[i]);
        }

        return new string(chars);
    }

    private bool Chance(double p) => _random.NextDouble() < p;

    private T Pick<T>(T[] items) => items[_random.Next(items.Length)];

    private static void Write(MemoryStream stream, string text) => stream.Write(Encoding.Latin1.GetBytes(text));
}
