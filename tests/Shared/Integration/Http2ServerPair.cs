namespace HeaderCache.Testing;

/// <summary>Two sample servers whose endpoint speaks only HTTP/2 in cleartext (h2c with prior knowledge): HeaderCache on,
/// and Kestrel alone.</summary>
public sealed class Http2ServerPair : IAsyncLifetime
{
    /// <summary>The sample's endpoint protocols for h2c with prior knowledge.</summary>
    public const string Http2Only = "--Kestrel:EndpointDefaults:Protocols=Http2";

    /// <summary>HeaderCache on.</summary>
    public SampleServer On { get; private set; } = null!;

    /// <summary>Kestrel alone.</summary>
    public SampleServer Alone { get; private set; } = null!;

    /// <inheritdoc />
    public async Task InitializeAsync()
    {
        On = await SampleServer.StartAsync(CacheMode.On, null, Http2Only);
        Alone = await SampleServer.StartAsync(CacheMode.KestrelAlone, null, Http2Only);
    }

    /// <inheritdoc />
    public async Task DisposeAsync()
    {
        await On.DisposeAsync();
        await Alone.DisposeAsync();
    }
}

/// <summary>The test collection sharing one <see cref="Http2ServerPair"/>.</summary>
[CollectionDefinition(Name)]
public sealed class Http2ServerPairGroup : ICollectionFixture<Http2ServerPair>
{
    /// <summary>Collection name.</summary>
    public const string Name = "h2c server pair";
}
