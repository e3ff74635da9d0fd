namespace HeaderCache;

/// <summary>What HeaderCache does on one connection, for an application or a health check:
/// <c>HttpContext.Features.Get&lt;IHeaderStringCacheFeature&gt;()</c> (request features fall back to the connection's).
/// It is absent on connections of endpoints without HeaderCache's connection middleware.</summary>
public interface IHeaderStringCacheFeature
{
    /// <summary>Whether this connection's request heads go through its cache now.</summary>
    bool IsActive { get; }

    /// <summary>Why they do not, or <see langword="null"/> while <see cref="IsActive"/>: <c>disabled</c> and
    /// <c>http2</c> (the connection was never read: HeaderCache is switched off, or TLS negotiated HTTP/2), or why it
    /// stepped aside, leaving every later byte to Kestrel: <c>tls</c>, <c>http2</c>, <c>version</c>, <c>connect</c>,
    /// <c>upgrade</c>, <c>transfer_encoding</c>, <c>malformed</c>, <c>over_limit</c>, <c>nothing_to_cache</c> (16 heads
    /// in a row had nothing to take out: only names Kestrel acts on, and values it reuses on its own),
    /// <c>values_do_not_repeat</c> (fewer than 8 of 64 value lookups in a row were hits). The same values as the
    /// <c>headercache.connection.reason</c> tag of the metrics.</summary>
    string? InactiveReason { get; }

    /// <summary>Header lines taken out of this connection's request heads whose name and value both came without a new
    /// string: the <c>served</c> count of the <c>headercache.lines</c> metric.</summary>
    long Hits { get; }

    /// <summary>Header lines taken out of this connection's request heads for which a new name or value string was made,
    /// as Kestrel alone makes: the <c>created</c> count of the <c>headercache.lines</c> metric.</summary>
    long Misses { get; }
}
