using System.Buffers;
using System.IO.Pipelines;
using System.Text;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.InMemory;

/// <summary>
/// The client's end of an in-memory connection: <see cref="Output"/> carries bytes to the server,
/// <see cref="Input"/> what the server sent. <see cref="SendAsync"/> also waits until the server has acted on
/// what it sent, so a caller can tell after which byte the server answered or closed.
/// </summary>
internal sealed class InMemoryClient(PipeReader input, PipeWriter output) : IDuplexPipe
{
    // Far beyond any answer in memory: a read this late means the server never answered.
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    private TaskCompletionSource _settled = Settled();
    private volatile bool _serverDone;

    public PipeReader Input { get; } = input;

    public PipeWriter Output { get; } = output;

    /// <summary>The server's features of the connection, where connection middleware publishes its own.</summary>
    public IFeatureCollection ServerFeatures { get; internal set; } = null!;

    /// <summary>The server's id of the connection (<c>HttpContext.Connection.Id</c>), for an app that keeps a log per connection.</summary>
    public string ConnectionId { get; internal set; } = "";

    /// <summary>Whether the server has finished reading the connection (it closed it).</summary>
    public bool ServerDone => _serverDone;

    /// <summary>Waits until the server waits for input or is done, e.g. before the first send.</summary>
    public Task WaitUntilSettledAsync() => _settled.Task;

    /// <summary>
    /// Sends <paramref name="bytes"/> and returns once the server is waiting for more input or has closed
    /// the connection. Call only while the server is settled (after <see cref="WaitUntilSettledAsync"/>).
    /// </summary>
    public async Task SendAsync(ReadOnlyMemory<byte> bytes)
    {
        if (_serverDone)
        {
            return;
        }

        TaskCompletionSource settled = _settled = Settled();

        // The server may have finished between the check above and the new wait: it completed the wait before.
        if (_serverDone)
        {
            settled.TrySetResult();
        }

        await Output.WriteAsync(bytes);
        await settled.Task;
    }

    /// <summary>Ends the client's bytes (a FIN) and returns once the server is waiting or done.</summary>
    public async Task CompleteAsync()
    {
        TaskCompletionSource settled = _settled = Settled();
        if (_serverDone)
        {
            settled.TrySetResult();
        }

        await Output.CompleteAsync();
        await settled.Task;
    }

    /// <summary>
    /// Sends <paramref name="bytes"/> in pieces of <paramref name="pieces"/> lengths, each once the server has acted on
    /// the one before, then a FIN, and returns what the client saw, as it came: every run of bytes the server sent,
    /// marked with the number of bytes sent when it arrived, and after which byte the server closed. So the transcript
    /// also says when each answer came, with no quiet period to wait for. <paramref name="afterAnswer"/>, if given,
    /// runs after every piece the server answered.
    /// </summary>
    public async Task<string> ExchangeAsync(byte[] bytes, IReadOnlyList<int> pieces, Func<InMemoryClient, Task>? afterAnswer = null)
    {
        var transcript = new StringBuilder();
        await WaitUntilSettledAsync().WaitAsync(Deadline);
        int sent = 0;
        foreach (int length in pieces)
        {
            await SendAsync(bytes.AsMemory(sent, length)).WaitAsync(Deadline);
            sent += length;
            if (_serverDone)
            {
                break;
            }

            int answered = transcript.Length;
            if (Input.TryRead(out ReadResult result))
            {
                Append(transcript, result.Buffer, sent);
                Input.AdvanceTo(result.Buffer.End);
            }

            if (afterAnswer is not null && transcript.Length > answered)
            {
                await afterAnswer(this);
            }
        }

        if (!_serverDone)
        {
            transcript.Append("@fin\n");
            await CompleteAsync().WaitAsync(Deadline);
        }

        await DrainAsync(transcript, sent).WaitAsync(Deadline);
        return transcript.ToString();
    }

    /// <summary>
    /// The next response (<see cref="ResponseText.TryTake"/>), or what the server sent before it closed that is not a
    /// whole response; <see langword="null"/> once the server has closed and everything it sent was read.
    /// </summary>
    public async Task<string?> ReadResponseAsync()
    {
        while (true)
        {
            ReadResult result = await Input.ReadAsync().AsTask().WaitAsync(Deadline);
            ReadOnlySequence<byte> buffer = result.Buffer;
            if (ResponseText.TryTake(ref buffer, out string? response))
            {
                Input.AdvanceTo(buffer.Start);
                return response;
            }

            if (result.IsCompleted)
            {
                Input.AdvanceTo(buffer.End);
                return buffer.IsEmpty ? null : ResponseText.WithoutDate(Encoding.Latin1.GetString(buffer));
            }

            Input.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    /// <summary>Every response until the server closes, then <see cref="ResponseText.Closed"/>.</summary>
    public async Task<List<string>> ReadToEndAsync()
    {
        var responses = new List<string>();
        while (await ReadResponseAsync() is { } response)
        {
            responses.Add(response);
        }

        responses.Add(ResponseText.Closed);
        await Input.CompleteAsync();
        return responses;
    }

    /// <summary>
    /// Reads through the end of the next response head, without allocating: for servers whose every response has no
    /// body, where the client's own allocations would blur the server's in a measurement.
    /// </summary>
    public async ValueTask ReadHeadAsync()
    {
        while (true)
        {
            ReadResult result = await Input.ReadAsync();
            ReadOnlySequence<byte> buffer = result.Buffer;
            if (EndOfHead(buffer) is { } end)
            {
                Input.AdvanceTo(end);
                return;
            }

            if (result.IsCompleted)
            {
                throw new InvalidOperationException("The server closed the connection.");
            }

            Input.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    internal void OnServerWaiting() => _settled.TrySetResult();

    internal void OnServerDone()
    {
        _serverDone = true;
        _settled.TrySetResult();
    }

    private static TaskCompletionSource Settled() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private static SequencePosition? EndOfHead(in ReadOnlySequence<byte> buffer)
    {
        var reader = new SequenceReader<byte>(buffer);
        return reader.TryReadTo(out ReadOnlySequence<byte> _, "\r\n\r\n"u8, advancePastDelimiter: true) ? reader.Position : null;
    }

    // The server stopped reading: everything it still writes comes before it completes its output.
    private async Task DrainAsync(StringBuilder transcript, int sent)
    {
        while (true)
        {
            ReadResult result = await Input.ReadAsync();
            Append(transcript, result.Buffer, sent);
            Input.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                transcript.Append("@closed after ").Append(sent).Append('\n');
                await Input.CompleteAsync();
                await Output.CompleteAsync();
                return;
            }
        }
    }

    private static void Append(StringBuilder transcript, in ReadOnlySequence<byte> bytes, int sent)
    {
        if (!bytes.IsEmpty)
        {
            transcript.Append('@').Append(sent).Append('\n').Append(Encoding.Latin1.GetString(bytes)).Append('\n');
        }
    }
}
