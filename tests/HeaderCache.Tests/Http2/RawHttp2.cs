using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Text;
using HeaderCache.Http2;

namespace HeaderCache.Tests.Http2;

/// <summary>A bare HTTP/2 client over h2c: header blocks written field by field in any HPACK representation, frames
/// sent as given, and what the server sends back as a transcript (frame type, stream, flags, the status of a response,
/// each whole body, error codes), with SETTINGS, WINDOW_UPDATE and PING left out as they depend on timing.</summary>
internal sealed class RawHttp2 : IAsyncDisposable
{
    public const byte Data = 0x0, Headers = 0x1, RstStream = 0x3, Settings = 0x4, GoAway = 0x7, Continuation = 0x9;
    public const byte EndStream = 0x1, EndHeaders = 0x4;

    private readonly TcpClient _client = new() { NoDelay = true };
    private readonly HpackBlockDecoder _responses = new(new HpackDynamicTable(4096), 64 * 1024);
    private NetworkStream _stream = null!;
    private readonly Dictionary<int, string> _bodies = [];
    private byte[] _pending = [];

    public static async Task<RawHttp2> ConnectAsync(IPEndPoint endPoint)
    {
        var client = new RawHttp2();
        await client._client.ConnectAsync(endPoint);
        client._stream = client._client.GetStream();
        await client._stream.WriteAsync("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8.ToArray().Concat(Frame(Settings, 0, 0, [])).ToArray());
        return client;
    }

    /// <summary>A frame's bytes.</summary>
    public static byte[] Frame(byte type, byte flags, int stream, byte[] payload)
    {
        var frame = new byte[9 + payload.Length];
        frame[0] = (byte)(payload.Length >> 16);
        frame[1] = (byte)(payload.Length >> 8);
        frame[2] = (byte)payload.Length;
        frame[3] = type;
        frame[4] = flags;
        BinaryPrimitives.WriteInt32BigEndian(frame.AsSpan(5), stream);
        payload.CopyTo(frame, 9);
        return frame;
    }

    public static byte[] Rst(int stream, int code)
    {
        var payload = new byte[4];
        BinaryPrimitives.WriteInt32BigEndian(payload, code);
        return Frame(RstStream, 0, stream, payload);
    }

    /// <summary>The client sends nothing more (a FIN).</summary>
    public Task ShutdownSendAsync()
    {
        _client.Client.Shutdown(SocketShutdown.Send);
        return Task.CompletedTask;
    }

    /// <summary>Sends <paramref name="frames"/> in pieces of 1 to <paramref name="maxPiece"/> bytes, each its own write,
    /// so that the server reads frame headers and payloads cut anywhere.</summary>
    public async Task SendSplitAsync(int seed, int maxPiece, params byte[][] frames)
    {
        byte[] bytes = [.. frames.SelectMany(f => f)];
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

    public Task SendAsync(params byte[][] frames) => _stream.WriteAsync(frames.SelectMany(f => f).ToArray()).AsTask();

    /// <summary>Reads frames until <paramref name="done"/> says so, the connection closes, or 10 s pass.</summary>
    public async Task<List<string>> ReadUntilAsync(Func<List<string>, bool> done)
    {
        var transcript = new List<string>();
        var buffer = new byte[64 * 1024];
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (!done(transcript))
        {
            while (TryTakeFrame(out byte type, out byte flags, out int stream, out byte[] payload))
            {
                if (Describe(type, flags, stream, payload) is { } line)
                {
                    transcript.Add(line);
                }
            }

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

    private bool TryTakeFrame(out byte type, out byte flags, out int stream, out byte[] payload)
    {
        (type, flags, stream, payload) = (0, 0, 0, []);
        if (_pending.Length < 9)
        {
            return false;
        }

        int length = (_pending[0] << 16) | (_pending[1] << 8) | _pending[2];
        if (_pending.Length < 9 + length)
        {
            return false;
        }

        (type, flags, stream) = (_pending[3], _pending[4], BinaryPrimitives.ReadInt32BigEndian(_pending.AsSpan(5)) & 0x7FFFFFFF);
        payload = _pending[9..(9 + length)];
        _pending = _pending[(9 + length)..];
        return true;
    }

    private string? Describe(byte type, byte flags, int stream, byte[] payload)
    {
        switch (type)
        {
            case Headers:
                Assert.True(_responses.Decode(payload));
                string status = "";
                foreach (HpackField field in _responses.Fields)
                {
                    if (_responses.Name(payload, field).SequenceEqual(":status"u8))
                    {
                        status = Encoding.ASCII.GetString(_responses.Value(payload, field));
                    }
                }

                return $"HEADERS {stream} {flags:x} {status}";
            case Data:
                // How Kestrel cuts a body into frames (the end in a frame of its own or not) is its timing: one line per
                // body, at its end.
                string body = _bodies.GetValueOrDefault(stream, "") + Encoding.UTF8.GetString(payload);
                if ((flags & EndStream) == 0)
                {
                    _bodies[stream] = body;
                    return null;
                }

                _bodies.Remove(stream);
                return $"DATA {stream} 1 {body}";
            case RstStream:
                return $"RST_STREAM {stream} {BinaryPrimitives.ReadInt32BigEndian(payload)}";
            case GoAway:
                return $"GOAWAY {BinaryPrimitives.ReadInt32BigEndian(payload) & 0x7FFFFFFF} {BinaryPrimitives.ReadInt32BigEndian(payload.AsSpan(4))}";
            default:
                return null;
        }
    }
}

/// <summary>Writes a header block field by field, in the representation asked for, strings without Huffman coding.</summary>
internal sealed class BlockWriter
{
    private readonly List<byte> _bytes = [];

    public byte[] ToArray() => [.. _bytes];

    /// <summary>:method, :scheme, :path and :authority, each as an indexed field or a literal without indexing.</summary>
    public BlockWriter Request(string method, string path)
    {
        return (method == "GET" ? Indexed(2) : method == "POST" ? Indexed(3) : Literal(0x00, 4, 2, method))
            .Indexed(6).Literal(0x00, 4, 4, path).Literal(0x00, 4, 1, "localhost");
    }

    public BlockWriter Indexed(int index)
    {
        Integer(0x80, 7, index);
        return this;
    }

    /// <summary>A literal with <paramref name="pattern"/> (0x40 incremental, 0x00 without, 0x10 never indexed) and a
    /// name index, or a new name when <paramref name="nameIndex"/> is 0.</summary>
    public BlockWriter Literal(byte pattern, int prefix, int nameIndex, string value, string? name = null)
    {
        Integer(pattern, prefix, nameIndex);
        if (nameIndex == 0)
        {
            String(name!);
        }

        String(value);
        return this;
    }

    public BlockWriter Without(string name, string value) => Literal(0x00, 4, 0, value, name);

    public BlockWriter Incremental(string name, string value) => Literal(0x40, 6, 0, value, name);

    private void String(string value)
    {
        byte[] bytes = Encoding.ASCII.GetBytes(value);
        Integer(0x00, 7, bytes.Length);
        _bytes.AddRange(bytes);
    }

    private void Integer(byte pattern, int prefix, int value)
    {
        int max = (1 << prefix) - 1;
        if (value < max)
        {
            _bytes.Add((byte)(pattern | value));
            return;
        }

        _bytes.Add((byte)(pattern | max));
        value -= max;
        while (value >= 128)
        {
            _bytes.Add((byte)((value & 0x7F) | 0x80));
            value >>= 7;
        }

        _bytes.Add((byte)value);
    }
}
