using System.Buffers;
using System.Text;

namespace HeaderCache.Benchmarks;

/// <summary>Header values for the micro benchmarks, and the string Kestrel would make of them.</summary>
internal static class HeaderValues
{
    /// <summary>Buffers in a ring: a power of two, far above the capacity of every cache benchmarked.</summary>
    public const int RingLength = 256;

    /// <summary>A value of visible ASCII (0x21-0x7E), so distinct values almost always differ in their first bytes.</summary>
    public static byte[] Random(Random random, int length)
    {
        var bytes = new byte[length];
        for (int i = 0; i < bytes.Length; i++)
        {
            bytes[i] = (byte)random.Next(0x21, 0x7F);
        }

        return bytes;
    }

    /// <summary>The buffers the benchmark calls take in turn: copies of <paramref name="hitValue"/> for
    /// <see cref="Lookup.Hit"/>, distinct random values for <see cref="Lookup.Miss"/>.</summary>
    public static byte[][] Ring(Random random, byte[] hitValue, Lookup lookup)
    {
        var ring = new byte[RingLength][];
        for (int i = 0; i < ring.Length; i++)
        {
            ring[i] = lookup == Lookup.Hit ? hitValue.ToArray() : Random(random, hitValue.Length);
        }

        return ring;
    }

    /// <summary>
    /// What Kestrel's <c>GetAsciiOrUTF8StringNonNullCharacters</c> costs: <c>string.Create</c>, widen the
    /// ASCII bytes in place, and fall back to UTF-8 when they are not ASCII.
    /// </summary>
    /// <remarks>Kestrel also refuses NUL in the same pass; <see cref="Ascii.ToUtf16"/> does not, so this
    /// baseline is, if anything, slightly cheaper than Kestrel.</remarks>
    public static string Decode(ReadOnlySpan<byte> bytes)
    {
        string result = string.Create(bytes.Length, bytes, static (chars, source) =>
        {
            if (Ascii.ToUtf16(source, chars, out _) != OperationStatus.Done)
            {
                chars[0] = '\0';
            }
        });

        return result.Length > 0 && result[0] == '\0' ? Encoding.UTF8.GetString(bytes) : result;
    }
}
