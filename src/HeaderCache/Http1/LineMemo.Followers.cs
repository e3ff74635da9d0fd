using System.Runtime.CompilerServices;
using static HeaderCache.Caching.HttpBytes;

namespace HeaderCache.Http1;

// The order of lines: each entry names the last four entries whose lines came after it, the latest first, so that the
// line at the start of the bytes is compared with those few lines where they would end, and found without a search.
// Four, because the line after a given one changes in turn: a browser's Accept, Sec-Fetch-Dest and Priority go with the
// kind of resource, and a proxy's pooled connection interleaves users whose clients order their lines differently. A
// wrong guess costs little: it mostly differs in length, so the CR it expects is not there.
internal sealed partial class LineMemo
{
    // A byte of Entry.Next that names no entry: entries number at most Size.
    private const uint NoEntry = 0xFF;

    // The Next of an entry no line has come after yet.
    private const uint NoFollowers = uint.MaxValue;

    // The entry of the last line of the current head found or remembered (-1 before its first), and the entry of the
    // last head's first line.
    private int _previous = -1;
    private int _first;

    /// <summary>Starts a new head: its first line is expected to be the last head's first.</summary>
    public void Begin() => _previous = -1;

    /// <summary>The length of the line <paramref name="rest"/> starts with when it is one of the lines that came after
    /// the last one found or remembered (at the start of a head, the last head's first) and CRLF follows it, else -1;
    /// <paramref name="found"/> is its entry, or -1. Being equal to a remembered line, it has no CR or LF of its own,
    /// so it ends there.</summary>
    public int FindNext(ReadOnlySpan<byte> rest, out int found)
    {
        _found = found = -1;
        if (_entries.Length == 0 || rest.IsEmpty || rest[0] == CR)
        {
            // The empty line (or a line Kestrel rejects): no remembered line starts with CR.
            return -1;
        }

        for (uint next = Expected(); (next & NoEntry) != NoEntry; next = (next >> 8) | (NoEntry << 24))
        {
            int index = (int)(next & NoEntry);
            ref readonly Entry entry = ref _entries[index];
            int length = entry.Length;
            if (length + 1 < rest.Length && rest[length] == CR && rest[length + 1] == LF && Matches(rest[..length], entry))
            {
                Hit(index);
                found = index;
                return length;
            }
        }

        return -1;
    }

    // The entries expected next, one a byte, the latest in the lowest; at the start of a head the one line expected is
    // the last head's first. This, Hit and Follow are inlined: code compiled ahead otherwise calls them for every line.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private uint Expected() => _previous < 0 ? ~NoEntry | (uint)_first : _entries[_previous].Next;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Hit(int index)
    {
        _foundSinceHand |= 1UL << index;
        _found = index;
        Follow(index);
    }

    // The entry's line came after the previous one's: the next head is expected to send them in this order, or in one
    // of the three before. Mostly it already came first after it, so that check stays small enough to be inlined.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Follow(int index)
    {
        if (_previous < 0)
        {
            _first = index;
        }
        else if ((_entries[_previous].Next & NoEntry) != (uint)index)
        {
            MoveToFront(ref _entries[_previous].Next, index);
        }

        _previous = index;
    }

    // The entry moves to the front of the followers, from where it was or in place of the one that came longest ago.
    private static void MoveToFront(ref uint next, int index)
    {
        ulong rest = next;
        for (int shift = 8; shift < 32; shift += 8)
        {
            if (((rest >> shift) & NoEntry) == (uint)index)
            {
                rest = (rest & ((1UL << shift) - 1)) | ((rest >> (shift + 8)) << shift);
                break;
            }
        }

        next = (uint)(rest << 8) | (uint)index;
    }
}
