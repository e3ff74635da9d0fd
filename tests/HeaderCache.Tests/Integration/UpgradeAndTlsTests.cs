using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// A WebSocket upgrade on a connection whose earlier heads were compacted, cache on vs off: the 101 and the
/// echoed frames are identical.
/// </summary>
[Collection(ServerPairGroup.Name)]
public sealed class UpgradeTests(ServerPair servers)
{
    private const string Key = "dGhlIHNhbXBsZSBub25jZQ==";

    private static readonly string Upgrade =
        $"GET /ws HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {Key}\r\n\r\n";

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task WebSocket_echoes_a_masked_text_frame_after_compacted_requests(bool frameInTheSameWriteAsTheHead)
    {
        using var activity = new CacheActivity(servers.On);
        List<string> transcript = await Differential.AssertSameAsync(servers, endPoint => WebSocketSessionAsync(endPoint, frameInTheSameWriteAsTheHead));

        Assert.Equal(6, transcript.Count);
        Assert.Equal("200,200,101", string.Join(',', transcript.Take(3).Select(RawHttp.Status)));

        // RFC 6455's example key and accept value.
        Assert.Contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n", transcript[2], StringComparison.Ordinal);
        Assert.Equal("frame:" + Convert.ToHexString([0x81, 0x0b, .. "hello, echo"u8]), transcript[3]);
        Assert.Equal("frame:" + Convert.ToHexString([0x88, 0x02, 0x03, 0xe8]), transcript[4]);
        Assert.Equal(RawHttp.Closed, transcript[5]);
        Assert.True(activity.LinesServed > 0, "the requests before the upgrade were not compacted");
        Assert.Equal(1, await activity.ConnectionsAsync("passed_through", "upgrade"));
    }

    /// <summary>Two plain requests, the upgrade, one masked text frame, then a close handshake.</summary>
    private static async Task<List<string>> WebSocketSessionAsync(IPEndPoint endPoint, bool frameWithHead)
    {
        using var client = new TcpClient { NoDelay = true };
        await client.ConnectAsync(endPoint);
        NetworkStream stream = client.GetStream();
        var reader = new RawHttp.ResponseReader(stream);
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        var transcript = new List<string>();
        foreach (string target in new[] { "/one", "/two" })
        {
            await stream.WriteAsync(Edge.Bytes($"GET {target} HTTP/1.1\r\nHost: x\r\n{Edge.Cacheable}\r\n"), deadline.Token);
            transcript.Add(await reader.ReadAsync(deadline.Token) ?? RawHttp.Closed);
        }

        byte[] text = Frame(0x1, "hello, echo"u8.ToArray(), [0x12, 0x34, 0x56, 0x78]);
        byte[] close = Frame(0x8, [0x03, 0xe8], [0x9a, 0xbc, 0xde, 0xf0]);
        byte[] upgrade = Edge.Bytes(Upgrade);
        await stream.WriteAsync(frameWithHead ? [.. upgrade, .. text] : upgrade, deadline.Token);
        transcript.Add(await reader.ReadAsync(deadline.Token) ?? RawHttp.Closed);
        if (!frameWithHead)
        {
            await stream.WriteAsync(text, deadline.Token);
        }

        transcript.Add(await ReadFrameAsync(reader, deadline.Token));
        await stream.WriteAsync(close, deadline.Token);
        transcript.Add(await ReadFrameAsync(reader, deadline.Token));
        byte[] rest = await reader.ReadRemainingAsync(deadline.Token);
        transcript.Add(rest.Length == 0 ? (reader.EndedWithReset ? RawHttp.Reset : RawHttp.Closed) : RawHttp.Raw(rest));
        return transcript;
    }

    private static byte[] Frame(byte opcode, byte[] payload, byte[] mask)
    {
        byte[] frame = new byte[6 + payload.Length];
        frame[0] = (byte)(0x80 | opcode);
        frame[1] = (byte)(0x80 | payload.Length);
        mask.CopyTo(frame, 2);
        for (int i = 0; i < payload.Length; i++)
        {
            frame[6 + i] = (byte)(payload[i] ^ mask[i % 4]);
        }

        return frame;
    }

    private static async Task<string> ReadFrameAsync(RawHttp.ResponseReader reader, CancellationToken cancellationToken)
    {
        byte[] header = await reader.ReadRawAsync(2, cancellationToken);
        byte[] payload = header.Length == 2 ? await reader.ReadRawAsync(header[1] & 0x7f, cancellationToken) : [];
        return "frame:" + Convert.ToHexString([.. header, .. payload]);
    }
}

/// <summary>
/// HTTPS endpoints with a self-signed certificate made in the test: wherever the cache is placed relative to
/// <c>UseHttps()</c> (after it, before it, only through the endpoint defaults, or on endpoints from <c>--urls</c>
/// and <c>Kestrel:Endpoints</c>), it reads the decrypted side and matches Kestrel alone.
/// </summary>
public sealed class TlsTests : IDisposable
{
    private readonly X509Certificate2 _certificate = TestCertificate.Create();

    /// <summary>Where the endpoint's own <c>UseHeaderStringCache()</c> goes relative to <c>UseHttps()</c>.</summary>
    public enum Placement
    {
        AfterUseHttps,
        BeforeUseHttps,
        EndpointDefaultsOnly,
        UrlsSetting,
        KestrelEndpointsSetting,
    }

    [Theory]
    [InlineData(Placement.AfterUseHttps)]
    [InlineData(Placement.BeforeUseHttps)]
    [InlineData(Placement.EndpointDefaultsOnly)]
    [InlineData(Placement.UrlsSetting)]
    [InlineData(Placement.KestrelEndpointsSetting)]
    public async Task The_cache_reads_the_decrypted_side_wherever_it_is_placed(Placement placement)
    {
        await using SampleServer on = await StartAsync(CacheMode.On, placement);
        await using SampleServer off = await StartAsync(CacheMode.KestrelAlone, placement);
        using var activity = new CacheActivity(on);

        await ExchangeOnBothAsync(on, off, connections: 3);

        Assert.True(activity.LinesServed > 0, "nothing was served from the cache over TLS");
        Assert.Equal(3, await activity.ConnectionsAsync("cached", ended: 3));
        Assert.Equal(0, await activity.ConnectionsAsync("passed_through", "tls", ended: 3));
        Assert.DoesNotContain(on.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
        Assert.Contains(on.Logs.HeaderCache, e => e.Id.Id == 6 && e.Message.Contains($"https://127.0.0.1:{on.EndPoint.Port}", StringComparison.Ordinal));
    }

    [Fact]
    public async Task The_connection_feature_says_whether_the_cache_is_on_and_why_not()
    {
        await using SampleServer on = await StartAsync(CacheMode.On, Placement.EndpointDefaultsOnly);
        using var handler = new SocketsHttpHandler();
        handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(_certificate.RawData);
        using var client = new HttpClient(handler);

        var states = new List<string>();
        foreach (Version version in new[] { HttpVersion.Version11, HttpVersion.Version11, HttpVersion.Version20 })
        {
            using var request = new HttpRequestMessage(HttpMethod.Get, new Uri($"https://localhost:{on.EndPoint.Port}/headercache"))
            {
                Version = version,
                VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            };
            request.Headers.TryAddWithoutValidation("sec-ch-ua", "\"Edge\";v=\"1\"");
            using HttpResponseMessage response = await client.SendAsync(request);
            states.Add(await response.Content.ReadAsStringAsync());
        }

        // The second HTTP/1.1 request on the same connection found its names and value in the cache.
        Assert.StartsWith("{\"present\":true,\"active\":true,\"reason\":null,\"hits\":0,", states[0], StringComparison.Ordinal);
        Assert.Matches("^\\{\"present\":true,\"active\":true,\"reason\":null,\"hits\":[1-9]", states[1]);
        Assert.Matches("^\\{\"present\":true,\"active\":true,\"reason\":null,", states[2]);
    }

    [Fact]
    public async Task Http2_over_tls_is_served_and_matches_Kestrel_alone()
    {
        await using SampleServer on = await StartAsync(CacheMode.On, Placement.AfterUseHttps);
        await using SampleServer off = await StartAsync(CacheMode.KestrelAlone, Placement.AfterUseHttps);
        using var activity = new CacheActivity(on);

        var echoes = new List<string>();
        foreach (SampleServer server in new[] { off, on })
        {
            using var handler = new SocketsHttpHandler();
            handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(_certificate.RawData);
            using var client = new HttpClient(handler);
            for (int i = 0; i < 3; i++)
            {
                using var request = new HttpRequestMessage(HttpMethod.Get, new Uri($"https://localhost:{server.EndPoint.Port}/h2?i={i}"))
                {
                    Version = HttpVersion.Version20,
                    VersionPolicy = HttpVersionPolicy.RequestVersionExact,
                };
                request.Headers.Host = "localhost";
                request.Headers.TryAddWithoutValidation("sec-ch-ua", "\"Edge\";v=\"1\"");
                request.Headers.TryAddWithoutValidation("User-Agent", "edge-test/1.0");
                using HttpResponseMessage response = await client.SendAsync(request);
                Assert.Equal(HttpVersion.Version20, response.Version);
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                echoes.Add(await response.Content.ReadAsStringAsync());
            }
        }

        Assert.Equal(echoes[..3], echoes[3..]);
        Assert.StartsWith("GET /h2?i=0 HTTP/2\n", echoes[0], StringComparison.Ordinal);
        await activity.AssertEngagedAsync();
        Assert.Equal(1, await activity.ConnectionsAsync("cached"));
        Assert.DoesNotContain(on.Logs.HeaderCache, e => e.Level >= LogLevel.Warning);
    }

    /// <summary><c>HeaderCache:Protocols</c> without HTTP/2: h2 answers as Kestrel alone and says why, wherever the
    /// cache is placed relative to <c>UseHttps()</c>, and HTTP/1.1 over TLS is still served.</summary>
    [Theory]
    [InlineData(Placement.AfterUseHttps)]
    [InlineData(Placement.EndpointDefaultsOnly)]
    public async Task Http2_switched_off_over_tls_answers_as_Kestrel_alone_and_says_why(Placement placement)
    {
        await using SampleServer on = await StartAsync(CacheMode.On, placement, "--HeaderCache:Protocols=Http1");
        await using SampleServer off = await StartAsync(CacheMode.KestrelAlone, placement);
        using var activity = new CacheActivity(on);

        var answers = new List<string>();
        foreach (SampleServer server in new[] { off, on })
        {
            using var handler = new SocketsHttpHandler();
            handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(_certificate.RawData);
            using var client = new HttpClient(handler);
            for (int i = 0; i < 3; i++)
            {
                answers.Add(await GetAsync(client, server, $"/h2?i={i}", HttpVersion.Version20));
            }
        }

        Assert.Equal(answers[..3], answers[3..]);
        Assert.StartsWith("200 GET /h2?i=0 HTTP/2\n", answers[0], StringComparison.Ordinal);
        using (var handler = new SocketsHttpHandler())
        {
            handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(_certificate.RawData);
            using var client = new HttpClient(handler);
            Assert.StartsWith("200 {\"present\":true,\"active\":false,\"reason\":\"http2_disabled\",\"hits\":0,\"misses\":0}", await GetAsync(client, on, "/headercache", HttpVersion.Version20), StringComparison.Ordinal);
        }

        Assert.Equal(2, await activity.ConnectionsAsync("passed_through", "http2_disabled", ended: 2));
        Assert.False(activity.Engaged, activity.ToString());

        // HTTP/1.1 over TLS still gets the cache.
        await ExchangeOnBothAsync(on, off, connections: 1);
        Assert.True(activity.LinesServed > 0, "nothing was served from the cache over TLS");
    }

    public void Dispose() => _certificate.Dispose();

    private static async Task<string> GetAsync(HttpClient client, SampleServer server, string target, Version version)
    {
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri($"https://localhost:{server.EndPoint.Port}{target}"))
        {
            Version = version,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        request.Headers.Host = "localhost";
        request.Headers.TryAddWithoutValidation("sec-ch-ua", "\"Edge\";v=\"1\"");
        request.Headers.TryAddWithoutValidation("User-Agent", "edge-test/1.0");
        using HttpResponseMessage response = await client.SendAsync(request);
        Assert.Equal(version, response.Version);
        return $"{(int)response.StatusCode} " + await response.Content.ReadAsStringAsync();
    }

    /// <summary>Browser-like requests, one at a time and then pipelined, on TLS connections to both servers.</summary>
    private async Task ExchangeOnBothAsync(SampleServer on, SampleServer off, int connections)
    {
        for (int connection = 0; connection < connections; connection++)
        {
            TrafficProfile.Connection traffic = TrafficProfile.Load("chrome").Connect(connection + 1);
            byte[][] requests = Enumerable.Range(0, 8).Select(traffic.Render).ToArray();
            var batches = new List<IReadOnlyList<byte[]>> { new[] { requests[0] }, new[] { requests[1] }, new[] { requests[2] }, requests[3..] };
            List<string> transcript = await Edge.AssertSameAsync(on, off, endPoint =>
                RawHttp.ExchangeAsync(endPoint, batches, RawHttp.RandomSplit(connection, 200), Tls));

            Assert.Equal(requests.Length + 1, transcript.Count);
            Assert.Equal(RawHttp.Closed, transcript[^1]);
            for (int i = 0; i < requests.Length; i++)
            {
                Differential.AssertAnswers(requests[i], transcript[i]);
            }
        }
    }

    private async Task<Stream> Tls(Stream stream)
    {
        var tls = new SslStream(stream);
        await tls.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
        {
            TargetHost = "localhost",
            ApplicationProtocols = [SslApplicationProtocol.Http11],
            RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(_certificate.RawData),
        });
        return tls;
    }

    private Task<SampleServer> StartAsync(CacheMode mode, Placement placement, params string[] settings) => placement switch
    {
        // Endpoints from settings get UseHttps() from Kestrel, after the endpoint defaults.
        Placement.UrlsSetting => SampleServer.StartAsync(mode, UseCertificateByDefault, ["--urls=https://127.0.0.1:0", .. settings]),
        Placement.KestrelEndpointsSetting => SampleServer.StartAsync(mode, UseCertificateByDefault, ["--Kestrel:Endpoints:Secure:Url=https://127.0.0.1:0", .. settings]),
        _ => SampleServer.StartAsync(mode, builder => builder.WebHost.ConfigureKestrel(kestrel =>
            kestrel.Listen(IPAddress.Loopback, 0, listen =>
            {
                // SampleApp.Build already called builder.WebHost.UseHeaderStringCache(), which reads every accepted
                // connection from Kestrel's listener, before any endpoint's UseHttps(); the endpoint keeps one layer.
                switch (placement)
                {
                    case Placement.AfterUseHttps:
                        listen.UseHttps(_certificate);
                        listen.UseHeaderStringCache();
                        break;
                    case Placement.BeforeUseHttps:
                        listen.UseHeaderStringCache();
                        listen.UseHttps(_certificate);
                        break;
                    default:
                        listen.UseHttps(_certificate);
                        break;
                }
            })), settings),
    };

    private void UseCertificateByDefault(WebApplicationBuilder builder) =>
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.ConfigureHttpsDefaults(https => https.ServerCertificate = _certificate));
}
