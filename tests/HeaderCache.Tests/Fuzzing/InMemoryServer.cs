using System.Text;
using System.Text.RegularExpressions;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Connection;
using HeaderCache.InMemory;
using HeaderCache.Sample;
using HeaderCache.Tests.Integration;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// The sample app on a real Kestrel over an in-memory transport. An exchange needs no quiet period: after
/// every piece it sent, the client knows the server has acted on it (it waits for more or has closed), so
/// it records exactly after which byte every response and the close came.
/// </summary>
internal sealed partial class InMemoryServer : IAsyncDisposable
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    private readonly WebApplication _app;
    private readonly InMemoryTransport _transport;
    private int _trims;

    private InMemoryServer(WebApplication app, InMemoryTransport transport)
    {
        _app = app;
        _transport = transport;
    }

    /// <summary>The app's services (for its meter).</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>Starts the sample app in <paramref name="mode"/>.</summary>
    public static async Task<InMemoryServer> StartAsync(CacheMode mode, params string[] settings)
    {
        var transport = new InMemoryTransport();
        WebApplication app = SampleApp.Build(
            ["--urls", "http://127.0.0.1:5000", "--Logging:LogLevel:Default=None", SampleServer.Setting(mode), .. settings],
            builder =>
            {
                builder.Logging.ClearProviders();
                builder.Services.AddSingleton<IConnectionListenerFactory>(transport);
            });
        await app.StartAsync();
        return new InMemoryServer(app, transport);
    }

    /// <summary>How many times <see cref="ExchangeAsync"/> saw a connection let go of its memo and queue.</summary>
    public int Trims => _trims;

    /// <summary>
    /// Sends <paramref name="bytes"/> on a new connection in pieces of <paramref name="pieces"/> lengths, then a FIN,
    /// and returns what the client saw: every run of response bytes (without <c>Date</c>) marked with the number of
    /// bytes sent when it arrived, and when the server closed. With <paramref name="idle"/>, after every piece that
    /// completed a request, HeaderCache's part of the connection gets the heartbeats of a long wait, as if the client had
    /// paused there: where the server waits for a next request, it lets go of its memo and queue (<see cref="IdleTrim"/>).
    /// </summary>
    public async Task<string> ExchangeAsync(byte[] bytes, IReadOnlyList<int> pieces, bool idle = false)
    {
        InMemoryClient client = _transport.Connect();
        var transcript = new StringBuilder();
        await client.WaitUntilSettledAsync().WaitAsync(Deadline);
        int sent = 0;
        foreach (int length in pieces)
        {
            await client.SendAsync(bytes.AsMemory(sent, length)).WaitAsync(Deadline);
            sent += length;
            if (client.ServerDone)
            {
                break;
            }

            int answered = transcript.Length;
            Collect(client, transcript, sent);
            if (idle && transcript.Length > answered && client.ServerFeatures.Get<IHeaderStringCacheFeature>() is HeaderCacheConnection connection)
            {
                await BeatAsync(connection);
            }
        }

        if (!client.ServerDone)
        {
            transcript.Append("@fin\n");
            await client.CompleteAsync().WaitAsync(Deadline);
        }

        await DrainAsync(client, transcript, sent).WaitAsync(Deadline);
        return DateHeader().Replace(transcript.ToString(), "");
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }

    // The client learns that the server waits from inside the transport's read, just before HeaderCache's reader notes
    // the wait: a beat that finds it still running yields and beats again, a few times.
    private async Task BeatAsync(HeaderCacheConnection connection)
    {
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

    private static void Collect(InMemoryClient client, StringBuilder transcript, int sent)
    {
        if (client.Input.TryRead(out var result))
        {
            Append(transcript, result.Buffer, sent);
            client.Input.AdvanceTo(result.Buffer.End);
        }
    }

    // The server stopped reading: everything it still writes comes before it completes its output.
    private static async Task DrainAsync(InMemoryClient client, StringBuilder transcript, int sent)
    {
        while (true)
        {
            var result = await client.Input.ReadAsync();
            Append(transcript, result.Buffer, sent);
            client.Input.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                transcript.Append("@closed after ").Append(sent).Append('\n');
                await client.Input.CompleteAsync();
                await client.Output.CompleteAsync();
                return;
            }
        }
    }

    private static void Append(StringBuilder transcript, in System.Buffers.ReadOnlySequence<byte> bytes, int sent)
    {
        if (!bytes.IsEmpty)
        {
            transcript.Append('@').Append(sent).Append('\n').Append(Encoding.Latin1.GetString(bytes)).Append('\n');
        }
    }

    [GeneratedRegex("\r\nDate: [^\r\n]*")]
    private static partial Regex DateHeader();
}
