using System.Text;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// Every malformed or edge-case row, sent one byte per write to HeaderCache and to Kestrel alone over in-memory
/// transports: the responses, and after which byte each came and the connection closed, must be the same.
/// </summary>
public sealed class TimingTests(InMemoryServerPair servers) : IClassFixture<InMemoryServerPair>
{
    public static TheoryData<string> Rows => MalformedInputTests.Names;

    [Theory]
    [MemberData(nameof(Rows))]
    public async Task Each_row_is_answered_after_the_same_byte_as_on_Kestrel_alone(string name)
    {
        byte[] bytes = Edge.Bytes(MalformedInputTests.Request(name) + Edge.Terminator);
        int[] bytewise = Enumerable.Repeat(1, bytes.Length).ToArray();
        using var activity = new CacheActivity(servers.On.Services);

        string alone = await servers.Alone.ExchangeAsync(bytes, bytewise);
        string on = await servers.On.ExchangeAsync(bytes, bytewise);

        Assert.Equal(alone, on);
        Assert.Contains("@closed after ", alone, StringComparison.Ordinal);
        await activity.AssertEngagedAsync();
    }

    [Fact]
    public async Task A_bare_CR_is_answered_at_the_byte_after_it()
    {
        string head = "GET /m HTTP/1.1\r\nHost: x\r\n" + Edge.Cacheable + "X-A: b\rc";
        byte[] bytes = Encoding.ASCII.GetBytes(head);
        int[] bytewise = Enumerable.Repeat(1, bytes.Length).ToArray();

        string on = await servers.On.ExchangeAsync(bytes, bytewise);

        Assert.Equal(await servers.Alone.ExchangeAsync(bytes, bytewise), on);
        Assert.StartsWith($"@{bytes.Length}\nHTTP/1.1 400 Bad Request", on, StringComparison.Ordinal);
    }
}
