namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// One connection replaying a traffic profile through one server, over HTTP/1.1 or HTTP/2: what
/// <see cref="ConnectionPathPairs"/> needs of each of the two servers it alternates.
/// </summary>
internal interface IConnectionPath
{
    /// <summary>Starts the server, connects, and warms the connection up.</summary>
    void Setup();

    /// <summary>Ends the connection and stops the server.</summary>
    void Cleanup();

    /// <summary>Sends <see cref="ConnectionPathBenchmarks.RequestsPerInvoke"/> requests one at a time, each read to its response's end.</summary>
    Task Request();
}
