using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Text;
using System.Security.Cryptography.X509Certificates;
using HeaderCache.InMemory;
using HeaderCache.Requests;
using HeaderCache.Tests.Integration;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Requests;

/// <summary>
/// A request's headers stay its own until Kestrel is done with it, and reading them never changes them: the same
/// requests from .NET's HttpClient to a Kestrel with HeaderCache and to a Kestrel alone, read at every point of the
/// request's life (handler start, after the body, <c>OnStarting</c>, <c>OnCompleted</c>, hosting's end) while the
/// connection's next request starts, and read by several threads at once; both must read the same.
/// </summary>
public sealed class RequestLifetimeTests
{
    private const string EndEvent = "Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop";

    /// <summary>How the observed request ends.</summary>
    public enum Ending
    {
        Normal,
        ApplicationThrows,
        ClientCancels,
    }

    /// <summary>How the client reaches the server.</summary>
    public enum Transport
    {
        /// <summary>HTTP/1.1 over the in-memory transport.</summary>
        Http1,

        /// <summary>h2c (prior knowledge) over the in-memory transport.</summary>
        H2c,

        /// <summary>HTTP/2 negotiated by TLS, over a socket on 127.0.0.1.</summary>
        TlsH2,
    }

    [Theory]
    [InlineData(Transport.Http1, Ending.Normal)]
    [InlineData(Transport.Http1, Ending.ApplicationThrows)]
    [InlineData(Transport.Http1, Ending.ClientCancels)]
    [InlineData(Transport.H2c, Ending.Normal)]
    [InlineData(Transport.H2c, Ending.ApplicationThrows)]
    [InlineData(Transport.H2c, Ending.ClientCancels)]
    [InlineData(Transport.TlsH2, Ending.Normal)]
    [InlineData(Transport.TlsH2, Ending.ClientCancels)]
    public async Task A_request_reads_its_own_headers_at_every_point_while_the_next_one_starts(Transport transport, Ending ending)
    {
        const int Rounds = 12;
        List<string> alone = await ObserveAsync(headerCache: false, transport, ending, Rounds);
        List<string> cached = await ObserveAsync(headerCache: true, transport, ending, Rounds);

        // Kestrel alone reads each request's own values at every point it reaches.
        Assert.Equal(Rounds, alone.Count(line => line.Contains(" end ", StringComparison.Ordinal) && line.Contains(" x-user=alice-", StringComparison.Ordinal)));
        Assert.DoesNotContain(alone, line => line.Contains("bob", StringComparison.Ordinal));
        Assert.Equal(alone.Count, cached.Count);
        int first = Enumerable.Range(0, alone.Count).FirstOrDefault(i => alone[i] != cached[i], -1);
        Assert.True(first < 0, first < 0 ? null : $"point {first}:\n--- Kestrel alone:\n{alone[first]}\n--- HeaderCache:\n{cached[first]}");
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Threads_that_only_read_a_requests_headers_at_once_read_what_they_read_with_Kestrel_alone(bool http2)
    {
        const int Requests = 1600;
        (int Errors, int Wrong, int Views) alone = await ReadConcurrentlyAsync(headerCache: false, http2, Requests);
        (int Errors, int Wrong, int Views) cached = await ReadConcurrentlyAsync(headerCache: true, http2, Requests);

        Assert.Equal((0, 0, 0), alone);
        Assert.Equal(0, cached.Errors);
        Assert.Equal(0, cached.Wrong);

        // The readers read HeaderCache's view, not a collection it had copied everything into.
        Assert.True(cached.Views > Requests / 2, $"only {cached.Views} of {Requests} requests read a view");
    }

    // Each round sends /a (a custom header with this round's value) and, once /a's response has arrived, /b on the same
    // connection. /a's observations wait at hosting's end until /b's handler has started (HTTP/2) or for a moment
    // (HTTP/1.1, where /b's head waits in the transport until /a is done).
    private static async Task<List<string>> ObserveAsync(bool headerCache, Transport transport, Ending ending, int rounds)
    {
        bool http2 = transport != Transport.Http1;
        var seen = new ConcurrentQueue<string>();
        var bStarted = new SemaphoreSlim(0);
        int ends = 0;
        int views = 0;

        void Note(HttpContext context, string point)
        {
            if (context.Request.Path == "/a")
            {
                seen.Enqueue($"/a {context.Request.Query["round"]} {point} {Describe(context.Request.Headers)}");
            }
        }

        async Task App(HttpContext context)
        {
            if (context.Request.Path == "/b")
            {
                bStarted.Release();
                return;
            }

            if (context.Request.Headers is RequestHeadersView)
            {
                Interlocked.Increment(ref views);
            }

            Note(context, "start");
            context.Response.OnCompleted(() =>
            {
                Note(context, "completed-last");
                return Task.CompletedTask;
            });
            context.Response.OnStarting(() =>
            {
                Note(context, "starting");
                return Task.CompletedTask;
            });
            context.Response.OnCompleted(() =>
            {
                Note(context, "completed-first");
                return Task.CompletedTask;
            });
            await new StreamReader(context.Request.Body).ReadToEndAsync();
            Note(context, "body");
            if (context.Request.Path == "/a" && ending == Ending.ApplicationThrows)
            {
                throw new InvalidOperationException("the application fails");
            }

            if (context.Request.Path == "/a" && ending == Ending.ClientCancels)
            {
                // Kestrel over the in-memory transport does not see an HTTP/1.1 client go while nothing reads: bounded.
                await Task.Delay(TimeSpan.FromMilliseconds(300), context.RequestAborted).ContinueWith(_ => { }, TaskScheduler.Default);
                Note(context, context.RequestAborted.IsCancellationRequested ? "aborted" : "not aborted");
                return;
            }

            await context.Response.WriteAsync("ok");
        }

        await using Server server = await Server.StartAsync(headerCache, transport, App);
        var listener = server.Services.GetRequiredService<DiagnosticListener>();
        using IDisposable subscription = listener.Subscribe(
            new Observer(pair =>
            {
                if (pair.Key == EndEvent && pair.Value is HttpContext context && context.Request.Path == "/a")
                {
                    // Another request of the connection starts while this one is at its end.
                    bStarted.Wait(http2 ? TimeSpan.FromSeconds(2) : TimeSpan.FromMilliseconds(50));
                    Note(context, "end");
                    Interlocked.Increment(ref ends);
                }
            }),
            (_, _, _) => true);

        using HttpClient http = server.Client();
        for (int round = 0; round < rounds; round++)
        {
            using var cancel = new CancellationTokenSource();
            Task<HttpResponseMessage> a = http.SendAsync(Request(http2, server.BaseAddress + $"/a?round={round}", $"alice-{round % 3}", HttpMethod.Post), cancel.Token);
            if (ending == Ending.ClientCancels)
            {
                await WaitForAsync(() => seen.Any(line => line.StartsWith($"/a {round} body", StringComparison.Ordinal)), "/a's body");
                await cancel.CancelAsync();
            }

            try
            {
                (await a).Dispose();
            }
            catch (OperationCanceledException)
            {
            }

            (await http.SendAsync(Request(http2, server.BaseAddress + "/b", "bob", HttpMethod.Get))).Dispose();
            await WaitForAsync(() => Volatile.Read(ref ends) > round, "/a's end");
        }

        Assert.Equal(rounds, Volatile.Read(ref ends));
        Assert.True(!headerCache || views >= rounds / 2, $"{views} of {rounds} requests read HeaderCache's view");

        // The order in which the points of one request are noted is the request's; across rounds it is the client's. The
        // two servers of a TLS run listen on ports of their own, which Host names.
        string port = $":{new Uri(server.BaseAddress).Port}";
        return [.. seen.Select(line => line.Replace(port, ":port", StringComparison.Ordinal))];
    }

    // A handler that has four tasks read the request's headers at once (one enumerates, three count and look up), and says
    // how many failed or read other than what the handler read alone afterwards. Four requests at a time on HTTP/2, one connection.
    private static async Task<(int Errors, int Wrong, int Views)> ReadConcurrentlyAsync(bool headerCache, bool http2, int requests)
    {
        int errors = 0;
        int wrong = 0;
        int views = 0;
        string? firstError = null;

        async Task App(HttpContext context)
        {
            IHeaderDictionary headers = context.Request.Headers;
            if (headers is RequestHeadersView)
            {
                Interlocked.Increment(ref views);
            }

            // Threads of their own, let go together, so that they run at once. One thread enumerates; Kestrel alone gives no more than that: several enumerating one request's headers at
            // once can miss fields with Kestrel alone.
            using var go = new Barrier(4);
            Task<string>[] readers =
            [
                .. Enumerable.Range(0, 4).Select(n => Task.Factory.StartNew(
                    () =>
                    {
                        go.SignalAndWait(TimeSpan.FromSeconds(5));
                        return n == 0 ? Describe(headers) : ReadByName(headers);
                    },
                    CancellationToken.None,
                    TaskCreationOptions.LongRunning,
                    TaskScheduler.Default)),
            ];
            string[] read = [];
            try
            {
                read = await Task.WhenAll(readers);
            }
            catch (Exception exception)
            {
                Interlocked.Add(ref errors, readers.Count(reader => reader.IsFaulted));
                firstError ??= exception.ToString();
            }

            string afterwards = Describe(headers);
            string byName = ReadByName(headers);
            foreach (string listing in read.Where((listing, n) => listing != (n == 0 ? afterwards : byName)))
            {
                Interlocked.Increment(ref wrong);
                firstError ??= $"a reader read\n{listing}\nand the handler afterwards\n{afterwards}";
            }
            await context.Response.WriteAsync(afterwards);
        }

        await using InMemoryKestrel server = http2
            ? await InMemoryKestrel.StartHttp2Async(headerCache, App)
            : await InMemoryKestrel.StartAsync(headerCache, App);
        using HttpClient http = Client(server, http2);
        for (int i = 0; i < requests; i += 4)
        {
            Task<HttpResponseMessage>[] sends = [.. Enumerable.Range(i, 4).Select(n => http.SendAsync(Request(http2, $"http://localhost/r{n % 7}", $"user-{n % 5}", HttpMethod.Get)))];
            foreach (HttpResponseMessage response in await Task.WhenAll(sends))
            {
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                response.Dispose();
            }
        }

        Assert.True(errors + wrong == 0, $"{(headerCache ? "HeaderCache" : "Kestrel alone")}: {errors} readers failed, {wrong} read other headers; the first:\n{firstError}");
        return (errors, wrong, views);
    }

    // Every header in enumeration order with its name as stored, the count, and reads by name of a taken and an absent
    // name.
    private static string Describe(IHeaderDictionary headers)
    {
        var text = new StringBuilder();
        foreach (KeyValuePair<string, Microsoft.Extensions.Primitives.StringValues> header in headers)
        {
            text.Append(header.Key).Append('=').Append(header.Value.ToString()).Append(';');
        }

        return text.Append(" count=").Append(headers.Count)
            .Append(" x-user=").Append(headers["x-user"].ToString())
            .Append(" absent=").Append(headers["x-absent"].ToString())
            .ToString();
    }

    // Reads by name, with and without the typed accessors, the count and look-ups, as a thread other than the enumerating
    // one does.
    private static string ReadByName(IHeaderDictionary headers)
    {
        var text = new StringBuilder();
        for (int i = 0; i < 8; i++)
        {
            text.Clear()
                .Append(headers["x-user"].ToString()).Append(headers["X-Tenant"].ToString()).Append(headers["Sec-Fetch-Mode"].ToString())
                .Append(headers.AcceptLanguage.ToString()).Append(headers.Host.ToString()).Append(headers["x-absent"].ToString())
                .Append(headers.Count).Append(headers.ContainsKey("x-tenant")).Append(headers.TryGetValue("X-USER", out var user) ? user.ToString() : "-");
        }

        return text.ToString();
    }

    // One connection: HTTP/2 multiplexes on one; HTTP/1.1 keeps one alive and sends the next request after a response.
    private static HttpClient Client(InMemoryKestrel server, bool http2) =>
        new(new SocketsHttpHandler
        {
            MaxConnectionsPerServer = http2 ? int.MaxValue : 1,
            ConnectCallback = (_, _) => ValueTask.FromResult<Stream>(new RequestHeadersDifferentialTests.DuplexPipeStream(server.Connect())),
        });

    private static HttpRequestMessage Request(bool http2, string uri, string user, HttpMethod method)
    {
        var request = new HttpRequestMessage(method, uri)
        {
            Version = http2 ? HttpVersion.Version20 : HttpVersion.Version11,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        request.Headers.TryAddWithoutValidation("x-user", user);
        request.Headers.TryAddWithoutValidation("x-tenant", "blue");
        request.Headers.TryAddWithoutValidation("sec-fetch-mode", "cors");
        request.Headers.TryAddWithoutValidation("accept-language", "en-US,en;q=0.9");
        if (method == HttpMethod.Post)
        {
            request.Content = new ByteArrayContent(Encoding.ASCII.GetBytes("a small body"));
        }

        return request;
    }

    private static async Task WaitForAsync(Func<bool> condition, string what)
    {
        var deadline = Stopwatch.StartNew();
        while (!condition())
        {
            Assert.True(deadline.Elapsed < TimeSpan.FromSeconds(10), $"timed out waiting for {what}");
            await Task.Delay(1);
        }
    }

    // Kestrel with HeaderCache or alone, over the in-memory transport or, for TLS, on a socket of 127.0.0.1, and a client
    // that keeps to one connection.
    private sealed class Server : IAsyncDisposable
    {
        private readonly InMemoryKestrel? _inMemory;
        private readonly WebApplication? _tls;
        private readonly X509Certificate2? _certificate;
        private readonly bool _http2;

        private Server(InMemoryKestrel? inMemory, WebApplication? tls, X509Certificate2? certificate, bool http2, string baseAddress)
        {
            (_inMemory, _tls, _certificate, _http2, BaseAddress) = (inMemory, tls, certificate, http2, baseAddress);
        }

        public string BaseAddress { get; }

        public IServiceProvider Services => _inMemory?.Services ?? _tls!.Services;

        public static async Task<Server> StartAsync(bool headerCache, Transport transport, RequestDelegate app)
        {
            if (transport != Transport.TlsH2)
            {
                InMemoryKestrel inMemory = transport == Transport.H2c
                    ? await InMemoryKestrel.StartHttp2Async(headerCache, app)
                    : await InMemoryKestrel.StartAsync(headerCache, app);
                return new Server(inMemory, null, null, transport == Transport.H2c, "http://localhost");
            }

            X509Certificate2 certificate = TestCertificate.Create();
            WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
            builder.Logging.ClearProviders();
            builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
            {
                listen.Protocols = HttpProtocols.Http1AndHttp2;
                listen.UseHttps(certificate);
            }));
            if (headerCache)
            {
                builder.WebHost.UseHeaderStringCache();
            }

            WebApplication tls = builder.Build();
            tls.Run(app);
            await tls.StartAsync();
            int port = new Uri(tls.Urls.First()).Port;
            return new Server(null, tls, certificate, http2: true, $"https://localhost:{port}");
        }

        public HttpClient Client()
        {
            if (_inMemory is { } inMemory)
            {
                return RequestLifetimeTests.Client(inMemory, _http2);
            }

            var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 1 };
            byte[] expected = _certificate!.RawData;
            handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetRawCertData().AsSpan().SequenceEqual(expected);
            return new HttpClient(handler);
        }

        public async ValueTask DisposeAsync()
        {
            if (_inMemory is not null)
            {
                await _inMemory.DisposeAsync();
            }

            if (_tls is not null)
            {
                await _tls.DisposeAsync();
            }

            _certificate?.Dispose();
        }
    }

    private sealed class Observer(Action<KeyValuePair<string, object?>> onNext) : IObserver<KeyValuePair<string, object?>>
    {
        public void OnNext(KeyValuePair<string, object?> value) => onNext(value);

        public void OnError(Exception error)
        {
        }

        public void OnCompleted()
        {
        }
    }
}
