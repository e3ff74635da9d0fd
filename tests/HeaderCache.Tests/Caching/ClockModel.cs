namespace HeaderCache.Tests.Caching;

/// <summary>
/// A reference model of the engine's eviction policy, CLOCK (Corbató, 1968), written from its definition with plain
/// collections (no slots, no fingerprints) so that it shares no code or layout with the engine.
/// </summary>
/// <remarks>
/// A ring of entries, in the order they were admitted until the ring is full, with a visited bit per entry. A hit
/// sets the bit. On a miss with the ring full the hand (starting at the oldest entry when it has no position yet)
/// goes round the ring, clearing visited bits, and the first unvisited entry it meets is replaced in its place by
/// the new one, unvisited; the hand then moves to the entry after it, wrapping from the last to the first.
/// </remarks>
internal sealed class ClockModel(int capacity)
{
    private readonly LinkedList<Entry> _ring = new(); // Last is followed by First.
    private readonly Dictionary<string, LinkedListNode<Entry>> _nodes = new(StringComparer.Ordinal);
    private LinkedListNode<Entry>? _hand;

    public int Count => _nodes.Count;

    /// <summary>Looks <paramref name="key"/> up, admitting it on a miss.</summary>
    /// <returns>Whether it was a hit.</returns>
    public bool Access(string key)
    {
        if (_nodes.TryGetValue(key, out LinkedListNode<Entry>? node))
        {
            node.Value.Visited = true;
            return true;
        }

        if (_nodes.Count < capacity)
        {
            _nodes[key] = _ring.AddLast(new Entry(key));
            return false;
        }

        LinkedListNode<Entry> victim = _hand ?? _ring.First!;
        while (victim.Value.Visited)
        {
            victim.Value.Visited = false;
            victim = victim.Next ?? _ring.First!;
        }

        _nodes.Remove(victim.Value.Key);
        victim.Value = new Entry(key);
        _nodes[key] = victim;
        _hand = victim.Next ?? _ring.First!;
        return false;
    }

    private sealed class Entry(string key)
    {
        public string Key { get; } = key;

        public bool Visited { get; set; }
    }
}
