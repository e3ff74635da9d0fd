using System.IO.Pipelines;
using HeaderCache.Diagnostics;
using HeaderCache.Http1;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Connection;

/// <summary>One connection's HeaderCache state, published as its <see cref="IHeaderStringCacheFeature"/>: the cache,
/// which both protocols share, and the part of the protocol the connection speaks, made when that protocol starts:
/// HTTP/1.1 from the first byte (<see cref="Http1Part"/>), HTTP/2 once TLS chose <c>h2</c> or the prior-knowledge
/// preface arrived where Kestrel reads it as HTTP/2 (<see cref="Http2Part"/>). What the feature, the metrics and
/// Kestrel's heartbeat ask of the connection goes to that part. What the parts read with (the resolver and its caches,
/// the compactor, the HPACK mirror) is lent by the endpoint's <see cref="ReadingStatePool"/> and goes back, emptied, when
/// Kestrel disposes the connection, once every reader has ended.</summary>
internal sealed class HeaderCacheConnection : MeteredConnection, IHeaderStringCacheFeature, CompactingPipeReader.IOwner, Http2FrameReader.IOwner, IDisposable
{
    private readonly HeaderCacheEndpoint _endpoint;
    private readonly HttpProtocols _protocols;
    private ReadingState? _state;   // lent by the endpoint until the connection ends
    private readonly string _connectionId;
    private Http1Part? _http1;     // from the first byte read as HTTP/1.1, kept when TLS or the preface hands over
    private ProtocolPart? _part;   // the part of the protocol the connection speaks now
    private Http2Part? _h2c;       // the part an h2c preface started, until Kestrel is seen to read it as HTTP/2
    private IDuplexPipe? _transport;
    private bool _tls;             // Kestrel saw TLS on the transport being read: it never reads a preface there as HTTP/2
    private bool _decrypted;
    private long _endHits, _endMisses;   // what the parts counted, kept for the feature when the connection ended
    private volatile bool _ended;

    public HeaderCacheConnection(HeaderCacheEndpoint endpoint, HeaderCacheOptions options, string connectionId)
    {
        _endpoint = endpoint;
        _connectionId = connectionId;
        _protocols = options.Protocols;
        _state = endpoint.States.Rent(options, endpoint.Limits, endpoint.KestrelReusesValues);

        // Every connection, whether or not anything listens, so that a listener that attaches later sees the open
        // connections too; registering at the first compacted head would put a check on the request path instead.
        endpoint.Metrics.Register(this);
    }

    /// <summary>How each request of this connection finds the fields taken out of its head.</summary>
    public ConnectionHeaders Requests { get; } = new();

    public bool IsActive => _part is { Reason: PassThroughReason.None };

    public string? InactiveReason => _part?.InactiveReason;

    /// <remarks>Once the connection ended, only what the feature reports: the parts' counters went with its reading
    /// state, and the registry read the rest as the connection ended. A read that overlaps the end may have read a
    /// state already lent to another connection, so it is checked again after the read: the state goes back only once
    /// <c>_ended</c> is set.</remarks>
    public override MeteredCounts Counters
    {
        get
        {
            if (!_ended)
            {
                MeteredCounts counts = _part?.Counters ?? default;
                Interlocked.MemoryBarrier();
                if (!_ended)
                {
                    return counts;
                }
            }

            return new() { LinesServed = _endHits, LinesCreated = _endMisses };
        }
    }

    public long Hits => Counters.LinesServed;

    public long Misses => Counters.LinesCreated;

    /// <summary>The transport Kestrel reads instead of <paramref name="transport"/>: read as HTTP/2 when TLS chose
    /// <c>h2</c> (in <paramref name="features"/>) or the endpoint reads cleartext HTTP/2 from the first byte, else as
    /// HTTP/1.1 from its first byte; <paramref name="transport"/> itself when TLS chose <c>h2</c> and HTTP/2 is switched
    /// off.</summary>
    public IDuplexPipe Wrap(IDuplexPipe transport, IFeatureCollection features)
    {
        _tls = features.Get<ITlsConnectionFeature>() is not null;

        // From the first byte, bytes other than the preface pass through as they are, as Kestrel reads them.
        bool kestrelReadsHttp2 = NegotiatedHttp2(features) || (!_tls && _endpoint.ReadsHttp2FromFirstByte && Serves(HttpProtocols.Http2));
        if (!kestrelReadsHttp2)
        {
            _transport = new DuplexPipe(StartHttp1(transport.Input), transport.Output);
        }
        else if (Serves(HttpProtocols.Http2))
        {
            _transport = new DuplexPipe(StartHttp2(transport.Input, kestrelSpeaksHttp2: true).Reader, transport.Output);
        }
        else
        {
            SwitchOffHttp2();
            _transport = transport;
        }

        return _transport;
    }

    /// <summary>Called on each of Kestrel's heartbeats: the reader of the connection's protocol may let go of its
    /// buffers (<c>IdleTrim</c>).</summary>
    public bool OnHeartbeat()
    {
        TellWhetherKestrelServedH2c();
        return _part?.OnHeartbeat() == true;
    }

    /// <summary>A layer after HeaderCache replaced the connection's transport. When the reader saw a TLS handshake, that
    /// layer is Kestrel's <c>UseHttps()</c> and the new transport the decrypted one: read that instead, as HTTP/2 when
    /// TLS chose <c>h2</c>. Any other replacement, or TLS restoring the original at the end, stays.</summary>
    public IDuplexPipe OnTransportReplaced(IDuplexPipe transport, IFeatureCollection features)
    {
        if (_decrypted || ReferenceEquals(transport, _transport) || _http1?.Reason != PassThroughReason.Tls)
        {
            return transport;
        }

        _decrypted = true;
        return Wrap(transport, features);
    }

    public void Dispose()
    {
        TellWhetherKestrelServedH2c();
        _endpoint.Metrics.Unregister(this);
        if (InactiveReason is { } reason)
        {
            if (_part is Http1Part { Reason: PassThroughReason.Tls })
            {
                // Only now is it known that nothing after HeaderCache decrypted the connection.
                Log.PassThrough(_endpoint.Logger, _connectionId, PassThroughReason.Tls);
            }
            else if (_part is Http2Part { KestrelSpeaksHttp2: false, Reason: PassThroughReason.None })
            {
                // The endpoint's Protocols were not known, and Kestrel created no request after the preface.
                _endpoint.ReportH2cRefused();
            }

            _endpoint.Metrics.ConnectionEnded(ConnectionOutcome.PassedThrough, reason);
        }
        else
        {
            _endpoint.Metrics.ConnectionEnded(ConnectionOutcome.Cached, null);
        }

        if (_part != _http1)
        {
            _part?.Dispose();
        }

        _http1?.Dispose();
        MeteredCounts counts = Counters;
        (_endHits, _endMisses) = (counts.LinesServed, counts.LinesCreated);
        _ended = true;

        // Kestrel is done with the connection and every one of its requests, and from the parts' Dispose on no reader or
        // trim touches the state: it goes back, emptied, for another connection.
        if (Interlocked.Exchange(ref _state, null) is { } state)
        {
            _endpoint.States.Return(state);
        }
    }

    // The endpoint's later connections are read as HTTP/2 from their first byte once Kestrel read an h2c preface as HTTP/2.
    private void TellWhetherKestrelServedH2c()
    {
        if (_h2c is { Headers.SawRequest: true })
        {
            _endpoint.KestrelServedH2c();
            _h2c = null;
        }
    }

    private static bool NegotiatedHttp2(IFeatureCollection features) =>
        features.Get<ITlsApplicationProtocolFeature>()?.ApplicationProtocol.Span.SequenceEqual("h2"u8) == true;

    private PipeReader StartHttp1(PipeReader input)
    {
        _http1 ??= new Http1Part(_state!, _endpoint.Limits);
        _part = _http1;
        Requests.Part = _http1;
        return _http1.Read(input, this, passesHeadsThrough: !Serves(HttpProtocols.Http1));
    }

    private bool Serves(HttpProtocols protocol) => (_protocols & protocol) != 0;

    // HTTP/2 is switched off: Kestrel reads the connection's bytes as they are, and the connection says why.
    private void SwitchOffHttp2()
    {
        _http1?.Trim();
        _part = SwitchedOffPart.Http2;
        Requests.Part = null;
        Log.PassThrough(_endpoint.Logger, _connectionId, PassThroughReason.Http2Disabled);
    }

    private Http2Part StartHttp2(PipeReader input, bool kestrelSpeaksHttp2)
    {
        _http1?.Trim();
        var http2 = new Http2Part(input, _state!, _endpoint.Limits, kestrelSpeaksHttp2, this);
        _part = http2;
        Requests.Part = http2.Headers;
        return http2;
    }

    // The HTTP/1.1 reader found the HTTP/2 preface at the connection's first byte. Kestrel chose the connection's
    // protocol before reading it: HTTP/2 for a preface only without TLS, on an endpoint whose Protocols is Http2. Where
    // it reads HTTP/1.1, the connection passes through with its bytes as they are, for Kestrel to answer alone.
    PipeReader CompactingPipeReader.IOwner.Http2Started(PipeReader input)
    {
        if (_tls || _endpoint.CleartextHttp2 == CleartextHttp2.Refused)
        {
            Log.PassThrough(_endpoint.Logger, _connectionId, PassThroughReason.Http2);
            if (!_tls)
            {
                _endpoint.ReportH2cRefused();
            }

            return input;
        }

        if (!Serves(HttpProtocols.Http2))
        {
            SwitchOffHttp2();
            return input;
        }

        Http2Part http2 = StartHttp2(input, _endpoint.CleartextHttp2 == CleartextHttp2.Served);
        if (!_endpoint.ReadsHttp2FromFirstByte)
        {
            _h2c = http2;
        }

        return http2.Reader;
    }

    void CompactingPipeReader.IOwner.PassThroughStarted(PassThroughReason reason) => OnPassThrough(reason);

    private void OnPassThrough(PassThroughReason reason)
    {
        // A TLS handshake is reported when the connection ends, if nothing decrypted it (see OnTransportReplaced); the
        // HTTP/2 preface where it begins the connection, once it is known whether Kestrel reads it as HTTP/2 (Http2Started).
        if (reason is not (PassThroughReason.Tls or PassThroughReason.Http2))
        {
            Log.PassThrough(_endpoint.Logger, _connectionId, reason);
        }
    }

    void Http2FrameReader.IOwner.Stopped(Http2StopCause cause)
    {
        OnPassThrough(cause.Reason());
        if (cause.Reason() == PassThroughReason.Http2Stopped)
        {
            Log.Http2Stopped(_endpoint.Logger, _connectionId, cause);
        }
    }

    private sealed class DuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
