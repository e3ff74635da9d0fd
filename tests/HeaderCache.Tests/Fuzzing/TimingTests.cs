using System.Text;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// Every malformed or edge-case row, sent one byte per write to HeaderCache and to Kestrel alone over in-memory
/// transports through the fuzzer's comparison: the responses, and after which byte each came and the connection
/// closed, must be the same.
/// </summary>
public sealed class TimingTests(InMemoryServerPair servers) : IClassFixture<InMemoryServerPair>
{
    private readonly DifferentialFuzzer _fuzzer = servers.Fuzzer(new IdlePauses());

    public static TheoryData<string> Rows => MalformedInputTests.Names;

    [Theory]
    [MemberData(nameof(Rows))]
    public async Task Each_row_is_answered_after_the_same_byte_as_on_Kestrel_alone(string name)
    {
        byte[] row = Edge.Bytes(MalformedInputTests.Request(name) + Edge.Terminator);
        using var activity = new CacheActivity(servers.On.Services);

        // On a new connection, and after heads the cache served, where the row's lines are recalled.
        foreach (byte[] before in new[] { [], Edge.Bytes(Edge.WarmUp) })
        {
            var (on, alone) = await _fuzzer.ExchangeAsync(Bytewise(before, row));

            Assert.Equal(alone, on);
            Assert.Contains("@closed after ", alone, StringComparison.Ordinal);
        }

        await activity.AssertEngagedAsync();
    }

    [Fact]
    public async Task A_bare_CR_is_answered_at_the_byte_after_it()
    {
        string head = "GET /m HTTP/1.1\r\nHost: x\r\n" + Edge.Cacheable + "X-A: b\rc";
        byte[] bytes = Encoding.ASCII.GetBytes(head);

        var (on, alone) = await _fuzzer.ExchangeAsync(Bytewise([], bytes));

        Assert.Equal(alone, on);
        Assert.StartsWith($"@{bytes.Length}\nHTTP/1.1 400 Bad Request", on, StringComparison.Ordinal);
    }

    // The bytes before in one write, then one byte per write.
    private static FuzzCase Bytewise(byte[] before, byte[] bytes) =>
        new(0, [.. before, .. bytes], [.. before.Length > 0 ? [before.Length] : Array.Empty<int>(), .. Enumerable.Repeat(1, bytes.Length)], Idle: false);
}
