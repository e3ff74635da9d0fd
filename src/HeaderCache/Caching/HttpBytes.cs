using System.Buffers;

namespace HeaderCache.Caching;

/// <summary>The byte sets of RFC 9110 that HeaderCache accepts, defined once: the compactor checks names and kept values
/// with them, the cache checks a value before it creates its string.</summary>
internal static class HttpBytes
{
    /// <summary><c>tchar</c>: the bytes of a method or a header name.</summary>
    public static readonly SearchValues<byte> Token =
        SearchValues.Create("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"u8);

    /// <summary>The bytes of a field value HeaderCache takes out: VCHAR, SP and HTAB (no obs-text), the bytes Kestrel
    /// turns into the identical UTF-16 characters.</summary>
    public static readonly SearchValues<byte> FieldContent = SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);
}
