using BenchmarkDotNet.Attributes;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// One keep-alive connection replaying a traffic profile through the real Kestrel over in-memory pipes:
/// HeaderCache on, Kestrel alone (default), and Kestrel with <c>DisableStringReuse</c>. Time and bytes
/// allocated are per HTTP request (the app answers 200 with an empty body and reads nothing).
/// </summary>
[MemoryDiagnoser]
public class ConnectionPathBenchmarks : IConnectionPath
{
    internal const int RequestsPerInvoke = 64;

    private InMemoryKestrel? _server;
    private InMemoryClient _client = null!;
    private byte[][] _requests = [];
    private int _next;

    public enum Mode
    {
        KestrelDefault,
        KestrelNoReuse,
        HeaderCache,
    }

    [ParamsAllValues]
    public Mode Server { get; set; }

    [Params("chrome", "firefox", "safari", "proxy-pool", "plaintext", "churn")]
    public string Profile { get; set; } = "chrome";

    [GlobalSetup]
    public void Setup()
    {
        _server = Start(Server, HostLogging, http2: false);

        // A pool of rendered requests, cycled: whole profile rounds, placeholders filled per request.
        TrafficProfile profile = TrafficProfile.Load(Profile);
        TrafficProfile.Connection connection = profile.Connect(seed: 1);
        int count = profile.Count * Math.Max(1, 256 / profile.Count);
        _requests = Enumerable.Range(0, count).Select(connection.Render).ToArray();
        _client = _server.Connect();
        for (int i = 0; i < 2 * count; i++)
        {
            RoundTripAsync().GetAwaiter().GetResult();
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _client.Output.Complete();
        _server?.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }

    // One Task per invocation of 64 requests: under 2 bytes per request of the client's own allocation.
    [Benchmark(OperationsPerInvoke = RequestsPerInvoke)]
    public async Task Request()
    {
        for (int i = 0; i < RequestsPerInvoke; i++)
        {
            await RoundTripAsync();
        }
    }

    /// <summary>Header lines per request of the profile, for per-line figures.</summary>
    public double HeaderLinesPerRequest => _requests.Average(r => r.Count(b => b == (byte)'\n') - 2);

    /// <summary>Whether the host logs (warnings and above, written nowhere), as an app made from a template does: the host
    /// then starts an activity per request, which reads the request's User-Agent and traceparent headers. Off in
    /// BenchmarkDotNet's runs, as in every earlier run.</summary>
    internal bool HostLogging { get; set; }

    /// <summary>What empties the processor's caches before every request, or none (BenchmarkDotNet's runs).</summary>
    internal CacheEvictor? Evictor { get; set; }

    /// <summary>
    /// Starts Kestrel as <paramref name="server"/> says on an in-memory transport, the app answering 200 with an empty
    /// body; with <paramref name="http2"/>, an endpoint of HTTP/2 alone, the one on which Kestrel takes h2c with prior
    /// knowledge (with its default protocols a cleartext endpoint answers HTTP/1.1 only).
    /// </summary>
    internal static InMemoryKestrel Start(Mode server, bool hostLogging, bool http2) =>
        InMemoryKestrel.StartAsync(onTransport =>
        {
            WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();

            // Before the transport's endpoint: endpoint defaults apply to an endpoint as it is declared.
            if (http2)
            {
                builder.WebHost.ConfigureKestrel(k => k.ConfigureEndpointDefaults(listen => listen.Protocols = HttpProtocols.Http2));
            }

            if (server == Mode.HeaderCache)
            {
                builder.WebHost.UseHeaderStringCache();
            }

            onTransport(builder);
            if (hostLogging)
            {
                builder.Logging.AddProvider(new WarningLoggerProvider());
            }

            builder.WebHost.ConfigureKestrel(k => k.DisableStringReuse = server == Mode.KestrelNoReuse);
            WebApplication app = builder.Build();
            app.Run(static _ => Task.CompletedTask);
            return app;
        }).GetAwaiter().GetResult();

    private async Task RoundTripAsync()
    {
        Evictor?.Walk();
        byte[] request = _requests[_next];
        _next = (_next + 1) % _requests.Length;
        await _client.Output.WriteAsync(request);

        // Responses are heads with Content-Length: 0.
        await _client.ReadHeadAsync();
    }

    // Enabled from Warning up, like a template's defaults for the host's categories; the messages go nowhere.
    private sealed class WarningLoggerProvider : ILoggerProvider, ILogger
    {
        public ILogger CreateLogger(string categoryName) => this;

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Warning;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
        }

        public void Dispose()
        {
        }
    }
}
