using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Fields;

/// <summary>Which strings a header field taken out of a request gets, whatever protocol carried it: Kestrel's constant
/// or the connection's cache of names for the name; for the value, <see cref="string.Empty"/>, a well-known string, the
/// connection's cache of values or, for a value longer than that takes, its cache of long values, or a new string where
/// the caches would not pay (too long for both, excluded, a name whose values never come back).</summary>
internal sealed class FieldResolver
{
    // The slot reported for one of WellKnownStrings.Values, which take no slot.
    public const short WellKnownSlot = -2;

    private readonly HeaderStringCache _values;
    private readonly HeaderStringCache _names;
    private readonly int _longValueBudget;
    private LongValueCache? _longValues;   // made at the first value longer than the cache of values takes
    private readonly byte[][] _excluded;
    private readonly ulong _excludedKnown;   // bit FieldNames index: the excluded names Kestrel has a field for
    private ValueAdmission _admission;

    /// <summary>The resolver of one connection. The names Kestrel has no constant for have a cache of their own
    /// (<paramref name="names"/>): a connection's names are few and stable, and kept apart they take no slot from the
    /// values. Values longer than <paramref name="values"/> takes go to a cache of long values within
    /// <paramref name="longValueBudget"/> bytes together. The values of <paramref name="excludedNames"/> are never
    /// cached.</summary>
    public FieldResolver(HeaderStringCache values, HeaderStringCache names, int longValueBudget, IEnumerable<string>? excludedNames = null)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(longValueBudget);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(longValueBudget, LongValueCache.MaxBudget);
        _values = values;
        _names = names;
        _longValueBudget = longValueBudget;
        _excluded = excludedNames?.Select(Encoding.ASCII.GetBytes).ToArray() ?? [];
        foreach (byte[] excluded in _excluded)
        {
            if (FieldNames.Classify(excluded) is >= 0 and int known)
            {
                _excludedKnown |= 1UL << known;
            }
        }

        _admission = new ValueAdmission(names.SlotCount);
    }

    /// <summary>A connection's resolver with caches of the configured sizes: <paramref name="slotCount"/> values of at
    /// most <paramref name="maxLength"/> bytes, longer values within <paramref name="longValueBudget"/> bytes together,
    /// and the names Kestrel has no constant for.</summary>
    public static FieldResolver Create(int slotCount, int maxLength, int longValueBudget, IEnumerable<string>? excludedNames = null) => new(
        new HeaderStringCache(slotCount, maxLength),
        new HeaderStringCache(HeaderStringCache.NameSlotCount, Math.Min(maxLength, HeaderStringCache.NameMaxLength), WellKnownStrings.Names),
        longValueBudget,
        excludedNames);

    public HeaderStringCache Values => _values;
    public HeaderStringCache Names => _names;
    /// <summary>Values the caches of values (short and long) have let go of to admit others.</summary>
    public long ValueEvictions => _values.Counters.Evictions + (_longValues?.Counters.Evictions ?? 0);

    /// <summary>Whether the connection's values have stopped coming back (<see cref="ValueAdmission"/>).</summary>
    public bool ValuesDoNotRepeat => _admission.ValuesDoNotRepeat;

    /// <summary>Counts a value towards <see cref="ValuesDoNotRepeat"/> without looking it up: its encoding says whether
    /// it repeats.</summary>
    public void CountEncoded(bool repeats) => _admission.CountWindow(repeats);

    /// <summary>The string of a name Kestrel has no constant for; <paramref name="slot"/> is -1 for a name too long for
    /// the cache of names, which gets a new string.</summary>
    public string ResolveName(ReadOnlySpan<byte> name, ref bool created, out short slot)
    {
        // Names are validated tokens, so the cache refuses only names longer than its limit.
        string? resolved = _names.GetOrAdd(name, out int found, out bool hit, ref created);
        slot = (short)found;
        if (resolved is null)
        {
            created = true;
            return HeaderStringCache.Decode(name);
        }

        if (!hit)
        {
            // The slot held another name, or none: that name's history of values is not this one's.
            _admission.Restart(found);
        }

        return resolved;
    }

    /// <summary>Whether <see cref="ResolveValue"/> makes a new string for every non-empty value of <paramref name="length"/>
    /// bytes of the known name <paramref name="known"/>, however often it repeats: one longer than both caches take, or
    /// of an excluded name. A long value of a name whose values keep missing counts too: it is the costliest string to
    /// make where Kestrel alone would hand back its previous one, so the name's long values are left to Kestrel from
    /// then on.</summary>
    public bool CreatesEveryValue(int known, int length) =>
        length != 0
        && ((length > _values.MaxLength && (length > _longValueBudget || _admission.IsBypassed(known)))
            || (_excludedKnown & (1UL << known)) != 0);

    /// <summary>The string of a field's value, or <see langword="null"/> for a byte other than VCHAR, SP or HTAB (such a
    /// field is Kestrel's to answer). <paramref name="slot"/> is where the cache of values holds it, or
    /// <see cref="WellKnownSlot"/>, or -1. Where a new string would be made, <paramref name="offered"/> (a string equal to
    /// <paramref name="value"/> that Kestrel made for the same octets earlier) stands in for it, but for an excluded
    /// name, whose values are never kept.</summary>
    public string? ResolveValue(ref TakenHeader field, ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, out short slot, string? offered = null)
    {
        slot = -1;
        if (value.IsEmpty)
        {
            return string.Empty;
        }

        if (IsExcluded(name))
        {
            field.Created = true;
            return HeaderStringCache.DecodeIfValid(value);
        }

        bool isLong = value.Length > _values.MaxLength;
        if (isLong && value.Length > _longValueBudget)
        {
            field.Created |= offered is null;
            return HeaderStringCache.DecodeIfValid(value, offered);
        }

        ref byte misses = ref _admission.Misses(field);
        if (ValueAdmission.Bypasses(ref misses))
        {
            field.Created |= offered is null;
            return HeaderStringCache.DecodeIfValid(value, offered);
        }

        if (isLong)
        {
            // Slot -1: a long value is looked up every time, never recalled by its slot.
            _longValues ??= new LongValueCache(_longValueBudget);
            string? held = _longValues.GetOrAdd(value, out bool longHit, ref field.Created, offered);
            if (held is not null)
            {
                _admission.Count(ref misses, longHit);
            }

            return held;
        }

        if (WellKnownStrings.Values.TryGet(value, out string? wellKnown))
        {
            slot = WellKnownSlot;
            _admission.Count(ref misses, hit: true);
            return wellKnown;
        }

        string? resolved = _values.GetOrAdd(value, out int found, out bool hit, ref field.Created, offered);
        if (resolved is not null)
        {
            slot = (short)found;
            _admission.Count(ref misses, hit);
        }

        return resolved;
    }

    /// <summary>The string the cache of names holds for the name of a field that stays for Kestrel, or the process's
    /// well-known one, or <see langword="null"/>: like <see cref="ResolveKeptValue"/>, it never makes one.</summary>
    public string? ResolveKeptName(ReadOnlySpan<byte> name) =>
        _names.Get(name) ?? (WellKnownStrings.Names.TryGet(name, out string? wellKnown) ? wellKnown : null);

    /// <summary>The string of the value of a field that stays for Kestrel, for the application to get in place of the
    /// one Kestrel makes: the string the cache already holds for it (or a well-known one), else
    /// <paramref name="offered"/> (a string equal to <paramref name="value"/> that Kestrel made earlier), else
    /// <see langword="null"/>. It never makes one, so a field that stays costs no string beside Kestrel's.</summary>
    public string? ResolveKeptValue(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, string? offered = null) =>
        value.IsEmpty ? string.Empty
        : IsExcluded(name) ? null
        : WellKnownStrings.Values.TryGet(value, out string? wellKnown) ? wellKnown
        : _values.Get(value) ?? offered;

    /// <summary>Whether the name a field was resolved to before is still there: Kestrel's constant, or the string the
    /// cache of names holds in that slot.</summary>
    public bool IsNameHeld(int kind, int slot, string name) => kind >= 0 || ReferenceEquals(_names.StringAt(slot), name);

    /// <summary>The name resolved before, which <see cref="IsNameHeld"/> says is still there, served as a lookup
    /// would serve it.</summary>
    public string RecallName(int kind, int slot) => kind >= 0 ? FieldNames.KnownName(kind) : _names.Touch(slot);

    /// <summary>The value resolved before to <paramref name="value"/> in <paramref name="slot"/>, served as a lookup would
    /// serve it, or <see langword="null"/> when a lookup now would not (the cache let go of it, or the name's values are
    /// now created without a lookup).</summary>
    public string? RecallValue(int history, int slot, string value)
    {
        ref byte misses = ref _admission.Misses(history);
        if (ValueAdmission.IsBypassed(misses) || (slot != WellKnownSlot && !ReferenceEquals(_values.StringAt(slot), value)))
        {
            return null;
        }

        _admission.Count(ref misses, hit: true);
        return slot == WellKnownSlot ? value : _values.Touch(slot);
    }

    /// <summary>Where the history of a field's name is kept, for a caller that remembers the field.</summary>
    public byte History(in TakenHeader field) => _admission.History(field);

    /// <summary>The connection ended or passes through: lets go of the caches' strings and the names' histories; the
    /// counters stay.</summary>
    public void Release()
    {
        _values.Release();
        _names.Release();
        _longValues?.Release();
        _admission.Release();
    }

    /// <summary>Makes the resolver another connection's: the caches, their counters and the names' histories start
    /// empty, as a new resolver's do; the cache of long values goes, to be made again at the next long value.</summary>
    public void Reset()
    {
        _values.Reset();
        _names.Reset();
        _longValues?.Release();
        _longValues = null;
        _admission.Reset();
    }

    private bool IsExcluded(ReadOnlySpan<byte> name)
    {
        foreach (byte[] excluded in _excluded)
        {
            if (Ascii.EqualsIgnoreCase(name, excluded))
            {
                return true;
            }
        }

        return false;
    }
}
