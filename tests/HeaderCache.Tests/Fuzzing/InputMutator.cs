using HeaderCache.Tests.Integration;
using HeaderCache.Traffic;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// Mutates known inputs (the malformed-input rows, requests from every traffic profile, and the generator's
/// streams): flips a bit, inserts or drops one of the bytes HTTP framing turns on (CR, LF, SP, HTAB, colon,
/// NUL), truncates, duplicates a stretch, or splices two inputs. The same seed always gives the same bytes.
/// </summary>
internal sealed class InputMutator
{
    private static readonly byte[] FramingBytes = "\r\n \t:\0"u8.ToArray();

    private readonly Random _random;
    private readonly List<byte[]> _corpus;
    private readonly RequestStreamGenerator _generator;

    public InputMutator(int seed)
    {
        _random = new Random(seed);
        _generator = new RequestStreamGenerator(seed);
        _corpus = [.. MalformedInputTests.Corpus];
        foreach (TrafficProfile profile in TrafficProfile.LoadAll())
        {
            TrafficProfile.Connection connection = profile.Connect(seed);
            _corpus.AddRange(Enumerable.Range(0, Math.Min(profile.Count, 8)).Select(connection.Render));
        }
    }

    /// <summary>The next input: a known one or a generated stream, with one to four mutations.</summary>
    public byte[] Next()
    {
        List<byte> bytes = [.. _random.Next(3) == 0 ? _generator.Next() : Pick()];
        for (int mutations = _random.Next(1, 5); mutations > 0 && bytes.Count > 0; mutations--)
        {
            int at = _random.Next(bytes.Count);
            switch (_random.Next(7))
            {
                case 0:
                    bytes[at] ^= (byte)(1 << _random.Next(8));
                    break;
                case 1:
                case 2:
                    bytes.Insert(at, FramingBytes[_random.Next(FramingBytes.Length)]);
                    break;
                case 3:
                    // Drop a framing byte near the chosen place, or the byte there.
                    int found = bytes.FindIndex(at, b => FramingBytes.Contains(b));
                    bytes.RemoveAt(found >= 0 ? found : at);
                    break;
                case 4:
                    bytes.RemoveRange(at, bytes.Count - at);
                    break;
                case 5:
                    int length = _random.Next(1, Math.Min(64, bytes.Count - at) + 1);
                    bytes.InsertRange(at, bytes.GetRange(at, length));
                    break;
                default:
                    byte[] other = Pick();
                    int from = _random.Next(other.Length);
                    bytes.RemoveRange(at, bytes.Count - at);
                    bytes.AddRange(other.AsSpan(from).ToArray());
                    break;
            }
        }

        return [.. bytes];
    }

    private byte[] Pick() => _corpus[_random.Next(_corpus.Count)];
}
