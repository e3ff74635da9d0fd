using System.Buffers;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace HeaderCache.H2Client;

/// <summary>
/// An HTTP/2 client over a socket, h2c with prior knowledge: it sends what a <see cref="FrameWriter"/> wrote, whole or
/// cut into small writes, and turns what the server sends back into a transcript (frame type, stream, flags, the status
/// of a response, each whole body, error codes), with SETTINGS, WINDOW_UPDATE and PING left out as they depend on timing.
/// </summary>
internal sealed class H2cClient : IAsyncDisposable
{
    private readonly TcpClient _client = new() { NoDelay = true };
    private readonly HpackDecoder _responses = new();
    private readonly Dictionary<int, string> _bodies = [];
    private NetworkStream _stream = null!;
    private byte[] _pending = [];

    /// <summary>Connects and sends the preface with empty SETTINGS.</summary>
    public static async Task<H2cClient> ConnectAsync(IPEndPoint endPoint)
    {
        var client = new H2cClient();
        await client._client.ConnectAsync(endPoint);
        client._stream = client._client.GetStream();
        var opening = new FrameWriter();
        opening.Preface();
        opening.Settings();
        await client.SendAsync(opening);
        return client;
    }

    /// <summary>Sends everything <paramref name="frames"/> wrote in one write.</summary>
    public Task SendAsync(FrameWriter frames) => _stream.WriteAsync(frames.Bytes.ToArray()).AsTask();

    /// <summary>Sends what <paramref name="frames"/> wrote in pieces of 1 to <paramref name="maxPiece"/> bytes, each its
    /// own write, so that the server reads frame headers and payloads cut anywhere.</summary>
    public async Task SendSplitAsync(int seed, int maxPiece, FrameWriter frames)
    {
        byte[] bytes = [.. frames.Bytes];
        var random = new Random(seed);
        for (int at = 0; at < bytes.Length;)
        {
            int piece = Math.Min(bytes.Length - at, random.Next(1, maxPiece + 1));
            await _stream.WriteAsync(bytes.AsMemory(at, piece));
            await _stream.FlushAsync();
            at += piece;
            if (random.Next(4) == 0)
            {
                await Task.Delay(1);
            }
        }
    }

    /// <summary>The client sends nothing more (a FIN).</summary>
    public void ShutdownSend() => _client.Client.Shutdown(SocketShutdown.Send);

    /// <summary>Reads frames until <paramref name="done"/> says so, the connection closes ("closed"), or 10 s pass.</summary>
    public async Task<List<string>> ReadUntilAsync(Func<List<string>, bool> done)
    {
        var transcript = new List<string>();
        var buffer = new byte[64 * 1024];
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (!done(transcript))
        {
            var pending = new ReadOnlySequence<byte>(_pending);
            while (Frame.TryRead(ref pending, out Frame? frame))
            {
                if (Describe(frame!) is { } line)
                {
                    transcript.Add(line);
                }
            }

            _pending = pending.ToArray();
            if (done(transcript))
            {
                break;
            }

            int read;
            try
            {
                read = await _stream.ReadAsync(buffer, deadline.Token);
            }
            catch (Exception e) when (e is IOException or OperationCanceledException)
            {
                read = 0;
            }

            if (read == 0)
            {
                transcript.Add("closed");
                break;
            }

            _pending = [.. _pending, .. buffer.AsSpan(0, read)];
        }

        return transcript;
    }

    public async ValueTask DisposeAsync()
    {
        await _stream.DisposeAsync();
        _client.Dispose();
    }

    private string? Describe(Frame frame)
    {
        switch (frame.Type)
        {
            case FrameType.Headers:
                string status = "";
                foreach ((string name, string value) in _responses.Decode(frame.Fragment()))
                {
                    if (name == ":status")
                    {
                        status = value;
                    }
                }

                return $"HEADERS {frame.StreamId} {frame.Flags:x} {status}";
            case FrameType.Data:
                // How Kestrel cuts a body into frames (the end in a frame of its own or not) is its timing: one line per
                // body, at its end.
                string body = _bodies.GetValueOrDefault(frame.StreamId, "") + Encoding.UTF8.GetString(frame.Payload);
                if (!frame.Has(FrameFlags.EndStream))
                {
                    _bodies[frame.StreamId] = body;
                    return null;
                }

                _bodies.Remove(frame.StreamId);
                return $"DATA {frame.StreamId} 1 {body}";
            case FrameType.RstStream:
                return $"RST_STREAM {frame.StreamId} {frame.ErrorCode}";
            case FrameType.GoAway:
                return $"GOAWAY {frame.LastStreamId} {frame.ErrorCode}";
            default:
                return null;
        }
    }
}
