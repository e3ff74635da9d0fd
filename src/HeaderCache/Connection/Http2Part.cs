using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Transport;

namespace HeaderCache.Connection;

/// <summary>The HTTP/2 side of a connection, made when TLS chose <c>h2</c> or the prior-knowledge preface arrived: the
/// mirror of Kestrel's HPACK table, the rewriter of header blocks (sharing the connection's cache), the reader Kestrel
/// reads, and the per-stream hand-off to its requests.</summary>
internal sealed class Http2Part : ProtocolPart
{
    private readonly FieldResolver _resolver;
    private readonly HeaderBlockRewriter _rewriter;
    private readonly Http2FrameReader _reader;
    private readonly Http2StreamHandoff _streams;
    private readonly bool _kestrelSpeaksHttp2;

    /// <summary>The part of a connection whose <paramref name="input"/> starts with the preface, and whose decoder and
    /// rewriter are <paramref name="state"/>'s. When
    /// <paramref name="kestrelSpeaksHttp2"/> is false, whether Kestrel read it as HTTP/2 is known only from the requests
    /// it creates (<see cref="Http2StreamHandoff.SawRequest"/>).</summary>
    public Http2Part(PipeReader input, ReadingState state, KestrelLimits limits, bool kestrelSpeaksHttp2, Http2FrameReader.IOwner owner)
    {
        _resolver = state.Resolver;
        _kestrelSpeaksHttp2 = kestrelSpeaksHttp2;
        _streams = new Http2StreamHandoff(2 * limits.MaxStreamsPerConnection, limits.MaxStreamsPerConnection);
        (HpackBlockDecoder decoder, _rewriter) = state.Http2(_streams);
        _reader = new Http2FrameReader(input, _rewriter, decoder, limits.MaxFrameSize) { Owner = owner };
    }

    /// <summary>The reader Kestrel gets instead of the connection's (decrypted) transport.</summary>
    public PipeReader Reader => _reader;

    /// <summary>What the connection's requests get their fields from.</summary>
    public Http2StreamHandoff Headers => _streams;

    /// <inheritdoc />
    public override PassThroughReason Reason => _reader.PassThroughReason;

    /// <summary>Why the connection is not served: also <c>http2</c> when Kestrel was not known to speak HTTP/2 and
    /// created no request, as on an endpoint that answers the preface as HTTP/1.1.</summary>
    public override string? InactiveReason =>
        Reason != PassThroughReason.None ? Reason.Name()
        : KestrelReadsHttp2 ? null
        : PassThroughReason.Http2.Name();

    /// <summary>Whether Kestrel was known to speak HTTP/2 when the part was made.</summary>
    public bool KestrelSpeaksHttp2 => _kestrelSpeaksHttp2;

    /// <inheritdoc />
    /// <remarks>Fields count once Kestrel is known to read HTTP/2 here: where it answered the preface as HTTP/1.1, no
    /// request had any.</remarks>
    public override MeteredCounts Counters => new()
    {
        LinesServed = KestrelReadsHttp2 ? _rewriter.FieldsServed : 0,
        LinesCreated = KestrelReadsHttp2 ? _rewriter.FieldsCreated : 0,
        ValueEvictions = _resolver.ValueEvictions,
        NameEvictions = _resolver.Names.Counters.Evictions,
    };

    private bool KestrelReadsHttp2 => _kestrelSpeaksHttp2 || Headers.SawRequest;

    /// <inheritdoc />
    public override bool OnHeartbeat() => _reader.OnHeartbeat();

    /// <inheritdoc />
    public override void Dispose()
    {
        _reader.End();
        _streams.Clear();
    }
}
