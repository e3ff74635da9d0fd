using HeaderCache.Hosting;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// On a Kestrel whose major or minor version differs from the one HeaderCache was tested with, every connection passes
/// through as with <c>Enabled=false</c> and one warning names both versions, unless <c>AllowUntestedKestrelVersion</c> is on.
/// The running version is put in place through dependency injection; the server is the real Kestrel of this process.
/// </summary>
[Collection(ServerPairGroup.Name)]
public sealed class KestrelVersionTests(ServerPair servers)
{
    private static readonly Version Tested = KestrelVersions.Current.Tested;

    [Fact]
    public void The_tested_version_is_the_Kestrel_this_build_references_and_this_suite_runs_on()
    {
        Version running = typeof(KestrelServerOptions).Assembly.GetName().Version!;
        Assert.Equal((running.Major, running.Minor), (Tested.Major, Tested.Minor));
        Assert.True(KestrelVersions.Current.Match);
    }

    [Theory]
    [InlineData(1, 0, 0, false)]
    [InlineData(0, 1, 0, false)]
    [InlineData(-1, 0, 0, false)]
    [InlineData(0, 0, 1, true)]
    public void Only_the_major_and_minor_version_count(int major, int minor, int build, bool match) =>
        Assert.Equal(match, new KestrelVersions(Tested, new Version(Tested.Major + major, Tested.Minor + minor, Tested.Build + build, 0)).Match);

    [Fact]
    public async Task On_an_untested_Kestrel_every_connection_passes_through_and_one_warning_names_both_versions()
    {
        var running = new Version(Tested.Major + 1, 0, 0, 0);
        await using SampleServer untested = await SampleServer.StartAsync(CacheMode.On, builder => builder.Services.AddSingleton(new KestrelVersions(Tested, running)));
        using var activity = new CacheActivity(untested);

        for (int connection = 0; connection < 3; connection++)
        {
            List<IReadOnlyList<byte[]>> batches = Chrome(connection);
            Assert.Equal(await RawHttp.ExchangeAsync(servers.Alone.EndPoint, batches, RawHttp.Whole), await RawHttp.ExchangeAsync(untested.EndPoint, batches, RawHttp.Whole));
        }

        Assert.Equal("""{"present":true,"active":false,"reason":"untested_kestrel","hits":0,"misses":0}""", await FeatureAsync(untested));
        Assert.Equal(0, activity.LinesTaken);
        Assert.Equal(4, await activity.ConnectionsAsync("skipped", "untested_kestrel", ended: 4));
        var warned = untested.Logs.HeaderCache.Where(e => e.Level >= LogLevel.Warning).ToArray();
        Assert.Single(warned);
        Assert.Equal(13, warned[0].Id.Id);
        Assert.StartsWith(
            $"HeaderCache was tested with Kestrel {Tested.Major}.{Tested.Minor} and this process runs Kestrel {running.Major}.0: every connection passes through uncached",
            warned[0].Message,
            StringComparison.Ordinal);
        Assert.Contains("HeaderCache:AllowUntestedKestrelVersion", warned[0].Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AllowUntestedKestrelVersion_runs_the_cache_anyway_and_says_so_once()
    {
        var running = new Version(Tested.Major, Tested.Minor + 1, 0, 0);
        await using SampleServer allowed = await SampleServer.StartAsync(
            CacheMode.On, builder => builder.Services.AddSingleton(new KestrelVersions(Tested, running)), "--HeaderCache:AllowUntestedKestrelVersion=true");

        List<IReadOnlyList<byte[]>> batches = Chrome(0);
        List<string> transcript = await Edge.AssertSameAsync(allowed, servers.Alone, endPoint => RawHttp.ExchangeAsync(endPoint, batches, RawHttp.Whole));

        Assert.Equal(batches.Count + 1, transcript.Count);
        Assert.Matches("""^\{"present":true,"active":true,"reason":null,"hits":[1-9]""", await FeatureAsync(allowed, Chrome(1)));
        var warned = allowed.Logs.HeaderCache.Where(e => e.Level >= LogLevel.Warning).ToArray();
        Assert.Single(warned);
        Assert.Equal(14, warned[0].Id.Id);
        Assert.Contains($"tested with Kestrel {Tested.Major}.{Tested.Minor} and this process runs Kestrel {running.Major}.{running.Minor}", warned[0].Message, StringComparison.Ordinal);
    }

    private static List<IReadOnlyList<byte[]>> Chrome(int seed)
    {
        TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(seed + 1);
        return [.. Enumerable.Range(0, 4).Select(i => (IReadOnlyList<byte[]>)[traffic.Render(i)])];
    }

    // What the connection feature says at the end of a connection that first sent the given requests.
    private static async Task<string> FeatureAsync(SampleServer server, List<IReadOnlyList<byte[]>>? before = null)
    {
        byte[] state = "GET /headercache HTTP/1.1\r\nHost: x\r\n\r\n"u8.ToArray();
        List<string> transcript = await RawHttp.ExchangeAsync(server.EndPoint, [.. before ?? [], [state]], RawHttp.Whole);
        return RawHttp.Body(transcript[(before?.Count ?? 0)]);
    }
}
