namespace HeaderCache.Requests;

/// <summary>The header fields taken out of HTTP/2 header blocks, per stream, waiting for the request Kestrel creates
/// for that stream.</summary>
/// <remarks><para>The reader adds on the connection's frame loop; Kestrel creates streams' requests on the thread pool,
/// concurrently, so both sides take a lock. Stream ids are never reused on a connection, so an entry reaches only its
/// own stream's request.</para>
/// <para>Bounded: a full hand-off refuses, and the block passes unchanged; nothing is evicted, as an entry may be a live
/// stream's. An entry whose stream never reaches the application (reset before it ran, refused) stays until the
/// connection ends.</para></remarks>
internal sealed class Http2StreamHandoff(int capacity)
{
    private readonly Lock _lock = new();
    private int[] _ids = [];
    private TakenHeader[]?[] _lines = [];
    private int _count;

    /// <summary>Whether an entry could be added now.</summary>
    public bool HasRoom
    {
        get
        {
            lock (_lock)
            {
                return _count < capacity;
            }
        }
    }

    /// <summary>Adds stream <paramref name="streamId"/>'s fields; false when full.</summary>
    public bool TryAdd(int streamId, TakenHeader[] lines)
    {
        lock (_lock)
        {
            if (_count == capacity)
            {
                return false;
            }

            if (_count == _ids.Length)
            {
                int size = Math.Min(capacity, Math.Max(8, _ids.Length * 2));
                Array.Resize(ref _ids, size);
                Array.Resize(ref _lines, size);
            }

            _ids[_count] = streamId;
            _lines[_count] = lines;
            _count++;
            return true;
        }
    }

    /// <summary>Takes stream <paramref name="streamId"/>'s fields, or <see langword="null"/> when none wait.</summary>
    public TakenHeader[]? Take(int streamId)
    {
        lock (_lock)
        {
            for (int i = 0; i < _count; i++)
            {
                if (_ids[i] == streamId)
                {
                    TakenHeader[]? lines = _lines[i];
                    _count--;
                    _ids[i] = _ids[_count];
                    _lines[i] = _lines[_count];
                    _lines[_count] = null;
                    return lines;
                }
            }

            return null;
        }
    }

    /// <summary>The connection ended: lets go of every entry.</summary>
    public void Clear()
    {
        lock (_lock)
        {
            (_ids, _lines, _count) = ([], [], 0);
        }
    }
}
