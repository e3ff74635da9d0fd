using System.Collections.Concurrent;
using System.Net;
using HeaderCache.InMemory;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Requests;

/// <summary>
/// Values longer than <see cref="HeaderCacheOptions.MaxValueLength"/> within <see cref="HeaderCacheOptions.LongValueBudget"/>
/// (a 1 KB bearer token, a 1.5 KB cookie, a 1 KB value of a name Kestrel has no field for) come from the connection's
/// cache: the same requests from .NET's HttpClient to a Kestrel with HeaderCache and to a Kestrel alone show the
/// application the same headers (names, casing, values, order), and with HeaderCache a value sent again is the string the
/// connection got before, also after another value in between. A value longer than the budget is left as Kestrel alone
/// leaves it: a new string, or Kestrel's previous one, on the same requests as without HeaderCache.
/// </summary>
public sealed class LongValueCacheTests
{
    private static readonly string TokenA = "Bearer " + Fill('a', 1024 - "Bearer ".Length);
    private static readonly string TokenB = "Bearer " + Fill('b', 1024 - "Bearer ".Length);
    private static readonly string Cookie = string.Join("; ", Enumerable.Range(0, 24).Select(i => $"c{i:D2}={Fill((char)('a' + (i % 26)), 58)}"));
    private static readonly string ApiKey = Fill('k', 1024);

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Long_values_within_the_budget_come_back_as_the_same_string(bool http2)
    {
        string[] tokens = [TokenA, TokenA, TokenB, TokenA, TokenB];
        List<Seen> alone = await RunAsync(headerCache: false, http2, budget: null, tokens);
        List<Seen> cached = await RunAsync(headerCache: true, http2, budget: null, tokens);

        AssertSameHeaders(alone, cached);
        for (int i = 1; i < tokens.Length; i++)
        {
            int first = Array.IndexOf(tokens, tokens[i]);
            Assert.Same(cached[first].Authorization, cached[i].Authorization);
            Assert.Same(cached[0].Cookie, cached[i].Cookie);
            Assert.Same(cached[0].ApiKey, cached[i].ApiKey);
        }
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task A_value_longer_than_the_budget_is_left_as_Kestrel_alone_leaves_it(bool http2)
    {
        // The token, the cookie and the key are each longer than the budget.
        string[] tokens = [TokenA, TokenA, TokenB, TokenA, TokenA];
        List<Seen> alone = await RunAsync(headerCache: false, http2, budget: 1000, tokens);
        List<Seen> cached = await RunAsync(headerCache: true, http2, budget: 1000, tokens);

        AssertSameHeaders(alone, cached);
        for (int i = 1; i < tokens.Length; i++)
        {
            Assert.Equal(ReferenceEquals(alone[i - 1].Authorization, alone[i].Authorization), ReferenceEquals(cached[i - 1].Authorization, cached[i].Authorization));
            Assert.Equal(ReferenceEquals(alone[i - 1].Cookie, alone[i].Cookie), ReferenceEquals(cached[i - 1].Cookie, cached[i].Cookie));
            Assert.NotSame(cached[i - 1].ApiKey, cached[i].ApiKey);
        }

        Assert.NotSame(cached[0].Authorization, cached[3].Authorization);
    }

    private static void AssertSameHeaders(List<Seen> alone, List<Seen> cached)
    {
        Assert.Equal(alone.Count, cached.Count);
        for (int i = 0; i < alone.Count; i++)
        {
            Assert.Equal(alone[i].Headers, cached[i].Headers);
        }
    }

    private static async Task<List<Seen>> RunAsync(bool headerCache, bool http2, int? budget, string[] tokens)
    {
        var seen = new ConcurrentQueue<Seen>();
        var connections = new ConcurrentDictionary<IHeaderStringCacheFeature, bool>(ReferenceEqualityComparer.Instance);

        Task App(HttpContext context)
        {
            IHeaderDictionary headers = context.Request.Headers;
            seen.Enqueue(new Seen(
                [.. headers.SelectMany(header => header.Value.Select(value => $"{header.Key}: {value}"))],
                headers.Authorization,
                headers.Cookie,
                headers["x-api-key"]));
            if (context.Features.Get<IHeaderStringCacheFeature>() is { IsActive: true } cache)
            {
                connections.TryAdd(cache, true);
            }

            return Task.CompletedTask;
        }

        void Configure(WebApplicationBuilder builder)
        {
            if (budget is int bytes)
            {
                builder.Configuration["HeaderCache:LongValueBudget"] = bytes.ToString(System.Globalization.CultureInfo.InvariantCulture);
            }
        }

        await using InMemoryKestrel server = http2
            ? await InMemoryKestrel.StartHttp2Async(headerCache, App, Configure)
            : await InMemoryKestrel.StartAsync(headerCache, App, Configure);
        using var http = new HttpClient(new SocketsHttpHandler
        {
            UseCookies = false,
            MaxConnectionsPerServer = 1,
            ConnectCallback = (_, _) => ValueTask.FromResult<Stream>(new RequestHeadersDifferentialTests.DuplexPipeStream(server.Connect())),
        });

        foreach (string token in tokens)
        {
            using var request = new HttpRequestMessage(HttpMethod.Get, "http://localhost/api/orders")
            {
                Version = http2 ? HttpVersion.Version20 : HttpVersion.Version11,
                VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            };
            request.Headers.TryAddWithoutValidation("Authorization", token);
            request.Headers.TryAddWithoutValidation("Cookie", Cookie);
            request.Headers.TryAddWithoutValidation("X-Api-Key", ApiKey);
            request.Headers.TryAddWithoutValidation("x-tenant", "blue");
            using HttpResponseMessage response = await http.SendAsync(request);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        }

        // One connection, and with HeaderCache it was served from the cache.
        Assert.Equal(headerCache ? 1 : 0, connections.Count);
        Assert.True(!headerCache || connections.Keys.Single().Hits > 0);
        return [.. seen];
    }

    private static string Fill(char c, int length) => string.Create(length, c, static (chars, c) =>
    {
        for (int i = 0; i < chars.Length; i++)
        {
            chars[i] = (char)(c + (i % 7));
        }
    });

    private sealed record Seen(string[] Headers, string? Authorization, string? Cookie, string? ApiKey);
}
