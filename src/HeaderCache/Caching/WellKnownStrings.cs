using System.Diagnostics.CodeAnalysis;
using System.Text;

namespace HeaderCache.Caching;

/// <summary>Header names and values fixed by the specifications that define them, one string each for the whole
/// process, as Kestrel has one string for each header name it knows.</summary>
/// <remarks>A value from <see cref="Values"/> is served without taking a slot of the connection's cache, which is left
/// to the values that vary (cookies, referers). A name from <see cref="Names"/> still takes its slot in the cache of
/// names, which keeps the name's history of values, but no new string. The lists come from specifications and the
/// documentation of browsers and proxies, not from traffic, and hold no memory per connection. A name is listed as
/// written and in lower case (as HTTP/2 and HTTP/3 carry it and proxies forward it), since a string is served only for
/// exactly its bytes.</remarks>
internal sealed class WellKnownStrings
{
    public static readonly WellKnownStrings Values = new(
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

        // Accept as browsers send it by default for a document, an image and a style sheet (the Fetch standard's and
        // the browsers' own, as MDN lists them), and as JSON clients send it: a browser connection alternates between
        // them, which Kestrel's one previous value per header cannot reuse.
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
        "image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
        "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
        "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
        "image/avif,image/webp,*/*",
        "image/webp,image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5",
        "text/css,*/*;q=0.1",
        "application/json", "application/json, text/plain, */*",
    ]);

    /// <summary>Header names Kestrel has no constant for.</summary>
    public static readonly WellKnownStrings Names = new(
    [
        .. BothCases(
        [
            // User-Agent Client Hints (Chromium sends them in lower case).
            "Sec-CH-UA", "Sec-CH-UA-Mobile", "Sec-CH-UA-Platform", "Sec-CH-UA-Arch", "Sec-CH-UA-Bitness",
            "Sec-CH-UA-Full-Version", "Sec-CH-UA-Full-Version-List", "Sec-CH-UA-Model", "Sec-CH-UA-Platform-Version",
            "Sec-CH-UA-WoW64", "Sec-CH-UA-Form-Factors", "Sec-CH-Prefers-Color-Scheme", "Sec-CH-Prefers-Reduced-Motion",

            // Fetch metadata, priority, privacy signals, prefetch.
            "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User", "Sec-Fetch-Storage-Access",
            "Priority", "DNT", "Sec-GPC", "Sec-Purpose", "Purpose", "Service-Worker-Navigation-Preload", "X-Requested-With",

            // Forwarding headers of proxies and load balancers.
            "Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Port", "X-Forwarded-Prefix",
            "X-Real-IP", "X-Request-ID", "X-Correlation-ID", "X-Amzn-Trace-Id", "X-Original-URI",
        ]),
    ]);

    // The strings by length, so a lookup of another length costs one load.
    private readonly string[][] _byLength;

    private WellKnownStrings(string[] strings)
    {
        All = [.. strings.Distinct(StringComparer.Ordinal)];
        MaxLength = All.Max(value => value.Length);
        _byLength = new string[MaxLength + 1][];
        for (int length = 0; length <= MaxLength; length++)
        {
            _byLength[length] = [.. All.Where(value => value.Length == length)];
        }
    }

    public IReadOnlyList<string> All { get; }

    public int MaxLength { get; }

    /// <summary>The string of the list whose characters are exactly <paramref name="bytes"/>, if any.</summary>
    public bool TryGet(ReadOnlySpan<byte> bytes, [NotNullWhen(true)] out string? result)
    {
        if (bytes.Length <= MaxLength)
        {
            foreach (string candidate in _byLength[bytes.Length])
            {
                if (candidate[0] == bytes[0] && Ascii.Equals(bytes, candidate))
                {
                    result = candidate;
                    return true;
                }
            }
        }

        result = null;
        return false;
    }

    private static IEnumerable<string> BothCases(string[] names) => names.Concat(names.Select(name => name.ToLowerInvariant()));
}
