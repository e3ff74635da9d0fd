using System.Buffers;

namespace HeaderCache.Caching;

/// <summary>The bytes of RFC 9110's grammar that HeaderCache reads, defined once for the readers and the cache.</summary>
internal static class HttpBytes
{
    /// <summary>Carriage return.</summary>
    public const byte CR = (byte)'\r';

    /// <summary>Line feed.</summary>
    public const byte LF = (byte)'\n';

    /// <summary>Space.</summary>
    public const byte SP = (byte)' ';

    /// <summary>Horizontal tab.</summary>
    public const byte HTAB = (byte)'\t';

    /// <summary>The colon after a header name.</summary>
    public const byte Colon = (byte)':';

    /// <summary><c>tchar</c>: the bytes of a method or a header name.</summary>
    public static readonly SearchValues<byte> Token =
        SearchValues.Create("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"u8);

    /// <summary>The bytes of a field value HeaderCache takes out: VCHAR, SP and HTAB (no obs-text), the bytes Kestrel
    /// turns into the identical UTF-16 characters.</summary>
    public static readonly SearchValues<byte> FieldContent = SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);
}
