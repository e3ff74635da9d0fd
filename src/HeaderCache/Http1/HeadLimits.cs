using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Http1;

/// <summary>Kestrel's limits on a request head, as the compactor applies them: a head over any of them is handed to
/// Kestrel untouched so that Kestrel rejects it exactly as it would alone.</summary>
/// <param name="MaxRequestLineSize">Request line including CRLF (Kestrel: 414 above it).</param>
/// <param name="MaxRequestHeadersTotalSize">Header lines including their CRLFs; Kestrel allows this plus 2 bytes for
/// the final CRLF (431 above).</param>
/// <param name="MaxRequestHeaderCount">Header lines (Kestrel: 431 on the next one).</param>
internal readonly record struct HeadLimits(int MaxRequestLineSize, int MaxRequestHeadersTotalSize, int MaxRequestHeaderCount)
{
    /// <summary>Bytes Kestrel allows a header section: the header lines plus 2 for the final CRLF.</summary>
    public int MaxSectionLength => MaxRequestHeadersTotalSize + 2;

    public static HeadLimits Default { get; } = From(new KestrelServerLimits());

    public static HeadLimits From(KestrelServerLimits limits) =>
        new(limits.MaxRequestLineSize, limits.MaxRequestHeadersTotalSize, limits.MaxRequestHeaderCount);
}
