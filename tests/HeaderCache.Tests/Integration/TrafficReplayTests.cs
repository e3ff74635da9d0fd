using System.Net;
using HeaderCache.Traffic;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// Every traffic profile replayed over keep-alive connections, cache on and off: the application sees
/// identical requests, whole, split at random places, one byte at a time, and pipelined.
/// </summary>
[Collection(ServerPairGroup.Name)]
public sealed class TrafficReplayTests(ServerPair servers)
{
    // The controls of traffic/README.md: Kestrel alone already reuses every string plaintext sends, and every value churn
    // sends is new. The cache has nothing to serve for them, only lines to take out and put back with new strings.
    private static readonly string[] NothingToServe = ["plaintext", "churn"];

    public static TheoryData<string> Profiles => new(TrafficProfile.LoadAll().Select(p => p.Name));

    [Theory]
    [MemberData(nameof(Profiles))]
    public async Task Request_response_replay_is_identical_and_matches_the_bytes(string profile)
    {
        byte[][] requests = Render(profile, seed: 1, rounds: 3);
        List<string> transcript = await AssertSameAsync(profile, endPoint =>
            RawHttp.ExchangeAsync(endPoint, requests.Select(r => (IReadOnlyList<byte[]>)[r]).ToList(), RawHttp.Whole));

        Assert.Equal(requests.Length + 1, transcript.Count);
        Assert.Equal(RawHttp.Closed, transcript[^1]);
        for (int i = 0; i < requests.Length; i++)
        {
            Differential.AssertAnswers(requests[i], transcript[i]);
        }
    }

    [Theory]
    [MemberData(nameof(Profiles))]
    public async Task Random_splits_give_identical_requests(string profile)
    {
        for (int seed = 1; seed <= 3; seed++)
        {
            byte[][] requests = Render(profile, seed, rounds: 2);
            var split = RawHttp.RandomSplit(seed, maxPiece: 40);
            List<string> transcript = await AssertSameAsync(profile, endPoint =>
                RawHttp.ExchangeAsync(endPoint, requests.Select(r => (IReadOnlyList<byte[]>)[r]).ToList(), split));
            Assert.All(transcript.SkipLast(1), response => Assert.Equal(200, RawHttp.Status(response)));
        }
    }

    [Theory]
    [MemberData(nameof(Profiles))]
    public async Task Pipelined_requests_are_identical_at_every_depth(string profile)
    {
        foreach (int depth in new[] { 1, 2, 3, 7, 16 })
        {
            byte[][] requests = Render(profile, seed: depth, rounds: Math.Max(2, 32 / TrafficProfile.Load(profile).Count));
            await AssertPipelinedAsync(profile, requests, depth, RawHttp.RandomSplit(depth, maxPiece: 700));
        }
    }

    [Theory]
    [InlineData("chrome")]
    [InlineData("proxy-pool")]
    public async Task One_byte_at_a_time_gives_identical_requests(string profile)
    {
        byte[][] requests = Render(profile, seed: 9, rounds: 1).Take(3).ToArray();
        // One batch: all requests sent one byte per write, then their responses read (no half-close race).
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint =>
            RawHttp.ExchangeAsync(endPoint, [requests], RawHttp.Bytewise));
        Assert.Equal(requests.Length + 1, transcript.Count);
        Differential.AssertAnswers(requests[^1], transcript[^2]);
    }

    [Theory]
    [InlineData(1)]
    [InlineData(4)]
    public async Task A_proxy_connection_long_enough_for_its_ids_to_be_remembered_by_name_gives_identical_requests(int depth)
    {
        // From the 17th request on, a request id's and a trace id's values are created without a lookup and their lines
        // are found by name (LineMemoTests): 48 requests take that path for most of the connection, split at random.
        byte[][] requests = Render("proxy-pool", seed: 5, rounds: 12);
        Assert.True(requests.Length >= 48);
        await AssertPipelinedAsync("proxy-pool", requests, depth, RawHttp.RandomSplit(depth, maxPiece: 300));
    }

    [Fact]
    public async Task Interleaved_connections_never_see_each_others_values()
    {
        // Two connections send the same header names with different values, alternating requests.
        using var a = await Connection.OpenAsync(servers.On.EndPoint);
        using var b = await Connection.OpenAsync(servers.On.EndPoint);
        for (int i = 0; i < 20; i++)
        {
            string va = await a.EchoAsync($"GET /a/{i} HTTP/1.1\r\nHost: x\r\nX-Who: alice\r\nsec-ch-ua: \"A\";v=\"{i % 3}\"\r\nAccept: a/{i % 2}\r\n\r\n");
            string vb = await b.EchoAsync($"GET /b/{i} HTTP/1.1\r\nHost: x\r\nX-Who: bob\r\nsec-ch-ua: \"B\";v=\"{i % 3}\"\r\nAccept: b/{i % 2}\r\n\r\n");
            Assert.Contains("X-Who: alice\n", va, StringComparison.Ordinal);
            Assert.Contains($"sec-ch-ua: \"A\";v=\"{i % 3}\"\n", va, StringComparison.Ordinal);
            Assert.Contains($"Accept: a/{i % 2}\n", va, StringComparison.Ordinal);
            Assert.Contains("X-Who: bob\n", vb, StringComparison.Ordinal);
            Assert.Contains($"sec-ch-ua: \"B\";v=\"{i % 3}\"\n", vb, StringComparison.Ordinal);
            Assert.Contains($"Accept: b/{i % 2}\n", vb, StringComparison.Ordinal);
        }
    }

    // The requests in batches of depth sent together, each write split by split: both servers answer alike, and each
    // answer echoes its request's lines.
    private async Task AssertPipelinedAsync(string profile, byte[][] requests, int depth, Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split)
    {
        var batches = requests.Chunk(depth).Select(b => (IReadOnlyList<byte[]>)b).ToList();
        List<string> transcript = await AssertSameAsync(profile, endPoint => RawHttp.ExchangeAsync(endPoint, batches, split));
        Assert.Equal(requests.Length + 1, transcript.Count);
        for (int i = 0; i < requests.Length; i++)
        {
            Differential.AssertAnswers(requests[i], transcript[i]);
        }
    }

    private Task<List<string>> AssertSameAsync(string profile, Func<IPEndPoint, Task<List<string>>> client) =>
        NothingToServe.Contains(profile)
            ? Differential.AssertSameWithNothingServedAsync(servers, client)
            : Differential.AssertSameAsync(servers, client);

    private static byte[][] Render(string profile, int seed, int rounds)
    {
        TrafficProfile.Connection connection = TrafficProfile.Load(profile).Connect(seed);
        int count = TrafficProfile.Load(profile).Count * rounds;
        return Enumerable.Range(0, count).Select(connection.Render).ToArray();
    }

    /// <summary>A keep-alive connection sending one request at a time.</summary>
    private sealed class Connection : IDisposable
    {
        private readonly System.Net.Sockets.TcpClient _client;
        private readonly RawHttp.ResponseReader _reader;

        private Connection(System.Net.Sockets.TcpClient client)
        {
            _client = client;
            _reader = new RawHttp.ResponseReader(client.GetStream());
        }

        public static async Task<Connection> OpenAsync(IPEndPoint endPoint)
        {
            var client = new System.Net.Sockets.TcpClient { NoDelay = true };
            await client.ConnectAsync(endPoint);
            return new Connection(client);
        }

        public async Task<string> EchoAsync(string request)
        {
            await _client.GetStream().WriteAsync(System.Text.Encoding.ASCII.GetBytes(request));
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            return await _reader.ReadAsync(timeout.Token) ?? throw new InvalidOperationException("The server closed the connection.");
        }

        public void Dispose() => _client.Dispose();
    }
}
