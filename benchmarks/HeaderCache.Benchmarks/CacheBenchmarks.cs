using System.Text;
using BenchmarkDotNet.Attributes;
using CommunityToolkit.HighPerformance.Buffers;
using HeaderCache.Caching;

namespace HeaderCache.Benchmarks;

/// <summary>Whether the benchmark's stream of header values repeats one value or never repeats.</summary>
public enum Lookup
{
    /// <summary>Every call sees the same value (in a different buffer): a cache hit, Kestrel's reuse succeeds.</summary>
    Hit,

    /// <summary>Every call sees a value not seen for <see cref="HeaderValues.RingLength"/> calls: every
    /// cache misses, so a miss pays hashing, the slot scan, the string and admission (eviction).</summary>
    Miss,
}

/// <summary>
/// One header value turned into a string, four ways: allocate it like Kestrel does (the baseline),
/// Kestrel's single previous-value compare, CommunityToolkit's <see cref="StringPool"/>, and
/// <see cref="HeaderStringCache"/>.
/// </summary>
/// <remarks>
/// Each call takes the next buffer of a fixed ring of <see cref="HeaderValues.RingLength"/> byte arrays, the same
/// ring for every method, so all of them read the same memory. For <see cref="Lookup.Hit"/> the ring
/// holds copies of one value; for <see cref="Lookup.Miss"/> it holds distinct random values, far more
/// than any of the caches can hold. The caches are the size a connection would have (25 slots; the
/// smallest <see cref="StringPool"/>, 32 strings) and start full of other values of the same length.
/// <see cref="Setup"/> checks that hits hit and misses miss.
/// </remarks>
[MemoryDiagnoser]
[MinColumn]
[MedianColumn]
public class CacheBenchmarks
{
    private byte[][] _inputs = [];
    private int _next;
    private HeaderStringCache _cache = new();
    private StringPool _pool = new(32);
    private string _previous = string.Empty;

    /// <summary>Bytes per header value.</summary>
    [Params(8, 32, 128, 256)]
    public int Length { get; set; }

    /// <summary>Whether the stream repeats one value or never repeats.</summary>
    [Params(Lookup.Hit, Lookup.Miss)]
    public Lookup Case { get; set; }

    /// <summary>Builds the ring and warms the caches, then checks that every method hits or misses as intended.</summary>
    [GlobalSetup]
    public void Setup()
    {
        var random = new Random(20260522);
        byte[] value = HeaderValues.Random(random, Length);
        _inputs = HeaderValues.Ring(random, value, Case);

        _cache = new HeaderStringCache(seed: 0x5EED);
        _pool = new StringPool(32);
        for (int i = 0; i < HeaderStringCache.DefaultSlotCount - 1; i++)
        {
            byte[] other = HeaderValues.Random(random, Length);
            _ = _cache.GetOrAdd(other, out _, out _, ref _created);
            _pool.GetOrAdd(other, Encoding.ASCII);
        }

        byte[] last = Case == Lookup.Hit ? value : HeaderValues.Random(random, Length);
        _ = _cache.GetOrAdd(last, out _, out _, ref _created);
        _pool.GetOrAdd(last, Encoding.ASCII);
        _previous = HeaderValues.Decode(last);

        Check();
        _next = 0;
    }

    /// <summary>What Kestrel does for every unknown header and every changed known one: a new string.</summary>
    [Benchmark(Baseline = true)]
    public string Allocate() => HeaderValues.Decode(Next());

    /// <summary>Kestrel's string reuse for known headers: compare with the previous request's string.</summary>
    [Benchmark]
    public string KestrelPrevious()
    {
        byte[] bytes = Next();
        string previous = _previous;
        if (previous.Length == bytes.Length && Ascii.Equals(bytes, previous))
        {
            return previous;
        }

        return _previous = HeaderValues.Decode(bytes);
    }

    /// <summary>CommunityToolkit.HighPerformance: decode into a rented buffer, then look the chars up.</summary>
    [Benchmark]
    public string ToolkitStringPool() => _pool.GetOrAdd(Next(), Encoding.ASCII);

    /// <summary>This library's per-connection cache.</summary>
    [Benchmark]
    public string HeaderCacheGetOrAdd() => _cache.GetOrAdd(Next(), out _, out _, ref _created)!;

    private bool _created;

    private byte[] Next() => _inputs[_next++ & (HeaderValues.RingLength - 1)];

    // Two passes over the ring with each method; in the second pass a hit must return the first pass's
    // string and a miss a new one. The cache's own counters must agree.
    private void Check()
    {
        long hitsBefore = _cache.Counters.Hits;
        long missesBefore = _cache.Counters.Misses;
        int expected = Case == Lookup.Hit ? HeaderValues.RingLength : 0;
        foreach ((string name, Func<string> method) in new (string, Func<string>)[]
        {
            (nameof(KestrelPrevious), KestrelPrevious),
            (nameof(ToolkitStringPool), ToolkitStringPool),
            (nameof(HeaderCacheGetOrAdd), HeaderCacheGetOrAdd),
        })
        {
            _next = 0;
            string[] first = Enumerable.Range(0, HeaderValues.RingLength).Select(_ => method()).ToArray();
            int reused = first.Count(s => ReferenceEquals(s, method()));
            if (reused != expected)
            {
                throw new InvalidOperationException($"{name} {Case} (length {Length}): {reused} of {HeaderValues.RingLength} strings reused, expected {expected}.");
            }
        }

        long hits = _cache.Counters.Hits - hitsBefore;
        long misses = _cache.Counters.Misses - missesBefore;
        if (Case == Lookup.Hit ? (hits, misses) != (2 * HeaderValues.RingLength, 0) : (hits, misses) != (0, 2 * HeaderValues.RingLength))
        {
            throw new InvalidOperationException($"HeaderStringCache {Case} (length {Length}): {hits} hits, {misses} misses.");
        }
    }
}
