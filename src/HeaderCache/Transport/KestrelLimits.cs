using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Http1;

/// <summary>Kestrel's limits on a request head, as the compactor applies them: a head over any of them is handed to
/// Kestrel untouched so that Kestrel rejects it exactly as it would alone.</summary>
/// <param name="MaxRequestLineSize">Request line including CRLF (Kestrel: 414 above it).</param>
/// <param name="MaxRequestHeadersTotalSize">Header lines including their CRLFs; Kestrel allows this plus 2 bytes for
/// the final CRLF (431 above).</param>
/// <param name="MaxRequestHeaderCount">Header lines (Kestrel: 431 on the next one).</param>
/// <remarks>Also Kestrel's HTTP/2 limits, which the HTTP/2 reader applies to frames and header blocks.</remarks>
internal readonly record struct HeadLimits(int MaxRequestLineSize, int MaxRequestHeadersTotalSize, int MaxRequestHeaderCount)
{
    /// <summary>Bytes Kestrel allows a header section: the header lines plus 2 for the final CRLF.</summary>
    public int MaxSectionLength => MaxRequestHeadersTotalSize + 2;

    public static HeadLimits Default { get; } = From(new KestrelServerLimits());

    /// <summary>Kestrel's <c>Http2.MaxFrameSize</c>: a larger frame ends the connection as soon as its header arrives.</summary>
    public int MaxFrameSize { get; init; } = 16 * 1024;

    /// <summary>Kestrel's <c>Http2.HeaderTableSize</c>: the HPACK table size it advertises and decodes with.</summary>
    public int HeaderTableSize { get; init; } = 4096;

    /// <summary>Kestrel's <c>Http2.MaxRequestHeaderFieldSize</c>.</summary>
    public int MaxRequestHeaderFieldSize { get; init; } = 32 * 1024;

    /// <summary>Kestrel's <c>Http2.MaxStreamsPerConnection</c>.</summary>
    public int MaxStreamsPerConnection { get; init; } = 100;

    public static HeadLimits From(KestrelServerLimits limits) =>
        new(limits.MaxRequestLineSize, limits.MaxRequestHeadersTotalSize, limits.MaxRequestHeaderCount)
        {
            MaxFrameSize = limits.Http2.MaxFrameSize,
            HeaderTableSize = limits.Http2.HeaderTableSize,
            MaxRequestHeaderFieldSize = limits.Http2.MaxRequestHeaderFieldSize,
            MaxStreamsPerConnection = limits.Http2.MaxStreamsPerConnection,
        };
}
