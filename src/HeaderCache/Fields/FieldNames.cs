using System.Text;
using Microsoft.Net.Http.Headers;

namespace HeaderCache.Fields;

/// <summary>The kinds of header name, told apart before a line is touched.</summary>
/// <remarks><para><b>Kept for Kestrel</b>: the headers Kestrel acts on while it parses a request (framing, connection
/// management, host validation, protocol switches); their lines stay in the bytes. All are fields of Kestrel's
/// collection, never entries of its dictionary of other names, so the lines taken out go back in wire order
/// (<c>Trailer</c>, <c>Proxy-Connection</c> and <c>HTTP2-Settings</c>, which Kestrel's HTTP/1.1 parser neither acts on
/// nor keeps in a field, are ordinary names).</para>
/// <para><b>Known</b>: the headers Kestrel stores in fields of its own collection (<c>HttpRequestHeaders</c>) and
/// reports under its constant whatever casing was sent, so they go back under these constants. Every other name gets a
/// string with the casing of the line, which Kestrel stores as its parser would. The list must never hold a name
/// Kestrel does not store in a field, or the casing the application sees could change.</para>
/// <para><b>Interned by Kestrel</b>: names Kestrel keeps in its dictionary of other names, but under the constant of
/// <see cref="HeaderNames"/> whatever casing was sent (<c>x-requested-with</c> is listed as <c>X-Requested-With</c>).
/// They are other names in every respect but one: a request's view puts them into Kestrel's collection at once, so that
/// Kestrel names them.</para></remarks>
internal static class FieldNames
{
    // Kestrel keeps these two in fields of its own; HeaderNames has no constant for them.
    private const string AltUsed = "Alt-Used";
    private const string Translate = "Translate";

    private static readonly string[] KeptForKestrel =
    [
        HeaderNames.Host, HeaderNames.ContentLength, HeaderNames.TransferEncoding, HeaderNames.Connection, HeaderNames.KeepAlive,
        HeaderNames.Expect, HeaderNames.Upgrade, HeaderNames.TE,
    ];

    // Kestrel's known HTTP/1.1 request headers that are not kept above. Sized by KnownCount, so that the compiler holds
    // the two together.
    private static readonly string[] Known = new string[KnownCount]
    {
        HeaderNames.Accept, HeaderNames.AcceptCharset, HeaderNames.AcceptEncoding, HeaderNames.AcceptLanguage,
        HeaderNames.AccessControlRequestHeaders, HeaderNames.AccessControlRequestMethod, AltUsed, HeaderNames.Authorization,
        HeaderNames.Baggage, HeaderNames.CacheControl, HeaderNames.ContentType, HeaderNames.Cookie, HeaderNames.CorrelationContext,
        HeaderNames.Date, HeaderNames.From, HeaderNames.GrpcAcceptEncoding, HeaderNames.GrpcEncoding, HeaderNames.GrpcTimeout,
        HeaderNames.IfMatch, HeaderNames.IfModifiedSince, HeaderNames.IfNoneMatch, HeaderNames.IfRange, HeaderNames.IfUnmodifiedSince,
        HeaderNames.MaxForwards, HeaderNames.Origin, HeaderNames.Pragma, HeaderNames.ProxyAuthorization, HeaderNames.Range,
        HeaderNames.Referer, HeaderNames.RequestId, HeaderNames.TraceParent, HeaderNames.TraceState, Translate,
        HeaderNames.UpgradeInsecureRequests, HeaderNames.UserAgent, HeaderNames.Via, HeaderNames.Warning,
    };

    // The names of Kestrel's dictionary of other names that it stores under a constant (its interned header names, less
    // the known and kept ones above).
    private static readonly string[] InternedByKestrel =
    [
        HeaderNames.AcceptRanges, HeaderNames.AccessControlAllowCredentials, HeaderNames.AccessControlAllowHeaders,
        HeaderNames.AccessControlAllowMethods, HeaderNames.AccessControlAllowOrigin, HeaderNames.AccessControlExposeHeaders,
        HeaderNames.AccessControlMaxAge, HeaderNames.Age, HeaderNames.Allow, HeaderNames.AltSvc, HeaderNames.ContentDisposition,
        HeaderNames.ContentEncoding, HeaderNames.ContentLanguage, HeaderNames.ContentLocation, HeaderNames.ContentMD5,
        HeaderNames.ContentRange, HeaderNames.ContentSecurityPolicy, HeaderNames.ContentSecurityPolicyReportOnly, HeaderNames.DNT,
        HeaderNames.ETag, HeaderNames.Expires, HeaderNames.GrpcMessage, HeaderNames.GrpcStatus, HeaderNames.LastModified,
        HeaderNames.Link, HeaderNames.Location, HeaderNames.ProxyAuthenticate, HeaderNames.ProxyConnection, HeaderNames.RetryAfter,
        HeaderNames.SecWebSocketAccept, HeaderNames.SecWebSocketKey, HeaderNames.SecWebSocketProtocol, HeaderNames.SecWebSocketVersion,
        HeaderNames.SecWebSocketExtensions, HeaderNames.Server, HeaderNames.SetCookie, HeaderNames.StrictTransportSecurity,
        HeaderNames.Trailer, HeaderNames.Vary, HeaderNames.WWWAuthenticate, HeaderNames.XContentTypeOptions, HeaderNames.XFrameOptions,
        HeaderNames.XPoweredBy, HeaderNames.XRequestedWith, HeaderNames.XUACompatible, HeaderNames.XXSSProtection,
    ];

    // The known names, then the kept ones, then the interned ones: one look-up per line tells the kinds apart.
    private static readonly string[] All = [.. Known, .. KeptForKestrel, .. InternedByKestrel];
    private static readonly int[][] AllByLength = ByLength(All);

    /// <summary>A known name's position is below it: the per-name state of a connection (previous values, histories, the
    /// section's name filter) gives the known names the first places, by position, before the other names'.</summary>
    public const int KnownCount = 37;

    // What Classify returns for a name Kestrel acts on itself, for one it keeps in its dictionary of other names, and for
    // one of those that it keeps under its constant: every negative kind is another name.
    public const int Interned = TakenHeader.InternedName;
    public const int Kept = -2;
    public const int Other = -1;

    /// <summary>The position of a known header in the list of known names (case-insensitively), or <see cref="Kept"/>,
    /// <see cref="Interned"/> or <see cref="Other"/>.</summary>
    public static int Classify(ReadOnlySpan<byte> name)
    {
        int index = Find(name);
        return index < Known.Length ? index : index < Known.Length + KeptForKestrel.Length ? Kept : Interned;
    }

    public static string KnownName(int index) => Known[index];

    private static int Find(ReadOnlySpan<byte> name)
    {
        if (name.Length >= AllByLength.Length)
        {
            return Other;
        }

        foreach (int index in AllByLength[name.Length])
        {
            if (Ascii.EqualsIgnoreCase(name, All[index]))
            {
                return index;
            }
        }

        return Other;
    }

    private static int[][] ByLength(string[] names)
    {
        int longest = names.Max(n => n.Length);
        var table = new int[longest + 1][];
        for (int length = 0; length <= longest; length++)
        {
            table[length] = Enumerable.Range(0, names.Length).Where(i => names[i].Length == length).ToArray();
        }

        return table;
    }
}
