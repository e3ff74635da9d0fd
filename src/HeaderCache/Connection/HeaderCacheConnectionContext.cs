using System.IO.Pipelines;
using System.Net;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Connection;

/// <summary>
/// The connection as the middleware after HeaderCache's sees it: the same connection, except that its transport's
/// input is HeaderCache's reader, and that a transport set by a later layer goes through
/// <see cref="HeaderCacheConnection.OnTransportReplaced"/>. That is how endpoint defaults, which run before an
/// endpoint's <c>UseHttps()</c>, still read the decrypted side: <c>UseHttps()</c> hands its decrypted transport
/// on by setting it on this context.
/// </summary>
internal sealed class HeaderCacheConnectionContext : ConnectionContext
{
    private readonly ConnectionContext _inner;
    private readonly HeaderCacheConnection _connection;
    private IDuplexPipe _transport;

    /// <summary>Wraps <paramref name="inner"/>'s transport with <paramref name="connection"/>'s reader.</summary>
    public HeaderCacheConnectionContext(ConnectionContext inner, HeaderCacheConnection connection)
    {
        _inner = inner;
        _connection = connection;
        _transport = connection.Wrap(inner.Transport);
    }

    /// <inheritdoc />
    public override IDuplexPipe Transport
    {
        get => _transport;
        set => _transport = _connection.OnTransportReplaced(value, _inner.Features);
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
}
