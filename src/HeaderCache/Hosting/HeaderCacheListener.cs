using System.Net;
using System.Runtime.CompilerServices;
using HeaderCache.Connection;
using Microsoft.AspNetCore.Connections;

namespace HeaderCache.Hosting;

/// <summary>
/// A listener of Kestrel's transport whose accepted connections come with HeaderCache's layer (an
/// <see cref="AcceptedConnection"/>), or, when HeaderCache is not to read them, as the transport made them.
/// </summary>
internal sealed class HeaderCacheListener(IConnectionListener inner, HeaderCacheRuntime runtime, HeaderCacheEndpoint endpoint)
    : IConnectionListener
{
    /// <inheritdoc />
    public EndPoint EndPoint => inner.EndPoint;

    /// <inheritdoc />
    /// <remarks>Kestrel's accept loop awaits each accept once, before it asks for the next, as a pooled builder's
    /// <see cref="ValueTask{TResult}"/> requires: an accept that waits takes its state machine from the pool.</remarks>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<ConnectionContext?> AcceptAsync(CancellationToken cancellationToken = default)
    {
        ConnectionContext? connection = await inner.AcceptAsync(cancellationToken).ConfigureAwait(false);
        return connection is null ? null : Attach(connection);
    }

    /// <inheritdoc />
    public ValueTask UnbindAsync(CancellationToken cancellationToken = default) => inner.UnbindAsync(cancellationToken);

    /// <inheritdoc />
    public ValueTask DisposeAsync() => inner.DisposeAsync();

    // Decided once per connection, before Kestrel sees it: a connection HeaderCache does not read gets no wrapper at all.
    private ConnectionContext Attach(ConnectionContext connection) =>
        runtime.Admit(connection.Features, out HeaderCacheOptions options) ? new AcceptedConnection(connection, endpoint, options) : connection;
}
