using System.Buffers;

namespace HeaderCache.Caching;

/// <summary>Where a connection's caches and memo take their arrays from and give them back: the process's shared
/// <see cref="ArrayPool{T}"/>, so that a new connection reuses what ended or idle connections let go of instead of
/// allocating its own.</summary>
/// <remarks>An array comes out empty and goes back emptied, so nothing one connection stored (strings, the bytes of its
/// lines) reaches another or outlives its connection in the pool. An array is at least as long as asked: its users count
/// their own slots. Only arrays no request can see are pooled (never the arrays taken lines travel in), and each is
/// given back by the flow that owns it, when nothing reads it any more.</remarks>
internal static class ConnectionArrays
{
    public static T[] Rent<T>(int length)
    {
        T[] array = ArrayPool<T>.Shared.Rent(length);
        Array.Clear(array);
        return array;
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
