namespace HeaderCache;

/// <summary>What HeaderCache does on one connection, for an application or a health check:
/// <c>HttpContext.Features.Get&lt;IHeaderStringCacheFeature&gt;()</c> (request features fall back to the connection's).
/// It is absent on connections of endpoints without HeaderCache's connection middleware.</summary>
public interface IHeaderStringCacheFeature
{
    /// <summary>Whether this connection's requests (HTTP/1.1 request heads or HTTP/2 header blocks) go through its cache
    /// now.</summary>
    bool IsActive { get; }

    /// <summary>
    /// Why they do not, or <see langword="null"/> while <see cref="IsActive"/>. The connection was never read:
    /// <c>disabled</c> (HeaderCache is switched off), <c>untested_kestrel</c> (a Kestrel of another major or minor version
    /// than the one HeaderCache was tested with). Its protocol is switched off
    /// (<see cref="HeaderCacheOptions.Protocols"/>), and Kestrel reads its bytes unchanged: <c>http1_disabled</c>,
    /// <c>http2_disabled</c>. HeaderCache stepped aside, leaving every later byte to Kestrel: <c>values_do_not_repeat</c>
    /// (fewer than 8 of 64 values in a row repeated: value lookups that were hits, and on HTTP/2 references to table
    /// entries, against literals the client adds to its table), <c>http2</c> (an HTTP/2 prior-knowledge preface on a
    /// connection Kestrel runs as HTTP/1.1: h2c on a plain endpoint whose protocols are not <c>Http2</c> alone),
    /// <c>http2_stopped</c> (an HTTP/2 connection whose frames the reader stopped following: an error Kestrel ends it
    /// for, or a frame it leaves to Kestrel), <c>tls</c> (TLS bytes nothing decrypted before HeaderCache), and on
    /// HTTP/1.1 <c>version</c> (a request line of another HTTP version), <c>connect</c>, <c>upgrade</c>,
    /// <c>transfer_encoding</c>, <c>malformed</c> (a head Kestrel may reject), <c>over_limit</c> (a head over one of
    /// Kestrel's limits), and on both protocols <c>nothing_to_cache</c> (16 requests in a row had nothing to take out:
    /// only names Kestrel acts on and, on HTTP/1.1, values it reuses on its own). The same values as the
    /// <c>headercache.connection.reason</c> tag of the metrics.
    /// </summary>
    string? InactiveReason { get; }

    /// <summary>Header lines (HTTP/2: header fields) taken out of this connection's requests whose name and value both
    /// came without a new string: the <c>served</c> count of the <c>headercache.lines</c> metric.</summary>
    long Hits { get; }

    /// <summary>Header lines (HTTP/2: header fields) taken out of this connection's requests for which a new name or value
    /// string was made, as Kestrel alone makes: the <c>created</c> count of the <c>headercache.lines</c> metric.</summary>
    long Misses { get; }
}
