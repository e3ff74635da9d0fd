using HeaderCache.Caching;

namespace HeaderCache.Http2;

/// <summary>The Huffman-coded strings a connection sent lately and their decoded octets: a string whose coded octets
/// equal a remembered one's decodes to the same octets, so it is copied instead of decoded. A client that repeats a
/// literal (a cookie or its crumbs, a path, a value it never indexes) sends the same coded octets each time, as the code
/// is canonical.</summary>
/// <remarks>At most <see cref="Slots"/> strings of at most <see cref="MaxEncodedLength"/> coded octets that decoded
/// without error, each in an array of the shared pool sized to it (the coded octets, then the decoded ones); a
/// fingerprint (<see cref="HeaderStringCache.Fingerprint"/>, seeded per memo) finds candidates, and a hit compares every
/// coded octet. A miss replaces the slot the hand points at, passing over those hit since it last passed (CLOCK). All of
/// it is let go of when the connection idles or ends.</remarks>
internal sealed class HuffmanMemo
{
    public const int Slots = 16;
    public const int MaxEncodedLength = 256;

    private uint[] _fingerprints = [];   // per slot; 0: empty
    private byte[][] _octets = [];
    private short[] _decoded = [];       // per slot, the decoded length
    private short[] _encoded = [];       // per slot, the coded length
    private int _referenced;             // per slot, a bit: hit since the hand last passed
    private int _hand;
    private readonly uint _seed = (uint)Random.Shared.Next();

    /// <summary>Decodes <paramref name="encoded"/> into <paramref name="decoded"/> (at least
    /// <see cref="HpackHuffman.MaxDecodedLength"/> octets) as <see cref="HpackHuffman.Decode"/> does: the decoded length,
    /// or -1 on an error.</summary>
    public int Decode(ReadOnlySpan<byte> encoded, Span<byte> decoded)
    {
        if (encoded.Length > MaxEncodedLength || encoded.IsEmpty)
        {
            return HpackHuffman.Decode(encoded, decoded);
        }

        if (_fingerprints.Length == 0)
        {
            _fingerprints = ConnectionArrays.Rent<uint>(Slots);
            _octets = ConnectionArrays.Rent<byte[]>(Slots);
            _decoded = ConnectionArrays.Rent<short>(Slots);
            _encoded = ConnectionArrays.Rent<short>(Slots);
        }

        uint fingerprint = Fingerprint(encoded);
        ReadOnlySpan<uint> fingerprints = _fingerprints.AsSpan(0, Slots);
        for (int slot = fingerprints.IndexOf(fingerprint); slot >= 0; slot = Next(fingerprints, fingerprint, slot))
        {
            byte[] octets = _octets[slot];
            if (_encoded[slot] == encoded.Length && encoded.SequenceEqual(octets.AsSpan(0, encoded.Length)))
            {
                _referenced |= 1 << slot;
                octets.AsSpan(encoded.Length, _decoded[slot]).CopyTo(decoded);
                return _decoded[slot];
            }
        }

        int length = HpackHuffman.Decode(encoded, decoded);
        if (length >= 0)
        {
            Remember(encoded, decoded[..length], fingerprint);
        }

        return length;
    }

    /// <summary>Lets go of every remembered string; the next decode starts anew.</summary>
    public void Release()
    {
        for (int slot = 0; slot < _octets.Length; slot++)
        {
            ConnectionArrays.Return(_octets[slot]);
        }

        ConnectionArrays.Release(ref _octets);
        ConnectionArrays.Release(ref _fingerprints);
        ConnectionArrays.Release(ref _decoded);
        ConnectionArrays.Release(ref _encoded);
        (_referenced, _hand) = (0, 0);
    }

    private static int Next(ReadOnlySpan<uint> fingerprints, uint fingerprint, int slot)
    {
        int next = fingerprints[(slot + 1)..].IndexOf(fingerprint);
        return next < 0 ? -1 : slot + 1 + next;
    }

    private void Remember(ReadOnlySpan<byte> encoded, ReadOnlySpan<byte> decoded, uint fingerprint)
    {
        while ((_referenced & (1 << _hand)) != 0)
        {
            _referenced &= ~(1 << _hand);
            _hand = (_hand + 1) % Slots;
        }

        int slot = _hand;
        _hand = (_hand + 1) % Slots;
        int length = encoded.Length + decoded.Length;
        if ((_octets[slot]?.Length ?? 0) < length)
        {
            ConnectionArrays.Return(_octets[slot]);
            _octets[slot] = ConnectionArrays.Rent<byte>(length);
        }

        encoded.CopyTo(_octets[slot]);
        decoded.CopyTo(_octets[slot].AsSpan(encoded.Length));
        (_fingerprints[slot], _encoded[slot], _decoded[slot]) = (fingerprint, (short)encoded.Length, (short)decoded.Length);
    }

    // The caches' fingerprint of the coded octets, never 0, which marks an empty slot.
    private uint Fingerprint(ReadOnlySpan<byte> encoded) => HeaderStringCache.Fingerprint(encoded, _seed) | 1;
}
