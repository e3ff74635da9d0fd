using HeaderCache.Diagnostics;
using HeaderCache.Caching;
using static HeaderCache.Caching.HttpBytes;

namespace HeaderCache.Http1;

/// <summary>The request lines after which a connection's heads are compacted: <c>token SP target SP HTTP/1.1 CRLF</c>
/// with a method other than <c>CONNECT</c>. The line itself is never changed; anything else is left to Kestrel from
/// there on.</summary>
internal static class RequestLine
{
    /// <summary>Why a request line (ending in LF) stops compaction, or <see cref="PassThroughReason.None"/>.</summary>
    public static PassThroughReason Check(ReadOnlySpan<byte> line)
    {
        if (line.Length < 2 || line[^2] != CR)
        {
            return PassThroughReason.Malformed;
        }

        line = line[..^2];
        int methodEnd = line.IndexOf(SP);
        if (methodEnd <= 0 || line[..methodEnd].ContainsAnyExcept(HttpBytes.Token))
        {
            return PassThroughReason.Malformed;
        }

        ReadOnlySpan<byte> method = line[..methodEnd];
        ReadOnlySpan<byte> rest = line[(methodEnd + 1)..];
        int targetEnd = rest.IndexOf(SP);
        if (targetEnd <= 0)
        {
            return PassThroughReason.Malformed;
        }

        ReadOnlySpan<byte> version = rest[(targetEnd + 1)..];
        if (!version.SequenceEqual("HTTP/1.1"u8))
        {
            return method.SequenceEqual("PRI"u8) ? PassThroughReason.Http2 : PassThroughReason.Version;
        }

        return method.SequenceEqual("CONNECT"u8) ? PassThroughReason.Connect : PassThroughReason.None;
    }
}
