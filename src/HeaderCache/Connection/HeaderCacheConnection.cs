using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Hosting;
using HeaderCache.Http1;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Connection;

/// <summary>One connection's HeaderCache state, published as its <see cref="IHeaderStringCacheFeature"/>: the compactor
/// (with the cache) on the reading side and the queue of header strings the request-level part puts back; on HTTP/2
/// (TLS with ALPN <c>h2</c>, or the prior-knowledge preface) the HTTP/2 reader, sharing the cache, and the per-stream
/// hand-off.</summary>
internal sealed class HeaderCacheConnection : MeteredConnection, IHeaderStringCacheFeature, IDisposable
{
    private readonly HeaderInjectionQueue _queue = new();
    private readonly HeadCompactor _compactor;
    private readonly FieldResolver _resolver;
    private readonly KestrelLimits _limits;
    private readonly HeaderCacheRuntime _runtime;
    private readonly string _connectionId;
    private CompactingPipeReader? _reader;
    private IDuplexPipe? _transport;
    private bool _decrypted;
    private Http2FrameReader? _http2;
    private HeaderBlockRewriter? _rewriter;

    public HeaderCacheConnection(HeaderCacheOptions options, KestrelLimits limits, bool kestrelReusesValues, HeaderCacheRuntime runtime, string connectionId)
    {
        _runtime = runtime;
        _limits = limits;
        _connectionId = connectionId;
        _resolver = FieldResolver.Create(options.SlotCount, options.MaxValueLength, options.ExcludedHeaders);
        _compactor = new HeadCompactor(_resolver, _queue, limits, kestrelReusesValues, new LineMemo());
        RequestHeaders = new CachedRequestHeaders(_queue);

        // Every connection, whether or not anything listens, so that a listener that attaches later sees the open
        // connections too; registering at the first compacted head would put a check on the request path instead.
        runtime.Metrics.Register(this);
    }

    /// <summary>The request's headers for every request of this connection whose head had lines taken out.</summary>
    public CachedRequestHeaders RequestHeaders { get; }

    public HeadCompactor Compactor => _compactor;

    public bool IsActive => _http2 is not null ? _http2.PassThroughReason == PassThroughReason.None : _reader is { PassThroughReason: PassThroughReason.None };

    // A preface that no frame followed is a cleartext connection Kestrel answered as HTTP/1.1: nothing was served.
    public string? InactiveReason =>
        _http2 is not null
            ? (_http2.PassThroughReason != PassThroughReason.None ? _http2.PassThroughReason.Name() : _http2.SawFrame || _decrypted ? null : PassThroughReason.Http2.Name())
        : _reader is { PassThroughReason: not PassThroughReason.None } reader ? reader.PassThroughReason.Name() : null;

    public override MeteredCounts Counters
    {
        get
        {
            MeteredCounts counts = _compactor.Metered;
            if (_rewriter is { } rewriter)
            {
                counts.LinesServed += rewriter.FieldsServed;
                counts.LinesCreated += rewriter.FieldsCreated;
            }

            return counts;
        }
    }

    public long Hits => _compactor.LinesServed + (_rewriter?.FieldsServed ?? 0);
    public long Misses => _compactor.LinesCreated + (_rewriter?.FieldsCreated ?? 0);

    /// <summary>The reader Kestrel gets instead of <paramref name="input"/>.</summary>
    public CompactingPipeReader CreateReader(PipeReader input)
    {
        var reader = new CompactingPipeReader(input, _compactor, _limits);
        reader.PassThroughStarted = OnPassThrough;
        reader.Http2Started = CreateHttp2Reader;
        return reader;
    }

    /// <summary>The reader Kestrel gets instead of an HTTP/2 connection's <paramref name="input"/>, which starts with the
    /// preface.</summary>
    public PipeReader CreateHttp2Reader(PipeReader input)
    {
        var decoder = new HpackBlockDecoder(new HpackDynamicTable(_limits.HeaderTableSize), _limits.MaxRequestHeaderFieldSize);
        var streams = new Http2StreamHandoff(2 * _limits.MaxStreamsPerConnection, _limits.MaxStreamsPerConnection);
        _rewriter = new HeaderBlockRewriter(decoder, _resolver, streams, _limits);
        _http2 = new Http2FrameReader(input, _rewriter, decoder, _limits.MaxFrameSize) { Stopped = OnHttp2Stopped };
        RequestHeaders.Streams = streams;

        // The connection reads no HTTP/1.1 head from here: only the cache stays of that side.
        _compactor.Trim();
        return _http2;
    }

    /// <summary>The transport Kestrel reads instead of <paramref name="transport"/>.</summary>
    public IDuplexPipe Wrap(IDuplexPipe transport)
    {
        _reader = CreateReader(transport.Input);
        _transport = new DuplexPipe(_reader, transport.Output);
        return _transport;
    }

    /// <summary>The transport Kestrel reads instead of <paramref name="transport"/>, which carries HTTP/2 (TLS chose
    /// <c>h2</c>).</summary>
    public IDuplexPipe WrapHttp2(IDuplexPipe transport)
    {
        _transport = new DuplexPipe(CreateHttp2Reader(transport.Input), transport.Output);
        return _transport;
    }

    /// <summary>Called on each of Kestrel's heartbeats: the reader of the connection's protocol may let go of its
    /// buffers (<see cref="IdleTrim"/>).</summary>
    public bool OnHeartbeat() => _http2 is { } http2 ? http2.OnHeartbeat() : _reader?.OnHeartbeat() == true;

    /// <summary>A layer after HeaderCache replaced the connection's transport. When the reader saw a TLS handshake, that
    /// layer is Kestrel's <c>UseHttps()</c> and the new transport the decrypted one: read that instead (unless TLS
    /// negotiated HTTP/2: then with the HTTP/2 reader). Any other replacement, or TLS restoring the original at the end, stays.</summary>
    public IDuplexPipe OnTransportReplaced(IDuplexPipe transport, IFeatureCollection features)
    {
        if (_decrypted || ReferenceEquals(transport, _transport) || _reader?.PassThroughReason != PassThroughReason.Tls)
        {
            return transport;
        }

        _decrypted = true;
        if (NegotiatedHttp2(features))
        {
            return WrapHttp2(transport);
        }

        return Wrap(transport);
    }

    public static bool NegotiatedHttp2(IFeatureCollection features) =>
        features.Get<ITlsApplicationProtocolFeature>()?.ApplicationProtocol.Span.SequenceEqual("h2"u8) == true;

    public void Dispose()
    {
        _runtime.Metrics.Unregister(this);
        if (InactiveReason is { } reason)
        {
            if (_http2 is null && _reader!.PassThroughReason == PassThroughReason.Tls)
            {
                // Only now is it known that nothing after HeaderCache decrypted the connection.
                Log.PassThrough(_runtime.Logger, _connectionId, PassThroughReason.Tls);
            }

            _runtime.Metrics.ConnectionEnded(ConnectionOutcome.PassedThrough, reason);
        }
        else
        {
            _runtime.Metrics.ConnectionEnded(ConnectionOutcome.Cached, null);
        }

        // Kestrel's heartbeat may still be trimming: the compactor lets go of everything once it has finished.
        _reader?.EndIdle();
        _http2?.EndIdle();
        _compactor.Dispose();
        RequestHeaders.Streams?.Clear();
    }

    private void OnPassThrough(PassThroughReason reason)
    {
        // A TLS handshake is reported when the connection ends, if nothing decrypted it (see OnTransportReplaced); the
        // HTTP/2 preface hands the connection to the HTTP/2 reader.
        if (reason is not (PassThroughReason.Tls or PassThroughReason.Http2))
        {
            Log.PassThrough(_runtime.Logger, _connectionId, reason);
        }
    }

    private void OnHttp2Stopped(Http2StopCause cause)
    {
        OnPassThrough(PassThroughReason.Http2Stopped);
        Log.Http2Stopped(_runtime.Logger, _connectionId, cause);
    }

    private sealed class DuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
