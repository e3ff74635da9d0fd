using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Abstractions;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Requests;

/// <summary>Wraps the application Kestrel runs, so the header strings taken out of a request head are back in the
/// request's headers before anything above Kestrel reads them (hosting's "Request starting" log, trace-context
/// propagation, every middleware), and what holds them hears when hosting has ended the request.</summary>
internal sealed class HeaderCacheApplication<TContext>(IHttpApplication<TContext> inner) : IHttpApplication<TContext>
    where TContext : notnull
{
    // What holds a request's fields, by the context hosting made for it. Hosting keeps one context per Kestrel stream
    // object (IHostContextContainer) and the view is one per stream object too, so an entry is made once per stream
    // object and stays right for its later requests; a context Kestrel does not keep for hosting is never entered.
    private static readonly ConditionalWeakTable<object, ConnectionHeaders.IRequestEnd> Ends = [];

    public TContext CreateContext(IFeatureCollection contextFeatures)
    {
        ConnectionHeaders.IRequestEnd? end = ConnectionHeaders.Of(contextFeatures)?.Attach(contextFeatures);
        TContext context = inner.CreateContext(contextFeatures);
        if (end is not null && !typeof(TContext).IsValueType
            && contextFeatures is IHostContextContainer<TContext> container && ReferenceEquals(container.HostContext, context)
            && (!Ends.TryGetValue(context, out ConnectionHeaders.IRequestEnd? known) || known != end))
        {
            Ends.AddOrUpdate(context, end);
        }

        return context;
    }

    public Task ProcessRequestAsync(TContext context) => inner.ProcessRequestAsync(context);

    public void DisposeContext(TContext context, Exception? exception)
    {
        inner.DisposeContext(context, exception);
        if (!typeof(TContext).IsValueType && Ends.TryGetValue(context, out ConnectionHeaders.IRequestEnd? end))
        {
            end.RequestEnded();
        }
    }
}
