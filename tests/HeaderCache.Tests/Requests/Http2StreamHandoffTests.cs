using HeaderCache.Fields;
using HeaderCache.Requests;

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

        // The hand-off and its Lock; a table and a list of free arrays of its own would add a few hundred bytes.
        Assert.True(perConnection <= 128, $"{perConnection} B a connection");
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
