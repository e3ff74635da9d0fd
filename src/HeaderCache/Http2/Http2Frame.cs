namespace HeaderCache.Http2;

/// <summary>The HTTP/2 frame layout (RFC 9113 section 4.1) and the frame types and flags the readers act on.</summary>
/// <remarks><code>
/// +-----------------------------------------------+
/// |                 Length (24)                   |
/// +---------------+---------------+---------------+
/// |   Type (8)    |   Flags (8)   |
/// +-+-------------+---------------+-------------------------------+
/// |R|                 Stream Identifier (31)                      |
/// +=+=============================================================+
/// |                   Frame Payload (0...)                      ...
/// +---------------------------------------------------------------+
/// </code></remarks>
internal static class Http2Frame
{
    /// <summary>The octets of a frame header, before its payload.</summary>
    public const int HeaderLength = 9;

    /// <summary>A stream identifier without the reserved bit R.</summary>
    public const uint StreamIdMask = 0x7FFF_FFFF;

    /// <summary>Frame types (RFC 9113 sections 6.2 and 6.10).</summary>
    public const byte Headers = 0x1, Continuation = 0x9;

    /// <summary>HEADERS and CONTINUATION flags (RFC 9113 section 6.2).</summary>
    public const byte EndHeaders = 0x4, Padded = 0x8, Priority = 0x20;

    /// <summary>A HEADERS frame's priority fields when its PRIORITY flag is set: E, the stream dependency (31 bits) and
    /// the weight.</summary>
    public const int PriorityLength = 5;
}
