using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using Grpc.Core;
using Grpc.Net.Client;
using HeaderCache.Traffic;

namespace HeaderCache.Clients;

/// <summary>
/// Real .NET clients against the sample server over h2c (prior knowledge), one connection, sequential requests, for
/// benchmarks/clients/compare.sh. Usage:
/// <code>
/// HeaderCache.Clients run   PROFILE URL [--requests N] [--warmup N]
/// HeaderCache.Clients trace PROFILE URL
/// </code>
/// <c>run</c> warms up, prints <c>warm</c>, waits for a line on standard input, sends the measured requests, prints
/// <c>done REQUESTS ERRORS MILLISECONDS</c>, waits for another line, then prints <c>headercache JSON</c>: the sample's
/// <c>/headercache</c> read on the same connection. <c>trace</c> sends one request of the profile to a server with
/// <c>Sample__Echo=true</c> and prints what the server saw (for grpc, on a path the sample's gRPC handler leaves to the
/// echo). Profiles:
/// <list type="bullet">
/// <item><c>httpclient-chrome</c>: HttpClient (SocketsHttpHandler) sending traffic/chrome.http's requests, minus Host and
/// the connection-specific lines;</item>
/// <item><c>httpclient-chrome-bare</c>: the same methods and paths, no header (pseudo headers only);</item>
/// <item><c>grpc</c>: grpc-dotnet unary calls of <c>bench.Echo/Call</c>, a 32-byte message, with metadata and a
/// deadline;</item>
/// <item><c>grpc-static</c>: the same with one x-request-id on every call, so that every field repeats;</item>
/// <item><c>grpc-jwt</c>: <c>grpc</c> with traffic/api.http's 1.2 KB bearer JWT as the per-call token, longer than
/// <c>MaxValueLength</c>;</item>
/// <item><c>grpc-bare</c>: HttpClient POSTing the same bytes to the same path, pseudo headers only;</item>
/// <item><c>grpc-kept</c>: the same with the one field of the gRPC call HeaderCache never takes (<c>te: trailers</c>),
/// which Kestrel validates itself.</item>
/// </list>
/// </summary>
internal static class Program
{
    private const string GrpcPath = "/bench.Echo/Call";

    // A fixed bearer token shaped like a JWT (header.payload.signature, base64url), as a service would send on every call.
    private const string Token =
        "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJiZW5jaC1jbGllbnQiLCJ0ZW5hbnQiOiJhY21lIiwic2NvcGUiOiJlY2hvIiwiaWF0IjoxNzMyNzAwMDAwfQ.kX3vQ8m2tPzR7yN1cW5bH9dL0fJ4sA6gE2uY8iO3qTw";

    // The names HTTP/2 forbids (RFC 9113 8.2.2) or that HttpClient makes itself (Host becomes :authority).
    private static readonly HashSet<string> Dropped = new(StringComparer.OrdinalIgnoreCase)
    {
        "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "content-length",
    };

    private static readonly Method<byte[], byte[]> EchoCall = NewMethod("bench.Echo");

    // The trace's gRPC call: a service the sample's gRPC handler does not answer, so that its echo describes the request.
    private static readonly Method<byte[], byte[]> TraceCall = NewMethod("bench.Trace");

    private static readonly byte[] Payload = [.. Enumerable.Range(0, 32).Select(i => (byte)('a' + (i % 26)))];

    public static async Task<int> Main(string[] args)
    {
        if (args.Length < 3 || args[0] is not ("run" or "trace"))
        {
            await Console.Error.WriteLineAsync("usage: HeaderCache.Clients run|trace PROFILE URL [--requests N] [--warmup N]").ConfigureAwait(false);
            return 2;
        }

        int requests = Option(args, "--requests", 20_000);
        int warmup = Option(args, "--warmup", 4_000);
        using var handler = new SocketsHttpHandler
        {
            UseCookies = false,
            UseProxy = false,
            AllowAutoRedirect = false,
            AutomaticDecompression = DecompressionMethods.None,
            MaxConnectionsPerServer = 1,
            EnableMultipleHttp2Connections = false,
            PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
        };
        var baseUri = new Uri(args[2]);
        using var http = new HttpClient(handler, disposeHandler: false) { BaseAddress = baseUri };
        // Only the grpc profile has a channel: grpc-dotnet gives the handler a connect callback of its own (its load
        // balancer's), after which the handler opens no connection for plain HttpClient requests; the one it opened for
        // the calls serves them (the /headercache read below). The trace reads the echo's answer to the gRPC call on its
        // way to grpc-dotnet, which refuses it (text/plain).
        using var trace = new TraceHandler(handler);
        GrpcChannel? channel = args[1] is "grpc" or "grpc-static" or "grpc-jwt"
            ? GrpcChannel.ForAddress(baseUri, new GrpcChannelOptions { HttpHandler = args[0] == "trace" ? trace : handler, DisposeHttpClient = false })
            : null;
        using GrpcChannel? disposed = channel;
        Client client = Client.For(args[1], http, channel);

        if (args[0] == "trace")
        {
            Console.WriteLine(await client.TraceAsync().ConfigureAwait(false));
            if (trace.Text is not null)
            {
                Console.WriteLine(trace.Text);
            }

            return 0;
        }

        // Warm-up in two halves with a pause between, so that the tiered JIT has compiled what a request runs (its
        // background compilation waits for a quiet 100 ms) before the measurement.
        int errors = await client.SendAsync(0, warmup / 2).ConfigureAwait(false);
        await Task.Delay(500).ConfigureAwait(false);
        errors += await client.SendAsync(warmup / 2, warmup - (warmup / 2)).ConfigureAwait(false);
        await Task.Delay(500).ConfigureAwait(false);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"warm {warmup} {errors}"));
        Console.ReadLine();

        long start = Environment.TickCount64;
        errors = await client.SendAsync(warmup, requests).ConfigureAwait(false);
        long elapsed = Environment.TickCount64 - start;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"done {requests} {errors} {elapsed}"));
        Console.ReadLine();

        // What HeaderCache did on this very connection (the sample's /headercache; "present":false under Kestrel alone).
        using var state = new HttpRequestMessage(HttpMethod.Get, "/headercache") { Version = HttpVersion.Version20, VersionPolicy = HttpVersionPolicy.RequestVersionExact };
        using HttpResponseMessage response = await http.SendAsync(state).ConfigureAwait(false);
        Console.WriteLine("headercache " + await response.Content.ReadAsStringAsync().ConfigureAwait(false));
        return errors == 0 ? 0 : 1;
    }

    private static int Option(string[] args, string name, int fallback)
    {
        int at = Array.IndexOf(args, name);
        return at >= 0 && at + 1 < args.Length ? int.Parse(args[at + 1], CultureInfo.InvariantCulture) : fallback;
    }

    private static Method<byte[], byte[]> NewMethod(string service)
    {
        Marshaller<byte[]> bytes = Marshallers.Create(static b => b, static b => b);
        return new Method<byte[], byte[]>(MethodType.Unary, service, "Call", bytes, bytes);
    }

    private static HttpRequestMessage Http2Request(HttpMethod method, string path) =>
        new(method, new Uri(path, UriKind.Relative)) { Version = HttpVersion.Version20, VersionPolicy = HttpVersionPolicy.RequestVersionExact };

    // traffic/api.http's bearer token (the same in every head), as an API client sends it on every call.
    private static string ApiToken()
    {
        const string prefix = "Authorization: ";
        string line = TrafficProfile.Load("api").Heads[0].Split('\n').Single(l => l.StartsWith(prefix, StringComparison.Ordinal));
        return line[prefix.Length..];
    }

    /// <summary>One profile's requests: request <c>i</c> of the connection, sent and awaited in turn.</summary>
    private abstract class Client
    {
        public static Client For(string profile, HttpClient http, GrpcChannel? channel) => profile switch
        {
            "httpclient-chrome" => new ProfileClient(http, TrafficProfile.Load("chrome"), bare: false),
            "httpclient-chrome-bare" => new ProfileClient(http, TrafficProfile.Load("chrome"), bare: true),
            "grpc" => new GrpcClient(channel!.CreateCallInvoker(), freshId: true, Token),
            "grpc-static" => new GrpcClient(channel!.CreateCallInvoker(), freshId: false, Token),
            "grpc-jwt" => new GrpcClient(channel!.CreateCallInvoker(), freshId: true, ApiToken()),
            "grpc-bare" => new PostClient(http, te: false),
            "grpc-kept" => new PostClient(http, te: true),
            _ => throw new ArgumentException($"unknown profile {profile}", nameof(profile)),
        };

        /// <summary>Sends requests <paramref name="first"/> to <paramref name="first"/> + <paramref name="count"/> - 1;
        /// returns how many failed.</summary>
        public async Task<int> SendAsync(int first, int count)
        {
            int errors = 0;
            for (int i = first; i < first + count; i++)
            {
                if (!await SendOneAsync(i).ConfigureAwait(false))
                {
                    errors++;
                }
            }

            return errors;
        }

        protected abstract Task<bool> SendOneAsync(int i);

        public abstract Task<string> TraceAsync();
    }

    /// <summary>HttpClient replaying a traffic profile (chrome): method, path and header lines of request i.</summary>
    private sealed class ProfileClient(HttpClient http, TrafficProfile profile, bool bare) : Client
    {
        private readonly TrafficProfile.Connection _connection = profile.Connect(seed: 1);

        protected override async Task<bool> SendOneAsync(int i)
        {
            using HttpRequestMessage request = Render(i);
            using HttpResponseMessage response = await http.SendAsync(request).ConfigureAwait(false);
            return response.IsSuccessStatusCode && response.Version == HttpVersion.Version20;
        }

        public override async Task<string> TraceAsync()
        {
            using HttpRequestMessage request = Render(0);
            using HttpResponseMessage response = await http.SendAsync(request).ConfigureAwait(false);
            return await response.Content.ReadAsStringAsync().ConfigureAwait(false);
        }

        private HttpRequestMessage Render(int i)
        {
            string[] lines = _connection.RenderText(i).Split("\r\n", StringSplitOptions.RemoveEmptyEntries);
            string[] requestLine = lines[0].Split(' ');
            HttpRequestMessage request = Http2Request(new HttpMethod(requestLine[0]), requestLine[1]);
            if (!bare)
            {
                foreach (string line in lines.AsSpan(1))
                {
                    int colon = line.IndexOf(':', StringComparison.Ordinal);
                    string name = line[..colon].ToLowerInvariant();
                    if (!Dropped.Contains(name) && !request.Headers.TryAddWithoutValidation(name, line[(colon + 1)..].Trim()))
                    {
                        throw new InvalidOperationException($"HttpClient refused the request header {name}");
                    }
                }
            }

            return request;
        }
    }

    /// <summary>grpc-dotnet's unary call on one channel, with a service's usual metadata.</summary>
    private sealed class GrpcClient(CallInvoker invoker, bool freshId, string token) : Client
    {
        // grpc-static's x-request-id: the same length as a fresh one, the same on every call.
        private const string StaticId = "5f0c6d1e-2b7a-4c39-8e41-9a6b3d2f7c10";

        protected override async Task<bool> SendOneAsync(int i)
        {
            byte[] reply = await invoker.AsyncUnaryCall(EchoCall, null, Options(), Payload).ResponseAsync.ConfigureAwait(false);
            return reply.Length == Payload.Length;
        }

        public override async Task<string> TraceAsync()
        {
            try
            {
                await invoker.AsyncUnaryCall(TraceCall, null, Options(), Payload).ResponseAsync.ConfigureAwait(false);
                return "unexpected: the trace call succeeded";
            }
            catch (RpcException e)
            {
                // The sample's echo answered text/plain, which grpc-dotnet refuses; Main prints TraceHandler's copy.
                return "grpc-dotnet: " + e.Status.Detail;
            }
        }

        private CallOptions Options() => new(
            headers: new Metadata
            {
                { "authorization", token },
                { "x-request-id", freshId ? Guid.NewGuid().ToString("D") : StaticId },
                { "x-tenant", "acme" },
            },
            deadline: DateTime.UtcNow.AddSeconds(30));
    }

    /// <summary>HttpClient POSTing the gRPC call's bytes (frame prefix and message) to its path: no header but the
    /// pseudo headers, or <c>te: trailers</c> too.</summary>
    private sealed class PostClient(HttpClient http, bool te) : Client
    {
        private static readonly byte[] Frame = [0, 0, 0, 0, (byte)Payload.Length, .. Payload];

        protected override async Task<bool> SendOneAsync(int i)
        {
            using HttpRequestMessage request = Request(GrpcPath);
            using HttpResponseMessage response = await http.SendAsync(request).ConfigureAwait(false);
            byte[] body = await response.Content.ReadAsByteArrayAsync().ConfigureAwait(false);
            return response.IsSuccessStatusCode && body.Length == Frame.Length;
        }

        public override async Task<string> TraceAsync()
        {
            using HttpRequestMessage request = Request("/bench.Trace/Call");
            using HttpResponseMessage response = await http.SendAsync(request).ConfigureAwait(false);
            return await response.Content.ReadAsStringAsync().ConfigureAwait(false);
        }

        private HttpRequestMessage Request(string path)
        {
            HttpRequestMessage request = Http2Request(HttpMethod.Post, path);
            request.Content = new UnsizedContent(Frame);
            if (te)
            {
                request.Headers.TE.ParseAdd("trailers");
            }

            return request;
        }
    }

    /// <summary>A body whose length HttpClient does not know beforehand, so that it sends no content-length (as
    /// grpc-dotnet's own unary content does not).</summary>
    private sealed class UnsizedContent(byte[] bytes) : HttpContent
    {
        protected override Task SerializeToStreamAsync(Stream stream, TransportContext? context) => stream.WriteAsync(bytes).AsTask();

        protected override bool TryComputeLength(out long length)
        {
            length = 0;
            return false;
        }
    }

    /// <summary>Keeps the text of a text/plain answer (the sample's echo) that passes through it.</summary>
    private sealed class TraceHandler(HttpMessageHandler inner) : DelegatingHandler(inner)
    {
        public string? Text { get; private set; }

        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            HttpResponseMessage response = await base.SendAsync(request, cancellationToken).ConfigureAwait(false);
            if (response.Content.Headers.ContentType?.MediaType == "text/plain")
            {
                await response.Content.LoadIntoBufferAsync(cancellationToken).ConfigureAwait(false);
                Text = await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false);
            }

            return response;
        }
    }
}
