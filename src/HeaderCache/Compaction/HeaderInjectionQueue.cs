using Microsoft.AspNetCore.Http;

namespace HeaderCache.Compaction;

/// <summary>
/// The header lines taken out of each compacted head, in request order, waiting for the request
/// that Kestrel creates from that head to put them back.
/// </summary>
/// <remarks>
/// The compactor publishes one entry per compacted head (possibly with no pairs); the request-level
/// part takes one entry per request Kestrel creates. With pipelining several entries can wait.
/// Producer and consumer run one after the other on the connection's flow, but a lock keeps the
/// hand-over safe if the application reads a body from another thread.
/// </remarks>
internal sealed class HeaderInjectionQueue
{
    private readonly Lock _lock = new();
    private string[] _names = [];
    private string[] _values = [];
    private int[] _counts = [];
    private int _pairStart;
    private int _pairEnd;
    private int _entryStart;
    private int _entryEnd;

    /// <summary>Entries waiting for their request.</summary>
    public int PendingEntries
    {
        get
        {
            lock (_lock)
            {
                return _entryEnd - _entryStart;
            }
        }
    }

    /// <summary>
    /// Publishes, as the next request's entry, the lines of <paramref name="lines"/> that have a value.
    /// Called only by the compactor, once per compacted head.
    /// </summary>
    public void Publish(ReadOnlySpan<HeaderLine> lines)
    {
        lock (_lock)
        {
            int count = 0;
            foreach (ref readonly HeaderLine line in lines)
            {
                if (line.Value is not null)
                {
                    EnsureRoom(ref _names, ref _values, ref _pairStart, ref _pairEnd);
                    _names[_pairEnd] = line.Name!;
                    _values[_pairEnd] = line.Value;
                    _pairEnd++;
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
    }

    /// <summary>
    /// Takes the oldest entry and sets its pairs on <paramref name="headers"/>.
    /// </summary>
    /// <returns><see langword="false"/> when no entry was waiting.</returns>
    public bool TryApply(IHeaderDictionary headers)
    {
        lock (_lock)
        {
            if (_entryStart == _entryEnd)
            {
                return false;
            }

            int count = _counts[_entryStart++];
            for (int i = 0; i < count; i++)
            {
                headers[_names[_pairStart]] = _values[_pairStart];
                _names[_pairStart] = null!;
                _values[_pairStart] = null!;
                _pairStart++;
            }

            if (_entryStart == _entryEnd)
            {
                _entryStart = _entryEnd = 0;
                _pairStart = _pairEnd = 0;
            }

            return true;
        }
    }

    private static void EnsureRoom(ref string[] names, ref string[] values, ref int start, ref int end)
    {
        if (end < names.Length)
        {
            return;
        }

        int used = end - start;
        if (start > 0 && used < names.Length / 2)
        {
            Array.Copy(names, start, names, 0, used);
            Array.Copy(values, start, values, 0, used);
            Array.Clear(names, used, names.Length - used);
            Array.Clear(values, used, values.Length - used);
        }
        else
        {
            var grownNames = new string[Math.Max(16, names.Length * 2)];
            var grownValues = new string[grownNames.Length];
            Array.Copy(names, start, grownNames, 0, used);
            Array.Copy(values, start, grownValues, 0, used);
            names = grownNames;
            values = grownValues;
        }

        start = 0;
        end = used;
    }
}
