using HeaderCache.Caching;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache;

/// <summary>
/// Options of the per-connection header string cache, bound from the <c>HeaderCache</c> configuration section. Changes
/// apply to connections accepted after the change. A key of the section that names none of these settings is ignored,
/// with a warning that names the nearest one; a value a setting cannot hold or out of its range fails at start-up with
/// an <see cref="Microsoft.Extensions.Options.OptionsValidationException"/> naming the setting and the value, and while
/// the server runs leaves new connections on the last valid options.
/// </summary>
public sealed class HeaderCacheOptions
{
    /// <summary>The configuration section the options are bound from.</summary>
    public const string SectionName = "HeaderCache";

    /// <summary>
    /// The name of HeaderCache's <see cref="System.Diagnostics.Metrics.Meter"/>, for <c>dotnet-counters</c> and
    /// OpenTelemetry (<c>AddMeter(HeaderCacheOptions.MeterName)</c>). Also its log category.
    /// </summary>
    public const string MeterName = "HeaderCache";

    /// <summary>
    /// Whether new connections get the cache. When <see langword="false"/>, the connection middleware
    /// puts no wrapper on new connections: Kestrel reads the transport directly.
    /// </summary>
    public bool Enabled { get; set; } = true;

    /// <summary>
    /// The protocols whose connections get the cache, named as for an endpoint's <see cref="ListenOptions.Protocols"/>
    /// (<c>"Protocols": "Http1"</c> in configuration). Default <see cref="HttpProtocols.Http1AndHttp2"/>. A connection
    /// of a protocol left out passes through, as with <see cref="Enabled"/> off: Kestrel reads its bytes unchanged, and
    /// <see cref="IHeaderStringCacheFeature.InactiveReason"/> is <c>http1_disabled</c> or <c>http2_disabled</c>. This
    /// does not change which protocols Kestrel speaks; HTTP/3 is never read (QUIC), so <c>Http3</c> changes nothing.
    /// </summary>
    public HttpProtocols Protocols { get; set; } = HttpProtocols.Http1AndHttp2;

    /// <summary>
    /// Whether connections get the cache on a Kestrel whose major or minor version differs from the one this build of
    /// HeaderCache was tested with. Default <see langword="false"/>: on such a Kestrel every connection passes through
    /// uncached (as with <see cref="Enabled"/> off) and a warning names both versions.
    /// </summary>
    /// <remarks>
    /// HeaderCache takes header lines out of HTTP/1.1 request heads before Kestrel's parser reads them, and header fields
    /// out of HTTP/2 header blocks before Kestrel's HPACK decoder reads them, and checks each at least as strictly as the
    /// Kestrel it was compared with. Another Kestrel may reject requests that one accepted; with a line or field taken
    /// out, such a request could reach the application. Set this only after running the package's differential tests
    /// against that Kestrel.
    /// </remarks>
    public bool AllowUntestedKestrelVersion { get; set; }

    /// <summary>Header values each connection keeps (1 to 256). Default 25. Header names Kestrel has no constant
    /// for have 32 slots of their own.</summary>
    public int SlotCount { get; set; } = HeaderStringCache.DefaultSlotCount;

    /// <summary>Longest header name or value, in bytes, that is cached (0 to 8192). Default 256.
    /// Longer ones get a new string on every request, as with Kestrel alone.</summary>
    public int MaxValueLength { get; set; } = HeaderStringCache.DefaultMaxLength;

    /// <summary>
    /// Bytes of header values longer than <see cref="MaxValueLength"/> (bearer tokens, cookies) that each connection
    /// caches (0 to 65536; 0 turns it off). Default 16384: at most 4 such values, together no longer than this, so a
    /// value longer than the budget gets a new string on every request, as with Kestrel alone. Their strings take at most
    /// twice this many bytes of a connection's memory, plus 0.4 KB.
    /// </summary>
    public int LongValueBudget { get; set; } = LongValueCache.DefaultBudget;

    /// <summary>
    /// Header names (case-insensitive) whose values are never cached: each request gets a new string for
    /// them, as with Kestrel alone (for example for credentials a deployment wants kept out of any cache).
    /// </summary>
    public IList<string> ExcludedHeaders { get; } = [];
}
