namespace HeaderCache.Tests.Integration;

/// <summary>Two sample servers shared by the differential tests: cache on and cache off.</summary>
public sealed class ServerPair : IAsyncLifetime
{
    /// <summary>HeaderCache on.</summary>
    public SampleServer On { get; private set; } = null!;

    /// <summary>Kestrel alone (HeaderCache switched off).</summary>
    public SampleServer Off { get; private set; } = null!;

    /// <inheritdoc />
    public async Task InitializeAsync()
    {
        On = await SampleServer.StartAsync(CacheMode.On);
        Off = await SampleServer.StartAsync(CacheMode.Off);
    }

    /// <inheritdoc />
    public async Task DisposeAsync()
    {
        await On.DisposeAsync();
        await Off.DisposeAsync();
    }
}

/// <summary>The test collection sharing one <see cref="ServerPair"/>.</summary>
[CollectionDefinition(Name)]
public sealed class ServerPairGroup : ICollectionFixture<ServerPair>
{
    /// <summary>Collection name.</summary>
    public const string Name = "server pair";
}
