namespace HeaderCache.Connection;

/// <summary>What happened to a connection, as the <c>headercache.connection.outcome</c> tag says it.</summary>
internal static class ConnectionOutcome
{
    /// <summary>Its request heads went through the cache to the end.</summary>
    public const string Cached = "cached";

    /// <summary>HeaderCache stepped aside during the connection and left every later byte to Kestrel.</summary>
    public const string PassedThrough = "passed_through";

    /// <summary>HeaderCache never read the connection (switched off, or HTTP/2 negotiated by TLS).</summary>
    public const string Skipped = "skipped";
}
