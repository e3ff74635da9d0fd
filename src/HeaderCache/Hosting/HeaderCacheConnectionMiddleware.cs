using HeaderCache.Connection;
using HeaderCache.Diagnostics;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace HeaderCache.Hosting;

/// <summary>
/// Kestrel connection middleware of one endpoint (<c>ListenOptions.UseHeaderStringCache()</c>): gives each new connection
/// its cache and puts HeaderCache's reader (HTTP/1.1, or HTTP/2 when TLS chose <c>h2</c> or the h2c preface arrived)
/// between the transport (or TLS) and Kestrel.
/// </summary>
internal sealed class HeaderCacheConnectionMiddleware
{
    private readonly ConnectionDelegate _next;
    private readonly HeaderCacheRuntime? _runtime;
    private readonly HeaderCacheEndpoint? _endpoint;
    private readonly Registration _registration;
    private readonly int _index;

    /// <summary>Built by <see cref="ListenOptions.Use(Func{ConnectionDelegate, ConnectionDelegate})"/>.</summary>
    public HeaderCacheConnectionMiddleware(ConnectionDelegate next, ListenOptions listenOptions, Registration registration, int index)
    {
        _next = next;
        _registration = registration;
        _index = index;
        _runtime = listenOptions.ApplicationServices.GetService<HeaderCacheRuntime>();
        if (_runtime is null)
        {
            ILoggerFactory loggers = listenOptions.ApplicationServices.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance;
            Log.RequestPartMissing(loggers.CreateLogger(Log.Category));
        }
        else
        {
            // Kestrel builds the middleware when it binds the endpoint, after the application configured it.
            _endpoint = new HeaderCacheEndpoint(
                listenOptions, listenOptions.KestrelServerOptions, CleartextHttp2Of.Protocols(listenOptions.Protocols), _runtime.Metrics, _runtime.Logger);
            if (index == registration.Count - 1)
            {
                _runtime.OnConnectionMiddlewareBuilt(listenOptions);
            }
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

        if (!runtime.Admit(context.Features, out HeaderCacheOptions options))
        {
            return _next(context);
        }

        return RunAsync(context, options);
    }

    private async Task RunAsync(ConnectionContext context, HeaderCacheOptions options)
    {
        using HeaderCacheConnection connection = _endpoint!.Start(context, options);
        await _next(new HeaderCacheConnectionContext(context, connection)).ConfigureAwait(false);
    }
}
