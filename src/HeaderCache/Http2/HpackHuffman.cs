namespace HeaderCache.Http2;

/// <summary>The Huffman code of RFC 7541 Appendix B, decoded under the rules Kestrel's decoder applies: the EOS symbol
/// anywhere, a code cut short, or padding that is longer than seven bits or not all ones is an error.</summary>
/// <remarks>The code is canonical (codes of one length are consecutive, and each length's first code follows from the
/// shorter ones), so the table is the code length of each symbol, and a prefix of length n is a whole code exactly when
/// it lies within that length's range of codes.</remarks>
internal static class HpackHuffman
{
    private const int Eos = 256;
    private const int LongestCode = 30;

    // The code length of each symbol 0..255 and EOS.
    private static ReadOnlySpan<byte> CodeLengths =>
    [
        13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28,
        28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7,
        8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19,
        13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13,
        28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21,
        22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23,
        22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
        19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25,
        25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
    ];

    // Per code length: the first code, how many codes, and where their symbols start in Symbols (ordered by code).
    private static readonly int[] First = new int[LongestCode + 1];
    private static readonly int[] Count = new int[LongestCode + 1];
    private static readonly int[] Offset = new int[LongestCode + 1];
    private static readonly short[] Symbols = BuildSymbols();

    // The symbols whose codes have at most eight bits (a header's letters, digits and most punctuation), by the next
    // eight bits: the symbol and, above it, the code's length; 0 for a longer code. One lookup decodes such a symbol;
    // only longer codes are walked length by length.
    private static readonly ushort[] Short = BuildShort();

    /// <summary>The most octets <paramref name="encodedLength"/> encoded octets can decode to (the shortest code has five
    /// bits).</summary>
    public static int MaxDecodedLength(int encodedLength) => (encodedLength * 8 / 5) + 1;

    /// <summary>Decodes <paramref name="source"/> into <paramref name="destination"/>, which holds
    /// <see cref="MaxDecodedLength"/> octets; the decoded length, or -1 when Kestrel would reject the string.</summary>
    public static int Decode(ReadOnlySpan<byte> source, Span<byte> destination)
    {
        ulong window = 0;   // the next bits, from the top
        int bits = 0;
        int at = 0;
        int written = 0;
        while (true)
        {
            // At least a longest code's bits, while the source lasts; past its end the window holds zeros.
            for (; bits <= 56 && at < source.Length; bits += 8)
            {
                window |= (ulong)source[at++] << (56 - bits);
            }

            int length;
            int symbol;
            ushort entry = Short[(int)(window >> 56)];
            if (entry != 0)
            {
                (length, symbol) = (entry >> 9, entry & 0x1FF);
            }
            else
            {
                uint next = (uint)(window >> 32);
                length = 9;
                while ((next >> (32 - length)) - (uint)First[length] >= (uint)Count[length])
                {
                    if (++length > LongestCode)
                    {
                        return -1;
                    }
                }

                symbol = Symbols[Offset[length] + (int)((next >> (32 - length)) - (uint)First[length])];
            }

            if (length > bits)
            {
                break;
            }

            if (symbol == Eos)
            {
                return -1;
            }

            destination[written++] = (byte)symbol;
            window <<= length;
            bits -= length;
        }

        // What is left is padding: at most seven bits, all ones (a prefix of EOS); no code of seven bits or fewer is all
        // ones, so padding never decodes as a symbol above.
        return bits <= 7 && (bits == 0 || window >> (64 - bits) == (1UL << bits) - 1) ? written : -1;
    }

    private static short[] BuildSymbols()
    {
        ReadOnlySpan<byte> lengths = CodeLengths;
        var symbols = new short[lengths.Length];
        int next = 0;
        int code = 0;
        for (int length = 1; length <= LongestCode; length++)
        {
            First[length] = code;
            Offset[length] = next;
            for (int symbol = 0; symbol < lengths.Length; symbol++)
            {
                if (lengths[symbol] == length)
                {
                    symbols[next++] = (short)symbol;
                    Count[length]++;
                }
            }

            code = (code + Count[length]) << 1;
        }

        return symbols;
    }

    private static ushort[] BuildShort()
    {
        var table = new ushort[256];
        for (int length = 1; length <= 8; length++)
        {
            for (int index = 0; index < Count[length]; index++)
            {
                int code = First[length] + index;
                int symbol = Symbols[Offset[length] + index];
                int fill = 1 << (8 - length);
                table.AsSpan(code << (8 - length), fill).Fill((ushort)(symbol | (length << 9)));
            }
        }

        return table;
    }
}
