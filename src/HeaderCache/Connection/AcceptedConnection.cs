using System.IO.Pipelines;
using Microsoft.AspNetCore.Connections;

namespace HeaderCache.Connection;

/// <summary>
/// A connection as HeaderCache's listener of Kestrel's transport hands it to Kestrel: the transport's connection, whose
/// input is HeaderCache's reader from the first read on. Kestrel adds its features to the transport's collection (this context
/// has no collection of its own), runs the endpoint's connection middleware on this context and disposes it when the
/// connection ends. A transport set by a later layer goes through <see cref="HeaderCacheConnection.OnTransportReplaced"/>,
/// so that the decrypted side of <c>UseHttps()</c> is read, as HTTP/2 when TLS chose <c>h2</c>.
/// </summary>
internal sealed class AcceptedConnection : ForwardingConnectionContext
{
    private readonly HeaderCacheEndpoint _endpoint;
    private readonly HeaderCacheOptions _options;
    private HeaderCacheConnection? _connection;
    private IDuplexPipe? _transport;

    /// <summary>Wraps <paramref name="inner"/>, an accepted connection of <paramref name="endpoint"/>, which HeaderCache
    /// reads with <paramref name="options"/>.</summary>
    public AcceptedConnection(ConnectionContext inner, HeaderCacheEndpoint endpoint, HeaderCacheOptions options)
        : base(inner)
    {
        _endpoint = endpoint;
        _options = options;
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
        _connection = _endpoint.Start(Inner, _options);
        _transport = _connection.Wrap(Inner.Transport, Inner.Features);
        return _transport;
    }
}
