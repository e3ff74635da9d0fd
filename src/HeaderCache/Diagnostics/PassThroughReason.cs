namespace HeaderCache.Diagnostics;

/// <summary>Why a connection stopped compacting heads and now hands every byte to Kestrel unchanged.</summary>
internal enum PassThroughReason
{
    None,

    /// <summary>The first byte was a TLS record, and nothing after HeaderCache decrypted the connection.</summary>
    Tls,

    /// <summary>The HTTP/2 prior-knowledge preface (<c>PRI * HTTP/2.0</c>).</summary>
    Http2,

    /// <summary>A request line with a version other than HTTP/1.1.</summary>
    Version,

    /// <summary>A <c>CONNECT</c> request: the connection becomes a tunnel.</summary>
    Connect,

    /// <summary>An upgrade request (<c>Connection: upgrade</c> or an <c>Upgrade</c> header).</summary>
    Upgrade,

    /// <summary>A <c>Transfer-Encoding</c> header: chunked framing is left to Kestrel.</summary>
    TransferEncoding,

    /// <summary>A line the compactor does not fully understand, or that Kestrel may reject.</summary>
    Malformed,

    /// <summary>A head over Kestrel's request-line, header-size or header-count limit.</summary>
    OverLimit,

    /// <summary>Heads in a row with nothing to take out: only names Kestrel acts on, and known headers whose value
    /// Kestrel reuses from the previous request on its own.</summary>
    NothingToCache,

    /// <summary>Fewer than one in 8 of the last 64 value lookups were hits (<c>ValueAdmission</c>): the connection's values do
    /// not repeat.</summary>
    ValuesDoNotRepeat,
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
        _ => "none",
    };
}
