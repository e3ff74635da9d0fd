using BenchmarkDotNet.Attributes;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// One keep-alive connection replaying a traffic profile through the real Kestrel over in-memory pipes:
/// HeaderCache on, Kestrel alone (default), and Kestrel with <c>DisableStringReuse</c>. Time and bytes
/// allocated are per HTTP request (the app answers 200 with an empty body and reads nothing).
/// </summary>
[MemoryDiagnoser]
public class ConnectionPathBenchmarks
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
        _server = InMemoryKestrel.StartAsync(Server == Mode.HeaderCache, static _ => Task.CompletedTask, builder =>
        {
            if (HostLogging)
            {
                builder.Logging.AddProvider(new WarningLoggerProvider());
            }

            builder.WebHost.ConfigureKestrel(k => k.DisableStringReuse = Server == Mode.KestrelNoReuse);
        }).GetAwaiter().GetResult();

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
