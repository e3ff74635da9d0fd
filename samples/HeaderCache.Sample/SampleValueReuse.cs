using System.Collections.Concurrent;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Sample;

/// <summary>
/// For <c>/stats</c> when <c>Sample:CacheStats=true</c> (the browser benchmark reads it): of the request header values
/// the application gets that are equal (ordinal) to a value already sent on the same connection, how many are the very
/// string instance it got before. That is what HeaderCache promises the application, whichever protocol and whatever
/// part of the request path produced the string; Kestrel alone reuses only a value equal to the previous request's in
/// the same header. Also counts the requests by protocol and the connections, to show what a browser really used.
/// </summary>
/// <remarks>
/// The sets of values grow with every value new to a connection, so recording allocates; it measures its own
/// allocations (<see cref="GC.GetAllocatedBytesForCurrentThread"/> around a synchronous call) so that the benchmark
/// can take them out of the server's bytes per request.
/// </remarks>
internal sealed class SampleValueReuse
{
    private readonly ConcurrentDictionary<string, Connection> _connections = new(StringComparer.Ordinal);
    private readonly Counts _totals = new();
    private long _connectionsSeen;
    private long _allocatedBytes;

    /// <summary>Counts the header values of <paramref name="context"/>'s request against its connection's.</summary>
    public void Record(HttpContext context)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        Connection connection = ConnectionOf(context);
        string protocol = context.Request.Protocol;
        int repeated = 0;
        int sameInstance = 0;
        // HTTP/2 streams of one connection run at once: the connection's sets are shared by them.
        lock (connection)
        {
            foreach (KeyValuePair<string, StringValues> header in context.Request.Headers)
            {
                if (header.Key.StartsWith(':'))
                {
                    continue;
                }

                foreach (string? value in header.Value)
                {
                    if (value is null)
                    {
                        continue;
                    }

                    if (!connection.Values.Add(value))
                    {
                        repeated++;
                        if (connection.Instances.Contains(value))
                        {
                            sameInstance++;
                        }
                    }

                    connection.Instances.Add(value);
                }
            }

            connection.Counts.Add(protocol, repeated, sameInstance);
        }

        lock (_totals)
        {
            _totals.Add(protocol, repeated, sameInstance);
        }

        Interlocked.Add(ref _allocatedBytes, GC.GetAllocatedBytesForCurrentThread() - before);
    }

    /// <summary>
    /// The totals so far, without the connection <paramref name="context"/>'s request came on: that is the benchmark's
    /// own (its /stats requests and its polls), not the browser's.
    /// </summary>
    public Snapshot Read(HttpContext context)
    {
        var own = new Counts();
        bool asking = _connections.TryGetValue(context.Connection.Id, out Connection? connection);
        if (connection is not null)
        {
            lock (connection)
            {
                own.Add(connection.Counts);
            }
        }

        lock (_totals)
        {
            return new Snapshot(
                _totals.Repeated - own.Repeated,
                _totals.SameInstance - own.SameInstance,
                Interlocked.Read(ref _connectionsSeen) - (asking ? 1 : 0),
                _totals.Requests.ToDictionary(entry => entry.Key, entry => entry.Value - own.Requests.GetValueOrDefault(entry.Key), StringComparer.Ordinal),
                Interlocked.Read(ref _allocatedBytes));
        }
    }

    private Connection ConnectionOf(HttpContext context)
    {
        string id = context.Connection.Id;
        if (_connections.TryGetValue(id, out Connection? connection))
        {
            return connection;
        }

        connection = _connections.GetOrAdd(id, static _ => new Connection());
        if (connection.Registered)
        {
            return connection;
        }

        lock (connection)
        {
            if (!connection.Registered)
            {
                connection.Registered = true;
                Interlocked.Increment(ref _connectionsSeen);
                // The sets live as long as the connection: a closed connection's ids are not reused, so its sets would
                // only hold memory (its counts are in the totals already).
                context.Features.Get<IConnectionLifetimeFeature>()?.ConnectionClosed.Register(
                    static state =>
                    {
                        var (self, closed) = ((SampleValueReuse, string))state!;
                        self._connections.TryRemove(closed, out _);
                    },
                    (this, id));
            }
        }

        return connection;
    }

    /// <summary>What <c>/stats</c> reports as <c>valueReuse</c>.</summary>
    /// <param name="Repeated">Header values equal to one the connection sent before.</param>
    /// <param name="SameInstance">Of those, the ones the application got as a string instance it had got before.</param>
    /// <param name="Connections">Connections that sent a request.</param>
    /// <param name="Protocols">Requests by <c>HttpRequest.Protocol</c>.</param>
    /// <param name="AllocatedBytes">What counting allocated, all connections: part of <c>allocatedBytes</c>.</param>
    internal sealed record Snapshot(long Repeated, long SameInstance, long Connections, IReadOnlyDictionary<string, long> Protocols, long AllocatedBytes);

    private sealed class Connection
    {
        public HashSet<string> Values { get; } = new(StringComparer.Ordinal);

        public HashSet<string> Instances { get; } = new(ReferenceEqualityComparer.Instance);

        public Counts Counts { get; } = new();

        public bool Registered { get; set; }
    }

    private sealed class Counts
    {
        public long Repeated { get; private set; }

        public long SameInstance { get; private set; }

        public Dictionary<string, long> Requests { get; } = new(StringComparer.Ordinal);

        public void Add(string protocol, int repeated, int sameInstance)
        {
            Repeated += repeated;
            SameInstance += sameInstance;
            Requests[protocol] = Requests.GetValueOrDefault(protocol) + 1;
        }

        public void Add(Counts other)
        {
            Repeated += other.Repeated;
            SameInstance += other.SameInstance;
            foreach (KeyValuePair<string, long> requests in other.Requests)
            {
                Requests[requests.Key] = Requests.GetValueOrDefault(requests.Key) + requests.Value;
            }
        }
    }
}
