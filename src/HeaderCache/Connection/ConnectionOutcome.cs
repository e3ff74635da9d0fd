namespace HeaderCache.Connection;

/// <summary>What happened to a connection, as the <c>headercache.connection.outcome</c> tag says it.</summary>
internal static class ConnectionOutcome
{
    public const string Cached = "cached";                  // its request heads went through the cache to the end
    public const string PassedThrough = "passed_through";   // HeaderCache stepped aside (or Kestrel did not read the protocol it began), leaving every later byte to Kestrel
    public const string Skipped = "skipped";                // never read: switched off, or on a Kestrel HeaderCache was not tested with
}
