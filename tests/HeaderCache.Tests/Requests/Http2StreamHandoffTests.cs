using System.IO.Pipelines;
using HeaderCache.Fields;
using HeaderCache.H2Client;
using HeaderCache.InMemory;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace HeaderCache.Tests.Requests;

public sealed class Http2StreamHandoffTests
{
    /// <summary>A connection's hand-off takes its table and its list of free arrays from the shared pool and gives them
    /// back when the connection ends, so that a new connection allocates only the hand-off itself and its lock.</summary>
    [Fact]
    public void A_connections_table_and_free_arrays_go_back_to_the_shared_pool_when_it_ends()
    {
        Cycle();
        long before = GC.GetAllocatedBytesForCurrentThread();
        const int Connections = 1000;
        for (int i = 0; i < Connections; i++)
        {
            Cycle();
        }

        long perConnection = (GC.GetAllocatedBytesForCurrentThread() - before) / Connections;

        // The hand-off and its Lock (136 B); a table, a list of free arrays, of offers or of views of its own would add
        // a few hundred bytes.
        Assert.True(perConnection <= 136, $"{perConnection} B a connection");
    }

    [Fact]
    public void After_the_end_no_entry_is_left()
    {
        var handoff = new Http2StreamHandoff(capacity: 8, pooledArrays: 4);
        TakenHeader[] lines = handoff.Rent(3);
        Assert.True(handoff.TryAdd(1, new ArraySegment<TakenHeader>(lines, 0, 3)));
        handoff.Clear();

        Assert.Null(handoff.Take(1).Array);
        Assert.True(handoff.HasRoom);
    }

    [Theory]
    [InlineData(true, false)]
    [InlineData(false, false)]
    [InlineData(true, true)]
    public void A_views_last_fields_stay_while_hosting_has_not_ended_the_request_and_go_back_once_it_has_and_the_connection_idles_or_ends(bool requestEndsFirst, bool idles)
    {
        var handoff = new Http2StreamHandoff(capacity: 8, pooledArrays: 4);
        TakenHeader[] lines = handoff.Rent(1);
        lines[0] = new TakenHeader { Known = -1, NameSlot = -1, Name = "x-taken", Value = "1", NameLength = 7 };
        Assert.True(handoff.TryAdd(1, new ArraySegment<TakenHeader>(lines, 0, 1)));
        var request = new HttpRequestFeature { Headers = new HeaderDictionary { ["x-kept"] = "2" } };
        var stream = new FeatureCollection();
        stream.Set<IHttpRequestFeature>(request);
        stream.Set<IHttp2StreamIdFeature>(new StreamIdFeature(1));

        ConnectionHeaders.IRequestEnd? end = handoff.Attach(stream);
        Assert.NotNull(end);
        IHeaderDictionary view = request.Headers;
        Assert.Equal(["x-kept: 2", "x-taken: 1"], view.Select(h => $"{h.Key}: {h.Value}"));

        if (requestEndsFirst)
        {
            end.RequestEnded();
            Assert.Equal("1", view["x-taken"]);
            if (idles)
            {
                handoff.Trim();
            }
            else
            {
                handoff.Clear();
            }
        }
        else
        {
            // The connection idles, then ends, with the request still running: its fields stay until hosting ends it.
            handoff.Trim();
            handoff.Clear();
            Assert.Equal("1", view["x-taken"]);
            end.RequestEnded();
        }

        // The array went back: the view has no fields of its own left.
        Assert.Equal(["x-kept: 2"], view.Select(h => $"{h.Key}: {h.Value}"));
    }

    /// <summary>Over a real Kestrel and hosting: the array the view of a stream object's last request holds goes back
    /// once hosting has ended that request (found again from hosting's context at <c>DisposeContext</c>) and the
    /// connection has ended; while the connection lives it stays.</summary>
    [Fact]
    public async Task Over_Kestrel_the_last_views_array_stays_while_the_connection_lives_and_goes_back_when_it_ends()
    {
        var views = new List<IHeaderDictionary>();
        await using InMemoryKestrel server = await InMemoryKestrel.StartHttp2Async(headerCache: true, context =>
        {
            lock (views)
            {
                views.Add(context.Request.Headers);
            }

            return Task.CompletedTask;
        });

        InMemoryClient client = server.Connect();
        Http2Exchange exchange = await Http2Exchange.OpenAsync(client);
        for (int i = 0; i < 3; i++)
        {
            var frame = new FrameWriter();
            frame.Headers(1, new HeaderBlock().Request("GET", "/").Without("x-user", "alice").ToArray(), endStream: true, endHeaders: true);
            await exchange.RoundTripAsync(frame.Bytes.ToArray());
        }

        // Each request reads its x-user through the stream object's view.
        Http2StreamHeaders view = Assert.IsType<Http2StreamHeaders>(views[^1]);
        Assert.Equal("alice", view["x-user"]);
        await WaitAsync(() => view.RequestOver);
        Assert.NotNull(view.Held.Array);

        await client.CompleteAsync();
        while (true)
        {
            ReadResult read = await client.Input.ReadAsync();
            client.Input.AdvanceTo(read.Buffer.End);
            if (read.IsCompleted)
            {
                break;
            }
        }

        await WaitAsync(() => view.Held.Array is null);
        Assert.Null(view.Held.Array);
    }

    private static async Task WaitAsync(Func<bool> done)
    {
        for (int waited = 0; !done() && waited < 5_000; waited += 10)
        {
            await Task.Delay(10);
        }
    }

    private sealed class StreamIdFeature(int id) : IHttp2StreamIdFeature
    {
        public int StreamId => id;
    }

    private static void Cycle()
    {
        var handoff = new Http2StreamHandoff(capacity: 200, pooledArrays: 100);
        TakenHeader[] lines = handoff.Rent(12);
        Assert.True(handoff.TryAdd(1, new ArraySegment<TakenHeader>(lines, 0, 12)));
        ArraySegment<TakenHeader> taken = handoff.Take(1);
        handoff.Return(taken.Array!);
        handoff.Clear();
    }
}
