using System.Text;

namespace HeaderCache.Caching;

/// <summary>
/// Header values fixed by the specifications that define their headers, one string each for the whole process, as
/// Kestrel has one string for each header name it knows. A value equal to one of them is served without taking a slot
/// of the connection's cache.
/// </summary>
/// <remarks>
/// <para>Browsers send many such values on every request: fetch metadata (<c>Sec-Fetch-*</c>, a closed set), client
/// hints' structured-field booleans and platform names, the priority of RFC 9218, <c>Upgrade-Insecure-Requests: 1</c>.
/// A browser connection's working set is about 31 strings; these take about a third of it, and a cache of 25 then
/// holds the rest (the cookies and referers that do repeat).</para>
/// <para>The list is fixed in the code and comes from the specifications, not from traffic, so a hit says nothing
/// about any client; and being strings of the process, they hold no memory per connection.</para>
/// </remarks>
internal static class WellKnownValues
{
    /// <summary>Longest value in the list.</summary>
    public const int MaxLength = 24;

    private static readonly string[] Values =
    [
        // Fetch Metadata Request Headers: Sec-Fetch-Site, Sec-Fetch-Mode, Sec-Fetch-Dest, Sec-Fetch-User.
        "cross-site", "same-origin", "same-site", "none",
        "cors", "navigate", "no-cors", "websocket",
        "audio", "audioworklet", "document", "embed", "empty", "fencedframe", "font", "frame", "iframe", "image", "json",
        "manifest", "object", "paintworklet", "report", "script", "serviceworker", "sharedworker", "style", "track",
        "video", "webidentity", "worker", "xslt",

        // Structured-field booleans (Sec-Fetch-User, Sec-CH-UA-Mobile) and the 0/1 flags (Upgrade-Insecure-Requests,
        // DNT, Sec-GPC).
        "?0", "?1", "0", "1",

        // Sec-CH-UA-Platform.
        "\"Android\"", "\"Chrome OS\"", "\"Chromium OS\"", "\"iOS\"", "\"Linux\"", "\"macOS\"", "\"Windows\"", "\"Unknown\"",

        // Priority (RFC 9218): urgency 0-7, incremental or not.
        "u=0", "u=1", "u=2", "u=3", "u=4", "u=5", "u=6", "u=7", "i",
        "u=0, i", "u=1, i", "u=2, i", "u=3, i", "u=4, i", "u=5, i", "u=6, i", "u=7, i",

        // Cache-Control and Pragma as browsers send them on reload, content codings, and the rest of the fixed values
        // browsers and proxies send.
        "no-cache", "max-age=0", "gzip, deflate, br, zstd", "gzip, deflate, br", "gzip, deflate", "gzip", "br", "identity",
        "*/*", "trailers", "XMLHttpRequest", "prefetch", "http", "https",
    ];

    // The values by length, each with its first byte, so a value of another length or first byte costs one load.
    private static readonly string[][] ByLength = Group();

    /// <summary>Every value in the list.</summary>
    public static IReadOnlyList<string> All => Values;

    /// <summary>The string of the list whose characters are exactly <paramref name="value"/>, if any.</summary>
    public static bool TryGet(ReadOnlySpan<byte> value, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out string? result)
    {
        if (value.Length <= MaxLength)
        {
            foreach (string candidate in ByLength[value.Length])
            {
                if (candidate[0] == value[0] && Ascii.Equals(value, candidate))
                {
                    result = candidate;
                    return true;
                }
            }
        }

        result = null;
        return false;
    }

    private static string[][] Group()
    {
        var groups = new string[MaxLength + 1][];
        for (int length = 0; length <= MaxLength; length++)
        {
            groups[length] = [.. Values.Where(value => value.Length == length).Distinct(StringComparer.Ordinal)];
        }

        return groups;
    }
}
