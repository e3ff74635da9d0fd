using HeaderCache.Diagnostics;
using HeaderCache.Hosting;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace HeaderCache.Connection;

/// <summary>
/// Kestrel connection middleware: gives each new HTTP/1.1 connection its cache and puts the compacting
/// reader between the transport (or TLS) and Kestrel's parser.
/// </summary>
internal sealed class HeaderCacheConnectionMiddleware
{
    private readonly ConnectionDelegate _next;
    private readonly ListenOptions _listenOptions;
    private readonly HeaderCacheRuntime? _runtime;
    private readonly KestrelLimits _limits;
    private readonly Registration _registration;
    private readonly int _index;

    /// <summary>Built by <see cref="ListenOptions.Use(Func{ConnectionDelegate, ConnectionDelegate})"/>.</summary>
    public HeaderCacheConnectionMiddleware(ConnectionDelegate next, ListenOptions listenOptions, Registration registration, int index)
    {
        _next = next;
        _listenOptions = listenOptions;
        _registration = registration;
        _index = index;
        _limits = KestrelLimits.From(listenOptions.KestrelServerOptions.Limits);
        _runtime = listenOptions.ApplicationServices.GetService<HeaderCacheRuntime>();
        if (_runtime is null)
        {
            ILoggerFactory loggers = listenOptions.ApplicationServices.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance;
            Log.RequestPartMissing(loggers.CreateLogger(Log.Category));
        }
        else if (index == registration.Count - 1)
        {
            _runtime.OnConnectionMiddlewareBuilt(listenOptions);
        }
    }

    /// <summary>How often <c>UseHeaderStringCache()</c> was called on one <see cref="ListenOptions"/>:
    /// only the last call (the one after <c>UseHttps()</c>, if any) acts.</summary>
    internal sealed class Registration
    {
        /// <summary>Calls so far.</summary>
        public int Count;
    }

    /// <summary>Runs for every connection on the endpoint.</summary>
    public Task OnConnectionAsync(ConnectionContext context)
    {
        HeaderCacheRuntime? runtime = _runtime;
        if (runtime is null || _index != _registration.Count - 1)
        {
            return _next(context);
        }

        // With HeaderCache on every endpoint, the listener already decided about this connection: its layer publishes the
        // feature when the transport is first read, which this read does if no layer before this one did.
        _ = context.Transport;
        if (context.Features.Get<IHeaderStringCacheFeature>() is not null)
        {
            return _next(context);
        }

        if (!runtime.RequestPartActive)
        {
            runtime.ReportRequestPartMissing();
            return _next(context);
        }

        if (runtime.Admit(out HeaderCacheOptions options) is { } skipped)
        {
            return Skip(context, runtime, skipped);
        }

        return RunAsync(context, runtime, options);
    }

    private Task Skip(ConnectionContext context, HeaderCacheRuntime runtime, SkippedConnection skipped)
    {
        context.Features.Set<IHeaderStringCacheFeature>(skipped);
        runtime.Metrics.ConnectionEnded(ConnectionOutcome.Skipped, skipped.InactiveReason);
        return _next(context);
    }

    private async Task RunAsync(ConnectionContext context, HeaderCacheRuntime runtime, HeaderCacheOptions options)
    {
        using var connection = new HeaderCacheConnection(
            options, _limits, !_listenOptions.KestrelServerOptions.DisableStringReuse, runtime, context.ConnectionId);
        context.Features.Set<IHeaderStringCacheFeature>(connection);
        context.Features.Set(connection.RequestHeaders);

        // Kestrel adds its own handler to the same list, so this allocates nothing more.
        context.Features.Get<IConnectionHeartbeatFeature>()?.OnHeartbeat(static state => ((HeaderCacheConnection)state).OnHeartbeat(), connection);
        await _next(new HeaderCacheConnectionContext(context, connection)).ConfigureAwait(false);
    }
}
