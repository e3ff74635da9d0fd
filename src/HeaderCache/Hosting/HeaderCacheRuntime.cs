using HeaderCache.Diagnostics;
using Microsoft.AspNetCore.Server.Kestrel.Core;
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
    private readonly List<ListenOptions> _endpoints = [];
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

    /// <summary>Set once the server runs the application through the request-level part (<c>HeaderCacheApplication</c>).</summary>
    public bool RequestPartActive { get; set; }

    /// <summary>The endpoints whose connections HeaderCache's middleware reads.</summary>
    public IReadOnlyList<ListenOptions> Endpoints
    {
        get
        {
            lock (_endpoints)
            {
                return [.. _endpoints];
            }
        }
    }

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

    /// <summary>Records the endpoint of a connection middleware that acts (built once per bound endpoint).</summary>
    public void OnConnectionMiddlewareBuilt(ListenOptions endpoint)
    {
        lock (_endpoints)
        {
            if (!_endpoints.Contains(endpoint))
            {
                _endpoints.Add(endpoint);
            }
        }
    }

    /// <summary>Logs, once, that the request-level part is missing.</summary>
    public void ReportRequestPartMissing()
    {
        if (Interlocked.Exchange(ref _requestPartMissingLogged, 1) == 0)
        {
            Log.RequestPartMissing(Logger);
        }
    }
}
