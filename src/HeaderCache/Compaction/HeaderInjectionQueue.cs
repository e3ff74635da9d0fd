using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Compaction;

/// <summary>
/// The header lines taken out of each compacted head, in request order, waiting for the request
/// that Kestrel creates from that head to put them back.
/// </summary>
/// <remarks>
/// The compactor publishes one entry per head it took lines out of; the request-level part, when Kestrel
/// creates a request, takes the entry if there is one. Both run on the connection's own flow, one after the
/// other: the reader shows Kestrel nothing after a head (but its body) before Kestrel has created that head's
/// request and asked for more, so the entry waiting, if any, is the current request's; no lock is needed.
/// </remarks>
internal sealed class HeaderInjectionQueue
{
    private Pair[] _pairs = [];
    private int[] _counts = [];
    private int _pairStart;
    private int _pairEnd;
    private int _entryStart;
    private int _entryEnd;
    private int _takenStart;
    private int _takenCount;

    /// <summary>
    /// Publishes, as the next request's entry, the lines of <paramref name="lines"/> that have a value.
    /// Called only by the compactor, once per compacted head.
    /// </summary>
    public void Publish(ReadOnlySpan<HeaderLine> lines)
    {
        int count = 0;
        foreach (ref readonly HeaderLine line in lines)
        {
            if (line.Value is not null)
            {
                EnsureRoom();
                _pairs[_pairEnd++] = new Pair(line.Name!, line.Value, line.Repeat, line.Known >= 0);
                count++;
            }
        }

        if (_entryEnd == _counts.Length)
        {
            int pending = _entryEnd - _entryStart;
            if (_entryStart > 0)
            {
                Array.Copy(_counts, _entryStart, _counts, 0, pending);
            }
            else
            {
                Array.Resize(ref _counts, Math.Max(4, _counts.Length * 2));
            }

            _entryStart = 0;
            _entryEnd = pending;
        }

        _counts[_entryEnd++] = count;
    }

    /// <summary>The pairs of the entry <see cref="TryTake"/> took last, in the order they were sent. They stay
    /// readable until the next <see cref="Publish"/>, which comes only after that entry's request has ended.</summary>
    public ReadOnlySpan<Pair> Taken => _pairs.AsSpan(_takenStart, _takenCount);

    /// <summary>Takes the oldest entry and leaves its pairs in <see cref="Taken"/>.</summary>
    /// <returns><see langword="false"/> when no entry was waiting.</returns>
    public bool TryTake()
    {
        if (_entryStart == _entryEnd)
        {
            return false;
        }

        _takenStart = _pairStart;
        _takenCount = _counts[_entryStart++];
        _pairStart += _takenCount;

        if (_entryStart == _entryEnd)
        {
            _entryStart = _entryEnd = 0;
            _pairStart = _pairEnd = 0;
        }

        return true;
    }

    /// <summary>
    /// Adds the <see cref="Taken"/> pairs to <paramref name="headers"/> in the order they were sent, a repeated
    /// name's values after its earlier ones, as Kestrel's parser adds them.
    /// </summary>
    public void CopyTakenTo(IHeaderDictionary headers)
    {
        foreach (ref readonly Pair pair in Taken)
        {
            Write(headers, pair);
        }
    }

    /// <summary>Adds one pair to <paramref name="headers"/> as Kestrel's parser adds a line.</summary>
    public static void Write(IHeaderDictionary headers, in Pair pair) =>
        headers[pair.Name] = pair.Append ? StringValues.Concat(headers[pair.Name], pair.Value) : pair.Value;

    /// <summary>Takes the oldest entry and adds its pairs to <paramref name="headers"/> (<see cref="CopyTakenTo"/>).</summary>
    /// <returns><see langword="false"/> when no entry was waiting.</returns>
    public bool TryApply(IHeaderDictionary headers)
    {
        if (!TryTake())
        {
            return false;
        }

        CopyTakenTo(headers);
        return true;
    }

    private void EnsureRoom()
    {
        if (_pairEnd < _pairs.Length)
        {
            return;
        }

        int used = _pairEnd - _pairStart;
        if (_pairStart > 0 && used < _pairs.Length / 2)
        {
            Array.Copy(_pairs, _pairStart, _pairs, 0, used);
            Array.Clear(_pairs, used, _pairs.Length - used);
        }
        else
        {
            var grown = new Pair[Math.Max(16, _pairs.Length * 2)];
            Array.Copy(_pairs, _pairStart, grown, 0, used);
            _pairs = grown;
        }

        _pairStart = 0;
        _pairEnd = used;
    }

    /// <summary>A taken line's strings.</summary>
    /// <param name="Name">The name to put back under: Kestrel's constant for a known name.</param>
    /// <param name="Value">The value.</param>
    /// <param name="Append">Whether an earlier pair of the entry has the same name.</param>
    /// <param name="Known">Whether Kestrel keeps the name in a field of its collection (<see cref="HeaderNameTable.KnownNames"/>).</param>
    internal readonly record struct Pair(string Name, string Value, bool Append, bool Known);
}
