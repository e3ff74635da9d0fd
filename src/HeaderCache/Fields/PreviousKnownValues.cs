using System.Buffers.Binary;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Text;

using HeaderCache.Caching;

namespace HeaderCache.Fields;

/// <summary>Kestrel's single-valued known headers of the previous head, by <see cref="FieldNames"/> index: Kestrel
/// hands back such a string, at no cost, when the next request sends the same bytes, so a line that does is left to it.
/// Each line of a head notes its value here as it is recorded, which no later line of the head reads (a later line of
/// the name is a repeat, always taken); what the next head may reuse changes only once the head is complete.</summary>
internal struct PreviousKnownValues
{
    private PreviousValue[] _values;
    private ulong _reusable;

    // The known names of the head so far, and those of them sent more than once (Kestrel hands back no value of those).
    private ulong _present;
    private ulong _repeated;

    public PreviousKnownValues() => _values = [];

    /// <summary>The length of the lines of this head left because Kestrel would hand back its previous string.</summary>
    public int LeftLength { readonly get; private set; }

    public void Begin()
    {
        _present = _repeated = 0;
        LeftLength = 0;
    }

    /// <summary>The head is complete: its values are the previous ones for the next head.</summary>
    public void End() => _reusable = _present & ~_repeated;

    /// <summary>Whether Kestrel hands back its previous string for this known value. A recalled line whose string
    /// (<paramref name="recalled"/>) is that very string needs no compare (its bytes were just compared to it), nor does
    /// a value of another length or with other bytes in its middle.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public readonly bool IsReused(int known, ReadOnlySpan<byte> value, string? recalled = null) =>
        known >= 0 && (_reusable & (1UL << known)) != 0 && IsPrevious(known, value, recalled);

    /// <summary>The previous string of a known name Kestrel reuses.</summary>
    public readonly string? this[int known] => _values[known].Value;

    /// <summary>Notes a recorded line of a known name: its value, or, when it was left (<see cref="TakenHeader.Value"/>
    /// null), that Kestrel hands back the previous one.</summary>
    public void Note(in TakenHeader line, ReadOnlySpan<byte> value)
    {
        ulong bit = 1UL << line.Known;
        _repeated |= _present & bit;
        _present |= bit;
        if (line.Value is null)
        {
            // Reused: the previous string stays, its bytes equal the line's.
            LeftLength += line.End - line.Start;
            return;
        }

        if (_values.Length == 0)
        {
            _values = ConnectionArrays.Rent<PreviousValue>(FieldNames.KnownCount);
        }

        // The line's bytes, not the string's, which a cache served and which lies elsewhere in the heap. A value is
        // ASCII, so both have the same length.
        Debug.Assert(line.Value.Length == value.Length, "A value's string has one char per byte.");
        _values[line.Known] = new PreviousValue(line.Value, value);
    }

    /// <summary>A line left to Kestrel is taken after all (its name repeats later in the head).</summary>
    public void Take(in TakenHeader line) => LeftLength -= line.End - line.Start;

    public void Release()
    {
        ConnectionArrays.Release(ref _values);
        _reusable = 0;
    }

    private readonly bool IsPrevious(int known, ReadOnlySpan<byte> value, string? recalled)
    {
        ref readonly PreviousValue previous = ref _values[known];
        return previous.Length == value.Length
            && ((recalled is not null && ReferenceEquals(recalled, previous.Value))
                || (previous.Middle == PreviousValue.MiddleOf(value) && Ascii.Equals(value, previous.Value)));
    }

    // A known value with its length and four bytes from its middle, which tell most values that differ from it without
    // reading the string, which lies elsewhere in the heap. Values of one length differ mostly in the middle: ids and
    // trace ids (traceparent keeps its length, version and flags), addresses, paths.
    private readonly struct PreviousValue(string value, ReadOnlySpan<byte> bytes)
    {
        public readonly string? Value = value;
        public readonly int Length = bytes.Length;
        public readonly uint Middle = MiddleOf(bytes);

        // Shorter values share one, and are compared.
        public static uint MiddleOf(ReadOnlySpan<byte> bytes) =>
            bytes.Length < sizeof(uint) ? 0 : BinaryPrimitives.ReadUInt32LittleEndian(bytes[((bytes.Length / 2) - 2)..]);
    }
}
