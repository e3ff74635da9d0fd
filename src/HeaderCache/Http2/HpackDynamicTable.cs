namespace HeaderCache.Http2;

/// <summary>One entry of the mirrored dynamic table: the decoded octets, and the strings a taken reference to it gets,
/// made the first time one is taken and then handed out without a compare.</summary>
internal sealed class HpackEntry(byte[] name, byte[] value, int staticNameIndex)
{
    public byte[] Name { get; } = name;
    public byte[] Value { get; } = value;

    /// <summary>The static index the name was given by, or 0: Kestrel treats such an entry's name as that static
    /// entry's.</summary>
    public int StaticNameIndex { get; } = staticNameIndex;

    // Set once the entry is first taken; both are null until then.
    public string? NameString;
    public string? ValueString;

    /// <summary>RFC 7541 4.1: the decoded octets plus 32.</summary>
    public int Size => Name.Length + Value.Length + HpackDynamicTable.EntryOverhead;
}

/// <summary>The mirror of Kestrel's HPACK decoding table for one connection: sizes counted on decoded octets plus 32,
/// the oldest entries evicted first, an entry larger than the table empties it and is not added (RFC 7541 4.4), and
/// the maximum is the size Kestrel advertises, which only size updates lower or restore.</summary>
internal sealed class HpackDynamicTable(int advertisedSize)
{
    public const int EntryOverhead = 32;

    private HpackEntry?[] _entries = [];
    private int _newest = -1;   // ring index of the newest entry
    private int _count;
    private int _size;

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

    public void Insert(HpackEntry entry)
    {
        int size = entry.Size;
        if (size > MaxSize)
        {
            EvictTo(0);
            return;
        }

        EvictTo(MaxSize - size);
        if (_count == _entries.Length)
        {
            Grow();
        }

        _newest = (_newest + 1) % _entries.Length;
        _entries[_newest] = entry;
        _count++;
        _size += size;
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

            _size -= _entries[oldest]!.Size;
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
