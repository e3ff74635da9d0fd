namespace HeaderCache.H2Client;

/// <summary>Rendered HTTP/1.1 heads as browsers send the same requests over HTTP/2.</summary>
internal static class Http2Request
{
    // RFC 9113, section 8.2.2: Kestrel answers these with a stream error (TE too, unless it is "trailers").
    private static readonly HashSet<string> ConnectionSpecific = new(StringComparer.Ordinal) { "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade" };

    /// <summary>The fields of <paramref name="head"/> as Chrome sends the request over HTTP/2 (RFC 9113, section 8.3.1 and
    /// 8.2.3): the pseudo-header fields, then the other fields in lower case without the connection-specific ones,
    /// the cookie in crumbs; with <paramref name="bare"/>, the pseudo-header fields alone.</summary>
    public static List<(string Name, string Value)> Fields(string head, bool bare)
    {
        string[] lines = head.Split("\r\n", StringSplitOptions.RemoveEmptyEntries);
        string[] requestLine = lines[0].Split(' ');
        string authority = "";
        var regular = new List<(string Name, string Value)>();
        foreach (string line in lines.Skip(1))
        {
            int colon = line.IndexOf(':', StringComparison.Ordinal);
            string name = line[..colon].ToLowerInvariant();
            string value = line[(colon + 1)..].Trim(' ', '\t');
            switch (name)
            {
                case "host":
                    authority = value;
                    break;
                case "cookie":
                    regular.AddRange(value.Split("; ").Select(crumb => (name, crumb)));
                    break;
                case "te" when value != "trailers":
                    break;
                default:
                    if (!ConnectionSpecific.Contains(name))
                    {
                        regular.Add((name, value));
                    }

                    break;
            }
        }

        List<(string Name, string Value)> fields = [(":method", requestLine[0]), (":authority", authority), (":scheme", "http"), (":path", requestLine[1])];
        if (!bare)
        {
            fields.AddRange(regular);
        }

        return fields;
    }
}
