namespace HeaderCache.Diagnostics;

/// <summary>Why a connection stopped taking header lines (HTTP/1.1) or fields (HTTP/2) out of its requests and now hands
/// every byte to Kestrel unchanged.</summary>
internal enum PassThroughReason
{
    None,
    Tls,                 // the first byte was a TLS record, and nothing after HeaderCache decrypted the connection
    Http2,               // the HTTP/2 prior-knowledge preface (PRI * HTTP/2.0) on a connection Kestrel runs as HTTP/1.1
    Version,             // a request line with a version other than HTTP/1.1
    Connect,             // a CONNECT request: the connection becomes a tunnel
    Upgrade,             // Connection: upgrade, or an Upgrade header
    TransferEncoding,    // chunked framing is left to Kestrel
    Malformed,           // a line the compactor does not fully understand, or that Kestrel may reject
    OverLimit,           // a head over Kestrel's request-line, header-size or header-count limit
    NothingToCache,      // heads in a row with only names Kestrel acts on and values it reuses on its own
    ValuesDoNotRepeat,   // too few of the last value lookups were hits (ValueAdmission)
    Http2Stopped,        // an HTTP/2 connection the reader stopped following (an error Kestrel ends it for, a frame it does not follow)
    Http1Disabled,       // an HTTP/1.1 connection while HeaderCacheOptions.Protocols leaves HTTP/1.1 out
    Http2Disabled,       // an HTTP/2 connection (h2, or h2c Kestrel reads as HTTP/2) while Protocols leaves HTTP/2 out
}

/// <summary>The names of <see cref="PassThroughReason"/> in metrics and in the connection feature.</summary>
internal static class PassThroughReasonNames
{
    /// <summary>The lowercase name of <paramref name="reason"/>.</summary>
    public static string Name(this PassThroughReason reason) => reason switch
    {
        PassThroughReason.Tls => "tls",
        PassThroughReason.Http2 => "http2",
        PassThroughReason.Version => "version",
        PassThroughReason.Connect => "connect",
        PassThroughReason.Upgrade => "upgrade",
        PassThroughReason.TransferEncoding => "transfer_encoding",
        PassThroughReason.Malformed => "malformed",
        PassThroughReason.OverLimit => "over_limit",
        PassThroughReason.NothingToCache => "nothing_to_cache",
        PassThroughReason.ValuesDoNotRepeat => "values_do_not_repeat",
        PassThroughReason.Http2Stopped => "http2_stopped",
        PassThroughReason.Http1Disabled => "http1_disabled",
        PassThroughReason.Http2Disabled => "http2_disabled",
        _ => "none",
    };
}
