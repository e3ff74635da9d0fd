using System.IO.Pipelines;
using Microsoft.AspNetCore.Connections;

namespace HeaderCache.Connection;

/// <summary>
/// The connection as the middleware after HeaderCache's sees it: the same connection, except that its transport's
/// input is HeaderCache's reader, and that a transport set by a later layer goes through
/// <see cref="HeaderCacheConnection.OnTransportReplaced"/>. That is how endpoint defaults, which run before an
/// endpoint's <c>UseHttps()</c>, still read the decrypted side: <c>UseHttps()</c> hands its decrypted transport
/// on by setting it on this context.
/// </summary>
internal sealed class HeaderCacheConnectionContext : ForwardingConnectionContext
{
    private readonly HeaderCacheConnection _connection;
    private IDuplexPipe _transport;

    /// <summary>Wraps <paramref name="inner"/>'s transport with <paramref name="connection"/>'s reader.</summary>
    public HeaderCacheConnectionContext(ConnectionContext inner, HeaderCacheConnection connection)
        : base(inner)
    {
        _connection = connection;
        _transport = connection.Wrap(inner.Transport, inner.Features);
    }

    /// <inheritdoc />
    public override IDuplexPipe Transport
    {
        get => _transport;
        set => _transport = _connection.OnTransportReplaced(value, Inner.Features);
    }
}
