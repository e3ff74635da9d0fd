using System.Runtime.CompilerServices;
using HeaderCache.Fields;

namespace HeaderCache.Requests;

/// <summary>The header lines taken out of each compacted head, in request order, waiting for the request that Kestrel
/// creates from that head to put them back.</summary>
/// <remarks><para>One array holds the lines: the compactor records a head's lines in place after the waiting ones, and
/// publishing the head makes them the next entry without a copy; when Kestrel creates a request, the request-level part
/// takes the entry if there is one. Both run on the connection's own flow, one after the other: the reader shows
/// Kestrel nothing after a head (but its body) before Kestrel has created that head's request and asked for more, so
/// the entry waiting, if any, is the current request's, and no lock is needed.</para>
/// <para>The array grows, or its lines move to its front, only in <see cref="NextLine"/>: no reference into it, or span
/// of it, is used across that call.</para></remarks>
internal sealed class HeaderInjectionQueue
{
    private TakenHeader[] _lines = [];
    private int[] _counts = [];
    private int _lineStart;
    private int _lineEnd;
    private int _recorded;
    private int _entryStart;
    private int _entryEnd;
    private int _takenStart;
    private int _takenCount;

    /// <summary>The lines recorded for the head being read, after the published ones, which the compactor changes in
    /// place until it publishes or discards them.</summary>
    public Span<TakenHeader> Recorded => _lines.AsSpan(_lineEnd, _recorded);

    /// <summary>The slot after the <see cref="Recorded"/> lines, for the compactor to fill in place: one of them once
    /// <see cref="Record"/> is called, else overwritten by the next line.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ref TakenHeader NextLine()
    {
        if (_lineEnd + _recorded == _lines.Length)
        {
            MakeRoom();
        }

        return ref _lines[_lineEnd + _recorded];
    }

    public void Record() => _recorded++;

    /// <summary>Publishes the <see cref="Recorded"/> lines, every one with its value, as the next request's entry.</summary>
    public void Publish()
    {
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

        _counts[_entryEnd++] = _recorded;
        _lineEnd += _recorded;
        _recorded = 0;
    }

    /// <summary>Forgets the <see cref="Recorded"/> lines and the strings they hold.</summary>
    public void Discard()
    {
        Recorded.Clear();
        _recorded = 0;
    }

    /// <summary>Forgets the <see cref="Recorded"/> lines of a head that passes through and, when no entry waits, the array
    /// too: the connection records no more lines, and the request of the entry taken last has ended, as a later head was
    /// read.</summary>
    public void StopRecording()
    {
        Discard();
        Release();
    }

    /// <summary>Lets go of the arrays when no entry waits and no lines are recorded, as for a connection that waits for
    /// its next head: the request of the entry taken last has ended.</summary>
    public void Release()
    {
        if (_entryStart == _entryEnd && _recorded == 0)
        {
            (_lines, _counts) = ([], []);
            _lineStart = _lineEnd = _entryStart = _entryEnd = 0;
            _takenStart = _takenCount = 0;
        }
    }

    /// <summary>The lines of the entry <see cref="TryTake"/> took last, in the order they were sent, each with its value.
    /// They stay readable while that entry's request runs: the next head, whose lines may be recorded over them, is read
    /// only once Kestrel asks for more, after that request has ended.</summary>
    public ReadOnlySpan<TakenHeader> Taken => _lines.AsSpan(_takenStart, _takenCount);

    /// <summary>Takes the oldest entry, if one waits, and leaves its lines in <see cref="Taken"/>.</summary>
    public bool TryTake()
    {
        if (_entryStart == _entryEnd)
        {
            return false;
        }

        _takenStart = _lineStart;
        _takenCount = _counts[_entryStart++];
        _lineStart += _takenCount;

        if (_entryStart == _entryEnd)
        {
            _entryStart = _entryEnd = 0;
            if (_recorded == 0)
            {
                // The next head records from the front, over the lines just taken, so the array is only as long as the
                // connection's longest head needs.
                _lineStart = _lineEnd = 0;
            }
        }

        return true;
    }

    // The lines waiting and recorded move to the front when entries taken from it left most of the array free, else to
    // an array twice as long; the lines taken last are not kept, as a head is being read.
    private void MakeRoom()
    {
        int used = _lineEnd + _recorded - _lineStart;
        if (_lineStart > 0 && used < _lines.Length / 2)
        {
            Array.Copy(_lines, _lineStart, _lines, 0, used);
            Array.Clear(_lines, used, _lines.Length - used);
        }
        else
        {
            var grown = new TakenHeader[Math.Max(16, _lines.Length * 2)];
            Array.Copy(_lines, _lineStart, grown, 0, used);
            _lines = grown;
        }

        _lineEnd -= _lineStart;
        _lineStart = 0;
    }
}
