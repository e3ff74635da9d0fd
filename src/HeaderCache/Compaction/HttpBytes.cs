using System.Buffers;

namespace HeaderCache.Compaction;

/// <summary>The byte sets of RFC 9110 the compactor accepts, defined once.</summary>
internal static class HttpBytes
{
    /// <summary><c>tchar</c>: the bytes of a method or a header name.</summary>
    public static readonly SearchValues<byte> Token =
        SearchValues.Create("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"u8);

    /// <summary>The bytes of a field value the compactor takes out: VCHAR, SP and HTAB (no obs-text).</summary>
    public static readonly SearchValues<byte> FieldContent = SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);
}
