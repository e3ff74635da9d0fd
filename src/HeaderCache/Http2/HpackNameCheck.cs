using HeaderCache.Caching;
using HeaderCache.Fields;

namespace HeaderCache.Http2;

/// <summary>What the rewriter's checks make of a field name, which depends on the name's octets alone: a name the table
/// gives (a dynamic entry's, <see cref="HpackEntry.NameCheck"/>, or a static entry's, <see cref="Static"/>) is checked
/// once, not on every field that refers to it.</summary>
internal readonly struct HpackNameCheck
{
    public const byte PseudoAuthority = 1, PseudoMethod = 2, PseudoPath = 4, PseudoScheme = 8, PseudoProtocol = 16;

    private static readonly HpackNameCheck[] StaticNames =
        [.. Enumerable.Range(1, HpackStaticTable.Count).Select(index => Of(HpackStaticTable.Name(index)))];

    private HpackNameCheck(short kind, byte pseudo, bool rejected, bool te) => (Kind, Pseudo, Rejected, IsTe) = (kind, pseudo, rejected, te);

    /// <summary>A regular name's <see cref="FieldNames.Classify"/>; <see cref="FieldNames.Kept"/> for a pseudo-header.</summary>
    public short Kind { get; }

    /// <summary>A pseudo-header's bit, one of the constants above; 0 for a regular name.</summary>
    public byte Pseudo { get; }

    /// <summary>A name Kestrel may reject or acts on in a way the rewriter does not follow (an uppercase letter, a byte
    /// outside <c>tchar</c>, <c>connection</c>, a pseudo-header it does not know): the block stays as it is.</summary>
    public bool Rejected { get; }

    /// <summary><c>te</c>, which Kestrel accepts only with the value <c>trailers</c>.</summary>
    public bool IsTe { get; }

    /// <summary>The check of the name of static entry <paramref name="index"/> (1-based).</summary>
    public static HpackNameCheck Static(int index) => StaticNames[index - 1];

    public static HpackNameCheck Of(ReadOnlySpan<byte> name)
    {
        if (name[0] == HttpBytes.Colon)
        {
            byte bit = name switch
            {
                _ when name.SequenceEqual(":authority"u8) => PseudoAuthority,
                _ when name.SequenceEqual(":method"u8) => PseudoMethod,
                _ when name.SequenceEqual(":path"u8) => PseudoPath,
                _ when name.SequenceEqual(":scheme"u8) => PseudoScheme,
                _ when name.SequenceEqual(":protocol"u8) => PseudoProtocol,
                _ => 0,
            };
            return new(FieldNames.Kept, bit, rejected: bit == 0, te: false);
        }

        bool rejected = name.ContainsAnyExcept(HttpBytes.LowercaseToken) || name.SequenceEqual("connection"u8);
        return new((short)FieldNames.Classify(name), 0, rejected, te: name.SequenceEqual("te"u8));
    }
}
