using System.Text;

namespace HeaderCache.H2Client;

/// <summary>How a field is represented in a header block (RFC 7541, section 6).</summary>
internal enum FieldKind
{
    /// <summary>6.1: an index into the static or dynamic table.</summary>
    Indexed,

    /// <summary>6.2.1: a literal that the decoder then adds to its dynamic table.</summary>
    IncrementalIndexing,

    /// <summary>6.2.2: a literal that leaves the table as it is.</summary>
    WithoutIndexing,

    /// <summary>6.2.3: a literal that leaves the table as it is and that intermediaries must not index.</summary>
    NeverIndexed,
}

/// <summary>
/// An HPACK dynamic table (RFC 7541, section 4): entries newest first, sizes in decoded octets plus 32, eviction of the
/// oldest until an insertion fits, and an entry larger than the table empties it.
/// </summary>
internal sealed class HpackTable
{
    /// <summary>The static table (RFC 7541, Appendix A), 0-based: static index <c>i</c> is <c>Static[i - 1]</c>.</summary>
    public static readonly (string Name, string Value)[] Static =
    [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"), (":scheme", "http"), (":scheme", "https"),
        (":status", "200"), (":status", "204"), (":status", "206"), (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"),
        ("accept-charset", ""), ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""), ("cache-control", ""), ("content-disposition", ""),
        ("content-encoding", ""), ("content-language", ""), ("content-length", ""), ("content-location", ""), ("content-range", ""), ("content-type", ""),
        ("cookie", ""), ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""), ("if-match", ""), ("if-modified-since", ""),
        ("if-none-match", ""), ("if-range", ""), ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""),
        ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""),
        ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate",
        ""),
    ];

    private readonly List<(byte[] Name, byte[] Value)> _entries = [];

    public HpackTable(int maxSize) => MaxSize = maxSize;

    /// <summary>The table's size limit (the last size update).</summary>
    public int MaxSize { get; private set; }

    /// <summary>The sum of the entries' sizes.</summary>
    public int Size { get; private set; }

    /// <summary>How many entries it holds; dynamic index <c>62 + k</c> is the k-th newest.</summary>
    public int Count => _entries.Count;

    /// <summary>The entry at HPACK index <paramref name="index"/> (static or dynamic), or <see langword="null"/> if none.</summary>
    public (byte[] Name, byte[] Value)? Get(int index)
    {
        if (index >= 1 && index <= Static.Length)
        {
            return (Encoding.Latin1.GetBytes(Static[index - 1].Name), Encoding.Latin1.GetBytes(Static[index - 1].Value));
        }

        int dynamic = index - Static.Length - 1;
        return dynamic >= 0 && dynamic < _entries.Count ? _entries[dynamic] : null;
    }

    /// <summary>The lowest index whose entry has this name and value (<paramref name="nameOnly"/>: this name), or 0.</summary>
    public int Find(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, bool nameOnly)
    {
        string nameText = Encoding.Latin1.GetString(name);
        string valueText = Encoding.Latin1.GetString(value);
        for (int i = 0; i < Static.Length; i++)
        {
            if (Static[i].Name == nameText && (nameOnly || Static[i].Value == valueText))
            {
                return i + 1;
            }
        }

        for (int i = 0; i < _entries.Count; i++)
        {
            if (_entries[i].Name.AsSpan().SequenceEqual(name) && (nameOnly || _entries[i].Value.AsSpan().SequenceEqual(value)))
            {
                return Static.Length + 1 + i;
            }
        }

        return 0;
    }

    public void Insert(byte[] name, byte[] value)
    {
        int size = name.Length + value.Length + 32;
        while (_entries.Count > 0 && Size + size > MaxSize)
        {
            Evict();
        }

        if (size <= MaxSize)
        {
            _entries.Insert(0, (name, value));
            Size += size;
        }
    }

    public void Resize(int maxSize)
    {
        MaxSize = maxSize;
        while (Size > MaxSize)
        {
            Evict();
        }
    }

    private void Evict()
    {
        (byte[] name, byte[] value) = _entries[^1];
        _entries.RemoveAt(_entries.Count - 1);
        Size -= name.Length + value.Length + 32;
    }
}

/// <summary>
/// An HPACK encoder that writes whatever representation it is told to, valid or not, and keeps its own copy of the
/// dynamic table as a decoder that accepted every byte would have it.
/// </summary>
internal sealed class HpackEncoder(int tableSize = 4096)
{
    /// <summary>The table as the peer's decoder holds it, if it accepted everything written so far.</summary>
    public HpackTable Table { get; } = new(tableSize);

    /// <summary>Writes an integer with an <paramref name="prefixBits"/>-bit prefix, the first octet's other bits <paramref name="first"/>.</summary>
    public static void Integer(List<byte> block, int value, int prefixBits, byte first)
    {
        int max = (1 << prefixBits) - 1;
        if (value < max)
        {
            block.Add((byte)(first | value));
            return;
        }

        block.Add((byte)(first | max));
        value -= max;
        while (value >= 128)
        {
            block.Add((byte)((value & 0x7F) | 0x80));
            value >>= 7;
        }

        block.Add((byte)value);
    }

    /// <summary>Writes a string literal, Huffman-encoded if <paramref name="huffman"/>.</summary>
    public static void String(List<byte> block, ReadOnlySpan<byte> bytes, bool huffman)
    {
        if (huffman)
        {
            byte[] encoded = Huffman.Encode(bytes);
            Integer(block, encoded.Length, 7, 0x80);
            block.AddRange(encoded);
        }
        else
        {
            Integer(block, bytes.Length, 7, 0);
            block.AddRange(bytes.ToArray());
        }
    }

    /// <summary>An indexed field (6.1), whether or not the index exists.</summary>
    public static void Indexed(List<byte> block, int index) => Integer(block, index, 7, 0x80);

    /// <summary>
    /// A literal field (6.2) of <paramref name="kind"/>, its name by <paramref name="nameIndex"/> (0: written as a
    /// string), and the table updated as the peer would for incremental indexing.
    /// </summary>
    public void Literal(List<byte> block, FieldKind kind, int nameIndex, byte[] name, byte[] value, bool huffmanName, bool huffmanValue)
    {
        WriteLiteral(block, kind, nameIndex, name, value, huffmanName, huffmanValue);
        if (kind == FieldKind.IncrementalIndexing)
        {
            Table.Insert(name, value);
        }
    }

    /// <summary>
    /// A literal field (6.2) of <paramref name="kind"/> (<see cref="FieldKind.Indexed"/> writes one without indexing),
    /// its name by <paramref name="nameIndex"/> (0: written as a string), whether or not the index exists; no table to
    /// follow it, for blocks whose octets a test spells out.
    /// </summary>
    public static void WriteLiteral(List<byte> block, FieldKind kind, int nameIndex, ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, bool huffmanName, bool huffmanValue)
    {
        (int prefix, byte first) = kind switch
        {
            FieldKind.IncrementalIndexing => (6, (byte)0x40),
            FieldKind.NeverIndexed => (4, (byte)0x10),
            _ => (4, (byte)0x00),
        };
        Integer(block, nameIndex, prefix, first);
        if (nameIndex == 0)
        {
            String(block, name, huffmanName);
        }

        String(block, value, huffmanValue);
    }

    /// <summary>A dynamic table size update (6.3); the copy of the table follows it.</summary>
    public void SizeUpdate(List<byte> block, int size)
    {
        Integer(block, size, 5, 0x20);
        Table.Resize(size);
    }

    /// <summary>
    /// Writes <paramref name="name"/>: <paramref name="value"/> as <paramref name="kind"/>; an indexed field whose entry
    /// the table lacks is written as a literal with incremental indexing (as a browser does), and a literal names by
    /// index when <paramref name="indexName"/> and the table has the name.
    /// </summary>
    public void Field(List<byte> block, string name, string value, FieldKind kind, bool huffman, bool indexName = true)
    {
        byte[] nameBytes = Encoding.Latin1.GetBytes(name);
        byte[] valueBytes = Encoding.Latin1.GetBytes(value);
        if (kind == FieldKind.Indexed)
        {
            int index = Table.Find(nameBytes, valueBytes, nameOnly: false);
            if (index > 0)
            {
                Indexed(block, index);
                return;
            }

            kind = FieldKind.IncrementalIndexing;
        }

        int nameIndex = indexName ? Table.Find(nameBytes, [], nameOnly: true) : 0;
        Literal(block, kind, nameIndex, nameBytes, valueBytes, huffman, huffman);
    }
}

/// <summary>A strict HPACK decoder for what the server sends: fields as text, or an error that says what was wrong.</summary>
internal sealed class HpackDecoder(int tableSize = 4096)
{
    private readonly HpackTable _table = new(tableSize);

    /// <summary>Decodes a whole header block; throws <see cref="InvalidDataException"/> on anything malformed.</summary>
    public List<(string Name, string Value)> Decode(ReadOnlySpan<byte> block)
    {
        var fields = new List<(string, string)>();
        int at = 0;
        bool sawField = false;
        while (at < block.Length)
        {
            byte first = block[at];
            if ((first & 0x80) != 0)
            {
                int index = ReadInteger(block, ref at, 7);
                (byte[] name, byte[] value) = _table.Get(index) ?? throw new InvalidDataException($"index {index} out of range");
                fields.Add((Encoding.Latin1.GetString(name), Encoding.Latin1.GetString(value)));
                sawField = true;
            }
            else if ((first & 0xE0) == 0x20)
            {
                if (sawField)
                {
                    throw new InvalidDataException("size update after a field");
                }

                _table.Resize(ReadInteger(block, ref at, 5));
            }
            else
            {
                bool incremental = (first & 0xC0) == 0x40;
                int nameIndex = ReadInteger(block, ref at, incremental ? 6 : 4);
                byte[] name = nameIndex == 0
                    ? ReadString(block, ref at)
                    : (_table.Get(nameIndex) ?? throw new InvalidDataException($"name index {nameIndex} out of range")).Name;
                byte[] value = ReadString(block, ref at);
                fields.Add((Encoding.Latin1.GetString(name), Encoding.Latin1.GetString(value)));
                if (incremental)
                {
                    _table.Insert(name, value);
                }

                sawField = true;
            }
        }

        return fields;
    }

    private static int ReadInteger(ReadOnlySpan<byte> block, ref int at, int prefixBits)
    {
        int max = (1 << prefixBits) - 1;
        int value = block[at++] & max;
        if (value < max)
        {
            return value;
        }

        for (int shift = 0; ; shift += 7)
        {
            if (at >= block.Length || shift > 28)
            {
                throw new InvalidDataException("bad integer");
            }

            byte b = block[at++];
            value += (b & 0x7F) << shift;
            if ((b & 0x80) == 0)
            {
                return value;
            }
        }
    }

    private static byte[] ReadString(ReadOnlySpan<byte> block, ref int at)
    {
        if (at >= block.Length)
        {
            throw new InvalidDataException("truncated string");
        }

        bool huffman = (block[at] & 0x80) != 0;
        int length = ReadInteger(block, ref at, 7);
        if (at + length > block.Length)
        {
            throw new InvalidDataException("truncated string");
        }

        ReadOnlySpan<byte> bytes = block.Slice(at, length);
        at += length;
        return huffman ? Huffman.Decode(bytes) ?? throw new InvalidDataException("bad Huffman") : bytes.ToArray();
    }
}
