using HeaderCache.Caching;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// The eviction policies the study compares with the engine's CLOCK, written with plain collections over the
/// lookups' bytes as keys: the product has only CLOCK, so these live here. Hits and saved bytes are counted as the
/// engine counts them.
/// </summary>
internal abstract class StudyPolicy(int capacity)
{
    public long Hits { get; private set; }

    public long Misses { get; private set; }

    public long BytesSaved { get; private set; }

    protected int Capacity { get; } = capacity;

    public static StudyPolicy Lru(int capacity) => new LruPolicy(capacity);

    public static StudyPolicy Sieve(int capacity) => new SievePolicy(capacity, remembered: 0);

    /// <summary>SIEVE, but a first miss only remembers the key among the last <paramref name="remembered"/> ones
    /// missed once; the value is admitted when it misses again while still remembered.</summary>
    public static StudyPolicy SieveWithDoorkeeper(int capacity, int remembered) => new SievePolicy(capacity, remembered);

    /// <summary>Looks the key up, admitting it on a miss as the policy decides.</summary>
    public void Access(byte[] lookup)
    {
        string key = Convert.ToBase64String(lookup);
        if (Touch(key))
        {
            Hits++;
            BytesSaved += HeaderStringCache.StringSize(lookup.Length);
        }
        else
        {
            Misses++;
            Admit(key);
        }
    }

    /// <summary>Whether the key is held; a hit updates the policy's state.</summary>
    protected abstract bool Touch(string key);

    /// <summary>Admits a key that missed.</summary>
    protected abstract void Admit(string key);

    /// <summary>LRU: a recency list, most recent first; a full cache drops the last entry.</summary>
    private sealed class LruPolicy(int capacity) : StudyPolicy(capacity)
    {
        private readonly LinkedList<string> _recency = new();
        private readonly Dictionary<string, LinkedListNode<string>> _nodes = new(StringComparer.Ordinal);

        protected override bool Touch(string key)
        {
            if (!_nodes.TryGetValue(key, out LinkedListNode<string>? node))
            {
                return false;
            }

            _recency.Remove(node);
            _recency.AddFirst(node);
            return true;
        }

        protected override void Admit(string key)
        {
            if (_nodes.Count == Capacity)
            {
                _nodes.Remove(_recency.Last!.Value);
                _recency.RemoveLast();
            }

            _nodes[key] = _recency.AddFirst(key);
        }
    }

    /// <summary>SIEVE (Zhang et al., NSDI '24), the engine's policy before CLOCK: a queue in insertion order with a
    /// visited bit per entry. On a miss the hand goes from where it stopped toward newer entries, wrapping to the
    /// oldest, clears visited bits and evicts the first unvisited entry; survivors keep their place and the new key
    /// joins as the newest. With <paramref name="remembered"/> above 0, a doorkeeper of keys missed once stands in
    /// front.</summary>
    private sealed class SievePolicy(int capacity, int remembered) : StudyPolicy(capacity)
    {
        private readonly LinkedList<(string Key, bool Visited)> _queue = new(); // First = oldest.
        private readonly Dictionary<string, LinkedListNode<(string Key, bool Visited)>> _nodes = new(StringComparer.Ordinal);
        private readonly Queue<string> _seenOnce = new();
        private LinkedListNode<(string Key, bool Visited)>? _hand;

        protected override bool Touch(string key)
        {
            if (!_nodes.TryGetValue(key, out var node))
            {
                return false;
            }

            node.Value = (key, true);
            return true;
        }

        protected override void Admit(string key)
        {
            if (remembered > 0 && !_seenOnce.Contains(key))
            {
                _seenOnce.Enqueue(key);
                if (_seenOnce.Count > remembered)
                {
                    _seenOnce.Dequeue();
                }

                return;
            }

            if (_nodes.Count == Capacity)
            {
                var victim = _hand ?? _queue.First!;
                while (victim.Value.Visited)
                {
                    victim.Value = (victim.Value.Key, false);
                    victim = victim.Next ?? _queue.First!;
                }

                _hand = victim.Next;
                _queue.Remove(victim);
                _nodes.Remove(victim.Value.Key);
            }

            _nodes[key] = _queue.AddLast((key, false));
        }
    }
}
