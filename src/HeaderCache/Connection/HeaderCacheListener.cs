using System.Net;
using HeaderCache.Hosting;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Connections;

namespace HeaderCache.Connection;

/// <summary>
/// A listener of Kestrel's transport whose accepted connections come with HeaderCache's layer (an
/// <see cref="AcceptedConnection"/>), or, when HeaderCache is not to read them, as the transport made them.
/// </summary>
internal sealed class HeaderCacheListener(IConnectionListener inner, HeaderCacheRuntime runtime, KestrelLimits limits, bool kestrelReusesValues)
    : IConnectionListener
{
    /// <inheritdoc />
    public EndPoint EndPoint => inner.EndPoint;

    /// <inheritdoc />
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
    private ConnectionContext Attach(ConnectionContext connection)
    {
        if (!runtime.RequestPartActive)
        {
            runtime.ReportRequestPartMissing();
            return connection;
        }

        if (runtime.Admit(out HeaderCacheOptions options) is { } skipped)
        {
            connection.Features.Set<IHeaderStringCacheFeature>(skipped);
            runtime.Metrics.ConnectionEnded(ConnectionOutcome.Skipped, skipped.InactiveReason);
            return connection;
        }

        return new AcceptedConnection(connection, options, runtime, limits, kestrelReusesValues);
    }
}
