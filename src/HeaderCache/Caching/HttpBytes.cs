using System.Buffers;

namespace HeaderCache.Caching;

/// <summary>The bytes of RFC 9110's grammar that HeaderCache reads, defined once for the readers and the cache.</summary>
internal static class HttpBytes
{
    public const byte CR = (byte)'\r';
    public const byte LF = (byte)'\n';
    public const byte SP = (byte)' ';
    public const byte HTAB = (byte)'\t';
    public const byte Colon = (byte)':';

    /// <summary><c>tchar</c>: the bytes of a method or a header name.</summary>
    public static readonly SearchValues<byte> Token =
        SearchValues.Create("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"u8);

    /// <summary>VCHAR, SP and HTAB (no obs-text): the value bytes HeaderCache takes out, which Kestrel turns into the
    /// identical UTF-16 characters.</summary>
    public static readonly SearchValues<byte> FieldContent = SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);

    /// <summary>The <c>tchar</c> bytes without uppercase letters: an HTTP/2 field name, which Kestrel rejects with an
    /// uppercase letter in it.</summary>
    public static readonly SearchValues<byte> LowercaseToken =
        SearchValues.Create("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"u8);

    /// <summary>VCHAR and SP: the HTTP/2 value bytes HeaderCache takes out (a tab or any other control byte leaves the
    /// block to Kestrel).</summary>
    public static readonly SearchValues<byte> Visible = SearchValues.Create(
        " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"u8);
}
