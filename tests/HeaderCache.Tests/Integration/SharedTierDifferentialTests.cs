using System.Text;
using HeaderCache.Caching;
using HeaderCache.Hosting;
using HeaderCache.Traffic;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// The shared tier switched on, over real sockets: every request and response is the same as with Kestrel alone, and
/// connections after the k-th are served strings that earlier connections made, but never for a credential.
/// </summary>
public sealed class SharedTierDifferentialTests
{
    private const int K = SharedAdmission.ConnectionsToAdmit;

    // The same on every connection: a control the tier may share, and credentials it must not.
    private const string Fixed =
        "GET /fixed HTTP/1.1\r\nHost: x\r\nUser-Agent: fixed-agent/2.0\r\nCookie: session=same-for-everyone\r\n" +
        "Authorization: Bearer same-token\r\nX-Request-ID: same-id\r\n\r\n";

    [Theory]
    [InlineData("chrome")]
    [InlineData("proxy-pool")]
    public async Task Requests_are_identical_to_Kestrel_alone_and_connections_after_the_kth_get_shared_strings_but_never_credentials(string profile)
    {
        var recorder = new HeaderRecorder();
        await using SampleServer on = await SampleServer.StartAsync(CacheMode.On, recorder.Install, "--HeaderCache:SharePopularValues=true");
        await using SampleServer alone = await SampleServer.StartAsync(CacheMode.KestrelAlone);
        TrafficProfile traffic = TrafficProfile.Load(profile);
        int connections = K + 2;
        for (int seed = 1; seed <= connections; seed++)
        {
            // Each connection: the profile's first heads, then the fixed one, one after another on one connection.
            byte[][] requests = [.. Enumerable.Range(0, traffic.Count).Select(traffic.Connect(seed).Render), Encoding.ASCII.GetBytes(Fixed)];
            List<string> transcript = await Edge.AssertSameAsync(on, alone, endPoint =>
                RawHttp.ExchangeAsync(endPoint, requests.Select(r => (IReadOnlyList<byte[]>)[r]).ToList(), RawHttp.Whole));
            Assert.Equal(requests.Length + 1, transcript.Count);
            for (int i = 0; i < requests.Length; i++)
            {
                Differential.AssertAnswers(requests[i], transcript[i]);
            }
        }

        HeaderRecorder.Request[][] byConnection = recorder.Requests.GroupBy(r => r.ConnectionId).Select(g => g.ToArray()).ToArray();
        Assert.Equal(connections, byConnection.Length);

        // Engaged: the first request of every connection after the k-th got connection k's User-Agent instance.
        string[] firstAgents = byConnection.Select(c => Value(c[0], "User-Agent")).ToArray();
        Assert.Equal(K, firstAgents.Distinct(ReferenceEqualityComparer.Instance).Count());
        Assert.All(firstAgents.Skip(K), agent => Assert.Same(firstAgents[K - 1], agent));
        Assert.True(on.App.Services.GetRequiredService<HeaderCacheRuntime>().SharedStrings.Values.Count > 0);

        // The fixed request: its User-Agent is shared from connection k + 1 on; its credentials and id never are.
        HeaderRecorder.Request[] fixedRequests = byConnection.Select(c => c[^1]).ToArray();
        Assert.Equal(K, fixedRequests.Select(r => Value(r, "User-Agent")).Distinct(ReferenceEqualityComparer.Instance).Count());
        foreach (string name in new[] { "Cookie", "Authorization", "X-Request-ID" })
        {
            Assert.Equal(connections, fixedRequests.Select(r => Value(r, name)).Distinct(ReferenceEqualityComparer.Instance).Count());
        }
    }

    private static string Value(HeaderRecorder.Request request, string name) =>
        request.Headers.Single(h => string.Equals(h.Name, name, StringComparison.OrdinalIgnoreCase)).Value;
}
