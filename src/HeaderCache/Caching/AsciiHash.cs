using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;

namespace HeaderCache.Caching;

/// <summary>
/// One pass over header bytes that both validates them and hashes them.
/// </summary>
/// <remarks>
/// <para>Valid bytes are the ones Kestrel turns into the identical UTF-16 characters in a header
/// name or value: visible ASCII (0x21-0x7E), SP (0x20) and HTAB (0x09). Anything else (controls,
/// DEL, NUL, obs-text) is refused so that the caller leaves the line to Kestrel.</para>
/// <para>The hash is defined over 32-byte blocks read as eight native-endian <see cref="uint"/> lanes,
/// the last block padded with SP. Each lane starts from the seed plus a lane constant and mixes its own
/// word of every block; at the end the lanes are multiplied by eight different odd constants, summed,
/// and finalized with the length and the seed. Lanes never interact before the sum, so the Vector256
/// path (one block per step), the Vector128 path (two halves per step) and the scalar path compute the
/// same value.</para>
/// </remarks>
[SkipLocalsInit]
internal static class AsciiHash
{
    private const int BlockSize = 32;
    private const int Lanes = BlockSize / sizeof(uint);
    private const uint LaneMultiplier = 0x9E3779B1u;
    private const byte Pad = 0x20;

    private static ReadOnlySpan<uint> LaneStart => [0x7F4A7C15u, 0xF39CC060u, 0x5CEDC835u, 0x4D1BCE45u, 0x8A60F0E9u, 0x2B3A4F1Du, 0xC8B5D2E1u, 0x165667B1u];

    private static ReadOnlySpan<uint> FoldMultipliers => [0x85EBCA6Bu, 0xC2B2AE35u, 0x27D4EB2Fu, 0x165667B1u, 0x9E3779B1u, 0x85EBCA77u, 0xC2B2AE3Du, 0x27D4EB4Fu];

    /// <summary>Validates <paramref name="bytes"/> and hashes them with <paramref name="seed"/>.</summary>
    /// <returns><see langword="false"/> when a byte is not visible ASCII, SP or HTAB.</returns>
    public static bool TryHash(ReadOnlySpan<byte> bytes, uint seed, out uint hash)
    {
        if (Vector256.IsHardwareAccelerated)
        {
            return TryHashVector256(bytes, seed, out hash);
        }

        if (Vector128.IsHardwareAccelerated)
        {
            return TryHashVector128(bytes, seed, out hash);
        }

        return TryHashScalar(bytes, seed, out hash);
    }

    /// <summary>True when <paramref name="b"/> is visible ASCII, SP or HTAB.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool IsValid(byte b) => (uint)(b - 0x20) < 0x5F || b == 0x09;

    internal static bool TryHashScalar(ReadOnlySpan<byte> bytes, uint seed, out uint hash)
    {
        Span<uint> lanes = stackalloc uint[Lanes];
        for (int i = 0; i < Lanes; i++)
        {
            lanes[i] = seed + LaneStart[i];
        }

        int full = bytes.Length & ~(BlockSize - 1);
        for (int offset = 0; offset < full; offset += BlockSize)
        {
            if (!MixScalar(lanes, bytes.Slice(offset, BlockSize)))
            {
                hash = 0;
                return false;
            }
        }

        if (full < bytes.Length || bytes.IsEmpty)
        {
            Block last = Padded(bytes[full..]);
            if (!MixScalar(lanes, last))
            {
                hash = 0;
                return false;
            }
        }

        uint sum = 0;
        for (int i = 0; i < Lanes; i++)
        {
            sum += lanes[i] * FoldMultipliers[i];
        }

        hash = Finish(sum, seed, bytes.Length);
        return true;
    }

    internal static bool TryHashVector128(ReadOnlySpan<byte> bytes, uint seed, out uint hash)
    {
        var seeds = Vector128.Create(seed);
        Vector128<uint> low = seeds + Vector128.Create<uint>(LaneStart);
        Vector128<uint> high = seeds + Vector128.Create<uint>(LaneStart[4..]);
        var invalid = Vector128<byte>.Zero;
        ref byte start = ref MemoryMarshal.GetReference(bytes);
        int full = bytes.Length & ~(BlockSize - 1);
        for (int offset = 0; offset < full; offset += BlockSize)
        {
            var a = Vector128.LoadUnsafe(ref start, (nuint)offset);
            var b = Vector128.LoadUnsafe(ref start, (nuint)(offset + 16));
            invalid |= Invalid(a) | Invalid(b);
            low = Mix(low, a.AsUInt32());
            high = Mix(high, b.AsUInt32());
        }

        if (full < bytes.Length || bytes.IsEmpty)
        {
            Block last = Padded(bytes[full..]);
            var a = Vector128.LoadUnsafe(ref last[0]);
            var b = Vector128.LoadUnsafe(ref last[0], 16);
            invalid |= Invalid(a) | Invalid(b);
            low = Mix(low, a.AsUInt32());
            high = Mix(high, b.AsUInt32());
        }

        if (invalid != Vector128<byte>.Zero)
        {
            hash = 0;
            return false;
        }

        uint sum = Vector128.Sum(low * Vector128.Create<uint>(FoldMultipliers)) + Vector128.Sum(high * Vector128.Create<uint>(FoldMultipliers[4..]));
        hash = Finish(sum, seed, bytes.Length);
        return true;
    }

    internal static bool TryHashVector256(ReadOnlySpan<byte> bytes, uint seed, out uint hash)
    {
        Vector256<uint> acc = Vector256.Create(seed) + Vector256.Create<uint>(LaneStart);
        var invalid = Vector256<byte>.Zero;
        ref byte start = ref MemoryMarshal.GetReference(bytes);
        int full = bytes.Length & ~(BlockSize - 1);
        for (int offset = 0; offset < full; offset += BlockSize)
        {
            var v = Vector256.LoadUnsafe(ref start, (nuint)offset);
            invalid |= Invalid(v);
            acc = Mix(acc, v.AsUInt32());
        }

        if (full < bytes.Length || bytes.IsEmpty)
        {
            Block last = Padded(bytes[full..]);
            var v = Vector256.LoadUnsafe(ref last[0]);
            invalid |= Invalid(v);
            acc = Mix(acc, v.AsUInt32());
        }

        if (invalid != Vector256<byte>.Zero)
        {
            hash = 0;
            return false;
        }

        hash = Finish(Vector256.Sum(acc * Vector256.Create<uint>(FoldMultipliers)), seed, bytes.Length);
        return true;
    }

    // The last, partial block: the tail's bytes, then SP up to 32 bytes.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Block Padded(ReadOnlySpan<byte> tail)
    {
        Unsafe.SkipInit(out Block block);
        Vector256.Create(Pad).StoreUnsafe(ref block[0]);
        Unsafe.CopyBlockUnaligned(ref block[0], ref MemoryMarshal.GetReference(tail), (uint)tail.Length);
        return block;
    }

    [InlineArray(BlockSize)]
    private struct Block
    {
        private byte _first;
    }

    private static bool MixScalar(Span<uint> lanes, ReadOnlySpan<byte> block)
    {
        for (int i = 0; i < block.Length; i++)
        {
            if (!IsValid(block[i]))
            {
                return false;
            }
        }

        for (int i = 0; i < lanes.Length; i++)
        {
            uint lane = (lanes[i] ^ MemoryMarshal.Read<uint>(block.Slice(i * sizeof(uint)))) * LaneMultiplier;
            lanes[i] = lane ^ (lane >> 15);
        }

        return true;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Vector128<uint> Mix(Vector128<uint> lane, Vector128<uint> word)
    {
        lane = (lane ^ word) * LaneMultiplier;
        return lane ^ Vector128.ShiftRightLogical(lane, 15);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Vector256<uint> Mix(Vector256<uint> lane, Vector256<uint> word)
    {
        lane = (lane ^ word) * LaneMultiplier;
        return lane ^ Vector256.ShiftRightLogical(lane, 15);
    }

    // A byte is invalid unless (b - 0x20) < 0x5F unsigned, or b is HTAB.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Vector128<byte> Invalid(Vector128<byte> v) =>
        Vector128.AndNot(
            Vector128.GreaterThanOrEqual(v - Vector128.Create((byte)0x20), Vector128.Create((byte)0x5F)),
            Vector128.Equals(v, Vector128.Create((byte)0x09)));

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Vector256<byte> Invalid(Vector256<byte> v) =>
        Vector256.AndNot(
            Vector256.GreaterThanOrEqual(v - Vector256.Create((byte)0x20), Vector256.Create((byte)0x5F)),
            Vector256.Equals(v, Vector256.Create((byte)0x09)));

    // Murmur3's finalizer over the lane sum, the length and the seed.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static uint Finish(uint sum, uint seed, int length)
    {
        uint h = sum ^ seed ^ ((uint)length * 0xCC9E2D51u);
        h ^= h >> 16;
        h *= 0x85EBCA6Bu;
        h ^= h >> 13;
        h *= 0xC2B2AE35u;
        return h ^ (h >> 16);
    }
}
