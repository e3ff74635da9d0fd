using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using HeaderCache.InMemory;

namespace HeaderCache.Testing;

/// <summary>
/// A raw HTTP/1.1 client for differential tests over sockets: it writes exactly the given bytes, in the given
/// pieces, and reads back every response as text without <c>Date</c> (<see cref="ResponseText"/>), ending with
/// how the connection ended.
/// </summary>
public static class RawHttp
{
    /// <summary>The transcript line written when the server closed the connection.</summary>
    public const string Closed = ResponseText.Closed;

    /// <summary>The transcript line written when the connection was reset.</summary>
    public const string Reset = "<reset>";

    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(20);

    /// <summary>The transcript line for bytes that are not an HTTP/1.x response (e.g. an HTTP/2 frame), as hex.</summary>
    public static string Raw(ReadOnlySpan<byte> bytes) => $"<raw:{Convert.ToHexString(bytes)}>";

    /// <summary>
    /// Sends the requests in <paramref name="batches"/> one batch at a time, each batch split into
    /// <paramref name="split"/>'s pieces, and reads <c>batch.Count</c> responses after each batch
    /// (1 = request/response, more = pipelined). Then half-closes and reads to the end.
    /// <paramref name="wrap"/>, if given, turns the connection's stream into the one to talk over (e.g. TLS).
    /// <paramref name="afterBatch"/>, if given, runs once a batch's responses have arrived, with the batch's index.
    /// </summary>
    public static async Task<List<string>> ExchangeAsync(
        IPEndPoint endPoint,
        IReadOnlyList<IReadOnlyList<byte[]>> batches,
        Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split,
        Func<Stream, Task<Stream>>? wrap = null,
        Func<int, Task>? afterBatch = null)
    {
        using var socket = await ConnectAsync(endPoint);
        using var network = new NetworkStream(socket, ownsSocket: false);
        await using Stream stream = wrap is null ? network : await wrap(network);
        using var timeout = new CancellationTokenSource(Deadline);
        var reader = new ResponseReader(stream);
        var transcript = new List<string>();
        for (int index = 0; index < batches.Count; index++)
        {
            IReadOnlyList<byte[]> batch = batches[index];
            await SendAsync(stream, batch.SelectMany(r => r).ToArray(), split, timeout.Token);
            for (int i = 0; i < batch.Count; i++)
            {
                string? response = await reader.ReadAsync(timeout.Token);
                if (response is null)
                {
                    transcript.Add(reader.EndedWithReset ? Reset : Closed);
                    return transcript;
                }

                transcript.Add(response);
            }

            if (afterBatch is not null)
            {
                await afterBatch(index);
            }
        }

        await HalfCloseAsync(socket, stream);
        await ReadToEndAsync(reader, transcript, timeout.Token);
        return transcript;
    }

    /// <summary>
    /// Sends <paramref name="bytes"/> in <paramref name="split"/>'s pieces, half-closes (unless
    /// <paramref name="halfClose"/> is false), and reads every response until the server closes. Kestrel treats
    /// the client's FIN as an abort of a request still in progress, so when requests before the end must be
    /// answered, end the bytes with a <c>Connection: close</c> request and pass <paramref name="halfClose"/> false,
    /// or send them first as <paramref name="answeredFirst"/>: one at a time, each answered before the next.
    /// </summary>
    public static async Task<List<string>> SendAllAsync(
        IPEndPoint endPoint,
        byte[] bytes,
        Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split,
        bool halfClose = true,
        Func<Stream, Task<Stream>>? wrap = null,
        IReadOnlyList<byte[]>? answeredFirst = null)
    {
        using var socket = await ConnectAsync(endPoint);
        using var network = new NetworkStream(socket, ownsSocket: false);
        await using Stream stream = wrap is null ? network : await wrap(network);
        using var timeout = new CancellationTokenSource(Deadline);
        var reader = new ResponseReader(stream);
        var transcript = new List<string>();
        foreach (byte[] request in answeredFirst ?? [])
        {
            await SendAsync(stream, request, split, timeout.Token);
            transcript.Add(await reader.ReadAsync(timeout.Token) ?? (reader.EndedWithReset ? Reset : Closed));
        }

        await SendAsync(stream, bytes, split, timeout.Token);
        if (halfClose && socket.Connected)
        {
            try
            {
                await HalfCloseAsync(socket, stream);
            }
            catch (Exception ex) when (ex is SocketException or IOException)
            {
                // Already closed by the server.
            }
        }

        await ReadToEndAsync(reader, transcript, timeout.Token);
        return transcript;
    }

    /// <summary>
    /// Sends <paramref name="bytes"/> in <paramref name="split"/>'s pieces and returns everything the
    /// server sent, as it came, followed by how the connection ended. Reads until
    /// the server closes; if it goes quiet for <paramref name="quietPeriod"/> first, half-closes and
    /// reads to the end. (A half-close sent together with a bad request races with Kestrel's 400: Kestrel
    /// skips the response when it sees the end of input first, so the client waits before closing.)
    /// Needs no response parsing, so it works for any request (HEAD, rejected, upgraded).
    /// </summary>
    public static async Task<string> SendAllRawAsync(IPEndPoint endPoint, byte[] bytes, Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split, TimeSpan quietPeriod)
    {
        using var socket = await ConnectAsync(endPoint);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(Deadline);
        var received = new MemoryStream();
        await SendAsync(stream, bytes, split, timeout.Token);
        bool reset = false;
        bool closed = false;
        var buffer = new byte[16 * 1024];
        bool halfClosed = false;
        while (!closed && !reset)
        {
            using var quiet = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
            if (!halfClosed)
            {
                quiet.CancelAfter(quietPeriod);
            }

            try
            {
                int n = await stream.ReadAsync(buffer, quiet.Token);
                closed = n == 0;
                received.Write(buffer, 0, n);
            }
            catch (OperationCanceledException) when (!timeout.IsCancellationRequested && !halfClosed)
            {
                halfClosed = true;
                try
                {
                    socket.Shutdown(SocketShutdown.Send);
                }
                catch (SocketException)
                {
                    // Already closed by the server.
                }
            }
            catch (IOException ex) when (ex.InnerException is SocketException { SocketErrorCode: SocketError.ConnectionReset })
            {
                reset = true;
            }
        }

        return Encoding.Latin1.GetString(received.ToArray()) + (reset ? Reset : Closed);
    }

    /// <summary>The whole of <paramref name="bytes"/> in one write.</summary>
    public static IEnumerable<ReadOnlyMemory<byte>> Whole(byte[] bytes) => [bytes];

    /// <summary>One byte per write.</summary>
    public static IEnumerable<ReadOnlyMemory<byte>> Bytewise(byte[] bytes)
    {
        for (int i = 0; i < bytes.Length; i++)
        {
            yield return bytes.AsMemory(i, 1);
        }
    }

    /// <summary>Pieces of the given <paramref name="lengths"/>, in order.</summary>
    public static Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> Pieces(IEnumerable<int> lengths) => bytes => Cut(bytes, lengths);

    /// <summary>Pieces of random length (1 to <paramref name="maxPiece"/>) cut at random positions.</summary>
    public static Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> RandomSplit(int seed, int maxPiece = 64) => bytes => RandomPieces(bytes, new Random(seed), maxPiece);

    /// <summary>A request's status code from a transcript entry.</summary>
    public static int Status(string response) => int.Parse(response.AsSpan(9, 3), System.Globalization.CultureInfo.InvariantCulture);

    /// <summary>The body of a transcript entry.</summary>
    public static string Body(string response) => response[(response.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 4)..];

    private static IEnumerable<ReadOnlyMemory<byte>> Cut(byte[] bytes, IEnumerable<int> lengths)
    {
        int offset = 0;
        foreach (int length in lengths)
        {
            yield return bytes.AsMemory(offset, length);
            offset += length;
        }
    }

    private static IEnumerable<ReadOnlyMemory<byte>> RandomPieces(byte[] bytes, Random random, int maxPiece)
    {
        for (int offset = 0; offset < bytes.Length;)
        {
            int length = Math.Min(bytes.Length - offset, random.Next(1, maxPiece + 1));
            yield return bytes.AsMemory(offset, length);
            offset += length;
        }
    }

    private static async Task<Socket> ConnectAsync(IPEndPoint endPoint)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        await socket.ConnectAsync(endPoint);
        return socket;
    }

    private static async Task SendAsync(Stream stream, byte[] bytes, Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split, CancellationToken cancellationToken)
    {
        int pieces = 0;
        foreach (ReadOnlyMemory<byte> piece in split(bytes))
        {
            try
            {
                await stream.WriteAsync(piece, cancellationToken);
                await stream.FlushAsync(cancellationToken);
            }
            catch (IOException ex) when (ex.InnerException is SocketException { SocketErrorCode: SocketError.Shutdown or SocketError.ConnectionReset or SocketError.ConnectionAborted })
            {
                // The server closed the connection (after rejecting a request): what it sent is still to be read.
                return;
            }

            // Let some pieces reach the server on their own, so that its reads see the splits.
            if (++pieces % 8 == 0)
            {
                await Task.Delay(1, cancellationToken);
            }
        }
    }

    private static async Task HalfCloseAsync(Socket socket, Stream stream)
    {
        if (stream is SslStream tls)
        {
            await tls.ShutdownAsync();
        }

        socket.Shutdown(SocketShutdown.Send);
    }

    private static async Task ReadToEndAsync(ResponseReader reader, List<string> transcript, CancellationToken cancellationToken)
    {
        while (await reader.ReadAsync(cancellationToken) is { } response)
        {
            transcript.Add(response);
        }

        if (reader.Unread > 0)
        {
            transcript.Add(Raw(await reader.ReadRemainingAsync(cancellationToken)));
        }

        transcript.Add(reader.EndedWithReset ? Reset : Closed);
    }

    /// <summary>Reads HTTP/1.1 responses (Content-Length or chunked bodies, or to the end) from a stream.</summary>
    public sealed class ResponseReader(Stream stream)
    {
        private readonly byte[] _buffer = new byte[64 * 1024];
        private int _start;
        private int _end;

        /// <summary>Whether the connection ended with a reset rather than a close.</summary>
        public bool EndedWithReset { get; private set; }

        /// <summary>Bytes received but not yet returned.</summary>
        public int Unread => _end - _start;

        /// <summary>The next <paramref name="count"/> bytes as they are (fewer at the end of the stream).</summary>
        public async Task<byte[]> ReadRawAsync(int count, CancellationToken cancellationToken)
        {
            var bytes = new byte[count];
            int copied = await CopyAsync(bytes, cancellationToken);
            return bytes[..copied];
        }

        /// <summary>Everything up to the end of the stream, as it is.</summary>
        public async Task<byte[]> ReadRemainingAsync(CancellationToken cancellationToken)
        {
            using var all = new MemoryStream();
            do
            {
                all.Write(_buffer, _start, _end - _start);
                _start = _end;
            }
            while (await FillAsync(cancellationToken));

            return all.ToArray();
        }

        /// <summary>The next response without its Date header, or <see langword="null"/> at the end.</summary>
        public async Task<string?> ReadAsync(CancellationToken cancellationToken) =>
            await ReadAsIsAsync(cancellationToken) is { } response ? ResponseText.WithoutDate(response) : null;

        private async Task<string?> ReadAsIsAsync(CancellationToken cancellationToken)
        {
            var text = new StringBuilder();
            string? statusLine = await ReadLineAsync(cancellationToken);
            if (statusLine is null)
            {
                return null;
            }

            if (!statusLine.StartsWith("HTTP/", StringComparison.Ordinal))
            {
                // Not an HTTP/1.x response (e.g. an HTTP/2 GOAWAY): the rest of the stream, as it is.
                byte[] line = Encoding.Latin1.GetBytes(statusLine + "\n");
                byte[] rest = await ReadRemainingAsync(cancellationToken);
                return Raw([.. line, .. rest]);
            }

            text.Append(statusLine).Append("\r\n");
            long? contentLength = null;
            bool chunked = false;
            bool keepAlive = false;
            while (await ReadLineAsync(cancellationToken) is { Length: > 0 } line)
            {
                text.Append(line).Append("\r\n");
                if (line.StartsWith("Content-Length:", StringComparison.OrdinalIgnoreCase))
                {
                    contentLength = long.Parse(line.AsSpan(15).Trim(), System.Globalization.CultureInfo.InvariantCulture);
                }
                else if (line.StartsWith("Transfer-Encoding:", StringComparison.OrdinalIgnoreCase) && line.Contains("chunked", StringComparison.OrdinalIgnoreCase))
                {
                    chunked = true;
                }
                else if (line.StartsWith("Connection:", StringComparison.OrdinalIgnoreCase) && line.Contains("keep-alive", StringComparison.OrdinalIgnoreCase))
                {
                    keepAlive = true;
                }
            }

            text.Append("\r\n");
            int status = int.Parse(statusLine.AsSpan(9, 3), System.Globalization.CultureInfo.InvariantCulture);
            if (status is 101 or 100 or 204 or 304)
            {
                return text.ToString();
            }

            if (chunked)
            {
                while (await ReadLineAsync(cancellationToken) is { } sizeLine)
                {
                    int size = Convert.ToInt32(sizeLine.Split(';')[0].Trim(), 16);
                    if (size == 0)
                    {
                        await ReadLineAsync(cancellationToken);
                        break;
                    }

                    text.Append(await ReadBytesAsync(size, cancellationToken));
                    await ReadLineAsync(cancellationToken);
                }
            }
            else if (contentLength is { } length)
            {
                text.Append(await ReadBytesAsync((int)length, cancellationToken));
            }
            else if (!keepAlive)
            {
                // Neither length nor chunked (e.g. an HTTP/1.0 response): the body runs to the end of the connection.
                // (Kept alive without either, e.g. for HEAD, there is no body.)
                text.Append(Encoding.UTF8.GetString(await ReadRemainingAsync(cancellationToken)));
            }

            return text.ToString();
        }

        private async Task<string?> ReadLineAsync(CancellationToken cancellationToken)
        {
            while (true)
            {
                int lf = Array.IndexOf(_buffer, (byte)'\n', _start, _end - _start);
                if (lf >= 0)
                {
                    string line = Encoding.Latin1.GetString(_buffer, _start, lf - _start).TrimEnd('\r');
                    _start = lf + 1;
                    return line;
                }

                if (!await FillAsync(cancellationToken))
                {
                    return null;
                }
            }
        }

        private async Task<string> ReadBytesAsync(int count, CancellationToken cancellationToken)
        {
            var bytes = new byte[count];
            int copied = await CopyAsync(bytes, cancellationToken);
            return Encoding.UTF8.GetString(bytes, 0, copied);
        }

        private async Task<int> CopyAsync(byte[] bytes, CancellationToken cancellationToken)
        {
            int copied = 0;
            while (copied < bytes.Length)
            {
                if (_start == _end && !await FillAsync(cancellationToken))
                {
                    break;
                }

                int n = Math.Min(bytes.Length - copied, _end - _start);
                Array.Copy(_buffer, _start, bytes, copied, n);
                _start += n;
                copied += n;
            }

            return copied;
        }

        private async Task<bool> FillAsync(CancellationToken cancellationToken)
        {
            if (_start > 0)
            {
                Array.Copy(_buffer, _start, _buffer, 0, _end - _start);
                _end -= _start;
                _start = 0;
            }

            try
            {
                int n = await stream.ReadAsync(_buffer.AsMemory(_end), cancellationToken);
                _end += n;
                return n > 0;
            }
            catch (IOException ex) when (ex.GetBaseException() is SocketException { SocketErrorCode: SocketError.ConnectionReset })
            {
                EndedWithReset = true;
                return false;
            }
        }
    }
}
