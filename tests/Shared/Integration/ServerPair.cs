namespace HeaderCache.Testing;

/// <summary>Two sample servers shared by the differential tests: HeaderCache on, and Kestrel alone.</summary>
public sealed class ServerPair : IAsyncLifetime
{
    /// <summary>HeaderCache on.</summary>
    public SampleServer On { get; private set; } = null!;

    /// <summary>Kestrel alone: HeaderCache not registered.</summary>
    public SampleServer Alone { get; private set; } = null!;

    /// <inheritdoc />
    public async Task InitializeAsync()
    {
        On = await SampleServer.StartAsync(CacheMode.On);
        Alone = await SampleServer.StartAsync(CacheMode.KestrelAlone);
    }

    /// <inheritdoc />
    public async Task DisposeAsync()
    {
        await On.DisposeAsync();
        await Alone.DisposeAsync();
    }
}

/// <summary>The test collection sharing one <see cref="ServerPair"/>.</summary>
[CollectionDefinition(Name)]
public sealed class ServerPairGroup : ICollectionFixture<ServerPair>
{
    /// <summary>Collection name.</summary>
    public const string Name = "server pair";
}

/// <summary>
/// A collection with a <see cref="ServerPair"/> of its own that runs alone, after every collection that runs in
/// parallel has ended: for outcomes that hang on a race inside Kestrel itself, which a busy machine tilts.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class QuietServerPairGroup : ICollectionFixture<ServerPair>
{
    /// <summary>Collection name.</summary>
    public const string Name = "server pair on a quiet machine";
}
