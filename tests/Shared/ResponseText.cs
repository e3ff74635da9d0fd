using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using System.Globalization;
using System.Text;
using System.Text.RegularExpressions;

namespace HeaderCache.InMemory;

/// <summary>
/// HTTP/1.1 responses as the differential tests compare them: Latin-1 text without the <c>Date</c> header, the one
/// part of a response that differs between two servers answering the same bytes a second apart.
/// </summary>
internal static partial class ResponseText
{
    /// <summary>The transcript entry for the server closing the connection.</summary>
    public const string Closed = "<closed>";

    /// <summary><paramref name="text"/> without its <c>Date</c> header lines.</summary>
    public static string WithoutDate(string text) => DateHeader().Replace(text, "");

    /// <summary>
    /// Takes the first whole response (its head and a body of its Content-Length, none without one) off the front of
    /// <paramref name="buffer"/>, as text without <c>Date</c>.
    /// </summary>
    /// <returns><see langword="false"/> while the response is not complete in <paramref name="buffer"/>.</returns>
    public static bool TryTake(ref ReadOnlySequence<byte> buffer, [NotNullWhen(true)] out string? response)
    {
        response = null;
        var reader = new SequenceReader<byte>(buffer);
        if (!reader.TryReadTo(out ReadOnlySequence<byte> head, "\r\n\r\n"u8))
        {
            return false;
        }

        Match length = ContentLength().Match(Encoding.Latin1.GetString(head) + "\r\n");
        long bodyLength = length.Success ? long.Parse(length.Groups[1].ValueSpan, NumberStyles.None, CultureInfo.InvariantCulture) : 0;
        if (reader.Remaining < bodyLength)
        {
            return false;
        }

        ReadOnlySequence<byte> whole = buffer.Slice(0, reader.Consumed + bodyLength);
        response = WithoutDate(Encoding.Latin1.GetString(whole));
        buffer = buffer.Slice(whole.End);
        return true;
    }

    [GeneratedRegex("\r\nDate: [^\r\n]*", RegexOptions.IgnoreCase)]
    private static partial Regex DateHeader();

    [GeneratedRegex("\r\nContent-Length: ([0-9]+)\r\n", RegexOptions.IgnoreCase)]
    private static partial Regex ContentLength();
}
