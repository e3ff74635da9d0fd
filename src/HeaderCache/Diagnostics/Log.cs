using Microsoft.Extensions.Logging;

namespace HeaderCache.Diagnostics;

/// <summary>The rare events worth a log line.</summary>
internal static partial class Log
{
    /// <summary>Logger category.</summary>
    public const string Category = HeaderCacheOptions.MeterName;

    [LoggerMessage(2, LogLevel.Error, "HeaderCache's connection part is on, but its request-level part is not active (call builder.WebHost.UseHeaderStringCache() or services.AddHeaderStringCache(), and keep Kestrel as the server). Connections pass through uncached.")]
    public static partial void RequestPartMissing(ILogger logger);

    [LoggerMessage(3, LogLevel.Error, "HeaderCache's request-level part is registered, but no endpoint has its connection part (call builder.WebHost.UseHeaderStringCache(), or UseHeaderStringCache() on KestrelServerOptions for every endpoint or on an endpoint's ListenOptions). Nothing is cached.")]
    public static partial void ConnectionPartMissing(ILogger logger);

    [LoggerMessage(4, LogLevel.Debug, "Connection {ConnectionId} passes through uncached from now on: {Reason}.")]
    public static partial void PassThrough(ILogger logger, string connectionId, PassThroughReason reason);

    [LoggerMessage(5, LogLevel.Error, "HeaderCache's configuration is invalid, so new connections keep the last valid options: {Fault}")]
    public static partial void InvalidOptions(ILogger logger, string fault);

    [LoggerMessage(6, LogLevel.Information, "HeaderCache reads the HTTP/1.1 and HTTP/2 connections of {Endpoints}.")]
    public static partial void EndpointsCovered(ILogger logger, string endpoints);

    [LoggerMessage(7, LogLevel.Warning, "HeaderCache is not on {Endpoints}: Kestrel alone reads their connections. The cause for each endpoint, and what to write, are in the warnings just before this one (event 9).")]
    public static partial void EndpointsNotCovered(ILogger logger, string endpoints);

    [LoggerMessage(8, LogLevel.Information, "HeaderCache is switched off (HeaderCache:Enabled is false): {Endpoints} leave new connections to Kestrel alone until it is switched on.")]
    public static partial void SwitchedOff(ILogger logger, string endpoints);

    [LoggerMessage(9, LogLevel.Warning, "HeaderCache is not on {Endpoint}: {Cause}. {Fix}")]
    public static partial void EndpointNotCovered(ILogger logger, string endpoint, string cause, string fix);

    [LoggerMessage(10, LogLevel.Information, "HeaderCache's configuration is valid again: new connections use it (Enabled {Enabled}, SlotCount {SlotCount}, MaxValueLength {MaxValueLength}).")]
    public static partial void OptionsValidAgain(ILogger logger, bool enabled, int slotCount, int maxValueLength);

    [LoggerMessage(11, LogLevel.Information, "HeaderCache is switched on (HeaderCache:Enabled is true): new connections get the cache.")]
    public static partial void SwitchedOn(ILogger logger);

    [LoggerMessage(12, LogLevel.Information, "HeaderCache is switched off (HeaderCache:Enabled is false): new connections go to Kestrel alone; open ones keep their cache.")]
    public static partial void SwitchedOffAtRuntime(ILogger logger);

    [LoggerMessage(13, LogLevel.Warning, "HeaderCache was tested with Kestrel {Tested} and this process runs Kestrel {Running}: every connection passes through uncached, since HeaderCache checks what it takes out of requests as strictly as the Kestrel it was compared with (its HTTP/1.1 parser, its HTTP/2 frame and HPACK handling). Use a HeaderCache built for Kestrel {Running}, or set HeaderCache:AllowUntestedKestrelVersion to true to run it anyway.")]
    public static partial void UntestedKestrel(ILogger logger, string running, string tested);

    [LoggerMessage(14, LogLevel.Warning, "HeaderCache was tested with Kestrel {Tested} and this process runs Kestrel {Running}: HeaderCache:AllowUntestedKestrelVersion is true, so new connections get the cache on a parser nobody compared it with.")]
    public static partial void UntestedKestrelAllowed(ILogger logger, string running, string tested);

    [LoggerMessage(15, LogLevel.Information, "A client sent the HTTP/2 prior-knowledge preface (h2c) to {Endpoint}, and Kestrel did not serve it as HTTP/2: Kestrel serves h2c only on an endpoint whose Protocols is Http2, and elsewhere answers the preface as HTTP/1.1 (a GOAWAY with HTTP_1_1_REQUIRED). HeaderCache leaves such connections to Kestrel and counts them passed_through with reason http2. Said once per endpoint.")]
    public static partial void H2cNotServed(ILogger logger, string endpoint);

    [LoggerMessage(16, LogLevel.Debug, "Connection {ConnectionId}: the HTTP/2 reader stopped following the connection ({Cause}).")]
    public static partial void Http2Stopped(ILogger logger, string connectionId, Http2StopCause cause);
}
