using System.Buffers;

namespace HeaderCache.Caching;

/// <summary>Where a connection's caches and memo take their arrays from and give them back: the process's shared
/// <see cref="ArrayPool{T}"/>, so that a new connection reuses what ended or idle connections let go of instead of
/// allocating its own.</summary>
/// <remarks>An array comes out empty and goes back emptied, so nothing one connection stored (strings, the bytes of its
/// lines) reaches another or outlives its connection in the pool. An array is at least as long as asked: its users count
/// their own elements. Each is given back by the flow that owns it, once nothing reads it any more (neither Kestrel,
/// for a buffer it was shown, nor a request, for an array taken fields travel in), and only once: the owner keeps the
/// empty array in its place.</remarks>
internal static class ConnectionArrays
{
    public static T[] Rent<T>(int length)
    {
        T[] array = ArrayPool<T>.Shared.Rent(length);
        Array.Clear(array);
        return array;
    }

    /// <summary>Replaces <paramref name="array"/> by one of at least <paramref name="length"/> elements, with its first
    /// <paramref name="kept"/> elements, and gives the old one back.</summary>
    public static void Grow<T>(ref T[] array, int length, int kept = 0)
    {
        T[] grown = Rent<T>(length);
        array.AsSpan(0, kept).CopyTo(grown);
        Return(array);
        array = grown;
    }

    /// <summary>Gives <paramref name="array"/> back and leaves the empty array in its place.</summary>
    public static void Release<T>(ref T[] array)
    {
        Return(array);
        array = [];
    }

    /// <summary>Gives back an array from <see cref="Rent{T}"/>; the empty array that stands for none stays.</summary>
    public static void Return<T>(T[]? array)
    {
        if (array is { Length: > 0 })
        {
            ArrayPool<T>.Shared.Return(array, clearArray: true);
        }
    }
}
