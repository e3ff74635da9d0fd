using System.Collections.Concurrent;
using System.Net;
using HeaderCache.InMemory;
using HeaderCache.Sample;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Testing;

/// <summary>How a test server treats header strings.</summary>
public enum CacheMode
{
    /// <summary>HeaderCache on.</summary>
    On,

    /// <summary>The baseline: HeaderCache not registered at all (the sample's <c>Sample:KestrelOnly</c>).</summary>
    KestrelAlone,

    /// <summary>HeaderCache registered but switched off with <c>HeaderCache:Enabled=false</c>.</summary>
    Disabled,
}

/// <summary>The sample app on a real Kestrel at 127.0.0.1 with port 0, and the log lines it wrote.</summary>
public sealed class SampleServer : IAsyncDisposable
{
    private SampleServer(WebApplication app, CapturingLoggerProvider logs, IPEndPoint endPoint)
    {
        App = app;
        Logs = logs;
        EndPoint = endPoint;
    }

    /// <summary>The running app.</summary>
    public WebApplication App { get; }

    /// <summary>Everything logged at Information or above.</summary>
    public CapturingLoggerProvider Logs { get; }

    /// <summary>Where the server listens.</summary>
    public IPEndPoint EndPoint { get; }

    /// <summary>Starts the sample app with the cache <paramref name="mode"/>.</summary>
    public static Task<SampleServer> StartAsync(CacheMode mode, Action<WebApplicationBuilder>? configure = null, params string[] settings) =>
        StartAsync(
            [Setting(mode), .. settings],
            configure);

    /// <summary>The sample's setting that puts a server in <paramref name="mode"/>.</summary>
    public static string Setting(CacheMode mode) => mode switch
    {
        CacheMode.On => "--HeaderCache:Enabled=true",
        CacheMode.Disabled => "--HeaderCache:Enabled=false",
        _ => "--Sample:KestrelOnly=true",
    };

    /// <summary>Starts the sample app in <paramref name="mode"/> on a Kestrel over an in-memory transport;
    /// <paramref name="configure"/> sees the builder first.</summary>
    internal static Task<InMemoryKestrel> StartInMemoryAsync(CacheMode mode, Action<WebApplicationBuilder>? configure = null) =>
        InMemoryKestrel.StartAsync(onTransport => SampleApp.Build(
            ["--Logging:LogLevel:Default=None", Setting(mode)],
            builder =>
            {
                builder.Logging.ClearProviders();
                configure?.Invoke(builder);
                onTransport(builder);
            }));

    /// <summary>Starts the sample app with <paramref name="args"/> (settings as <c>--Key=Value</c>).</summary>
    public static async Task<SampleServer> StartAsync(string[] args, Action<WebApplicationBuilder>? configure = null)
    {
        var logs = new CapturingLoggerProvider();
        WebApplication app = SampleApp.Build(
            ["--urls", "http://127.0.0.1:0", "--Logging:LogLevel:Default=Warning", "--Logging:LogLevel:HeaderCache=Debug", .. args],
            builder =>
            {
                builder.Logging.ClearProviders();
                builder.Logging.AddProvider(logs);
                configure?.Invoke(builder);
            });
        await app.StartAsync();
        string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
        var uri = new Uri(address);
        return new SampleServer(app, logs, new IPEndPoint(IPAddress.Loopback, uri.Port));
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await App.StopAsync();
        await App.DisposeAsync();
    }
}

/// <summary>Keeps every log message, with its category and level.</summary>
public sealed class CapturingLoggerProvider : ILoggerProvider
{
    private readonly ConcurrentQueue<(string Category, LogLevel Level, EventId Id, string Message)> _entries = new();

    /// <summary>Messages logged so far.</summary>
    public IReadOnlyList<(string Category, LogLevel Level, EventId Id, string Message)> Entries => [.. _entries];

    /// <summary>Messages of the HeaderCache category.</summary>
    public IReadOnlyList<(string Category, LogLevel Level, EventId Id, string Message)> HeaderCache =>
        Entries.Where(e => e.Category == "HeaderCache").ToArray();

    /// <inheritdoc />
    public ILogger CreateLogger(string categoryName) => new Logger(categoryName, _entries);

    /// <inheritdoc />
    public void Dispose()
    {
    }

    private sealed class Logger(string category, ConcurrentQueue<(string, LogLevel, EventId, string)> entries) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            entries.Enqueue((category, logLevel, eventId, formatter(state, exception)));
    }
}
