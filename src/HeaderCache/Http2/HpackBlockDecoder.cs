using System.Runtime.CompilerServices;
using HeaderCache.Caching;

namespace HeaderCache.Http2;

/// <summary>How a field is represented in a header block (RFC 7541 section 6).</summary>
internal enum HpackRepresentation : byte
{
    Indexed,             // 6.1
    IncrementalIndexing, // 6.2.1: adds the field to the table
    WithoutIndexing,     // 6.2.2
    NeverIndexed,        // 6.2.3
}

/// <summary>Where a decoded string's octets are: in the block, in the decoder's scratch (Huffman), or in a table
/// entry's array.</summary>
internal enum HpackSource : byte
{
    Block,
    Scratch,
    Array,
}

/// <summary>One field of a decoded header block: its representation, where it is in the block, and its decoded name
/// and value.</summary>
internal struct HpackField
{
    public HpackRepresentation Representation;
    public int Start;
    public int End;
    public int StaticIndex;      // the static entry of an indexed field or of a literal's name, else 0
    public HpackEntry? Entry;    // the dynamic entry of an indexed field or of a literal's name
    public HpackEntry? Added;    // the entry a literal with incremental indexing added (null when too large for the table)
    public HpackSource NameSource;
    public HpackSource ValueSource;
    public byte[]? NameArray;
    public byte[]? ValueArray;
    public int NameOffset;
    public int NameLength;
    public int ValueOffset;
    public int ValueLength;
    public int LongestString;    // the longest string as sent (encoded) or decoded
}

/// <summary>Decodes whole header blocks against the connection's <see cref="HpackDynamicTable"/>, applying every
/// change a block makes to it, and fails exactly where Kestrel's decoder would end the connection, or earlier (a
/// stricter decoder only stops the rewriting sooner).</summary>
internal sealed class HpackBlockDecoder(HpackDynamicTable table, int maxStringLength)
{
    // Each representation is told by the high bits of its first octet; the rest of that octet begins an integer of the
    // prefix length given (RFC 7541 section 5.1). The diagrams are those of RFC 7541 section 6.

    // 6.1 Indexed Header Field:
    //   0   1   2   3   4   5   6   7
    // +---+---+---+---+---+---+---+---+
    // | 1 |        Index (7+)         |
    // +---+---------------------------+
    private const byte IndexedMask = 0x80, Indexed = 0x80;
    private const int IndexedPrefix = 7;

    // 6.2.1 Literal Header Field with Incremental Indexing (Index 0: a new name, as a string, follows):
    //   0   1   2   3   4   5   6   7
    // +---+---+---+---+---+---+---+---+
    // | 0 | 1 |      Index (6+)       |
    // +---+---+-----------------------+
    private const byte IncrementalIndexingMask = 0xC0, IncrementalIndexing = 0x40;
    private const int IncrementalIndexingPrefix = 6;

    // 6.3 Dynamic Table Size Update:
    //   0   1   2   3   4   5   6   7
    // +---+---+---+---+---+---+---+---+
    // | 0 | 0 | 1 |   Max size (5+)   |
    // +---+---------------------------+
    private const byte SizeUpdateMask = 0xE0, SizeUpdate = 0x20;
    private const int SizeUpdatePrefix = 5;

    // 6.2.3 Literal Header Field Never Indexed; 6.2.2 Literal Header Field without Indexing is the same with 0000 in the
    // high bits (what no other pattern matches):
    //   0   1   2   3   4   5   6   7
    // +---+---+---+---+---+---+---+---+
    // | 0 | 0 | 0 | 1 |  Index (4+)   |
    // +---+---+-----------------------+
    private const byte NeverIndexedMask = 0xF0, NeverIndexed = 0x10;
    private const int LiteralPrefix = 4;

    // 5.2 String Literal: H, whether the octets are Huffman-coded, then their length.
    //   0   1   2   3   4   5   6   7
    // +---+---+---+---+---+---+---+---+
    // | H |    String Length (7+)     |
    // +---+---------------------------+
    private const byte HuffmanFlag = 0x80;
    private const int StringLengthPrefix = 7;

    // 5.1 Integer: after the prefix, octets of 7 value bits each, the high bit set on every octet but the last.
    private const byte ContinuationFlag = 0x80, ValueBits = 0x7F;

    // Kestrel's decoder accepts a string of up to its initial buffer whatever its configured limit.
    private const int DecoderBuffer = 4096;

    private readonly int _maxStringLength = Math.Max(DecoderBuffer, maxStringLength);
    private readonly HuffmanMemo _huffman = new();
    private HpackField[] _fields = [];
    private byte[] _scratch = [];
    private int _scratchLength;
    private int _count;

    /// <summary>The table the blocks are decoded against.</summary>
    public HpackDynamicTable Table => table;

    /// <summary>The fields of the block decoded last.</summary>
    public ReadOnlySpan<HpackField> Fields => _fields.AsSpan(0, _count);

    /// <summary>Decodes <paramref name="block"/> (a complete header block) and applies its table changes; false on
    /// anything Kestrel's decoder rejects, after which the table no longer follows Kestrel's.</summary>
    public bool Decode(ReadOnlySpan<byte> block)
    {
        table.BlockStarts();
        _count = 0;
        _scratchLength = 0;
        int at = 0;
        while (at < block.Length)
        {
            byte first = block[at];
            if ((first & SizeUpdateMask) == SizeUpdate)
            {
                // A size update is allowed only before the block's first field.
                if (_count != 0 || !TryReadInteger(block, ref at, SizeUpdatePrefix, out int size) || !table.Resize(size))
                {
                    return false;
                }

                continue;
            }

            if (_count == _fields.Length)
            {
                ConnectionArrays.Grow(ref _fields, Math.Max(16, _fields.Length * 2), _count);
            }

            ref HpackField field = ref _fields[_count];
            field = default;
            field.Start = at;
            if (!((first & IndexedMask) == Indexed ? TryReadIndexed(block, ref at, ref field) : TryReadLiteral(block, ref at, ref field)))
            {
                return false;
            }

            field.End = at;
            _count++;
            if (field.Representation == HpackRepresentation.IncrementalIndexing)
            {
                field.Added = table.Insert(Name(block, field), Value(block, field), field.StaticIndex);
            }
        }

        return true;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ReadOnlySpan<byte> Name(ReadOnlySpan<byte> block, in HpackField field) => field.NameSource switch
    {
        HpackSource.Block => block.Slice(field.NameOffset, field.NameLength),
        HpackSource.Scratch => _scratch.AsSpan(field.NameOffset, field.NameLength),
        _ => field.NameArray.AsSpan(field.NameOffset, field.NameLength),
    };

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ReadOnlySpan<byte> Value(ReadOnlySpan<byte> block, in HpackField field) => field.ValueSource switch
    {
        HpackSource.Block => block.Slice(field.ValueOffset, field.ValueLength),
        HpackSource.Scratch => _scratch.AsSpan(field.ValueOffset, field.ValueLength),
        _ => field.ValueArray.AsSpan(field.ValueOffset, field.ValueLength),
    };

    /// <summary>The connection reads no more blocks: lets go of the fields, the scratch and the table's entries.</summary>
    public void Release()
    {
        ConnectionArrays.Release(ref _fields);
        ConnectionArrays.Release(ref _scratch);
        _huffman.Release();
        _count = 0;
        table.Release();
    }

    /// <summary>Makes the decoder another connection's, as new: no fields, an empty table.</summary>
    public void Reset()
    {
        Release();
        _scratchLength = 0;
        table.Reset();
    }

    /// <summary>The connection idles: lets go of the last block's fields, the scratch and the strings remembered for
    /// Huffman decoding; the table stays.</summary>
    public void Trim()
    {
        ConnectionArrays.Release(ref _fields);
        ConnectionArrays.Release(ref _scratch);
        _huffman.Release();
        _count = 0;
    }

    private bool TryReadIndexed(ReadOnlySpan<byte> block, ref int at, ref HpackField field)
    {
        field.Representation = HpackRepresentation.Indexed;
        if (!TryReadInteger(block, ref at, IndexedPrefix, out int index) || !TryName(index, ref field))
        {
            return false;
        }

        if (field.Entry is { } entry)
        {
            (field.ValueArray, field.ValueOffset, field.ValueLength) = (entry.Octets, entry.NameLength, entry.ValueLength);
        }
        else
        {
            field.ValueArray = HpackStaticTable.Value(index);
            (field.ValueOffset, field.ValueLength) = (0, field.ValueArray.Length);
        }

        field.ValueSource = HpackSource.Array;
        field.LongestString = Math.Max(field.NameLength, field.ValueLength);
        return true;
    }

    private bool TryReadLiteral(ReadOnlySpan<byte> block, ref int at, ref HpackField field)
    {
        byte first = block[at];
        int prefix;
        (field.Representation, prefix) = (first & IncrementalIndexingMask) == IncrementalIndexing ? (HpackRepresentation.IncrementalIndexing, IncrementalIndexingPrefix)
            : (first & NeverIndexedMask) == NeverIndexed ? (HpackRepresentation.NeverIndexed, LiteralPrefix)
            : (HpackRepresentation.WithoutIndexing, LiteralPrefix);
        if (!TryReadInteger(block, ref at, prefix, out int index))
        {
            return false;
        }

        if (index != 0)
        {
            if (!TryName(index, ref field))
            {
                return false;
            }
        }
        else
        {
            if (!TryReadString(block, ref at, out field.NameSource, out field.NameOffset, out field.NameLength, ref field.LongestString) || field.NameLength == 0)
            {
                return false;
            }
        }

        return TryReadString(block, ref at, out field.ValueSource, out field.ValueOffset, out field.ValueLength, ref field.LongestString);
    }

    // The name of HPACK index `index`: a static entry or a dynamic one; false for 0 or beyond the table.
    private bool TryName(int index, ref HpackField field)
    {
        if (index == 0)
        {
            return false;
        }

        if (index <= HpackStaticTable.Count)
        {
            field.StaticIndex = index;
            field.NameArray = HpackStaticTable.Name(index);
            (field.NameOffset, field.NameLength) = (0, field.NameArray.Length);
        }
        else
        {
            HpackEntry? entry = table[index - HpackStaticTable.Count - 1];
            if (entry is null)
            {
                return false;
            }

            field.Entry = entry;
            field.StaticIndex = entry.StaticNameIndex;
            (field.NameArray, field.NameOffset, field.NameLength) = (entry.Octets, 0, entry.NameLength);
        }

        field.NameSource = HpackSource.Array;
        return true;
    }

    private bool TryReadString(ReadOnlySpan<byte> block, ref int at, out HpackSource source, out int offset, out int length, ref int longest)
    {
        (source, offset, length) = (HpackSource.Block, 0, 0);
        if (at >= block.Length)
        {
            return false;
        }

        bool huffman = (block[at] & HuffmanFlag) != 0;
        if (!TryReadInteger(block, ref at, StringLengthPrefix, out int encoded) || encoded > _maxStringLength || encoded > block.Length - at)
        {
            return false;
        }

        ReadOnlySpan<byte> octets = block.Slice(at, encoded);
        at += encoded;
        longest = Math.Max(longest, encoded);
        if (!huffman)
        {
            (offset, length) = (at - encoded, encoded);
            return true;
        }

        int room = HpackHuffman.MaxDecodedLength(encoded);
        if (_scratch.Length - _scratchLength < room)
        {
            ConnectionArrays.Grow(ref _scratch, Math.Max(_scratch.Length * 2, _scratchLength + room), _scratchLength);
        }

        length = _huffman.Decode(octets, _scratch.AsSpan(_scratchLength, room));
        if (length < 0)
        {
            return false;
        }

        (source, offset) = (HpackSource.Scratch, _scratchLength);
        _scratchLength += length;
        longest = Math.Max(longest, length);
        return true;
    }

    // RFC 7541 5.1 with Kestrel's limits: at most 31 bits (the fifth continuation octet carries at most the top three),
    // and no continuation octet of 0 that ends the integer unless it is the first one.
    private static bool TryReadInteger(ReadOnlySpan<byte> block, ref int at, int prefixBits, out int value)
    {
        int max = (1 << prefixBits) - 1;
        value = block[at++] & max;
        if (value < max)
        {
            return true;
        }

        for (int shift = 0, continuations = 0; at < block.Length; shift += 7, continuations++)
        {
            byte octet = block[at++];
            if (shift > 28 || (shift == 28 && (octet & ValueBits & ~0x07) != 0))
            {
                return false;
            }

            value += (octet & ValueBits) << shift;
            if (value < 0)
            {
                return false;
            }

            if ((octet & ContinuationFlag) == 0)
            {
                return octet != 0 || continuations == 0;
            }
        }

        return false;
    }
}
