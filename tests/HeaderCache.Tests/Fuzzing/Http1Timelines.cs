using System.Collections.Concurrent;
using System.Text;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// What the HTTP/1.1 fuzz servers' application reads of every request's headers over the request's life
/// (<see cref="HeaderTimeline"/>), per connection, for the case's transcript. A middleware in front of the sample app (a
/// startup filter, so the sample itself is unchanged) starts each request's timeline, watches its body for its end,
/// and reads again as the handler returns; <see cref="HostingEnds"/> reads at hosting's end. A case's next requests are
/// often pipelined in its bytes, so while one request ends the connection already holds the next head, and often the
/// body before it.
/// </summary>
internal sealed class Http1Timelines : IStartupFilter, IDisposable
{
    private readonly ConcurrentDictionary<string, ConnectionTimelines> _connections = new();
    private HostingEnds? _ends;
    private long _started;
    private long _ended;
    private long _afterBody;

    /// <summary>Requests whose timeline started.</summary>
    public long Started => Interlocked.Read(ref _started);

    /// <summary>Requests whose timeline reached hosting's end.</summary>
    public long Ended => Interlocked.Read(ref _ended);

    /// <summary>Hosting-end events the app's listener raised, for any request.</summary>
    public long HostingEndEvents => _ends?.Count ?? 0;

    /// <summary>Requests that came on a connection after a request whose body of at least one octet the application read
    /// to its end: the next head was pipelined behind a body, or came after it.</summary>
    public long AfterABody => Interlocked.Read(ref _afterBody);

    public Action<IApplicationBuilder> Configure(Action<IApplicationBuilder> next) => app =>
    {
        app.Use(HandleAsync);
        next(app);
    };

    /// <summary>Subscribes to hosting's end of the requests of the started app of <paramref name="services"/>.</summary>
    public void Observe(IServiceProvider services) => _ends = HostingEnds.Subscribe(services, End);

    /// <summary>Starts recording the requests of connection <paramref name="connectionId"/>.</summary>
    public ConnectionTimelines Open(string connectionId) => _connections[connectionId] = new ConnectionTimelines();

    public void Close(string connectionId) => _connections.TryRemove(connectionId, out _);

    public void Dispose() => _ends?.Dispose();

    private async Task HandleAsync(HttpContext context, RequestDelegate next)
    {
        if (!_connections.TryGetValue(context.Connection.Id, out ConnectionTimelines? connection))
        {
            await next(context);
            return;
        }

        HttpRequest request = context.Request;
        HeaderTimeline timeline = HeaderTimeline.Start(context, $"{connection.Count + 1} {request.Method} {request.Path.Value}");
        if (connection.Add(timeline))
        {
            Interlocked.Increment(ref _afterBody);
        }

        Interlocked.Increment(ref _started);
        var body = new BodyEnd(request.Body, octets =>
        {
            connection.BodyRead(octets);
            timeline.Read("body-read", context);
        });
        request.Body = body;
        try
        {
            await next(context);
        }
        finally
        {
            timeline.Returning(context, "handler-return");
        }
    }

    private void End(HttpContext context)
    {
        if (HeaderTimeline.Of(context) is { } timeline)
        {
            timeline.End(context);
            Interlocked.Increment(ref _ended);
        }
    }

    /// <summary>The request body as the handler reads it, which says when a read finds its end.</summary>
    private sealed class BodyEnd(Stream inner, Action<long> atEnd) : Stream
    {
        private Action<long>? _atEnd = atEnd;
        private long _octets;

        public override bool CanRead => inner.CanRead;

        public override bool CanSeek => false;

        public override bool CanWrite => false;

        public override long Length => throw new NotSupportedException();

        public override long Position
        {
            get => throw new NotSupportedException();
            set => throw new NotSupportedException();
        }

        public override int Read(byte[] buffer, int offset, int count) => Ended(inner.Read(buffer, offset, count), count);

        public override async Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
            Ended(await inner.ReadAsync(buffer.AsMemory(offset, count), cancellationToken), count);

        public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) =>
            Ended(await inner.ReadAsync(buffer, cancellationToken), buffer.Length);

        public override void Flush()
        {
        }

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        private int Ended(int read, int asked)
        {
            _octets += read;
            if (read == 0 && asked > 0)
            {
                Interlocked.Exchange(ref _atEnd, null)?.Invoke(_octets);
            }

            return read;
        }
    }
}

/// <summary>The timelines of one connection's requests, in the order their handlers started (one at a time on HTTP/1.1).</summary>
internal sealed class ConnectionTimelines
{
    private readonly List<HeaderTimeline> _requests = [];
    private bool _bodyRead;

    public int Count
    {
        get
        {
            lock (_requests)
            {
                return _requests.Count;
            }
        }
    }

    /// <summary>Whether every request that started has reached hosting's end.</summary>
    public bool AllEnded
    {
        get
        {
            lock (_requests)
            {
                return _requests.TrueForAll(request => request.Ended);
            }
        }
    }

    /// <summary>Adds a request; true when a request before it on the connection read a body of octets to its end.</summary>
    public bool Add(HeaderTimeline timeline)
    {
        lock (_requests)
        {
            _requests.Add(timeline);
            return _bodyRead;
        }
    }

    public void BodyRead(long octets)
    {
        lock (_requests)
        {
            _bodyRead |= octets > 0;
        }
    }

    /// <summary>Waits, up to <paramref name="limit"/>, until every request has reached hosting's end; Kestrel ends them
    /// before it closes the connection, so this rarely waits at all.</summary>
    public async Task WaitAllEndedAsync(TimeSpan limit)
    {
        DateTime deadline = DateTime.UtcNow + limit;
        while (!AllEnded && DateTime.UtcNow < deadline)
        {
            await Task.Delay(1);
        }
    }

    public string Transcript()
    {
        var text = new StringBuilder();
        lock (_requests)
        {
            foreach (HeaderTimeline request in _requests)
            {
                text.Append(request.Transcript());
            }
        }

        return text.ToString();
    }
}
