using HeaderCache.Diagnostics;

namespace HeaderCache.Connection;

/// <summary>The part of a connection whose protocol <see cref="HeaderCacheOptions.Protocols"/> leaves out: no reader,
/// nothing counted, Kestrel reads the transport itself.</summary>
internal sealed class SwitchedOffPart(PassThroughReason reason) : ProtocolPart
{
    /// <summary>An HTTP/2 connection while Protocols leaves HTTP/2 out.</summary>
    public static readonly SwitchedOffPart Http2 = new(PassThroughReason.Http2Disabled);

    /// <inheritdoc />
    public override PassThroughReason Reason => reason;

    /// <inheritdoc />
    public override MeteredCounts Counters => default;

    /// <inheritdoc />
    public override bool OnHeartbeat() => false;

    /// <inheritdoc />
    public override void Dispose()
    {
    }
}
