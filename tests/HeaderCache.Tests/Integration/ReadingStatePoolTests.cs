using System.Collections.Concurrent;
using System.Reflection;
using HeaderCache.Caching;
using HeaderCache.Connection;
using HeaderCache.InMemory;
using HeaderCache.Traffic;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Integration;

/// <summary>
/// A connection's reading state (the resolver and its caches, the compactor and its memo, the HPACK mirror) is lent by
/// its endpoint's pool and goes back, emptied, when the connection ends: a connection that reads with the state an
/// ended one read with gets none of that connection's strings, and the state holds none of them once back. Against a
/// real Kestrel: two connections one after the other send the same bytes (the chrome profile, two requests each), the
/// second reading with the first one's state, which the test reads from HeaderCache's own connection object.
/// </summary>
public sealed class ReadingStatePoolTests
{
    // The process's strings, which no client made: literals (Kestrel's names), which the runtime interns, and HeaderCache's
    // well-known names and values.
    private static readonly HashSet<object> Constants = new(WellKnownStrings.Values.All.Concat(WellKnownStrings.Names.All), ReferenceEqualityComparer.Instance);

    private static readonly FieldInfo StateField = typeof(HeaderCacheConnection).GetField("_state", BindingFlags.NonPublic | BindingFlags.Instance)!;

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task A_state_lent_again_gives_the_next_connection_none_of_the_last_ones_strings(bool http2)
    {
        var requests = new ConcurrentQueue<Request>();
        RequestDelegate app = context =>
        {
            var connection = (HeaderCacheConnection)context.Features.Get<IHeaderStringCacheFeature>()!;
            ReadingState state = StateOf(connection)!;
            string[] strings = [.. context.Request.Headers.SelectMany(h => h.Value.Prepend(h.Key)).OfType<string>()];
            requests.Enqueue(new Request(context.Connection.Id, connection, state, strings, [.. StringsIn(state).Where(IsMadeFromBytes)]));
            return Task.CompletedTask;
        };
        await using InMemoryKestrel server = http2
            ? await InMemoryKestrel.StartHttp2Async(headerCache: true, app)
            : await InMemoryKestrel.StartAsync(headerCache: true, app);
        TrafficProfile profile = TrafficProfile.Load("chrome");

        Request[] first = await RunAsync(server, profile, http2, requests);
        Request[] second = await RunAsync(server, profile, http2, requests);

        Assert.NotEqual(first[0].ConnectionId, second[0].ConnectionId);
        Assert.Same(first[0].State, second[0].State);

        // The cache was on the path: the second connection's second request got strings the state held for it.
        Assert.Contains(second[1].Strings, s => second[1].Held.Contains(s, ReferenceEqualityComparer.Instance));

        // The same bytes, yet none of the strings the state held for the first connection, or the first connection's
        // requests got.
        var firstStrings = new HashSet<object>(first.SelectMany(r => r.Strings.Where(IsMadeFromBytes).Concat(r.Held)), ReferenceEqualityComparer.Instance);
        Assert.NotEmpty(first[1].Held);
        Assert.DoesNotContain(second.SelectMany(r => r.Strings.Concat(r.Held)), s => firstStrings.Contains(s));

        // Back in the pool, the state holds no string a client's bytes made.
        Assert.DoesNotContain(StringsIn(second[0].State), IsMadeFromBytes);
    }

    private static bool IsMadeFromBytes(string s) => s.Length > 0 && string.IsInterned(s) is null && !Constants.Contains(s);

    private static async Task<Request[]> RunAsync(InMemoryKestrel server, TrafficProfile profile, bool http2, ConcurrentQueue<Request> requests)
    {
        requests.Clear();
        ConnectionBytes.PerRequest(server, profile, http2, HpackEncoding.Chrome, bare: false, length: 2, connections: 1, seed: 5);
        Request[] connection = [.. requests];
        Assert.Equal(2, connection.Length);

        await WaitUntilEndedAsync(connection[0].Connection);
        return connection;
    }

    /// <summary>The reading state <paramref name="connection"/> reads with, or <see langword="null"/> once it gave it
    /// back.</summary>
    internal static ReadingState? StateOf(HeaderCacheConnection connection) => (ReadingState?)StateField.GetValue(connection);

    /// <summary>The idle states of the pool of <paramref name="connection"/>'s endpoint.</summary>
    internal static ReadingState[] IdleStates(HeaderCacheConnection connection)
    {
        var endpoint = (HeaderCacheEndpoint)typeof(HeaderCacheConnection).GetField("_endpoint", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(connection)!;
        var idle = (ReadingState?[])typeof(ReadingStatePool).GetField("_idle", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(endpoint.States)!;
        return [.. idle.OfType<ReadingState>()];
    }

    /// <summary>Waits until <paramref name="connection"/> has given its state back, which it does when Kestrel disposes
    /// it, just after the client saw its end.</summary>
    internal static async Task WaitUntilEndedAsync(HeaderCacheConnection connection)
    {
        for (int i = 0; i < 500 && StateOf(connection) is not null; i++)
        {
            await Task.Delay(10);
        }

        Assert.Null(StateOf(connection));
    }

    // Every string reachable from the state's fields, through HeaderCache's objects and arrays.
    private static List<string> StringsIn(object root)
    {
        var found = new List<string>();
        var seen = new HashSet<object>(ReferenceEqualityComparer.Instance);
        var pending = new Stack<object>([root]);
        while (pending.TryPop(out object? item))
        {
            if (item is string s)
            {
                found.Add(s);
                continue;
            }

            Type type = item.GetType();
            if (!type.IsValueType && !seen.Add(item))
            {
                continue;
            }

            if (item is Array array)
            {
                if (!type.GetElementType()!.IsPrimitive)
                {
                    foreach (object? element in array)
                    {
                        if (element is not null)
                        {
                            pending.Push(element);
                        }
                    }
                }

                continue;
            }

            if ((type.Assembly != typeof(ReadingState).Assembly && !type.IsGenericType) || item is WellKnownStrings or HeaderCacheOptions)
            {
                continue;
            }

            for (Type? t = type; t is not null; t = t.BaseType)
            {
                foreach (FieldInfo field in t.GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly))
                {
                    if (!field.FieldType.IsPrimitive && !field.FieldType.IsPointer && field.GetValue(item) is { } value)
                    {
                        pending.Push(value);
                    }
                }
            }
        }

        return found;
    }

    // A request as its handler saw it: its connection, the state it read with, its header names and values, and the
    // strings the state held then.
    private sealed record Request(string ConnectionId, HeaderCacheConnection Connection, ReadingState State, string[] Strings, string[] Held);
}
