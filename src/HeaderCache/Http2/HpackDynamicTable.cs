using System.Text;
using HeaderCache.Caching;

namespace HeaderCache.Http2;

/// <summary>One entry of the mirrored dynamic table: the decoded octets, and the strings its fields get, made the
/// first time one is taken or given strings in place of Kestrel's, and then handed out without a compare.</summary>
/// <remarks>The octets are in arrays of the shared pool (<see cref="ConnectionArrays"/>); the table gives them back, and
/// keeps the emptied entry for a later insert, only once no decoded field can refer to the entry any more.</remarks>
internal sealed class HpackEntry
{
    // The name's octets, then the value's: one array an entry.
    private byte[] _octets = [];

    public ReadOnlySpan<byte> Name => _octets.AsSpan(0, NameLength);
    public ReadOnlySpan<byte> Value => _octets.AsSpan(NameLength, ValueLength);

    /// <summary>The array whose first <see cref="NameLength"/> octets are <see cref="Name"/>, followed by the
    /// <see cref="ValueLength"/> of <see cref="Value"/>.</summary>
    public byte[] Octets => _octets;

    public int NameLength { get; private set; }
    public int ValueLength { get; private set; }

    /// <summary>The static index the name was given by (at most 61), or 0: Kestrel treats such an entry's name as that
    /// static entry's.</summary>
    public byte StaticNameIndex { get; private set; }

    /// <summary>Which insert into the table made the entry (<see cref="HpackDynamicTable.Offer"/>).</summary>
    public int Serial { get; set; }

    // Set once a field of the entry is first taken or given its strings in place of Kestrel's; both are null until then.
    public string? NameString;
    public string? ValueString;

    // The string Kestrel made for the value when the field that added the entry stayed in its block, equal to Value:
    // the entry's value string, when it needs one, instead of a new one.
    public string? Offered;

    // The rewriter's checks of the name and of the value, made once for every field that refers to the entry.
    public HpackNameCheck? NameCheck;
    public bool? ValueVisible;

    /// <summary>RFC 7541 4.1: the decoded octets plus 32.</summary>
    public int Size => NameLength + ValueLength + HpackDynamicTable.EntryOverhead;

    public void Set(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, int staticNameIndex)
    {
        _octets = ConnectionArrays.Rent<byte>(name.Length + value.Length);
        name.CopyTo(_octets);
        value.CopyTo(_octets.AsSpan(name.Length));
        (NameLength, ValueLength, StaticNameIndex) = (name.Length, value.Length, (byte)staticNameIndex);
    }

    public void Clear()
    {
        ConnectionArrays.Release(ref _octets);
        (NameLength, ValueLength, StaticNameIndex, NameString, ValueString, Offered, NameCheck, ValueVisible) = (0, 0, 0, null, null, null, null, null);
    }
}

/// <summary>The mirror of Kestrel's HPACK decoding table for one connection: sizes counted on decoded octets plus 32,
/// the oldest entries evicted first, an entry larger than the table empties it and is not added (RFC 7541 4.4), and
/// the maximum is the size Kestrel advertises, which only size updates lower or restore.</summary>
/// <remarks>An entry evicted while a block is decoded may still be what one of that block's fields refers to: it is
/// emptied and kept for reuse only when the next block starts (<see cref="BlockStarts"/>) or the table is let go.</remarks>
internal sealed class HpackDynamicTable(int advertisedSize)
{
    public const int EntryOverhead = 32;

    private HpackEntry?[] _entries = [];
    private Stack<HpackEntry>? _evicted;   // made at the first eviction: a table that never evicts holds neither
    private Stack<HpackEntry>? _free;
    private int _newest = -1;   // ring index of the newest entry
    private int _count;
    private int _size;
    private int _inserted;      // the serial the next entry gets

    public int AdvertisedSize { get; } = advertisedSize;
    public int MaxSize { get; private set; } = advertisedSize;
    public int Count => _count;
    public int Size => _size;

    /// <summary>The entry at dynamic index <paramref name="index"/> (0 is the newest, HPACK index 62), or
    /// <see langword="null"/> beyond the table.</summary>
    public HpackEntry? this[int index]
    {
        get
        {
            if ((uint)index >= (uint)_count)
            {
                return null;
            }

            int at = _newest - index;
            return _entries[at < 0 ? at + _entries.Length : at];
        }
    }

    /// <summary>A dynamic table size update: false above the advertised size (Kestrel's COMPRESSION_ERROR).</summary>
    public bool Resize(int maxSize)
    {
        if ((uint)maxSize > (uint)AdvertisedSize)
        {
            return false;
        }

        MaxSize = maxSize;
        EvictTo(maxSize);
        return true;
    }

    /// <summary>A block starts decoding: no field refers to the entries evicted before it any more. Emptied entries are
    /// kept for reuse up to as many as the table can hold, however many one block evicted.</summary>
    public void BlockStarts()
    {
        while (_evicted?.TryPop(out HpackEntry? entry) == true)
        {
            entry.Clear();
            _free ??= new();
            if (_free.Count < AdvertisedSize / EntryOverhead)
            {
                _free.Push(entry);
            }
        }
    }

    /// <summary>The connection decodes no more blocks: gives every entry's octets back. The emptied entries are kept for
    /// reuse (they hold no octets and no strings).</summary>
    public void Release()
    {
        EvictTo(0);
        BlockStarts();
    }

    /// <summary>Makes the table another connection's, as new: no entry, the advertised size.</summary>
    public void Reset()
    {
        Release();
        (_newest, MaxSize, _inserted) = (-1, AdvertisedSize, 0);
    }

    /// <summary>Kestrel's string for the value of the entry inserted as <paramref name="serial"/>, read from the request
    /// whose block added it: kept for the entry while the entry is in the table, has no string yet and its octets equal
    /// the string's; else dropped.</summary>
    public void Offer(int serial, string value)
    {

        if (this[unchecked(_inserted - 1 - serial)] is { } entry && entry.Serial == serial && entry.ValueString is null
            && value.Length == entry.ValueLength && Ascii.Equals(entry.Value, value))
        {
            entry.Offered = value;
        }
    }

    /// <summary>Adds a field as the newest entry, evicting the oldest to make room: the entry, or <see langword="null"/>
    /// when the field is larger than the table, which then empties.</summary>
    public HpackEntry? Insert(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, int staticNameIndex)
    {
        int size = name.Length + value.Length + EntryOverhead;
        if (size > MaxSize)
        {
            EvictTo(0);
            return null;
        }

        EvictTo(MaxSize - size);
        HpackEntry entry = _free?.TryPop(out HpackEntry? free) == true ? free : new HpackEntry();
        entry.Set(name, value, staticNameIndex);
        entry.Serial = _inserted++;
        if (_count == _entries.Length)
        {
            Grow();
        }

        _newest = (_newest + 1) % _entries.Length;
        _entries[_newest] = entry;
        _count++;
        _size += size;
        return entry;
    }

    private void EvictTo(int size)
    {
        while (_size > size)
        {
            int oldest = _newest - _count + 1;
            if (oldest < 0)
            {
                oldest += _entries.Length;
            }

            HpackEntry entry = _entries[oldest]!;
            _size -= entry.Size;
            (_evicted ??= new()).Push(entry);
            _entries[oldest] = null;
            _count--;
        }
    }

    // The ring never holds more than MaxSize / 32 entries; it starts small, as most tables hold a few.
    private void Grow()
    {
        var grown = new HpackEntry?[Math.Max(8, _entries.Length * 2)];
        for (int i = 0; i < _count; i++)
        {
            grown[_count - 1 - i] = this[i];
        }

        _entries = grown;
        _newest = _count - 1;
    }
}
