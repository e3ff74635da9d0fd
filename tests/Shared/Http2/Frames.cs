using System.Buffers;
using System.Buffers.Binary;

namespace HeaderCache.H2Client;

/// <summary>HTTP/2 frame types (RFC 9113, section 6).</summary>
internal enum FrameType : byte
{
    Data = 0,
    Headers = 1,
    Priority = 2,
    RstStream = 3,
    Settings = 4,
    PushPromise = 5,
    Ping = 6,
    GoAway = 7,
    WindowUpdate = 8,
    Continuation = 9,
}

/// <summary>Frame flags; END_STREAM and ACK share a bit.</summary>
internal static class FrameFlags
{
    public const byte EndStream = 0x1;
    public const byte Ack = 0x1;
    public const byte EndHeaders = 0x4;
    public const byte Padded = 0x8;
    public const byte Priority = 0x20;
}

/// <summary>A frame as it came off the wire: its header's fields and its whole payload (padding and fixed fields included).</summary>
internal sealed record Frame(FrameType Type, byte Flags, int StreamId, byte[] Payload)
{
    public bool Has(byte flag) => (Flags & flag) != 0;

    /// <summary>Reads the next whole frame off <paramref name="buffer"/>, if it holds one.</summary>
    public static bool TryRead(ref ReadOnlySequence<byte> buffer, out Frame? frame)
    {
        frame = null;
        if (buffer.Length < 9)
        {
            return false;
        }

        Span<byte> head = stackalloc byte[9];
        buffer.Slice(0, 9).CopyTo(head);
        int length = (head[0] << 16) | (head[1] << 8) | head[2];
        if (buffer.Length < 9 + length)
        {
            return false;
        }

        frame = new Frame((FrameType)head[3], head[4], BinaryPrimitives.ReadInt32BigEndian(head[5..]) & int.MaxValue, buffer.Slice(9, length).ToArray());
        buffer = buffer.Slice(9 + length);
        return true;
    }

    /// <summary>The header block fragment of a HEADERS or CONTINUATION frame, without padding and priority fields.</summary>
    public byte[] Fragment()
    {
        if (Type != FrameType.Headers)
        {
            return Payload;
        }

        int start = (Has(FrameFlags.Padded) ? 1 : 0) + (Has(FrameFlags.Priority) ? 5 : 0);
        int pad = Has(FrameFlags.Padded) ? Payload[0] : 0;
        return Payload[start..^pad];
    }

    /// <summary>The data of a DATA frame, without padding.</summary>
    public int DataLength => Has(FrameFlags.Padded) ? Payload.Length - 1 - Payload[0] : Payload.Length;

    /// <summary>The error code of RST_STREAM, GOAWAY's at offset 4.</summary>
    public uint ErrorCode => BinaryPrimitives.ReadUInt32BigEndian(Type == FrameType.GoAway ? Payload.AsSpan(4) : Payload);

    /// <summary>GOAWAY's last stream id.</summary>
    public int LastStreamId => BinaryPrimitives.ReadInt32BigEndian(Payload) & int.MaxValue;

    /// <summary>WINDOW_UPDATE's increment.</summary>
    public int Increment => BinaryPrimitives.ReadInt32BigEndian(Payload) & int.MaxValue;
}

/// <summary>
/// Writes a client's bytes: the preface and any frame, valid or not (lengths are the payload's unless given, flags as
/// given), into one growing buffer.
/// </summary>
internal sealed class FrameWriter
{
    public static readonly byte[] PrefaceBytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8.ToArray();

    /// <summary>Everything written so far.</summary>
    public List<byte> Bytes { get; } = [];

    public void Preface() => Bytes.AddRange(PrefaceBytes);

    /// <summary>A frame with the header's length field <paramref name="declaredLength"/> (default: the payload's length).</summary>
    public void Frame(FrameType type, byte flags, int streamId, ReadOnlySpan<byte> payload, int? declaredLength = null)
    {
        int length = declaredLength ?? payload.Length;
        Bytes.Add((byte)(length >> 16));
        Bytes.Add((byte)(length >> 8));
        Bytes.Add((byte)length);
        Bytes.Add((byte)type);
        Bytes.Add(flags);
        Span<byte> id = stackalloc byte[4];
        BinaryPrimitives.WriteInt32BigEndian(id, streamId);
        Bytes.AddRange(id.ToArray());
        Bytes.AddRange(payload.ToArray());
    }

    public void Settings(params (ushort Id, uint Value)[] settings)
    {
        var payload = new byte[settings.Length * 6];
        for (int i = 0; i < settings.Length; i++)
        {
            BinaryPrimitives.WriteUInt16BigEndian(payload.AsSpan(i * 6), settings[i].Id);
            BinaryPrimitives.WriteUInt32BigEndian(payload.AsSpan(i * 6 + 2), settings[i].Value);
        }

        Frame(FrameType.Settings, 0, 0, payload);
    }

    public void SettingsAck() => Frame(FrameType.Settings, FrameFlags.Ack, 0, []);

    /// <summary>
    /// HEADERS with <paramref name="fragment"/>; PADDED when <paramref name="padding"/> is given (that many zero octets,
    /// the pad length field saying <paramref name="declaredPad"/> if given), PRIORITY when <paramref name="dependency"/> is.
    /// </summary>
    public void Headers(int streamId, ReadOnlySpan<byte> fragment, bool endStream, bool endHeaders, int? padding = null, int? dependency = null, byte weight = 15, int? declaredPad = null)
    {
        var payload = new List<byte>();
        byte flags = (byte)((endStream ? FrameFlags.EndStream : 0) | (endHeaders ? FrameFlags.EndHeaders : 0));
        if (padding is { } pad)
        {
            flags |= FrameFlags.Padded;
            payload.Add((byte)(declaredPad ?? pad));
        }

        if (dependency is { } parent)
        {
            flags |= FrameFlags.Priority;
            payload.Add((byte)(parent >> 24));
            payload.Add((byte)(parent >> 16));
            payload.Add((byte)(parent >> 8));
            payload.Add((byte)parent);
            payload.Add(weight);
        }

        payload.AddRange(fragment.ToArray());
        payload.AddRange(new byte[padding ?? 0]);
        Frame(FrameType.Headers, flags, streamId, [.. payload]);
    }

    public void Continuation(int streamId, ReadOnlySpan<byte> fragment, bool endHeaders) =>
        Frame(FrameType.Continuation, endHeaders ? FrameFlags.EndHeaders : (byte)0, streamId, fragment);

    public void Data(int streamId, ReadOnlySpan<byte> data, bool endStream, int? padding = null)
    {
        if (padding is { } pad)
        {
            Frame(FrameType.Data, (byte)(FrameFlags.Padded | (endStream ? FrameFlags.EndStream : 0)), streamId, [(byte)pad, .. data, .. new byte[pad]]);
        }
        else
        {
            Frame(FrameType.Data, endStream ? FrameFlags.EndStream : (byte)0, streamId, data);
        }
    }

    public void RstStream(int streamId, uint code) => Frame(FrameType.RstStream, 0, streamId, BigEndian(code));

    public void Priority(int streamId, int dependency, byte weight) =>
        Frame(FrameType.Priority, 0, streamId, [.. BigEndian((uint)dependency), weight]);

    public void Ping(ReadOnlySpan<byte> data, bool ack = false) => Frame(FrameType.Ping, ack ? FrameFlags.Ack : (byte)0, 0, data);

    public void WindowUpdate(int streamId, int increment) => Frame(FrameType.WindowUpdate, 0, streamId, BigEndian((uint)increment));

    public void GoAway(int lastStreamId, uint code) => Frame(FrameType.GoAway, 0, 0, [.. BigEndian((uint)lastStreamId), .. BigEndian(code)]);

    private static byte[] BigEndian(uint value)
    {
        var bytes = new byte[4];
        BinaryPrimitives.WriteUInt32BigEndian(bytes, value);
        return bytes;
    }
}
