using System.Text;
using Microsoft.AspNetCore.Hosting;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// Request heads exactly at Kestrel's default limits and one byte or one line over, with cacheable lines in
/// them: the same status and close, cache on vs off.
/// </summary>
/// <remarks>
/// Kestrel's limits: the request line including its CRLF at most MaxRequestLineSize (8192), else 414; the
/// header lines including their CRLFs at most MaxRequestHeadersTotalSize (32768; the final CRLF comes on
/// top), else 431; at most MaxRequestHeaderCount (100) lines, else 431.
/// </remarks>
[Collection(ServerPairGroup.Name)]
public sealed class LimitTests(ServerPair servers)
{
    public static TheoryData<string, int, string> Heads => new()
    {
        { "request line", 8192, "200,200,200,200|closed" },
        { "request line", 8193, "200,414|closed" },
        { "request line after empty lines", 8192, "200,200,200,200|closed" },
        { "request line after empty lines", 8193, "200,414|closed" },
        { "header bytes, cacheable lines first", 32768, "200,200,200,200|closed" },
        { "header bytes, cacheable lines first", 32769, "200,431|closed" },
        { "header bytes, cacheable lines last", 32768, "200,200,200,200|closed" },
        { "header bytes, cacheable lines last", 32769, "200,431|closed" },
        { "header lines", 100, "200,200,200,200|closed" },
        { "header lines", 101, "200,431|closed" },
        { "header lines, all cacheable and distinct", 100, "200,200,200,200|closed" },
        { "header lines, all cacheable and distinct", 101, "200,431|closed" },
    };

    [Theory]
    [MemberData(nameof(Heads))]
    public async Task Head_at_and_over_the_default_limits(string shape, int size, string expected)
    {
        string head = LimitHeads.Build(shape, size);

        // A compacted request first, so the cache holds strings when the big head comes; a normal one after.
        byte[] bytes = Edge.Bytes(LimitHeads.Small("/before") + head + LimitHeads.Small("/after") + Edge.Terminator);
        List<string> transcript = await Edge.SendAllBothAsync(servers, bytes, seeds: 2, maxPiece: 1500);
        Assert.Equal(expected, Edge.Summary(transcript));
        if (expected.StartsWith("200,200", StringComparison.Ordinal))
        {
            Differential.AssertAnswers(Edge.Bytes(head.TrimStart('\r', '\n')), transcript[1]);
        }
    }

    [Fact]
    public async Task Many_heads_just_under_the_limits_on_one_connection()
    {
        // 32766 header bytes: the compactor counts the final CRLF against MaxRequestHeadersTotalSize too, so at
        // 32767 and 32768 it passes the connection through (safe: Kestrel still gets the untouched bytes).
        string heads = string.Concat(Enumerable.Range(0, 3).Select(_ =>
            LimitHeads.Build("header bytes, cacheable lines first", 32766) + LimitHeads.Build("header lines", 100)));
        using var activity = new CacheActivity(servers.On);
        List<string> transcript = await Edge.SendAllBothAsync(servers, Edge.Bytes(heads + Edge.Terminator), seeds: 1, maxPiece: 3000);
        Assert.Equal("200,200,200,200,200,200,200|closed", Edge.Summary(transcript));

        // Heads at the limits are still compacted (the cache served repeated lines).
        Assert.True(activity.LinesServed > 0, "no header line was served from the cache");
        Assert.Equal(0, await activity.ConnectionsAsync("passed_through", "over_limit"));
    }
}

/// <summary>The sample on Kestrel with small limits, cache on and off.</summary>
public sealed class SmallLimitsPair : IAsyncLifetime
{
    public const int LineSize = 256;
    public const int HeaderBytes = 512;
    public const int HeaderCount = 10;

    public SampleServer On { get; private set; } = null!;

    public SampleServer Alone { get; private set; } = null!;

    public async Task InitializeAsync()
    {
        // Kestrel does not bind Limits from the "Kestrel" configuration section ("--Kestrel:Limits:..." is
        // ignored), so they are set in code.
        static void Configure(Microsoft.AspNetCore.Builder.WebApplicationBuilder builder) => builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.Limits.MaxRequestLineSize = LineSize;
            kestrel.Limits.MaxRequestHeadersTotalSize = HeaderBytes;
            kestrel.Limits.MaxRequestHeaderCount = HeaderCount;
        });

        On = await SampleServer.StartAsync(CacheMode.On, Configure);
        Alone = await SampleServer.StartAsync(CacheMode.KestrelAlone, Configure);
    }

    public async Task DisposeAsync()
    {
        await On.DisposeAsync();
        await Alone.DisposeAsync();
    }
}

/// <summary>The same at configured small limits: the cache follows the server's limits, not the defaults.</summary>
public sealed class SmallLimitTests(SmallLimitsPair servers) : IClassFixture<SmallLimitsPair>
{
    public static TheoryData<string, int, string> Heads => new()
    {
        { "request line", SmallLimitsPair.LineSize, "200,200,200,200|closed" },
        { "request line", SmallLimitsPair.LineSize + 1, "200,414|closed" },
        { "header bytes, cacheable lines first", SmallLimitsPair.HeaderBytes, "200,200,200,200|closed" },
        { "header bytes, cacheable lines first", SmallLimitsPair.HeaderBytes + 1, "200,431|closed" },
        { "header bytes, cacheable lines last", SmallLimitsPair.HeaderBytes, "200,200,200,200|closed" },
        { "header bytes, cacheable lines last", SmallLimitsPair.HeaderBytes + 1, "200,431|closed" },
        { "header lines", SmallLimitsPair.HeaderCount, "200,200,200,200|closed" },
        { "header lines", SmallLimitsPair.HeaderCount + 1, "200,431|closed" },
        { "header lines, all cacheable and distinct", SmallLimitsPair.HeaderCount, "200,200,200,200|closed" },
        { "header lines, all cacheable and distinct", SmallLimitsPair.HeaderCount + 1, "200,431|closed" },
    };

    [Theory]
    [MemberData(nameof(Heads))]
    public async Task Head_at_and_over_configured_limits(string shape, int size, string expected)
    {
        string head = LimitHeads.Build(shape, size);
        byte[] bytes = Edge.Bytes(LimitHeads.Small("/before") + head + LimitHeads.Small("/after") + Edge.Terminator);
        List<string> transcript = await Edge.SendAllBothAsync(servers.On, servers.Alone, bytes, seeds: 3, maxPiece: 40);
        Assert.Equal(expected, Edge.Summary(transcript));
    }

    [Fact]
    public async Task Heads_the_default_limits_allow_are_rejected_by_the_configured_ones()
    {
        // Non-vacuity: with the defaults these would be answered.
        string tooMany = LimitHeads.Build("header lines", 20);
        List<string> transcript = await Edge.SendAllBothAsync(servers.On, servers.Alone, Edge.Bytes(tooMany + Edge.Terminator), seeds: 1);
        Assert.Equal("431|closed", Edge.Summary(transcript));
    }
}

/// <summary>Request heads of exact sizes.</summary>
internal static class LimitHeads
{
    /// <summary>A small request with the cacheable lines.</summary>
    public static string Small(string target) => $"GET {target} HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}\r\n";

    /// <summary>
    /// A head whose request line (with CRLF) is <paramref name="size"/> bytes, whose header lines (with CRLFs)
    /// total <paramref name="size"/> bytes, or which has <paramref name="size"/> header lines, by <paramref name="shape"/>.
    /// </summary>
    public static string Build(string shape, int size)
    {
        const string Host = "Host: x\r\n";
        switch (shape)
        {
            case "request line":
            case "request line after empty lines":
                {
                    // "GET /" + path + " HTTP/1.1\r\n"
                    string line = "GET /" + new string('a', size - 16) + " HTTP/1.1\r\n";
                    Assert.Equal(size, line.Length);
                    return (shape == "request line" ? "" : "\r\n\r\n\n") + line + Host + Edge.Cacheable + "\r\n";
                }

            case "header bytes, cacheable lines first":
            case "header bytes, cacheable lines last":
                {
                    int fill = size - Host.Length - Edge.Cacheable.Length - "X-Fill: \r\n".Length;
                    string filler = "X-Fill: " + new string('f', fill) + "\r\n";
                    string lines = shape.EndsWith("first", StringComparison.Ordinal)
                        ? Host + Edge.Cacheable + filler
                        : Host + filler + Edge.Cacheable;
                    Assert.Equal(size, lines.Length);
                    return "GET /bytes HTTP/1.1\r\n" + lines + "\r\n";
                }

            case "header lines":
            case "header lines, all cacheable and distinct":
                {
                    var lines = new StringBuilder(Host);
                    int count = 1;
                    if (shape == "header lines")
                    {
                        lines.Append(Edge.Cacheable);
                        count += 4;
                    }

                    for (int i = 0; count < size; i++, count++)
                    {
                        lines.Append(System.Globalization.CultureInfo.InvariantCulture, $"X-Line-{i:D3}: value-{i % 7}\r\n");
                    }

                    return "GET /lines HTTP/1.1\r\n" + lines + "\r\n";
                }

            default:
                throw new ArgumentOutOfRangeException(nameof(shape), shape, null);
        }
    }
}
