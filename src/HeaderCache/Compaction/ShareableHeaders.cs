using System.Text;

namespace HeaderCache.Compaction;

/// <summary>
/// The allow-list of the shared tier: the only headers whose values (and, for names Kestrel has no constant for,
/// whose names) may be shared between connections. Every other header stays per connection.
/// </summary>
/// <remarks>
/// <para>A header is on the list only when its value describes the client's software or a preference it states, is
/// the same for large populations of clients, and is neither a credential, an identifier, an address, a URL nor a
/// validator of a cached response: the accept lists, the user agent and its low-entropy client hints
/// (<c>sec-ch-ua</c>, <c>-mobile</c>, <c>-platform</c>), the fetch metadata (<c>sec-fetch-*</c>, a handful of fixed
/// words), <c>Priority</c>, <c>DNT</c>, <c>Sec-GPC</c>, <c>Upgrade-Insecure-Requests</c>, the cache directives, and
/// the scheme a proxy saw (<c>X-Forwarded-Proto</c>).</para>
/// <para>Left out on purpose: <c>Cookie</c>, <c>Authorization</c>, <c>Proxy-Authorization</c> (credentials);
/// <c>Referer</c> and <c>Origin</c> (where a user was); <c>If-None-Match</c> and the other conditionals (validators
/// of what a user fetched); request and trace ids (<c>X-Request-ID</c>, <c>traceparent</c>, <c>tracestate</c>,
/// <c>baggage</c>, <c>Request-Id</c>, <c>Correlation-Context</c>); addresses and hosts (<c>X-Forwarded-For</c>,
/// <c>X-Real-IP</c>, <c>Forwarded</c>, <c>X-Forwarded-Host</c>, <c>Via</c>, <c>From</c>); high-entropy client hints
/// (<c>sec-ch-ua-full-version-list</c>, <c>-model</c>, <c>-platform-version</c>, ...), which exist to tell clients
/// apart; and every name not listed here, so a custom header that carries a token is never shared by accident. The
/// names configured in <c>HeaderCacheOptions.ExcludedHeaders</c> are taken off the list as well (the compactor does
/// that).</para>
/// </remarks>
internal static class ShareableHeaders
{
    // Of Kestrel's known names (HeaderNameTable.KnownNames).
    private static readonly string[] Known =
    [
        "Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language", "Cache-Control", "Pragma",
        "Upgrade-Insecure-Requests", "User-Agent",
    ];

    // Names Kestrel keeps in its dictionary of other names.
    private static readonly string[] Other =
    [
        "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform",
        "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-User", "Sec-Fetch-Dest",
        "Priority", "DNT", "Sec-GPC", "X-Forwarded-Proto",
    ];

    /// <summary>The known names on the list, by bit of their position in <see cref="HeaderNameTable.KnownNames"/>.</summary>
    public static ulong KnownMask { get; } = Known.Aggregate(0UL, (mask, name) => mask | (1UL << HeaderNameTable.Classify(Encoding.ASCII.GetBytes(name))));

    /// <summary>All names on the list (for documentation and tests).</summary>
    public static IReadOnlyList<string> Names { get; } = [.. Known, .. Other];

    /// <summary>Whether a name Kestrel keeps in its dictionary of other names is on the list (case-insensitively).</summary>
    public static bool IsShareableOther(ReadOnlySpan<byte> name)
    {
        foreach (string other in Other)
        {
            if (Ascii.EqualsIgnoreCase(name, other))
            {
                return true;
            }
        }

        return false;
    }
}
