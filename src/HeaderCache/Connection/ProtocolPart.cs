using HeaderCache.Diagnostics;

namespace HeaderCache.Connection;

/// <summary>What a connection keeps for the protocol it speaks, made when that protocol starts: the reader Kestrel
/// reads, why it stepped aside, what it counted, and its buffers, let go of while the connection waits.</summary>
internal abstract class ProtocolPart : IDisposable
{
    /// <summary>Why the reader stepped aside, leaving every later byte to Kestrel, or <see cref="PassThroughReason.None"/>.</summary>
    public abstract PassThroughReason Reason { get; }

    /// <summary>Why the connection is not served, as the feature and the metrics name it, or <see langword="null"/>.</summary>
    public virtual string? InactiveReason => Reason == PassThroughReason.None ? null : Reason.Name();

    /// <summary>What the reader counted (<see cref="MeteredCounts"/>).</summary>
    public abstract MeteredCounts Counters { get; }

    /// <summary>Called on each of Kestrel's heartbeats, on its thread: true when the reader let go of its buffers.</summary>
    public abstract bool OnHeartbeat();

    /// <summary>Kestrel is done with the connection: a trim or a shown transport read that runs has finished on return,
    /// none starts, no reader touches the connection's <see cref="ReadingState"/> again, and what the part holds goes
    /// back.</summary>
    public abstract void Dispose();
}
