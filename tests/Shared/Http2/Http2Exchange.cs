using System.Buffers;
using System.Buffers.Binary;
using System.IO.Pipelines;
using HeaderCache.InMemory;

namespace HeaderCache.H2Client;

/// <summary>One h2c connection (prior knowledge) to an in-memory Kestrel, requests one at a time: each request a
/// HEADERS frame that ends its stream, sent on the next client stream, and read through the end of its response
/// without allocating. The server's SETTINGS are acked after the response that follows them.</summary>
internal sealed class Http2Exchange
{
    private const int FrameHeaderLength = 9;

    // :status 200 (static index 8): the first octet of the block of every response Kestrel's encoder writes for the app.
    private const byte Status200 = 0x88;

    private static readonly byte[] SettingsAck = [0, 0, 0, (byte)FrameType.Settings, FrameFlags.Ack, 0, 0, 0, 0];

    private int _streamId = -1;
    private bool _settingsToAck;

    private Http2Exchange(InMemoryClient client) => Client = client;

    public InMemoryClient Client { get; }

    /// <summary>Sends the preface and an empty SETTINGS frame on <paramref name="client"/>.</summary>
    public static async Task<Http2Exchange> OpenAsync(InMemoryClient client)
    {
        var opening = new FrameWriter();
        opening.Preface();
        opening.Settings();
        await client.Output.WriteAsync(opening.Bytes.ToArray());
        return new Http2Exchange(client);
    }

    /// <summary>Sends <paramref name="request"/> (a HEADERS frame whose stream id is overwritten) and reads its response.</summary>
    public async Task RoundTripAsync(byte[] request)
    {
        // Requests go one at a time, each on the next client stream.
        int streamId = _streamId += 2;
        BinaryPrimitives.WriteInt32BigEndian(request.AsSpan(5), streamId);
        await Client.Output.WriteAsync(request);
        await ReadResponseAsync(streamId);
        if (_settingsToAck)
        {
            _settingsToAck = false;
            await Client.Output.WriteAsync(SettingsAck);
        }
    }

    /// <summary>Sends <paramref name="requests"/> (HEADERS frames whose stream ids are overwritten) on the next client
    /// streams in one write, so that their streams are open at once, and reads all of their responses.</summary>
    public async Task RoundTripsAsync(IReadOnlyList<byte[]> requests)
    {
        int first = _streamId + 2;
        var batch = new List<byte>();
        foreach (byte[] request in requests)
        {
            BinaryPrimitives.WriteInt32BigEndian(request.AsSpan(5), _streamId += 2);
            batch.AddRange(request);
        }

        await Client.Output.WriteAsync(batch.ToArray());
        await ReadResponseAsync(first, requests.Count);
        if (_settingsToAck)
        {
            _settingsToAck = false;
            await Client.Output.WriteAsync(SettingsAck);
        }
    }

    // Reads through the end of the responses of the count streams from firstStream on without allocating.
    private async ValueTask ReadResponseAsync(int firstStream, int count = 1)
    {
        int ended = 0;
        while (true)
        {
            ReadResult result = await Client.Input.ReadAsync();
            ReadOnlySequence<byte> buffer = result.Buffer;
            if (TakeFrames(ref buffer, firstStream, count, ref ended))
            {
                Client.Input.AdvanceTo(buffer.Start);
                return;
            }

            if (result.IsCompleted)
            {
                throw new InvalidOperationException("The server closed the connection.");
            }

            Client.Input.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    // Takes whole frames off the buffer, through the one that ends the last of the streams' responses if it is there
    // (true), counting those that end in ended. Frames of the connection (SETTINGS, WINDOW_UPDATE, PING) are skipped;
    // the server's SETTINGS are acked after the responses.
    private bool TakeFrames(ref ReadOnlySequence<byte> buffer, int firstStream, int count, ref int ended)
    {
        int lastStream = firstStream + (2 * (count - 1));
        Span<byte> head = stackalloc byte[FrameHeaderLength + 1];
        while (buffer.Length >= FrameHeaderLength)
        {
            buffer.Slice(0, Math.Min(buffer.Length, head.Length)).CopyTo(head);
            int length = (head[0] << 16) | (head[1] << 8) | head[2];
            if (buffer.Length < FrameHeaderLength + length)
            {
                return false;
            }

            var type = (FrameType)head[3];
            byte flags = head[4];
            int stream = BinaryPrimitives.ReadInt32BigEndian(head[5..]) & int.MaxValue;
            buffer = buffer.Slice(FrameHeaderLength + length);
            switch (type)
            {
                case FrameType.Settings when (flags & FrameFlags.Ack) == 0:
                    _settingsToAck = true;
                    break;
                case FrameType.Headers when stream >= firstStream && stream <= lastStream && (length == 0 || head[FrameHeaderLength] != Status200 || (flags & FrameFlags.EndHeaders) == 0):
                    throw new InvalidOperationException($"Stream {stream}: the response is not a 200 in one HEADERS frame (flags 0x{flags:x2}, length {length}).");
                case FrameType.RstStream or FrameType.GoAway:
                    throw new InvalidOperationException($"The server sent {type} on stream {stream} while streams {firstStream} to {lastStream} were open.");
            }

            if (stream >= firstStream && stream <= lastStream && (flags & FrameFlags.EndStream) != 0 && type is FrameType.Headers or FrameType.Data && ++ended == count)
            {
                return true;
            }
        }

        return false;
    }
}
