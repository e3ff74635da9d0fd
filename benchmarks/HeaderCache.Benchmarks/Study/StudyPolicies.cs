using HeaderCache.Caching;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// The eviction policies the study compares with the engine's SIEVE, written with plain collections over the
/// lookups' bytes as keys: the product has only SIEVE, so these live here. Hits and saved bytes are counted as the
/// engine counts them.
/// </summary>
internal abstract class StudyPolicy(int capacity)
{
    public long Hits { get; private set; }

    public long Misses { get; private set; }

    public long BytesSaved { get; private set; }

    protected int Capacity { get; } = capacity;

    public static StudyPolicy Lru(int capacity) => new LruPolicy(capacity);

    public static StudyPolicy Clock(int capacity) => new ClockPolicy(capacity);

    /// <summary>SIEVE, but a first miss only remembers the key among the last <paramref name="remembered"/> ones
    /// missed once; the value is admitted when it misses again while still remembered.</summary>
    public static StudyPolicy SieveWithDoorkeeper(int capacity, int remembered) => new DoorkeeperPolicy(capacity, remembered);

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

    /// <summary>CLOCK: a ring with a reference bit per entry; on a miss the hand clears set bits until it finds a
    /// clear one, replaces that entry in place and steps past it.</summary>
    private sealed class ClockPolicy(int capacity) : StudyPolicy(capacity)
    {
        private readonly List<(string Key, bool Referenced)> _ring = [];
        private int _hand;

        protected override bool Touch(string key)
        {
            int index = _ring.FindIndex(e => e.Key == key);
            if (index < 0)
            {
                return false;
            }

            _ring[index] = (key, true);
            return true;
        }

        protected override void Admit(string key)
        {
            if (_ring.Count < Capacity)
            {
                _ring.Add((key, false));
                return;
            }

            while (_ring[_hand].Referenced)
            {
                _ring[_hand] = (_ring[_hand].Key, false);
                _hand = (_hand + 1) % Capacity;
            }

            _ring[_hand] = (key, false);
            _hand = (_hand + 1) % Capacity;
        }
    }

    /// <summary>SIEVE (as the engine) behind a doorkeeper of keys missed once.</summary>
    private sealed class DoorkeeperPolicy(int capacity, int remembered) : StudyPolicy(capacity)
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
            if (!_seenOnce.Contains(key))
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
