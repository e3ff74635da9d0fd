using HeaderCache.Diagnostics;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Options;

namespace HeaderCache.Hosting;

/// <summary>
/// Decorates the registered <see cref="IServer"/> (Kestrel) so that it runs the application through
/// <see cref="HeaderCacheApplication{TContext}"/>. The inner server is owned by the container.
/// </summary>
internal sealed class HeaderCacheServer(IServer inner, HeaderCacheRuntime runtime, IOptionsMonitor<HeaderCacheOptions> options) : IServer
{
    /// <inheritdoc />
    public IFeatureCollection Features => inner.Features;

    /// <inheritdoc />
    public async Task StartAsync<TContext>(IHttpApplication<TContext> application, CancellationToken cancellationToken)
        where TContext : notnull
    {
        runtime.RequestPartActive = true;
        await inner.StartAsync(new HeaderCacheApplication<TContext>(application), cancellationToken).ConfigureAwait(false);
        if (runtime.ConnectionMiddlewareCount == 0 && options.CurrentValue.Enabled)
        {
            Log.ConnectionPartMissing(runtime.Logger);
        }
    }

    /// <inheritdoc />
    public Task StopAsync(CancellationToken cancellationToken) => inner.StopAsync(cancellationToken);

    /// <inheritdoc />
    public void Dispose()
    {
        // The inner server is a container-owned singleton; the container disposes it.
    }
}
