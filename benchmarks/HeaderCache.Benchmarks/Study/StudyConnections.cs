using HeaderCache.Compaction;
using HeaderCache.Testing;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>What the studies accept of a connection that stops compacting.</summary>
internal static class StudyConnections
{
    /// <summary>
    /// Whether the connection has passed through because its heads had nothing to take out
    /// (<see cref="PassThroughReason.NothingToCache"/>, plaintext after 16 requests) or its values do not repeat
    /// (<see cref="PassThroughReason.ValuesDoNotRepeat"/>, churn): the product leaves the rest of such a connection to
    /// Kestrel, so the study stops sending on it. Any other reason means the traffic is not what the study
    /// assumes, and stops the study.
    /// </summary>
    public static bool HasLeftKestrelAlone(ReaderDriver driver, int request, int seed) => driver.Reader.PassThroughReason switch
    {
        PassThroughReason.None => false,
        PassThroughReason.NothingToCache or PassThroughReason.ValuesDoNotRepeat => true,
        PassThroughReason other => throw new InvalidOperationException(Invariant($"Request {request} of seed {seed} was not compacted ({other}).")),
    };
}
