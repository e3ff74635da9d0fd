using System.Numerics;
using System.Reflection;

namespace HeaderCache.Caching;

/// <summary>What a <see cref="HeaderStringCache"/> holds and keeps alive, for the tests and the memory study: nothing in
/// the library asks, so it is read from the fields that hold it.</summary>
internal static class HeaderStringCacheMemory
{
    extension(HeaderStringCache cache)
    {
        /// <summary>Strings the cache holds.</summary>
        public int Count => (int)Field(cache, "_count")!;

        /// <summary>Whether the cache holds its slot arrays (none before the first insert, nor after a release).</summary>
        public bool IsAllocated => Field(cache, "_fingerprints") is not null;

        /// <summary>Managed heap bytes the cache keeps alive on 64-bit .NET: its slot arrays and the strings in them (also
        /// those Kestrel or the application still refer to).</summary>
        public long RetainedBytes
        {
            get
            {
                if (!cache.IsAllocated)
                {
                    return 0;
                }

                long bytes = ArrayBytes(((uint[])Field(cache, "_fingerprints")!).Length, sizeof(uint))
                    + ArrayBytes(((string?[])Field(cache, "_strings")!).Length, IntPtr.Size)
                    + ArrayBytes(((bool[])Field(cache, "_visited")!).Length, sizeof(bool));
                foreach (string? s in ((string?[])Field(cache, "_strings")!).AsSpan(0, cache.Count))
                {
                    bytes += HeaderStringCache.StringSize(s!.Length);
                }

                return bytes;
            }
        }
    }

    extension(HeaderStringCache)
    {
        /// <summary>The most <c>RetainedBytes</c> can be for a cache of this shape, whatever a client sends.</summary>
        public static long MaxRetainedBytes(int slotCount = HeaderStringCache.DefaultSlotCount, int maxLength = HeaderStringCache.DefaultMaxLength) =>
            SlotArrayBytes(slotCount) + ((long)slotCount * HeaderStringCache.StringSize(maxLength));
    }

    // Arrays on 64-bit .NET: a header and a length, then the elements, rounded up to 8 bytes: the fingerprints, the
    // strings and the visited bits, each as long as the shared ArrayPool makes it (a power of two, at least 16).
    private static long SlotArrayBytes(int slots)
    {
        int length = (int)Math.Max(16, BitOperations.RoundUpToPowerOf2((uint)slots));
        return ArrayBytes(length, sizeof(uint)) + ArrayBytes(length, IntPtr.Size) + ArrayBytes(length, sizeof(bool));
    }

    private static long ArrayBytes(int length, int elementSize) => (24L + ((long)length * elementSize) + 7) & ~7L;

    private static object? Field(HeaderStringCache cache, string name) =>
        typeof(HeaderStringCache).GetField(name, BindingFlags.Instance | BindingFlags.NonPublic)!.GetValue(cache);
}
