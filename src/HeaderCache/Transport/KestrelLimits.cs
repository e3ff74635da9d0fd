using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Transport;

/// <summary>The limits of an endpoint's <see cref="KestrelServerLimits"/> the readers apply, read once when HeaderCache
/// is attached: a head, frame or header block over any of them is handed to Kestrel untouched, so that Kestrel rejects
/// it exactly as it would alone.</summary>
/// <param name="MaxRequestLineSize">HTTP/1.1: the request line including CRLF (Kestrel: 414 above it).</param>
/// <param name="MaxRequestHeadersTotalSize">Both protocols: HTTP/1.1 header lines including their CRLFs, where Kestrel
/// allows this plus the final CRLF (431 above); on HTTP/2 the decoded names and values of a block.</param>
/// <param name="MaxRequestHeaderCount">Both protocols: header lines, or a block's fields (Kestrel: 431 on the next
/// one).</param>
/// <param name="MaxFrameSize">HTTP/2 (<c>Http2.MaxFrameSize</c>): a larger frame ends the connection as soon as its
/// header arrives.</param>
/// <param name="HeaderTableSize">HTTP/2 (<c>Http2.HeaderTableSize</c>): the HPACK table size Kestrel advertises and
/// decodes with.</param>
/// <param name="MaxRequestHeaderFieldSize">HTTP/2 (<c>Http2.MaxRequestHeaderFieldSize</c>): the longest string of a
/// field, as sent or decoded.</param>
/// <param name="MaxStreamsPerConnection">HTTP/2 (<c>Http2.MaxStreamsPerConnection</c>).</param>
internal sealed record KestrelLimits(
    int MaxRequestLineSize,
    int MaxRequestHeadersTotalSize,
    int MaxRequestHeaderCount,
    int MaxFrameSize,
    int HeaderTableSize,
    int MaxRequestHeaderFieldSize,
    int MaxStreamsPerConnection)
{
    /// <summary>HTTP/1.1: the bytes Kestrel allows a header section, the header lines plus the final CRLF.</summary>
    public int MaxSectionLength => MaxRequestHeadersTotalSize + 2;

    public static KestrelLimits From(KestrelServerLimits limits) =>
        new(limits.MaxRequestLineSize, limits.MaxRequestHeadersTotalSize, limits.MaxRequestHeaderCount,
            limits.Http2.MaxFrameSize, limits.Http2.HeaderTableSize, limits.Http2.MaxRequestHeaderFieldSize,
            limits.Http2.MaxStreamsPerConnection);
}
