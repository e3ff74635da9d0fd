using System.Diagnostics.CodeAnalysis;
using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>Byte helpers shared by the cache tests. Everything is driven by seeded <see cref="Random"/>s.</summary>
internal static class TestBytes
{
    /// <summary>
    /// The oracle for a cacheable byte, written independently of <c>HttpBytes.FieldContent</c>:
    /// HTAB, SP and visible ASCII (0x21-0x7E).
    /// </summary>
    public static bool IsFieldByte(int b) => b == 0x09 || b == 0x20 || (b >= 0x21 && b <= 0x7E);

    /// <summary>Every byte value the cache must refuse (controls other than HTAB, DEL, 0x80-0xFF).</summary>
    public static byte[] InvalidBytes { get; } =
        Enumerable.Range(0, 256).Where(b => !IsFieldByte(b)).Select(b => (byte)b).ToArray();

    /// <summary>Fills <paramref name="bytes"/> with valid bytes: mostly visible ASCII, some SP and HTAB.</summary>
    public static void FillValid(Random random, Span<byte> bytes)
    {
        for (int i = 0; i < bytes.Length; i++)
        {
            bytes[i] = random.Next(16) switch
            {
                0 => 0x20,
                1 => 0x09,
                _ => (byte)random.Next(0x21, 0x7F),
            };
        }
    }

    /// <summary>A new array of <paramref name="length"/> valid bytes.</summary>
    public static byte[] Valid(Random random, int length)
    {
        byte[] bytes = new byte[length];
        FillValid(random, bytes);
        return bytes;
    }

    /// <summary>A byte the cache must refuse.</summary>
    public static byte Invalid(Random random) => InvalidBytes[random.Next(InvalidBytes.Length)];

    /// <summary>A uniformly random 32-bit seed.</summary>
    public static uint Seed(Random random) => (uint)random.NextInt64(0, 1L << 32);

    /// <summary>The bytes of <paramref name="text"/>, one byte per char (chars must be below 256).</summary>
    public static byte[] Bytes(string text) => Encoding.Latin1.GetBytes(text);

    /// <summary>The string of <paramref name="bytes"/>, one char per byte: the expected decoding for ASCII.</summary>
    public static string Text(ReadOnlySpan<byte> bytes) => Encoding.Latin1.GetString(bytes);

    /// <summary><paramref name="text"/> with each ASCII letter's case chosen at random.</summary>
    public static string RandomCasing(Random random, string text)
    {
        var builder = new StringBuilder(text.Length);
        foreach (char c in text)
        {
            builder.Append(random.Next(2) == 0 ? char.ToUpperInvariant(c) : char.ToLowerInvariant(c));
        }

        return builder.ToString();
    }

    /// <summary>
    /// Bytes that all share one fingerprint: 40 bytes whose first, middle and last 8 (the only ones the fingerprint
    /// reads) are fixed, with <paramref name="key"/> (at most 8 bytes) in bytes 8 to 15, which it does not read.
    /// </summary>
    public static byte[] Colliding(string key) => Bytes("01234567" + key.PadRight(8, '-') + "ABCDEFGH--------abcdefgh");

    /// <summary>
    /// Bytes of <paramref name="length"/> (at least 40) that all share one fingerprint for that length: random valid bytes
    /// where the fingerprint does not read, fixed bytes where it does.
    /// </summary>
    public static byte[] Colliding(Random random, int length)
    {
        byte[] bytes = Valid(random, length);
        "01234567"u8.CopyTo(bytes);
        "ABCDEFGH"u8.CopyTo(bytes.AsSpan((length / 2) - 4));
        "abcdefgh"u8.CopyTo(bytes.AsSpan(length - 8));
        return bytes;
    }

    /// <summary>The cache's lookup in the shape the tests read best: the string, when the bytes were not refused.</summary>
    public static bool TryGetOrAdd(this HeaderStringCache cache, ReadOnlySpan<byte> bytes, [NotNullWhen(true)] out string? value) =>
        cache.TryGetOrAdd(bytes, out value, out _);

    /// <summary>The lookup, with the slot that holds the string.</summary>
    public static bool TryGetOrAdd(this HeaderStringCache cache, ReadOnlySpan<byte> bytes, [NotNullWhen(true)] out string? value, out int slot)
    {
        bool created = false;
        value = cache.GetOrAdd(bytes, out slot, out _, ref created);
        return value is not null;
    }
}
