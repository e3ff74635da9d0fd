using System.Net;
using System.Text;
using HeaderCache.Tests.Integration;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// Sends generated request streams, split at random places, to HeaderCache and to Kestrel alone, and
/// reports every case whose transcripts (status, echoed request view, connection end) differ.
/// </summary>
public static partial class DifferentialFuzzer
{
    private static readonly TimeSpan QuietPeriod = TimeSpan.FromMilliseconds(250);

    /// <summary>One divergence, with everything needed to replay it.</summary>
    public sealed record Divergence(int Seed, int Case, int SplitSeed, string Bytes, string On, string Off);

    /// <summary>Runs <paramref name="cases"/> cases from <paramref name="seed"/>; stops early at <paramref name="deadline"/>.</summary>
    public static async Task<(int Cases, List<Divergence> Divergences, Dictionary<string, int> Statuses)> RunAsync(
        IPEndPoint on, IPEndPoint alone, int seed, int cases, DateTime deadline, Action<string>? progress = null)
    {
        var generator = new RequestStreamGenerator(seed);
        var splits = new Random(seed ^ 0x5bd1e995);
        var divergences = new List<Divergence>();
        var statuses = new Dictionary<string, int>(StringComparer.Ordinal);
        int run = 0;
        for (; run < cases && DateTime.UtcNow < deadline; run++)
        {
            // A last request that closes the connection ends the case quickly when the stream's framing held.
            byte[] bytes = [.. generator.Next(), .. "GET /fuzz-end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"u8];
            int splitSeed = splits.Next();
            int maxPiece = splits.Next(4) switch { 0 => 1, 1 => 7, 2 => 64, _ => 4096 };
            Func<byte[], IEnumerable<ReadOnlyMemory<byte>>> split = maxPiece == 1 && bytes.Length > 600
                ? RawHttp.RandomSplit(splitSeed, 3)
                : RawHttp.RandomSplit(splitSeed, maxPiece);
            Task<string> offRun = RawHttp.SendAllRawAsync(alone, bytes, split, QuietPeriod);
            Task<string> onRun = RawHttp.SendAllRawAsync(on, bytes, split, QuietPeriod);
            string offTranscript = await offRun;
            string onTranscript = await onRun;
            foreach (System.Text.RegularExpressions.Match status in StatusLine().Matches(offTranscript))
            {
                statuses[status.Groups[1].Value] = statuses.GetValueOrDefault(status.Groups[1].Value) + 1;
            }

            if (offTranscript != onTranscript)
            {
                divergences.Add(new Divergence(seed, run, splitSeed, Escape(bytes), onTranscript, offTranscript));
            }

            if (progress is not null && (run + 1) % 1000 == 0)
            {
                progress($"seed {seed}: {run + 1} cases, {divergences.Count} divergences");
            }
        }

        return (run, divergences, statuses);
    }

    [System.Text.RegularExpressions.GeneratedRegex("HTTP/1\\.1 (\\d{3}) ")]
    private static partial System.Text.RegularExpressions.Regex StatusLine();

    /// <summary>The bytes as a C# string literal body, for turning a divergence into a regression test.</summary>
    public static string Escape(byte[] bytes)
    {
        var text = new StringBuilder();
        foreach (byte b in bytes)
        {
            text.Append(b switch
            {
                (byte)'\r' => "\\r",
                (byte)'\n' => "\\n",
                (byte)'\t' => "\\t",
                (byte)'"' => "\\\"",
                (byte)'\\' => "\\\\",
                >= 0x20 and < 0x7F => ((char)b).ToString(),
                _ => $"\\u{b:x4}",
            });
        }

        return text.ToString();
    }
}
