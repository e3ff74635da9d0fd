using System.Net;
using System.Text.RegularExpressions;
using HeaderCache.Connection;
using HeaderCache.Http1;
using HeaderCache.InMemory;
using HeaderCache.Tests.Integration;
using HeaderCache.Transport;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>HTTP/1.1's part of the <see cref="DifferentialFuzzer"/>, and the two transports it runs over.</summary>
internal static partial class Http1Fuzzing
{
    // Over sockets the client cannot tell when the server has acted on its bytes: it half-closes after this long quiet.
    private static readonly TimeSpan QuietPeriod = TimeSpan.FromMilliseconds(250);

    /// <summary>
    /// Generated request streams (<see cref="RequestStreamGenerator"/>) and mutations of known inputs
    /// (<see cref="InputMutator"/>); a case ends with a request that closes the connection; responses are compared without
    /// <c>Date</c>; statuses are read from status lines.
    /// </summary>
    public static FuzzProtocol Protocol { get; } = new(
        seed => new RequestStreamGenerator(seed).Next,
        seed => new InputMutator(seed).Next,
        "GET /fuzz-end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"u8.ToArray(),
        ResponseText.WithoutDate,
        transcript => StatusLine().Matches(transcript).Select(status => status.Groups[1].Value));

    /// <summary>
    /// In memory every case can be told apart to the byte: half the inputs mutated, one case in four without the
    /// terminator (the FIN ends it), one in four with a client that pauses after every answer, and cuts from one byte
    /// per write (inputs up to 400 bytes, one case in eight) through pieces of up to 7, 64 or 512 bytes to the whole
    /// input in one write.
    /// </summary>
    public static FuzzMix InMemoryMix { get; } = new(Mutated: 0.5, Ended: 0.75, Idle: 0.25, (length, random) =>
        FuzzMix.Pieces(length, random, random.Next(8) switch
        {
            0 when length <= 400 => 1,
            0 or 1 => 7,
            2 or 3 or 4 => 64,
            5 or 6 => 512,
            _ => int.MaxValue,
        }));

    /// <summary>
    /// Over sockets a FIN inside a head races with Kestrel's 400 (<see cref="MalformedInputTests"/>), and how bytes
    /// coalesce into reads changes what Kestrel does with some mutated inputs (the HTTP/2 preface): only generated
    /// streams, every case ends with the terminator, and none is idle (a pause Kestrel's heartbeats would trim takes
    /// seconds). Pieces of up to 1 (3 for inputs over 600 bytes, which one byte per write makes slow), 7, 64 or 4096 bytes.
    /// </summary>
    public static FuzzMix SocketMix { get; } = new(Mutated: 0, Ended: 1, Idle: 0, (length, random) =>
        FuzzMix.Pieces(length, random, random.Next(4) switch
        {
            0 => length > 600 ? 3 : 1,
            1 => 7,
            2 => 64,
            _ => 4096,
        }));

    /// <summary>A case to the server at <paramref name="endPoint"/>: a transcript of everything it sent, and how it ended.</summary>
    public static FuzzExchange OverSockets(IPEndPoint endPoint) =>
        fuzzCase => RawHttp.SendAllRawAsync(endPoint, fuzzCase.Bytes, RawHttp.Pieces(fuzzCase.Pieces), QuietPeriod);

    /// <summary>
    /// A case to <paramref name="server"/> (<see cref="InMemoryClient.ExchangeAsync"/>), the client pausing with
    /// <paramref name="pauses"/> after every answer in idle cases; after what the client saw, what the application read
    /// of each request's headers over its life (<paramref name="timelines"/>, the server's).
    /// </summary>
    public static FuzzExchange InMemory(InMemoryKestrel server, IdlePauses pauses, Http1Timelines timelines) =>
        async fuzzCase =>
        {
            InMemoryClient client = server.Connect();
            ConnectionTimelines requests = timelines.Open(client.ConnectionId);
            try
            {
                string transcript = await client.ExchangeAsync(fuzzCase.Bytes, fuzzCase.Pieces, fuzzCase.Idle ? pauses.PauseAsync : null);
                await requests.WaitAllEndedAsync(TimeSpan.FromSeconds(5));
                return transcript + requests.Transcript();
            }
            finally
            {
                timelines.Close(client.ConnectionId);
            }
        };

    [GeneratedRegex("HTTP/1\\.1 (\\d{3}) ")]
    private static partial Regex StatusLine();
}

/// <summary>
/// A client's long pause after an answer, as HeaderCache's part of an in-memory connection sees it: the heartbeats of a
/// long wait. Where the server waits for a next request, the connection lets go of its memo and queue
/// (<see cref="IdleTrim"/>). Kestrel alone has nothing to let go of, and a pause on it changes nothing.
/// </summary>
internal sealed class IdlePauses
{
    private int _trims;

    /// <summary>How many pauses found the connection waiting, so that it let go.</summary>
    public int Trims => _trims;

    // The client learns that the server waits from inside the transport's read, just before HeaderCache's reader notes
    // the wait: a beat that finds it still running yields and beats again, a few times.
    public async Task PauseAsync(InMemoryClient client)
    {
        if (client.ServerFeatures.Get<IHeaderStringCacheFeature>() is not HeaderCacheConnection connection)
        {
            return;
        }

        for (int attempt = 0; attempt < 3; attempt++)
        {
            for (int beat = 0; beat < IdleTrim.HeartbeatsBeforeTrim; beat++)
            {
                if (connection.OnHeartbeat())
                {
                    Interlocked.Increment(ref _trims);
                    return;
                }
            }

            await Task.Yield();
        }
    }
}
