using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using Microsoft.AspNetCore.Http.Features;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Transport;

namespace HeaderCache.Connection;

/// <summary>The HTTP/1.1 side of a connection, from its first byte: the compactor (with the memo of lines) and the
/// reader Kestrel reads, the queue of lines taken out of each head and the view its requests read them through, made
/// at the connection's first request (a connection the HTTP/2 preface begins has none).</summary>
internal sealed class Http1Part : ProtocolPart, ConnectionHeaders.IPart
{
    private readonly HeaderInjectionQueue _queue = new();
    private readonly HeadCompactor _compactor;
    private readonly KestrelLimits _limits;
    private CompactingPipeReader? _reader;
    private CompactingPipeReader? _replaced;   // the reader of the TLS bytes, once the decrypted side is read
    private CachedRequestHeaders? _headers;    // from the first request; requests are created one at a time here

    /// <summary>The part of a connection whose compactor is <paramref name="state"/>'s.</summary>
    public Http1Part(ReadingState state, KestrelLimits limits)
    {
        _limits = limits;
        _compactor = state.Http1(_queue);
    }

    /// <summary>The request Kestrel is creating with <paramref name="requestFeatures"/> reads the lines taken out of its
    /// head through the view of the connection's requests. Nothing is told at the request's end: the lines stay until
    /// the reader records the next head, which it reads only after Kestrel has disposed this request's context.</summary>
    public ConnectionHeaders.IRequestEnd? Attach(IFeatureCollection requestFeatures)
    {
        (_headers ??= new CachedRequestHeaders(_queue)).Attach(requestFeatures);
        return null;
    }

    /// <inheritdoc />
    public override PassThroughReason Reason => _reader?.PassThroughReason ?? PassThroughReason.None;

    /// <inheritdoc />
    public override MeteredCounts Counters => _compactor.Metered;

    /// <summary>The reader Kestrel gets instead of <paramref name="input"/>: the transport's, or the decrypted side TLS
    /// hands on once the first reader saw its handshake (the compactor and the cache carry over). <paramref name="owner"/>
    /// is told when the reader passes through, and given the transport's reader when the HTTP/2 preface begins the
    /// connection. With <paramref name="passesHeadsThrough"/> (HTTP/1.1 switched off) the reader only tells TLS and the
    /// preface, and passes the connection through at its first request line.</summary>
    public PipeReader Read(PipeReader input, CompactingPipeReader.IOwner owner, bool passesHeadsThrough)
    {
        _replaced = _reader;
        _reader = new CompactingPipeReader(input, _compactor, _limits) { Owner = owner, PassesHeadsThrough = passesHeadsThrough };
        return _reader;
    }

    /// <summary>The connection reads no HTTP/1.1 head from here: only the cache stays of this side.</summary>
    public void Trim() => _compactor.Trim();

    /// <inheritdoc />
    public override bool OnHeartbeat() => _reader?.OnHeartbeat() == true;

    /// <inheritdoc />
    public override void Dispose()
    {
        // Kestrel's heartbeat may still be trimming, and a transport read may still end: the compactor lets go of
        // everything once neither runs, and no reader touches it again.
        _replaced?.End();
        _reader?.End();
        _compactor.Dispose();
    }
}
