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
                _pairs[_pairEnd++] = new Pair(line.Name!, line.Value, line.Repeat);
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

    /// <summary>Whether an entry waits for its request.</summary>
    public bool HasEntry => _entryStart != _entryEnd;

    /// <summary>
    /// Takes the oldest entry and adds its pairs to <paramref name="headers"/> in the order they were sent,
    /// a repeated name's values after its earlier ones, as Kestrel's parser adds them.
    /// </summary>
    /// <returns><see langword="false"/> when no entry was waiting.</returns>
    public bool TryApply(IHeaderDictionary headers)
    {
        if (_entryStart == _entryEnd)
        {
            return false;
        }

        int count = _counts[_entryStart++];
        for (int i = 0; i < count; i++)
        {
            ref Pair pair = ref _pairs[_pairStart++];
            headers[pair.Name] = pair.Append ? StringValues.Concat(headers[pair.Name], pair.Value) : pair.Value;
            pair = default;
        }

        if (_entryStart == _entryEnd)
        {
            _entryStart = _entryEnd = 0;
            _pairStart = _pairEnd = 0;
        }

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

    private record struct Pair(string Name, string Value, bool Append);
}
