using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Hosting;
using HeaderCache.Http1;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Connection;

/// <summary>One connection's HeaderCache state, published as its <see cref="IHeaderStringCacheFeature"/>: the compactor
/// (with the cache) on the reading side and the queue of header strings the request-level part puts back.</summary>
internal sealed class HeaderCacheConnection : MeteredConnection, IHeaderStringCacheFeature, IDisposable
{
    private readonly HeaderInjectionQueue _queue = new();
    private readonly HeadCompactor _compactor;
    private readonly HeadLimits _limits;
    private readonly HeaderCacheRuntime _runtime;
    private readonly string _connectionId;
    private CompactingPipeReader? _reader;
    private IDuplexPipe? _transport;
    private bool _decrypted;
    private bool _http2;

    public HeaderCacheConnection(HeaderCacheOptions options, HeadLimits limits, bool kestrelReusesValues, HeaderCacheRuntime runtime, string connectionId)
    {
        _runtime = runtime;
        _limits = limits;
        _connectionId = connectionId;
        _compactor = new HeadCompactor(
            FieldResolver.Create(options.SlotCount, options.MaxValueLength, options.ExcludedHeaders), _queue, limits, kestrelReusesValues, new LineMemo());
        RequestHeaders = new CachedRequestHeaders(_queue);

        // Every connection, whether or not anything listens, so that a listener that attaches later sees the open
        // connections too; registering at the first compacted head would put a check on the request path instead.
        runtime.Metrics.Register(this);
    }

    /// <summary>The request's headers for every request of this connection whose head had lines taken out.</summary>
    public CachedRequestHeaders RequestHeaders { get; }

    public HeadCompactor Compactor => _compactor;

    public bool IsActive => !_http2 && _reader is { PassThroughReason: PassThroughReason.None };
    public string? InactiveReason => _http2 ? "http2" : _reader is { PassThroughReason: not PassThroughReason.None } reader ? reader.PassThroughReason.Name() : null;
    public override MeteredCounts Counters => _compactor.Metered;
    public long Hits => _compactor.LinesServed;
    public long Misses => _compactor.LinesCreated;

    /// <summary>The reader Kestrel gets instead of <paramref name="input"/>.</summary>
    public CompactingPipeReader CreateReader(PipeReader input)
    {
        var reader = new CompactingPipeReader(input, _compactor, _limits);
        reader.PassThroughStarted = OnPassThrough;
        reader.HeadShown = RequestHeaders.OnHeadShown;
        return reader;
    }

    /// <summary>The transport Kestrel reads instead of <paramref name="transport"/>.</summary>
    public IDuplexPipe Wrap(IDuplexPipe transport)
    {
        _reader = CreateReader(transport.Input);
        _transport = new DuplexPipe(_reader, transport.Output);
        return _transport;
    }

    /// <summary>Called on each of Kestrel's heartbeats (<see cref="CompactingPipeReader.OnHeartbeat"/>).</summary>
    public bool OnHeartbeat() => _reader?.OnHeartbeat() == true;

    /// <summary>A layer after HeaderCache replaced the connection's transport. When the reader saw a TLS handshake, that
    /// layer is Kestrel's <c>UseHttps()</c> and the new transport the decrypted one: read that instead (unless TLS
    /// negotiated HTTP/2). Any other replacement, or TLS restoring the original at the end, stays.</summary>
    public IDuplexPipe OnTransportReplaced(IDuplexPipe transport, IFeatureCollection features)
    {
        if (_decrypted || ReferenceEquals(transport, _transport) || _reader?.PassThroughReason != PassThroughReason.Tls)
        {
            return transport;
        }

        _decrypted = true;
        if (NegotiatedHttp2(features))
        {
            _http2 = true;
            return transport;
        }

        return Wrap(transport);
    }

    public static bool NegotiatedHttp2(IFeatureCollection features) =>
        features.Get<ITlsApplicationProtocolFeature>()?.ApplicationProtocol.Span.SequenceEqual("h2"u8) == true;

    public void Dispose()
    {
        _runtime.Metrics.Unregister(this);
        if (_http2)
        {
            _runtime.Metrics.ConnectionEnded(ConnectionOutcome.Skipped, "http2");
        }
        else if (InactiveReason is { } reason)
        {
            if (_reader!.PassThroughReason == PassThroughReason.Tls)
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
        _compactor.Dispose();
        RequestHeaders.Detach();
    }

    private void OnPassThrough(PassThroughReason reason)
    {
        // A TLS handshake is reported when the connection ends, if nothing decrypted it (see OnTransportReplaced).
        if (reason != PassThroughReason.Tls)
        {
            Log.PassThrough(_runtime.Logger, _connectionId, reason);
        }
    }

    private sealed class DuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
