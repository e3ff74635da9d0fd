namespace HeaderCache.Tests.Caching;

/// <summary>
/// A reference model of the engine's eviction policy, SIEVE (Zhang et al., NSDI '24), written from the paper's
/// definition with plain collections (no slots, no fingerprints) so that it shares no code or layout with the engine.
/// </summary>
/// <remarks>
/// A FIFO queue, oldest first, with a visited bit per entry. A hit sets the bit. On a miss the hand (starting at
/// the oldest entry when it has no position) moves toward newer entries, clearing visited bits, wrapping from the
/// newest to the oldest, and evicts the first unvisited entry; the hand then rests on the next newer entry (none
/// when the victim was the newest). New entries are appended as the newest.
/// </remarks>
internal sealed class SieveModel(int capacity)
{
    private readonly LinkedList<Entry> _queue = new(); // First = oldest, Last = newest.
    private readonly Dictionary<string, LinkedListNode<Entry>> _nodes = new(StringComparer.Ordinal);
    private LinkedListNode<Entry>? _hand;

    public int Count => _nodes.Count;

    /// <summary>Whether <paramref name="key"/> is held, without touching it.</summary>
    public bool Contains(string key) => _nodes.ContainsKey(key);

    /// <summary>Looks <paramref name="key"/> up, admitting it on a miss.</summary>
    /// <returns>Whether it was a hit.</returns>
    public bool Access(string key)
    {
        if (_nodes.TryGetValue(key, out LinkedListNode<Entry>? node))
        {
            node.Value.Visited = true;
            return true;
        }

        if (_nodes.Count == capacity)
        {
            LinkedListNode<Entry> victim = _hand ?? _queue.First!;
            while (victim.Value.Visited)
            {
                victim.Value.Visited = false;
                victim = victim.Next ?? _queue.First!;
            }

            _hand = victim.Next;
            _queue.Remove(victim);
            _nodes.Remove(victim.Value.Key);
        }

        _nodes[key] = _queue.AddLast(new Entry(key));
        return false;
    }

    private sealed class Entry(string key)
    {
        public string Key { get; } = key;

        public bool Visited { get; set; }
    }
}
