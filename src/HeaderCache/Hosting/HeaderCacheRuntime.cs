using System.Net;
using System.Net.Sockets;
using HeaderCache.Connection;
using HeaderCache.Diagnostics;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Hosting;

/// <summary>
/// The process-wide part of HeaderCache, registered by <c>AddHeaderStringCache()</c>: options, metrics, the logger,
/// which new connections are read (<see cref="Admit"/>), and what the connection and request-level parts need to know
/// about each other.
/// </summary>
internal sealed class HeaderCacheRuntime : IDisposable
{
    // What the log has said about the options so far (see Observe): one bit each.
    private const int EnabledBit = 1;
    private const int UntestedAllowedBit = 2;
    private const int FaultedBit = 4;

    private readonly IOptionsMonitor<HeaderCacheOptions> _options;
    private readonly IServiceProvider _services;
    private readonly KestrelVersions _versions;
    private readonly List<IDisposable> _onChange = [];
    private readonly Lock _stateLock = new();
    private int _requestPartMissingLogged;
    private readonly List<ListenOptions> _endpoints = [];
    private readonly List<EndPoint> _listenerEndpoints = [];
    private HeaderCacheOptions _lastValid;
    private string? _lastFault;
    private int _state;

    /// <summary>Created by dependency injection.</summary>
    public HeaderCacheRuntime(
        IOptionsMonitor<HeaderCacheOptions> options, HeaderCacheMetrics metrics, ILoggerFactory loggerFactory, KestrelVersions versions, IServiceProvider services,
        IEnumerable<IOptionsChangeTokenSource<HeaderCacheOptions>> changes)
    {
        _options = options;
        _versions = versions;
        _services = services;
        Metrics = metrics;
        Logger = loggerFactory.CreateLogger(Log.Category);

        // Valid at start (ValidateOnStart), so there is always a last valid value to fall back to.
        _lastValid = options.CurrentValue;
        _state = StateOf(_lastValid, faulted: false);
        if (!versions.Match)
        {
            LogKestrelVersion(_lastValid);
        }

        // A change is logged when it is made, not only when the next connection reads the options. The monitor calls back
        // with a valid change only (it throws on an invalid one before it would), so each change of the configuration also
        // has the options read as a connection reads them, after the monitor has dropped its cached value: the reload
        // runs the callbacks of its change token latest first, and the monitor's were registered before these.
        if (options.OnChange(Accept) is { } registration)
        {
            _onChange.Add(registration);
        }
        foreach (IOptionsChangeTokenSource<HeaderCacheOptions> source in changes)
        {
            _onChange.Add(ChangeToken.OnChange(
                source.GetChangeToken,
                () => ThreadPool.UnsafeQueueUserWorkItem(static runtime => runtime.CurrentOptions(), this, preferLocal: false)));
        }
    }

    /// <summary>The meter's instruments.</summary>
    public HeaderCacheMetrics Metrics { get; }

    /// <summary>The Kestrel HeaderCache was tested with and the one it runs on.</summary>
    public KestrelVersions KestrelVersions => _versions;

    /// <summary>The HeaderCache logger.</summary>
    public ILogger Logger { get; }

    /// <summary>Set once the server runs the application through the request-level part (<c>HeaderCacheApplication</c>).</summary>
    public bool RequestPartActive { get; set; }

    /// <summary>
    /// Whether every connection Kestrel accepts gets the layer (<c>KestrelServerOptions.UseHeaderStringCache()</c>, which
    /// the one line calls), through Kestrel's listener factories rather than any endpoint's connection middleware.
    /// </summary>
    public bool EveryEndpoint { get; private set; }

    /// <summary>Whether Kestrel's listener factories were decorated when the server was created (it is Kestrel, registered
    /// by its type), so that <see cref="EveryEndpoint"/> can act.</summary>
    public bool ListenerFactoriesDecorated { get; set; }

    /// <summary>The addresses of the bound endpoints whose connections HeaderCache reads, as Kestrel names them.</summary>
    public IReadOnlyList<string> Endpoints
    {
        get
        {
            ICollection<string> addresses = _services.GetService<IServer>()?.Features.Get<IServerAddressesFeature>()?.Addresses ?? [];
            List<string> covered;
            lock (_endpoints)
            {
                covered = [.. _endpoints.Select(endpoint => endpoint.ToString()).OfType<string>()];
                covered.AddRange(addresses.Where(address => _listenerEndpoints.Any(bound => Matches(address, bound))));
            }

            return [.. covered.Distinct(StringComparer.OrdinalIgnoreCase)];
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
            if (!ReferenceEquals(options, _lastValid) || Volatile.Read(ref _lastFault) is not null)
            {
                Accept(options);
            }

            return options;
        }
        catch (Exception ex) when (ex is OptionsValidationException or InvalidOperationException)
        {
            // A value a setting cannot hold and one out of range both fail validation with one line naming the setting;
            // anything else the configuration throws here is reported by its own message.
            string fault = ex is OptionsValidationException validation ? string.Join(" ", validation.Failures) : ex.Message;
            if (Interlocked.Exchange(ref _lastFault, fault) != fault)
            {
                Log.InvalidOptions(Logger, fault);
            }

            HeaderCacheOptions lastValid = _lastValid;
            Observe(lastValid, faulted: true);
            return lastValid;
        }
    }

    /// <summary>
    /// Whether a new connection is read, and with which options. One that is not is left as it is: without the
    /// request-level part (said once), or with the feature of a skipped connection, counted, when HeaderCache is switched
    /// off or runs on a Kestrel other than the one it was tested with (unless the options allow it).
    /// </summary>
    public bool Admit(IFeatureCollection features, out HeaderCacheOptions options)
    {
        if (!RequestPartActive)
        {
            ReportRequestPartMissing();
            options = _lastValid;
            return false;
        }

        options = CurrentOptions();
        SkippedConnection? skipped = !options.Enabled ? SkippedConnection.Disabled
            : _versions.Match || options.AllowUntestedKestrelVersion ? null
            : SkippedConnection.UntestedKestrel;
        if (skipped is null)
        {
            return true;
        }

        features.Set<IHeaderStringCacheFeature>(skipped);
        Metrics.ConnectionEnded(ConnectionOutcome.Skipped, skipped.InactiveReason);
        return false;
    }

    /// <summary>Puts the layer on every connection Kestrel accepts from now on (see <see cref="EveryEndpoint"/>).</summary>
    public void CoverEveryEndpoint() => EveryEndpoint = true;

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

    /// <summary>Records an endpoint whose listener gives every connection the layer.</summary>
    public void OnListenerBound(EndPoint endpoint)
    {
        lock (_endpoints)
        {
            _listenerEndpoints.Add(endpoint);
        }
    }

    // Logs, once, that the request-level part is missing.
    private void ReportRequestPartMissing()
    {
        if (Interlocked.Exchange(ref _requestPartMissingLogged, 1) == 0)
        {
            Log.RequestPartMissing(Logger);
        }
    }

    /// <inheritdoc />
    public void Dispose() => _onChange.ForEach(registration => registration.Dispose());

    private void Accept(HeaderCacheOptions options)
    {
        _lastValid = options;
        Volatile.Write(ref _lastFault, null);
        Observe(options, faulted: false);
    }

    private int StateOf(HeaderCacheOptions options, bool faulted) =>
        (options.Enabled ? EnabledBit : 0) | (!_versions.Match && options.AllowUntestedKestrelVersion ? UntestedAllowedBit : 0) | (faulted ? FaultedBit : 0);

    // Each change of what HeaderCache does with new connections is logged once: the read costs a compare on every
    // connection, and only a change takes the lock.
    private void Observe(HeaderCacheOptions options, bool faulted)
    {
        int state = StateOf(options, faulted);
        if (state == Volatile.Read(ref _state))
        {
            return;
        }

        lock (_stateLock)
        {
            int previous = _state;
            if (previous == state)
            {
                return;
            }

            Volatile.Write(ref _state, state);
            int changed = previous ^ state;
            if ((changed & FaultedBit) != 0 && !faulted)
            {
                Log.OptionsValidAgain(Logger, options.Enabled, options.SlotCount, options.MaxValueLength);
            }

            if ((changed & EnabledBit) != 0)
            {
                if (options.Enabled)
                {
                    Log.SwitchedOn(Logger);
                }
                else
                {
                    Log.SwitchedOffAtRuntime(Logger);
                }
            }

            if ((changed & UntestedAllowedBit) != 0)
            {
                LogKestrelVersion(options);
            }
        }
    }

    private void LogKestrelVersion(HeaderCacheOptions options)
    {
        string tested = KestrelVersions.Name(_versions.Tested);
        string running = KestrelVersions.Name(_versions.Running);
        if (options.AllowUntestedKestrelVersion)
        {
            Log.UntestedKestrelAllowed(Logger, running, tested);
        }
        else
        {
            Log.UntestedKestrel(Logger, running, tested);
        }
    }

    /// <summary>Logs why the bound <paramref name="address"/> is left without HeaderCache, and what to write.</summary>
    public void ReportNotCovered(string address)
    {
        if (!EveryEndpoint)
        {
            Log.EndpointNotCovered(
                Logger,
                address,
                "only endpoints whose ListenOptions call UseHeaderStringCache() get HeaderCache, and this one does not",
                "To give it HeaderCache, write builder.WebHost.UseHeaderStringCache() (or kestrel.UseHeaderStringCache() in ConfigureKestrel) for every endpoint, or listenOptions.UseHeaderStringCache() on this one.");
        }
        else if (!ListenerFactoriesDecorated)
        {
            Log.EndpointNotCovered(
                Logger,
                address,
                "the registered IServer is not Kestrel registered by its own type (a factory or an instance wraps it), so HeaderCache could not decorate Kestrel's connection listener factories",
                "To give it HeaderCache, write listenOptions.UseHeaderStringCache() on this endpoint, or leave Kestrel's own IServer registration (UseKestrel) in place.");
        }
        else
        {
            Log.EndpointNotCovered(
                Logger,
                address,
                "no connection listener of Kestrel's connection listener factories bound it (an HTTP/3-only endpoint, served over QUIC, which HeaderCache does not read)",
                "HeaderCache reads the HTTP/1.1 and HTTP/2 connections of Kestrel's connection listeners, not QUIC: nothing to write for HTTP/3.");
        }
    }

    // Kestrel names an IP endpoint "scheme://address:port", with "localhost" for the loopback pair it binds, and
    // "[::]" or "0.0.0.0" for any address; a Unix socket "scheme://unix:path".
    private static bool Matches(string address, EndPoint bound)
    {
        if (bound is IPEndPoint ip)
        {
            if (!Uri.TryCreate(address, UriKind.Absolute, out Uri? uri) || uri.Port != ip.Port)
            {
                return false;
            }

            if (uri.IsLoopback && IPAddress.IsLoopback(ip.Address))
            {
                return true;
            }

            return IPAddress.TryParse(uri.Host.Trim('[', ']'), out IPAddress? host)
                && (host.Equals(ip.Address) || (IsAny(host) && IsAny(ip.Address)));
        }

        if (bound is UnixDomainSocketEndPoint)
        {
            return address.EndsWith("unix:" + bound, StringComparison.Ordinal);
        }

        return address.EndsWith(bound.ToString() ?? "\0", StringComparison.Ordinal);
    }

    private static bool IsAny(IPAddress address) => address.Equals(IPAddress.Any) || address.Equals(IPAddress.IPv6Any);
}
