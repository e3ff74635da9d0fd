using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Requests;

/// <summary>Wraps the application Kestrel runs, so the header strings taken out of a request head are back in the
/// request's headers before anything above Kestrel reads them (hosting's "Request starting" log, trace-context
/// propagation, every middleware).</summary>
internal sealed class HeaderCacheApplication<TContext>(IHttpApplication<TContext> inner) : IHttpApplication<TContext>
    where TContext : notnull
{
    public TContext CreateContext(IFeatureCollection contextFeatures)
    {
        ConnectionHeaders.Of(contextFeatures)?.Attach(contextFeatures);
        return inner.CreateContext(contextFeatures);
    }

    public Task ProcessRequestAsync(TContext context) => inner.ProcessRequestAsync(context);

    public void DisposeContext(TContext context, Exception? exception) => inner.DisposeContext(context, exception);
}
