using System.Text;
using HeaderCache.H2Client;
using HeaderCache.Http2;

namespace HeaderCache.Tests.Http2;

/// <summary>The memo of Huffman-coded strings decodes exactly as the decoder does, whatever it remembers: repeated
/// strings, more strings than it has slots, strings that share the octets its fingerprint reads, errors, and after it
/// let go of everything.</summary>
public class HuffmanMemoTests
{
    [Fact]
    public void Decodes_every_string_as_the_decoder_does_while_strings_repeat_and_push_each_other_out()
    {
        var random = new Random(57);
        var memo = new HuffmanMemo();

        // A pool a little larger than the memo, with strings that differ only between their first and last eight
        // octets (the same fingerprint), and strings around the longest remembered.
        var pool = new List<byte[]>();
        for (int i = 0; i < HuffmanMemo.Slots + 8; i++)
        {
            pool.Add(Huffman.Encode(Encoding.ASCII.GetBytes($"session=abcdefgh{i:D4}ijklmnopqrstuvwx-{new string('z', i * 17)}")));
        }

        pool.Add(Huffman.Encode(Encoding.ASCII.GetBytes(new string('a', 400))));
        int decoded = 0;
        for (int round = 0; round < 20_000; round++)
        {
            byte[] encoded = random.Next(4) == 0 ? pool[random.Next(pool.Count)] : pool[random.Next(6)];
            byte[] expected = new byte[HpackHuffman.MaxDecodedLength(encoded.Length)];
            byte[] actual = new byte[expected.Length];
            int expectedLength = HpackHuffman.Decode(encoded, expected);
            int actualLength = memo.Decode(encoded, actual);
            Assert.Equal(expectedLength, actualLength);
            Assert.True(expected.AsSpan(0, expectedLength).SequenceEqual(actual.AsSpan(0, actualLength)));
            decoded += actualLength >= 0 ? 1 : 0;
            if (round == 10_000)
            {
                memo.Release();
            }
        }

        Assert.Equal(20_000, decoded);
    }

    [Fact]
    public void A_repeated_string_is_served_from_the_memo()
    {
        var memo = new HuffmanMemo();
        byte[] encoded = Huffman.Encode("session=0123456789abcdef"u8);
        var output = new byte[HpackHuffman.MaxDecodedLength(encoded.Length)];
        memo.Decode(encoded, output);
        Assert.Equal(0, Referenced(memo));

        // The hit marks its slot for the replacement hand (our own private field: the memo shows nothing else).
        Assert.Equal(24, memo.Decode(encoded, output));
        Assert.NotEqual(0, Referenced(memo));
        Assert.Equal("session=0123456789abcdef", Encoding.ASCII.GetString(output, 0, 24));
    }

    [Fact]
    public void A_string_that_fails_to_decode_fails_every_time_and_is_not_remembered_as_a_good_one()
    {
        var memo = new HuffmanMemo();
        byte[] good = Huffman.Encode("no-cache"u8);
        byte[] bad = (byte[])good.Clone();
        bad[^1] &= 0xFE;   // padding that is not all ones
        var output = new byte[HpackHuffman.MaxDecodedLength(good.Length)];
        Assert.Equal(-1, HpackHuffman.Decode(bad, output));
        for (int i = 0; i < 3; i++)
        {
            Assert.Equal(-1, memo.Decode(bad, output));
            Assert.Equal(8, memo.Decode(good, output));
            Assert.Equal("no-cache", Encoding.ASCII.GetString(output, 0, 8));
        }
    }

    private static int Referenced(HuffmanMemo memo) =>
        (int)typeof(HuffmanMemo).GetField("_referenced", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!.GetValue(memo)!;
}
