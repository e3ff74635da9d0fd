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
    private HeaderCacheOptions _lastValid;
    private string? _lastFault;

    /// <summary>Created by dependency injection.</summary>
    public HeaderCacheRuntime(IOptionsMonitor<HeaderCacheOptions> options, HeaderCacheMetrics metrics, ILoggerFactory loggerFactory)
    {
        _options = options;
        Metrics = metrics;
        Logger = loggerFactory.CreateLogger(Log.Category);

        // Valid at start (ValidateOnStart), so there is always a last valid value to fall back to.
        _lastValid = options.CurrentValue;
    }

    /// <summary>The meter's instruments.</summary>
    public HeaderCacheMetrics Metrics { get; }

    /// <summary>The HeaderCache logger.</summary>
    public ILogger Logger { get; }

    /// <summary>Set once the server runs the application through <see cref="HeaderCacheApplication{TContext}"/>.</summary>
    public bool RequestPartActive { get; set; }

    /// <summary>Connection middleware instances built into endpoints.</summary>
    public int ConnectionMiddlewareCount => Volatile.Read(ref _connectionMiddlewareCount);

    /// <summary>
    /// The options for a new connection. When the configuration cannot be bound or is out of range (edited while
    /// the server runs), the last valid options, and the fault is logged once per distinct fault.
    /// </summary>
    public HeaderCacheOptions CurrentOptions()
    {
        try
        {
            HeaderCacheOptions options = _options.CurrentValue;
            _lastValid = options;
            Volatile.Write(ref _lastFault, null);
            return options;
        }
        catch (Exception ex) when (ex is OptionsValidationException or InvalidOperationException)
        {
            // A binding error ("Failed to convert configuration value ...") names the setting and the value.
            string fault = ex is OptionsValidationException validation ? string.Join(" ", validation.Failures) : ex.Message;
            if (Interlocked.Exchange(ref _lastFault, fault) != fault)
            {
                Log.InvalidOptions(Logger, fault);
            }

            return _lastValid;
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
