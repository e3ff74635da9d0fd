using System.Net;
using System.Net.Sockets;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;

namespace HeaderCache.Tests.Integration;

/// <summary>The sample with short request-headers and keep-alive timeouts, cache on and off.</summary>
public sealed class ShortTimeoutsPair : IAsyncLifetime
{
    /// <summary>Kestrel's RequestHeadersTimeout and KeepAliveTimeout here (its heartbeat adds up to a second).</summary>
    public static readonly TimeSpan Timeout = TimeSpan.FromSeconds(3);

    public SampleServer On { get; private set; } = null!;

    public SampleServer Alone { get; private set; } = null!;

    public async Task InitializeAsync()
    {
        static void Configure(WebApplicationBuilder builder) => builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.Limits.RequestHeadersTimeout = Timeout;
            kestrel.Limits.KeepAliveTimeout = Timeout;
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

/// <summary>
/// Slow clients, cache on vs off: a head that stalls gets Kestrel's 408 and a close from both (the compactor
/// holds header lines back, so Kestrel's request-headers timeout must still fire through its reader); a head
/// that trickles in but completes in time is answered by both. Every scenario runs on both servers at once.
/// </summary>
public sealed class TimeoutTests(ShortTimeoutsPair servers) : IClassFixture<ShortTimeoutsPair>
{
    private const string C = Edge.Cacheable;

    private static readonly (string Name, string Bytes, string Expected)[] Stalls =
    [
        ("inside the request line", "GET /sta", "408|closed"),
        ("inside a header line", $"GET /s HTTP/1.1\r\nHost: x\r\nUser-Agent: a\r\nsec-ch", "408|closed"),
        ("after complete cacheable lines", $"GET /s HTTP/1.1\r\nHost: x\r\n{C}", "408|closed"),
        ("after a CR", $"GET /s HTTP/1.1\r\nHost: x\r\n{C}X-Last: v\r", "408|closed"),
        ("in a second request after a compacted one", $"GET /1 HTTP/1.1\r\nHost: x\r\n{C}\r\nGET /2 HTTP/1.1\r\nHost: x\r\n{C}", "200,408|closed"),
        ("in a head after a body", $"POST /1 HTTP/1.1\r\nHost: x\r\n{C}Content-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\nHost: x\r\n{C}X-", "200,408|closed"),

        // No request byte after a response, or only empty lines: the keep-alive timeout closes without a response.
        ("idle after a response", $"GET /1 HTTP/1.1\r\nHost: x\r\n{C}\r\n", "200|closed"),
        ("only empty lines", "\r\n\r\n", "|closed"),
    ];

    [Fact]
    public async Task Stalled_heads_get_408_and_a_close_from_both()
    {
        // Each stall on a new connection, and after heads the cache served, all at once.
        (string Name, string Bytes, string Expected)[] stalls = [.. Stalls.SelectMany(stall => new[]
        {
            stall,
            ($"{stall.Name}, after served heads", Edge.WarmUp + stall.Bytes, "200,200" + (stall.Expected.StartsWith('|') ? "" : ",") + stall.Expected),
        })];
        List<string>[] transcripts = await Edge.AssertSameConcurrentlyAsync(servers.On, servers.Alone, [.. stalls.Select(stall =>
            (Func<IPEndPoint, Task<List<string>>>)(endPoint => RawHttp.SendAllAsync(endPoint, Edge.Bytes(stall.Bytes), RawHttp.RandomSplit(3, 16), halfClose: false)))]);

        foreach (var ((name, _, expected), transcript) in stalls.Zip(transcripts))
        {
            string actual = Edge.Summary(transcript);
            Assert.True(expected == actual, $"{name}: expected {expected}, got {actual}");
            if (expected.Contains("408", StringComparison.Ordinal))
            {
                Assert.StartsWith("HTTP/1.1 408 Request Timeout\r\n", transcript[^2], StringComparison.Ordinal);
            }
        }
    }

    [Fact]
    public async Task Heads_trickling_in_one_byte_every_100_ms_are_answered_if_each_completes_in_time()
    {
        // Each head's header part takes about 1.5 s (under the 3 s timeout); the three heads together take
        // longer than the timeout, so the timer must start again for each request.
        string[] heads = ["GET /t1 HTTP/1.1\r\nHost:x\r\nA:b\r\n\r\n", "GET /t2 HTTP/1.1\r\nHost:x\r\nA:b\r\n\r\n", "GET /t3 HTTP/1.1\r\nHost:x\r\nA:c\r\n\r\n"];
        List<string> transcript = (await Edge.AssertSameConcurrentlyAsync(servers.On, servers.Alone, endPoint => TrickleAsync(endPoint, heads)))[0];
        Assert.Equal("200,200,200|open", Edge.Summary(transcript));
        for (int i = 0; i < heads.Length; i++)
        {
            Differential.AssertAnswers(Edge.Bytes(heads[i]), transcript[i]);
        }
    }

    /// <summary>Sends each head's request line at once and the rest one byte every 100 ms, reading each response.</summary>
    private static async Task<List<string>> TrickleAsync(IPEndPoint endPoint, string[] heads)
    {
        using var client = new TcpClient { NoDelay = true };
        await client.ConnectAsync(endPoint);
        NetworkStream stream = client.GetStream();
        var reader = new RawHttp.ResponseReader(stream);
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        var transcript = new List<string>();
        foreach (string head in heads)
        {
            int lineEnd = head.IndexOf('\n', StringComparison.Ordinal) + 1;
            await stream.WriteAsync(Edge.Bytes(head[..lineEnd]), deadline.Token);
            foreach (byte b in Edge.Bytes(head[lineEnd..]))
            {
                await Task.Delay(100, deadline.Token);
                await stream.WriteAsync(new[] { b }, deadline.Token);
            }

            string? response = await reader.ReadAsync(deadline.Token);
            if (response is null)
            {
                transcript.Add(RawHttp.Closed);
                return transcript;
            }

            transcript.Add(response);
        }

        // Still open (the keep-alive timeout is covered by the stall scenarios).
        transcript.Add("<open>");
        return transcript;
    }
}
