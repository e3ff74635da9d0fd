using HeaderCache.Compaction;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Diagnostics;

/// <summary>The rare events worth a log line.</summary>
internal static partial class Log
{
    /// <summary>Logger category.</summary>
    public const string Category = "HeaderCache";

    [LoggerMessage(1, LogLevel.Warning, "HeaderCache sees TLS bytes on {Endpoint}: its connection middleware runs before UseHttps(), so connections there pass through uncached. Call UseHeaderStringCache() on the ListenOptions after UseHttps().")]
    public static partial void TlsBeforeHttps(ILogger logger, string endpoint);

    [LoggerMessage(2, LogLevel.Error, "HeaderCache's connection middleware is on, but its request-level part is not active (call builder.WebHost.UseHeaderStringCache() or services.AddHeaderStringCache(), and keep Kestrel as the server). Connections pass through uncached.")]
    public static partial void RequestPartMissing(ILogger logger);

    [LoggerMessage(3, LogLevel.Error, "HeaderCache's request-level part is registered, but no endpoint uses its connection middleware (call UseHeaderStringCache() on KestrelServerOptions or ListenOptions). Nothing is cached.")]
    public static partial void ConnectionPartMissing(ILogger logger);

    [LoggerMessage(4, LogLevel.Debug, "Connection {ConnectionId} passes through uncached from now on: {Reason}.")]
    public static partial void PassThrough(ILogger logger, string connectionId, PassThroughReason reason);

    [LoggerMessage(5, LogLevel.Error, "HeaderCache's configuration is invalid, so new connections keep the last valid options: {Fault}")]
    public static partial void InvalidOptions(ILogger logger, string fault);
}
