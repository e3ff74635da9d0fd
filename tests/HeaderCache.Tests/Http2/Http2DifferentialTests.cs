using System.Net;
using System.Net.Http.Headers;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Http2;

/// <summary>The same HTTP/2 requests to Kestrel alone and to Kestrel with HeaderCache (h2c with prior knowledge): the
/// application sees the same headers, in the same order and casing, and the client gets the same answers, while the
/// cache serves fields.</summary>
[Collection(Http2ServerPairGroup.Name)]
public sealed class Http2DifferentialTests(Http2ServerPair servers)
{
    [Fact]
    public async Task HttpClient_requests_on_one_connection_see_what_Kestrel_alone_gives()
    {
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, endPoint => HttpClientAsync(endPoint, requests: 6, parallel: 1));
        Assert.Equal(6, transcript.Count);
        Assert.All(transcript, answer => Assert.StartsWith("200 ", answer, StringComparison.Ordinal));
    }

    [Fact]
    public async Task Concurrent_streams_each_get_their_own_headers()
    {
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, endPoint => HttpClientAsync(endPoint, requests: 40, parallel: 8));
        Assert.Equal(40, transcript.Count);
    }

    [Fact]
    public async Task A_block_over_Kestrels_header_count_gets_the_same_431()
    {
        List<string> transcript = await Edge.AssertSameAsync(servers.On, servers.Alone, async endPoint =>
        {
            using var client = Client();
            var answers = new List<string>();
            foreach (int extra in (int[])[0, 120, 0])
            {
                using HttpRequestMessage request = Request(endPoint, "/count", 0);
                for (int i = 0; i < extra; i++)
                {
                    request.Headers.TryAddWithoutValidation($"x-extra-{i}", "v");
                }

                answers.Add(await SendAsync(client, request));
            }

            return answers;
        });
        Assert.StartsWith("431 ", transcript[1], StringComparison.Ordinal);
    }

    /// <summary>Requests with a browser's and an API client's headers, several values of one name, a cookie, and a body:
    /// the status, the echo of what the application saw, and the response headers that do not vary by time.</summary>
    internal static async Task<List<string>> HttpClientAsync(IPEndPoint endPoint, int requests, int parallel)
    {
        using HttpClient client = Client();
        var answers = new string[requests];
        for (int start = 0; start < requests; start += parallel)
        {
            var batch = new List<Task>();
            for (int i = start; i < Math.Min(requests, start + parallel); i++)
            {
                int index = i;
                batch.Add(Task.Run(async () =>
                {
                    using HttpRequestMessage request = Request(endPoint, $"/h2/{index}?q={index % 3}", index);
                    answers[index] = await SendAsync(client, request);
                }));
            }

            await Task.WhenAll(batch);
        }

        return [.. answers];
    }

    internal static HttpClient Client() => new(new SocketsHttpHandler { EnableMultipleHttp2Connections = false });

    internal static HttpRequestMessage Request(IPEndPoint endPoint, string target, int index)
    {
        var request = new HttpRequestMessage(index % 4 == 3 ? HttpMethod.Post : HttpMethod.Get, new Uri($"http://{endPoint}{target}"))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        HttpRequestHeaders headers = request.Headers;
        headers.Host = "localhost";
        headers.TryAddWithoutValidation("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36");
        headers.TryAddWithoutValidation("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8");
        headers.TryAddWithoutValidation("Accept-Language", "en-US,en;q=0.9");
        headers.TryAddWithoutValidation("sec-ch-ua", "\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"");
        headers.TryAddWithoutValidation("sec-fetch-mode", index % 2 == 0 ? "navigate" : "cors");
        headers.TryAddWithoutValidation("x-request-index", index.ToString(System.Globalization.CultureInfo.InvariantCulture));
        headers.TryAddWithoutValidation("Cookie", "session=abc123; theme=dark");
        headers.TryAddWithoutValidation("Cache-Control", "no-cache");
        headers.TryAddWithoutValidation("traceparent", $"00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033{index % 100:D2}-01");
        if (request.Method == HttpMethod.Post)
        {
            request.Content = new StringContent("{\"n\":" + index + "}", System.Text.Encoding.UTF8, "application/json");
        }

        return request;
    }

    internal static async Task<string> SendAsync(HttpClient client, HttpRequestMessage request)
    {
        using HttpResponseMessage response = await client.SendAsync(request);
        Assert.Equal(HttpVersion.Version20, response.Version);
        string body = await response.Content.ReadAsStringAsync();
        return $"{(int)response.StatusCode} {response.Content.Headers.ContentType}\n{body}";
    }
}
