using System.Text;

namespace HeaderCache.H2Client;

/// <summary>
/// A header block written field by field in the representation asked for, indexes as given (valid or not), strings
/// without Huffman coding: for tests that spell out a block's octets, where <see cref="HpackEncoder.Field"/> would pick
/// the representation from its table.
/// </summary>
internal sealed class HeaderBlock
{
    private readonly List<byte> _bytes = [];

    public byte[] ToArray() => [.. _bytes];

    /// <summary>:method, :scheme http, :path and :authority localhost, each as an indexed field or a literal without
    /// indexing named by its static index.</summary>
    public HeaderBlock Request(string method, string path) =>
        (method == "GET" ? Indexed(2) : method == "POST" ? Indexed(3) : Literal(FieldKind.WithoutIndexing, 2, method))
            .Indexed(6).Literal(FieldKind.WithoutIndexing, 4, path).Literal(FieldKind.WithoutIndexing, 1, "localhost");

    public HeaderBlock Indexed(int index)
    {
        HpackEncoder.Indexed(_bytes, index);
        return this;
    }

    /// <summary>A literal of <paramref name="kind"/> named by <paramref name="nameIndex"/>, or by <paramref name="name"/>
    /// written out when the index is 0.</summary>
    public HeaderBlock Literal(FieldKind kind, int nameIndex, string value, string? name = null)
    {
        byte[] nameBytes = nameIndex == 0 ? Encoding.Latin1.GetBytes(name!) : [];
        HpackEncoder.WriteLiteral(_bytes, kind, nameIndex, nameBytes, Encoding.Latin1.GetBytes(value), huffmanName: false, huffmanValue: false);
        return this;
    }

    public HeaderBlock Without(string name, string value) => Literal(FieldKind.WithoutIndexing, 0, value, name);

    public HeaderBlock Incremental(string name, string value) => Literal(FieldKind.IncrementalIndexing, 0, value, name);

    /// <summary>A dynamic table size update; it belongs before the block's first field.</summary>
    public HeaderBlock SizeUpdate(int size)
    {
        HpackEncoder.Integer(_bytes, size, 5, 0x20);
        return this;
    }
}
