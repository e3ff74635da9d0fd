using System.IO.Pipelines;
using HeaderCache.Hosting;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;

namespace HeaderCache.Connection;

/// <summary>
/// A connection as <see cref="HeaderCacheListener"/> hands it to Kestrel: the transport's connection, whose input is
/// HeaderCache's reader from the first read on. Kestrel adds its features to the transport's collection (this context
/// has no collection of its own), runs the endpoint's connection middleware on this context and disposes it when the
/// connection ends. A transport set by a later layer goes through <see cref="HeaderCacheConnection.OnTransportReplaced"/>,
/// so that the decrypted side of <c>UseHttps()</c> is read, and a connection TLS gave HTTP/2 is left to Kestrel.
/// </summary>
internal sealed class AcceptedConnection : ForwardingConnectionContext
{
    private readonly HeaderCacheOptions _options;
    private readonly HeaderCacheRuntime _runtime;
    private readonly KestrelLimits _limits;
    private readonly bool _kestrelReusesValues;
    private HeaderCacheConnection? _connection;
    private IDuplexPipe? _transport;

    /// <summary>Wraps <paramref name="inner"/>, which HeaderCache reads with <paramref name="options"/>.</summary>
    public AcceptedConnection(ConnectionContext inner, HeaderCacheOptions options, HeaderCacheRuntime runtime, KestrelLimits limits, bool kestrelReusesValues)
        : base(inner)
    {
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

            _transport = _connection!.OnTransportReplaced(value, Inner.Features);
        }
    }

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
            await Inner.DisposeAsync().ConfigureAwait(false);
            await base.DisposeAsync().ConfigureAwait(false);
        }
    }

    // The state is made on the connection's own thread when the first layer reads the transport, not on Kestrel's
    // accept loop, and by then Kestrel has added the heartbeat feature the idle trim needs.
    private IDuplexPipe Start()
    {
        var connection = new HeaderCacheConnection(_options, _limits, _kestrelReusesValues, _runtime, Inner.ConnectionId);
        _connection = connection;
        Inner.Features.Set<IHeaderStringCacheFeature>(connection);
        Inner.Features.Set(connection.RequestHeaders);
        Inner.Features.Get<IConnectionHeartbeatFeature>()?.OnHeartbeat(static state => ((HeaderCacheConnection)state).OnHeartbeat(), connection);
        _transport = connection.Wrap(Inner.Transport);
        return _transport;
    }
}
