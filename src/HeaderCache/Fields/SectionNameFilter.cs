using System.Runtime.CompilerServices;

namespace HeaderCache.Fields;

/// <summary>The names of a header section so far, as 128 bits, so that telling whether a line repeats an earlier line's
/// name costs one bit for a section without repeats: a name whose bit is clear was not sent before. A known name has a
/// bit of its own (its position among Kestrel's known names), so it never seems to repeat another name; the other names
/// share the bits after them by their key.</summary>
internal struct SectionNameFilter
{
    private const int OtherNameBits = 128 - FieldNames.KnownCount;

    // Two words, not a UInt128: its shifts are not one instruction, and this is asked for every line.
    private ulong _low;
    private ulong _high;

    /// <summary>Adds a line's name (a known name's index, or -1 and the key of its bytes): false when no earlier
    /// line of the section can have had it, true when one may have.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool Add(int known, ushort key)
    {
        int bit = known >= 0 ? known : FieldNames.KnownCount + (int)(((ulong)((uint)key * 0x9E3779B9u) * (uint)OtherNameBits) >> 32);
        ref ulong word = ref bit < 64 ? ref _low : ref _high;
        ulong mask = 1UL << bit;   // a shift counts modulo 64
        if ((word & mask) == 0)
        {
            word |= mask;
            return false;
        }

        return true;
    }

    public void Clear() => _low = _high = 0;
}
