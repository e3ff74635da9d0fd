using System.Buffers;

namespace HeaderCache.Http1;

/// <summary>The first bytes of the transport's buffer as one span: the buffer's own memory when its first segment holds
/// them, else a copy in an array from the shared pool, which an idle connection gives back.</summary>
internal struct ContiguousBytes
{
    private byte[] _copy = [];
    private int _copied;

    public ContiguousBytes()
    {
    }

    /// <summary>At most <paramref name="max"/> bytes from the start of <paramref name="buffer"/>. A section's copy only
    /// grows between calls, as its start stays where it is, so only the bytes new since the last call are copied.</summary>
    public ReadOnlySpan<byte> First(in ReadOnlySequence<byte> buffer, int max, bool fromScratch = false)
    {
        int length = (int)Math.Min(buffer.Length, max);
        ReadOnlySpan<byte> first = buffer.FirstSpan;
        if (first.Length >= length)
        {
            return first[..length];
        }

        if (fromScratch)
        {
            _copied = 0;
        }

        if (_copy.Length < length)
        {
            byte[] grown = ArrayPool<byte>.Shared.Rent(Math.Max(length, 4096));
            _copy.AsSpan(0, _copied).CopyTo(grown);
            Return(ref _copy);
            _copy = grown;
        }

        buffer.Slice(_copied, length - _copied).CopyTo(_copy.AsSpan(_copied));
        _copied = length;
        return _copy.AsSpan(0, length);
    }

    /// <summary>The next call copies a new section from its start.</summary>
    public void Restart() => _copied = 0;
    public void Return() => Return(ref _copy);

    /// <summary>Gives a rented array back to the pool and leaves an empty one in its place.</summary>
    public static void Return(ref byte[] array)
    {
        if (array.Length != 0)
        {
            ArrayPool<byte>.Shared.Return(array);
            array = [];
        }
    }
}
