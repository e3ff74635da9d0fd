using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Testing;

/// <summary>Puts a head's taken lines into a header collection without a request: the compactor's output as Kestrel's
/// parser would have added it, line by line in the order sent, with the library's own <see cref="CachedRequestHeaders.Write"/>.</summary>
internal static class TakenLines
{
    /// <summary>Takes the oldest waiting entry and adds its lines to <paramref name="headers"/>.</summary>
    /// <returns><see langword="false"/> when no entry was waiting.</returns>
    public static bool TryApply(this HeaderInjectionQueue queue, IHeaderDictionary headers)
    {
        if (!queue.TryTake())
        {
            return false;
        }

        foreach (ref readonly TakenHeader line in queue.Taken)
        {
            CachedRequestHeaders.Write(headers, line);
        }

        return true;
    }
}
