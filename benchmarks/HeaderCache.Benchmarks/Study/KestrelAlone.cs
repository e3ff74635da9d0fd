using System.Text;
using HeaderCache.Caching;
using HeaderCache.Compaction;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// The header strings stock Kestrel allocates for the lines the cache took out of each request: a new
/// name and value for an unknown header; for a known header a new value unless it is equal to that
/// header's value in the previous request (Kestrel's string reuse, one slot per known header, kept for
/// one request only).
/// </summary>
internal sealed class KestrelAlone
{
    private Dictionary<string, string> _previous = new(StringComparer.Ordinal);
    private Dictionary<string, string> _current = new(StringComparer.Ordinal);

    /// <summary>Managed bytes so far.</summary>
    public long Bytes { get; private set; }

    /// <summary>Adds the lines the compactor took out of one request.</summary>
    public void Add(IHeaderDictionary taken)
    {
        foreach ((string name, var values) in taken)
        {
            string value = values.ToString();
            string? known = HeaderNameTable.GetKnownName(Encoding.ASCII.GetBytes(name));
            if (known is null)
            {
                Bytes += HeaderStringCache.StringSize(name.Length) + HeaderStringCache.StringSize(value.Length);
                continue;
            }

            if (!(_previous.TryGetValue(known, out string? previous) && previous == value))
            {
                Bytes += HeaderStringCache.StringSize(value.Length);
            }

            _current[known] = value;
        }

        (_previous, _current) = (_current, _previous);
        _current.Clear();
    }
}
