using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.InMemory;

/// <summary>App-visible reuse: of the header values an application reads (enumerating its request's headers) that equal,
/// byte for byte, a value of the same header in an earlier request on the same connection, how many are a string
/// instance it got for that header and value before. Connections of a profile, rendered as
/// <see cref="ConnectionBytes.Render"/> renders them, run one after another on an in-memory Kestrel whose application
/// records every request's headers.</summary>
internal static class AppVisibleReuse
{
    /// <summary>What the application saw: <see cref="Repeated"/> values equal to an earlier one of their header on their
    /// connection, <see cref="SameInstance"/> of them the earlier instance; per header name (lower case), the same two
    /// counts; and every request's headers in the order the application enumerated them, per connection.</summary>
    internal sealed record Counts(
        long Repeated,
        long SameInstance,
        IReadOnlyDictionary<string, (long Repeated, long SameInstance)> ByName,
        IReadOnlyList<IReadOnlyList<IReadOnlyList<(string Name, string Value)>>> Connections)
    {
        public double Share => Repeated == 0 ? double.NaN : SameInstance / (double)Repeated;
    }

    /// <summary>Runs <paramref name="connections"/> connections of <paramref name="length"/> requests of
    /// <paramref name="profile"/> (connection c rendered from seed c) on a new in-memory Kestrel, with HeaderCache when
    /// <paramref name="headerCache"/>; on HTTP/2, <paramref name="streams"/> requests at a time, each batch's streams
    /// open at once.</summary>
    public static Counts Measure(
        bool headerCache, bool http2, TrafficProfile profile, HpackEncoding encoder, bool shortCrumbs, int streams, int length, int connections)
    {
        var recorder = new Recorder();
        InMemoryKestrel server = http2
            ? InMemoryKestrel.StartHttp2Async(headerCache, recorder.Record).GetAwaiter().GetResult()
            : InMemoryKestrel.StartAsync(headerCache, recorder.Record).GetAwaiter().GetResult();
        try
        {
            for (int c = 0; c < connections; c++)
            {
                byte[][] requests = ConnectionBytes.Render(profile, http2, encoder, bare: false, length, seed: c, shortCrumbs);
                ConnectionBytes.RunConnectionAsync(server, http2, requests, streams).GetAwaiter().GetResult();
            }
        }
        finally
        {
            server.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }

        return recorder.Counts();
    }

    // Per connection, per header name and value: the instances the application got. Streams of one connection run at
    // once, so the record is locked.
    private sealed class Recorder
    {
        private readonly Lock _lock = new();
        private readonly Dictionary<string, Dictionary<(string Name, string Value), HashSet<string>>> _seen = new(StringComparer.Ordinal);
        private readonly Dictionary<string, List<IReadOnlyList<(string Name, string Value)>>> _requests = new(StringComparer.Ordinal);
        private readonly List<string> _order = [];
        private readonly Dictionary<string, (long Repeated, long SameInstance)> _byName = new(StringComparer.Ordinal);
        private long _repeated;
        private long _sameInstance;

        public Counts Counts()
        {
            lock (_lock)
            {
                return new(_repeated, _sameInstance, new Dictionary<string, (long, long)>(_byName), [.. _order.Select(id => _requests[id])]);
            }
        }

        public Task Record(HttpContext context)
        {
            lock (_lock)
            {
                string id = context.Connection.Id;
                if (!_seen.TryGetValue(id, out Dictionary<(string Name, string Value), HashSet<string>>? seen))
                {
                    seen = [];
                    _seen[id] = seen;
                    _requests[id] = [];
                    _order.Add(id);
                }

                var headers = new List<(string Name, string Value)>();
                foreach (KeyValuePair<string, StringValues> header in context.Request.Headers)
                {
                    foreach (string? value in header.Value)
                    {
                        if (value is null)
                        {
                            continue;
                        }

                        headers.Add((header.Key, value));
                        string name = header.Key.ToLowerInvariant();
                        if (!seen.TryGetValue((name, value), out HashSet<string>? instances))
                        {
                            seen[(name, value)] = new HashSet<string>(ReferenceEqualityComparer.Instance) { value };
                            continue;
                        }

                        int same = instances.Add(value) ? 0 : 1;
                        _repeated++;
                        _sameInstance += same;
                        _byName.TryGetValue(name, out (long Repeated, long SameInstance) counts);
                        _byName[name] = (counts.Repeated + 1, counts.SameInstance + same);
                    }
                }

                _requests[id].Add(headers);
            }

            return Task.CompletedTask;
        }
    }
}
