using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Transport;

namespace HeaderCache.Connection;

/// <summary>The HTTP/1.1 side of a connection, from its first byte: the compactor (with the memo of lines) and the
/// reader Kestrel reads, the queue of lines taken out of each head and the view its requests read them through.</summary>
internal sealed class Http1Part : ProtocolPart
{
    private readonly HeaderInjectionQueue _queue = new();
    private readonly HeadCompactor _compactor;
    private readonly KestrelLimits _limits;
    private CompactingPipeReader? _reader;

    public Http1Part(FieldResolver resolver, KestrelLimits limits, bool kestrelReusesValues)
    {
        _limits = limits;
        _compactor = new HeadCompactor(resolver, _queue, limits, kestrelReusesValues, new LineMemo());
        Headers = new CachedRequestHeaders(_queue);
    }

    /// <summary>The view of the connection's requests whose heads had lines taken out.</summary>
    public CachedRequestHeaders Headers { get; }

    /// <inheritdoc />
    public override PassThroughReason Reason => _reader?.PassThroughReason ?? PassThroughReason.None;

    /// <inheritdoc />
    public override MeteredCounts Counters => _compactor.Metered;

    /// <summary>The reader Kestrel gets instead of <paramref name="input"/>: the transport's, or the decrypted side TLS
    /// hands on once the first reader saw its handshake (the compactor and the cache carry over).
    /// <paramref name="prefaceArrived"/> is given the transport's reader when the HTTP/2 preface begins the connection,
    /// and returns the reader every later call goes to. With <paramref name="passesHeadsThrough"/> (HTTP/1.1 switched
    /// off) the reader only tells TLS and the preface, and passes the connection through at its first request line.</summary>
    public PipeReader Read(PipeReader input, Action<PassThroughReason> passThroughStarted, Func<PipeReader, PipeReader> prefaceArrived, bool passesHeadsThrough)
    {
        _reader = new CompactingPipeReader(input, _compactor, _limits)
        {
            PassThroughStarted = passThroughStarted,
            Http2Started = prefaceArrived,
            PassesHeadsThrough = passesHeadsThrough,
        };
        return _reader;
    }

    /// <summary>The connection reads no HTTP/1.1 head from here: only the cache stays of this side.</summary>
    public void Trim() => _compactor.Trim();

    /// <inheritdoc />
    public override bool OnHeartbeat() => _reader?.OnHeartbeat() == true;

    /// <inheritdoc />
    public override void Dispose()
    {
        // Kestrel's heartbeat may still be trimming: the compactor lets go of everything once it has finished.
        _reader?.EndIdle();
        _compactor.Dispose();
    }
}
