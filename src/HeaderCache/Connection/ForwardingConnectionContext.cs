using System.IO.Pipelines;
using System.Net;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Connection;

/// <summary>
/// A connection that is <paramref name="inner"/> in everything but its transport: Kestrel and the layers after
/// HeaderCache's see the connection they would see without it (its features, items, endpoints and lifetime), and
/// HeaderCache decides only which transport they read.
/// </summary>
internal abstract class ForwardingConnectionContext(ConnectionContext inner) : ConnectionContext
{
    /// <summary>The connection this one stands for.</summary>
    protected ConnectionContext Inner { get; } = inner;

    /// <inheritdoc />
    public override string ConnectionId
    {
        get => Inner.ConnectionId;
        set => Inner.ConnectionId = value;
    }

    /// <inheritdoc />
    public override IFeatureCollection Features => Inner.Features;

    /// <inheritdoc />
    public override IDictionary<object, object?> Items
    {
        get => Inner.Items;
        set => Inner.Items = value;
    }

    /// <inheritdoc />
    public override EndPoint? LocalEndPoint
    {
        get => Inner.LocalEndPoint;
        set => Inner.LocalEndPoint = value;
    }

    /// <inheritdoc />
    public override EndPoint? RemoteEndPoint
    {
        get => Inner.RemoteEndPoint;
        set => Inner.RemoteEndPoint = value;
    }

    /// <inheritdoc />
    public override CancellationToken ConnectionClosed
    {
        get => Inner.ConnectionClosed;
        set => Inner.ConnectionClosed = value;
    }

    /// <inheritdoc />
    public override void Abort(ConnectionAbortedException abortReason) => Inner.Abort(abortReason);

    /// <inheritdoc />
    public override void Abort() => Inner.Abort();
}
