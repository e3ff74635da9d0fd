using System.Text;

namespace HeaderCache.Http2;

/// <summary>The static table of RFC 7541 Appendix A (indexes 1 to 61), as bytes, and the strings a taken field of an
/// entry with a value gets: one per entry for the process, as Kestrel's own constants are.</summary>
internal static class HpackStaticTable
{
    public const int Count = 61;

    private static readonly (string Name, string Value)[] Entries =
    [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""), ("cache-control", ""),
        ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
        ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""), ("date", ""),
        ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""), ("if-match", ""),
        ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""), ("if-unmodified-since", ""),
        ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""), ("proxy-authenticate", ""),
        ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""),
        ("server", ""), ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""),
        ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
    ];

    private static readonly byte[][] NameBytes = [.. Entries.Select(e => Encoding.ASCII.GetBytes(e.Name))];
    private static readonly byte[][] ValueBytes = [.. Entries.Select(e => Encoding.ASCII.GetBytes(e.Value))];

    /// <summary>The name of entry <paramref name="index"/> (1-based).</summary>
    public static byte[] Name(int index) => NameBytes[index - 1];

    /// <summary>The value of entry <paramref name="index"/> (1-based); empty for an entry without one.</summary>
    public static byte[] Value(int index) => ValueBytes[index - 1];

    /// <summary>The string of the value of entry <paramref name="index"/> (1-based), the same instance every time.</summary>
    public static string ValueString(int index) => Entries[index - 1].Value;
}
