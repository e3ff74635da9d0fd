using HeaderCache.Diagnostics;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HeaderCache.Hosting;

/// <summary>
/// The process-wide part of HeaderCache, registered by <c>AddHeaderStringCache()</c>: options, metrics,
/// the logger, and what the connection and request-level parts need to know about each other.
/// </summary>
internal sealed class HeaderCacheRuntime
{
    private readonly IOptionsMonitor<HeaderCacheOptions> _options;
    private int _requestPartMissingLogged;
    private int _tlsWarningLogged;
    private int _connectionMiddlewareCount;

    /// <summary>Created by dependency injection.</summary>
    public HeaderCacheRuntime(IOptionsMonitor<HeaderCacheOptions> options, HeaderCacheMetrics metrics, ILoggerFactory loggerFactory)
    {
        _options = options;
        Metrics = metrics;
        Logger = loggerFactory.CreateLogger(Log.Category);
    }

    /// <summary>The meter's instruments.</summary>
    public HeaderCacheMetrics Metrics { get; }

    /// <summary>The HeaderCache logger.</summary>
    public ILogger Logger { get; }

    /// <summary>Set once the server runs the application through <see cref="HeaderCacheApplication{TContext}"/>.</summary>
    public bool RequestPartActive { get; set; }

    /// <summary>Connection middleware instances built into endpoints.</summary>
    public int ConnectionMiddlewareCount => Volatile.Read(ref _connectionMiddlewareCount);

    /// <summary>The options for a new connection, or <see langword="null"/> when they are invalid.</summary>
    public HeaderCacheOptions? CurrentOptions()
    {
        try
        {
            return _options.CurrentValue;
        }
        catch (OptionsValidationException ex)
        {
            Log.InvalidOptions(Logger, ex);
            return null;
        }
    }

    /// <summary>Counts a connection middleware built into an endpoint.</summary>
    public void OnConnectionMiddlewareBuilt() => Interlocked.Increment(ref _connectionMiddlewareCount);

    /// <summary>Logs, once, that the request-level part is missing.</summary>
    public void ReportRequestPartMissing()
    {
        if (Interlocked.Exchange(ref _requestPartMissingLogged, 1) == 0)
        {
            Log.RequestPartMissing(Logger);
        }
    }

    /// <summary>Logs, once, that the middleware sees TLS bytes.</summary>
    public void ReportTlsBeforeHttps(string endpoint)
    {
        if (Interlocked.Exchange(ref _tlsWarningLogged, 1) == 0)
        {
            Log.TlsBeforeHttps(Logger, endpoint);
        }
    }
}
