using HeaderCache.H2Client;
using HeaderCache.Http2;

namespace HeaderCache.Tests.Http2;

/// <summary><see cref="HpackHuffman"/> against the test client's bit-by-bit decoder of RFC 7541's code: the same octets,
/// or the same refusal (EOS, a cut code, padding too long or not all ones), for encoded strings and for noise.</summary>
public class HpackHuffmanTests
{
    [Fact]
    public void Encoded_strings_of_every_octet_decode_as_they_were()
    {
        var random = new Random(48);
        for (int i = 0; i < 2000; i++)
        {
            byte[] text = new byte[random.Next(0, 64)];
            if (i % 2 == 0)
            {
                random.NextBytes(text);
            }
            else
            {
                // A header's characters, mostly of five to eight bits, so the table's path is taken.
                for (int k = 0; k < text.Length; k++)
                {
                    text[k] = (byte)random.Next(0x20, 0x7F);
                }
            }

            byte[] encoded = Huffman.Encode(text);
            Assert.Equal(text, Decode(encoded));
        }
    }

    [Fact]
    public void Noise_is_refused_or_decoded_exactly_as_the_reference_does()
    {
        var random = new Random(7541);
        int refused = 0;
        for (int i = 0; i < 20000; i++)
        {
            byte[] noise = new byte[random.Next(0, 12)];
            random.NextBytes(noise);
            if (i % 3 == 0 && noise.Length > 0)
            {
                // Runs of ones: EOS, and padding of every length.
                noise.AsSpan(random.Next(noise.Length)).Fill(0xFF);
            }

            byte[]? expected = Huffman.Decode(noise);
            refused += expected is null ? 1 : 0;
            Assert.Equal(expected, Decode(noise));
        }

        Assert.InRange(refused, 1000, 19000);
    }

    private static byte[]? Decode(byte[] encoded)
    {
        byte[] output = new byte[HpackHuffman.MaxDecodedLength(encoded.Length)];
        int length = HpackHuffman.Decode(encoded, output);
        return length < 0 ? null : output[..length];
    }
}
