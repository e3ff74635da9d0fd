using System.IO.Pipelines;
using System.Net;
using HeaderCache.Hosting;
using HeaderCache.Http1;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Connection;

/// <summary>
/// A connection as <see cref="HeaderCacheListener"/> hands it to Kestrel: the transport's connection, whose input is
/// HeaderCache's reader from the first read on. Kestrel adds its features to the transport's collection (this context
/// has no collection of its own), runs the endpoint's connection middleware on this context and disposes it when the
/// connection ends. A transport set by a later layer goes through <see cref="HeaderCacheConnection.OnTransportReplaced"/>,
/// so that the decrypted side of <c>UseHttps()</c> is read, and a connection TLS gave HTTP/2 is left to Kestrel.
/// </summary>
internal sealed class AcceptedConnection : ConnectionContext
{
    private readonly ConnectionContext _inner;
    private readonly HeaderCacheOptions _options;
    private readonly HeaderCacheRuntime _runtime;
    private readonly HeadLimits _limits;
    private readonly bool _kestrelReusesValues;
    private HeaderCacheConnection? _connection;
    private IDuplexPipe? _transport;

    /// <summary>Wraps <paramref name="inner"/>, which HeaderCache reads with <paramref name="options"/>.</summary>
    public AcceptedConnection(ConnectionContext inner, HeaderCacheOptions options, HeaderCacheRuntime runtime, HeadLimits limits, bool kestrelReusesValues)
    {
        _inner = inner;
        _options = options;
        _runtime = runtime;
        _limits = limits;
        _kestrelReusesValues = kestrelReusesValues;
    }

    /// <inheritdoc />
    public override IDuplexPipe Transport
    {
        get => _transport ?? Start();
        set
        {
            if (_connection is null)
            {
                Start();
            }

            _transport = _connection!.OnTransportReplaced(value, _inner.Features);
        }
    }

    /// <inheritdoc />
    public override string ConnectionId
    {
        get => _inner.ConnectionId;
        set => _inner.ConnectionId = value;
    }

    /// <inheritdoc />
    public override IFeatureCollection Features => _inner.Features;

    /// <inheritdoc />
    public override IDictionary<object, object?> Items
    {
        get => _inner.Items;
        set => _inner.Items = value;
    }

    /// <inheritdoc />
    public override EndPoint? LocalEndPoint
    {
        get => _inner.LocalEndPoint;
        set => _inner.LocalEndPoint = value;
    }

    /// <inheritdoc />
    public override EndPoint? RemoteEndPoint
    {
        get => _inner.RemoteEndPoint;
        set => _inner.RemoteEndPoint = value;
    }

    /// <inheritdoc />
    public override CancellationToken ConnectionClosed
    {
        get => _inner.ConnectionClosed;
        set => _inner.ConnectionClosed = value;
    }

    /// <inheritdoc />
    public override void Abort(ConnectionAbortedException abortReason) => _inner.Abort(abortReason);

    /// <inheritdoc />
    public override void Abort() => _inner.Abort();

    /// <inheritdoc />
    public override async ValueTask DisposeAsync()
    {
        // Kestrel disposes the connection it accepted once it is done with it: HeaderCache's part first, as the
        // connection middleware lets go of it when the layers after it return, then the transport's.
        try
        {
            _connection?.Dispose();
        }
        finally
        {
            await _inner.DisposeAsync().ConfigureAwait(false);
            await base.DisposeAsync().ConfigureAwait(false);
        }
    }

    // The state is made on the connection's own thread when the first layer reads the transport, not on Kestrel's
    // accept loop, and by then Kestrel has added the heartbeat feature the idle trim needs.
    private IDuplexPipe Start()
    {
        var connection = new HeaderCacheConnection(_options, _limits, _kestrelReusesValues, _runtime, _inner.ConnectionId);
        _connection = connection;
        _inner.Features.Set<IHeaderStringCacheFeature>(connection);
        _inner.Features.Set(connection.RequestHeaders);
        _inner.Features.Get<IConnectionHeartbeatFeature>()?.OnHeartbeat(static state => ((HeaderCacheConnection)state).OnHeartbeat(), connection);
        _transport = connection.Wrap(_inner.Transport);
        return _transport;
    }
}
