using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <summary>
/// Reference models of the eviction policies, written from the classic definitions with plain
/// collections (no slots, no hashes) so that they share no code or layout with the engine.
/// </summary>
internal abstract class PolicyModel
{
    protected PolicyModel(int capacity) => Capacity = capacity;

    public int Capacity { get; }

    public abstract int Count { get; }

    public static PolicyModel Create(EvictionPolicy policy, int capacity) => policy switch
    {
        EvictionPolicy.Lru => new LruModel(capacity),
        EvictionPolicy.Clock => new ClockModel(capacity),
        EvictionPolicy.Sieve => new SieveModel(capacity),
        _ => throw new ArgumentOutOfRangeException(nameof(policy)),
    };

    /// <summary>Looks <paramref name="key"/> up, admitting it on a miss.</summary>
    /// <returns>Whether it was a hit.</returns>
    public abstract bool Access(string key);

    /// <summary>Whether <paramref name="key"/> is held, without touching it.</summary>
    public abstract bool Contains(string key);

    /// <summary>LRU: a recency list, most recent first; a full cache drops the last entry.</summary>
    private sealed class LruModel(int capacity) : PolicyModel(capacity)
    {
        private readonly LinkedList<string> _recency = new();
        private readonly Dictionary<string, LinkedListNode<string>> _nodes = new(StringComparer.Ordinal);

        public override int Count => _nodes.Count;

        public override bool Contains(string key) => _nodes.ContainsKey(key);

        public override bool Access(string key)
        {
            if (_nodes.TryGetValue(key, out LinkedListNode<string>? node))
            {
                _recency.Remove(node);
                _recency.AddFirst(node);
                return true;
            }

            if (_nodes.Count == Capacity)
            {
                _nodes.Remove(_recency.Last!.Value);
                _recency.RemoveLast();
            }

            _nodes[key] = _recency.AddFirst(key);
            return false;
        }
    }

    /// <summary>
    /// CLOCK: a circular buffer with a reference bit per entry. Entries fill the buffer in order
    /// with the bit clear; a hit sets the bit; on a miss the hand clears set bits and moves on until
    /// it finds a clear one, replaces that entry in place and steps past it.
    /// </summary>
    private sealed class ClockModel(int capacity) : PolicyModel(capacity)
    {
        private readonly List<(string Key, bool Referenced)> _ring = [];
        private int _hand;

        public override int Count => _ring.Count;

        public override bool Contains(string key) => _ring.Exists(e => e.Key == key);

        public override bool Access(string key)
        {
            int index = _ring.FindIndex(e => e.Key == key);
            if (index >= 0)
            {
                _ring[index] = (key, true);
                return true;
            }

            if (_ring.Count < Capacity)
            {
                _ring.Add((key, false));
                return false;
            }

            while (_ring[_hand].Referenced)
            {
                _ring[_hand] = (_ring[_hand].Key, false);
                _hand = (_hand + 1) % Capacity;
            }

            _ring[_hand] = (key, false);
            _hand = (_hand + 1) % Capacity;
            return false;
        }
    }

    /// <summary>
    /// SIEVE (Zhang et al., NSDI '24): a FIFO queue, oldest first, with a visited bit per entry.
    /// A hit sets the bit. On a miss the hand (starting at the oldest entry when it has no
    /// position) moves toward newer entries, clearing visited bits, wrapping from the newest to the
    /// oldest, and evicts the first unvisited entry; the hand then rests on the next newer entry
    /// (none when the victim was the newest). New entries are appended as the newest.
    /// </summary>
    private sealed class SieveModel(int capacity) : PolicyModel(capacity)
    {
        private sealed class Entry(string key)
        {
            public string Key { get; } = key;

            public bool Visited { get; set; }
        }

        private readonly LinkedList<Entry> _queue = new(); // First = oldest, Last = newest.
        private readonly Dictionary<string, LinkedListNode<Entry>> _nodes = new(StringComparer.Ordinal);
        private LinkedListNode<Entry>? _hand;

        public override int Count => _nodes.Count;

        public override bool Contains(string key) => _nodes.ContainsKey(key);

        public override bool Access(string key)
        {
            if (_nodes.TryGetValue(key, out LinkedListNode<Entry>? node))
            {
                node.Value.Visited = true;
                return true;
            }

            if (_nodes.Count == Capacity)
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
    }
}
