using BenchmarkDotNet.Attributes;
using HeaderCache.Caching;

namespace HeaderCache.Benchmarks.Proposal;

/// <summary>
/// The engine's lookup against the <see cref="FingerprintCache"/> prototype, in the harness of
/// <see cref="CacheBenchmarks"/> (same rings, same full caches, same baseline).
/// </summary>
[MemoryDiagnoser]
[MinColumn]
[MedianColumn]
public class ProposalBenchmarks
{
    /// <summary>Fingerprints the doorkeeper remembers.</summary>
    public const int Doorkeeper = 64;

    private byte[][] _inputs = [];
    private int _next;
    private HeaderStringCache _engine = new();
    private FingerprintCache _prototype = new();
    private FingerprintCache _doorkeeper = new();

    /// <summary>Bytes per header value.</summary>
    [Params(8, 32, 128, 256)]
    public int Length { get; set; }

    /// <summary>Whether the stream repeats one value or never repeats.</summary>
    [Params(Lookup.Hit, Lookup.Miss)]
    public Lookup Case { get; set; }

    /// <summary>Builds the ring, fills both caches, and checks that hits hit and misses miss.</summary>
    [GlobalSetup]
    public void Setup()
    {
        var random = new Random(20260522);
        byte[] value = HeaderValues.Random(random, Length);
        _inputs = HeaderValues.Ring(random, value, Case);
        _engine = new HeaderStringCache(seed: 0x5EED);
        _prototype = new FingerprintCache(seed: 0x5EED);
        _doorkeeper = new FingerprintCache(seed: 0x5EED, doorkeeper: Doorkeeper);
        for (int i = 0; i < HeaderStringCache.DefaultSlotCount; i++)
        {
            byte[] other = i == HeaderStringCache.DefaultSlotCount - 1 && Case == Lookup.Hit ? value : HeaderValues.Random(random, Length);
            for (int twice = 0; twice < 2; twice++)
            {
                _engine.TryGetOrAdd(other, out _);
                _prototype.TryGetOrAdd(other, out _);
                _doorkeeper.TryGetOrAdd(other, out _);
            }
        }

        long expected = Case == Lookup.Hit ? 2 * HeaderValues.RingLength : 0;
        foreach ((Func<string> method, Func<long> hits) in new (Func<string>, Func<long>)[]
        {
            (Engine, () => _engine.Counters.Hits),
            (Prototype, () => _prototype.Counters.Hits),
            (PrototypeDoorkeeper, () => _doorkeeper.Counters.Hits),
        })
        {
            _next = 0;
            long before = hits();
            for (int i = 0; i < 2 * HeaderValues.RingLength; i++)
            {
                method();
            }

            if (hits() - before != expected)
            {
                throw new InvalidOperationException($"{Case} (length {Length}): {method.Method.Name} {hits() - before} hits, expected {expected}.");
            }
        }

        _next = 0;
    }

    /// <summary>A new string per call, as Kestrel makes it.</summary>
    [Benchmark(Baseline = true)]
    public string Allocate() => HeaderValues.Decode(Next());

    /// <summary>The engine as it is: validate and hash every byte, scan, compare.</summary>
    [Benchmark]
    public string Engine()
    {
        _engine.TryGetOrAdd(Next(), out string? value);
        return value!;
    }

    /// <summary>Fingerprint, scan, compare; validate only on a miss.</summary>
    [Benchmark]
    public string Prototype()
    {
        _prototype.TryGetOrAdd(Next(), out string? value);
        return value!;
    }

    /// <summary>The prototype with a doorkeeper of 64 fingerprints: a first miss is not admitted.</summary>
    [Benchmark]
    public string PrototypeDoorkeeper()
    {
        _doorkeeper.TryGetOrAdd(Next(), out string? value);
        return value!;
    }

    private byte[] Next() => _inputs[_next++ & (HeaderValues.RingLength - 1)];
}
