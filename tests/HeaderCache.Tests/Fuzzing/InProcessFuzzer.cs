using System.Text.RegularExpressions;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>
/// The differential fuzzer over the in-memory transport: the same bytes, cut the same way, go to the sample
/// app with HeaderCache and to Kestrel alone, and the two transcripts (every response byte but <c>Date</c>,
/// after which byte it came, and when the server closed) must be equal. Inputs are generated streams and
/// mutations of known inputs; cuts range from one byte per write to the whole input in one write.
/// </summary>
internal static partial class InProcessFuzzer
{
    private const string Terminator = "GET /fuzz-end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

    /// <summary>One divergence, with everything needed to replay it.</summary>
    public sealed record Divergence(int Seed, int Case, string Bytes, string Pieces, string On, string Alone);

    /// <summary>What a run did.</summary>
    public sealed record Result(int Cases, List<Divergence> Divergences, Dictionary<string, int> Statuses);

    /// <summary>
    /// Runs <paramref name="cases"/> cases from <paramref name="seed"/> (stopping early at <paramref name="deadline"/>),
    /// <paramref name="parallel"/> at a time.
    /// </summary>
    public static async Task<Result> RunAsync(
        InMemoryServer on, InMemoryServer alone, int seed, int cases, DateTime deadline, int parallel = 4, Action<string>? progress = null)
    {
        var mutator = new InputMutator(seed);
        var generator = new RequestStreamGenerator(~seed);
        var random = new Random(seed ^ 0x2545F491);

        // Drawn apart, so that a seed gives the same cases as before idle connections were fuzzed too.
        var idleDraws = new Random(seed ^ 0x1D1E);
        var divergences = new List<Divergence>();
        var statuses = new Dictionary<string, int>(StringComparer.Ordinal);
        var running = new List<Task>();
        int run = 0;
        for (; run < cases && DateTime.UtcNow < deadline; run++)
        {
            // Cases are drawn in order, so a seed always gives the same cases whatever the parallelism.
            byte[] bytes = random.Next(2) == 0 ? generator.Next() : mutator.Next();
            if (random.Next(4) != 0)
            {
                // Ends the case with a close when the stream's framing held; otherwise the FIN ends it.
                bytes = [.. bytes, .. System.Text.Encoding.ASCII.GetBytes(Terminator)];
            }

            int[] pieces = Cut(bytes.Length, random);
            bool idle = idleDraws.Next(4) == 0;
            int number = run;
            running.Add(CompareAsync(number));
            if (running.Count >= parallel)
            {
                Task done = await Task.WhenAny(running);
                running.Remove(done);
                await done;
            }

            if (progress is not null && (run + 1) % 10_000 == 0)
            {
                progress($"seed {seed}: {run + 1} cases, {divergences.Count} divergences");
            }

            async Task CompareAsync(int number)
            {
                Task<string> onRun = on.ExchangeAsync(bytes, pieces, idle);
                Task<string> aloneRun = alone.ExchangeAsync(bytes, pieces);
                string onTranscript = await onRun;
                string aloneTranscript = await aloneRun;
                lock (divergences)
                {
                    foreach (Match status in StatusLine().Matches(aloneTranscript))
                    {
                        statuses[status.Groups[1].Value] = statuses.GetValueOrDefault(status.Groups[1].Value) + 1;
                    }

                    if (onTranscript != aloneTranscript)
                    {
                        divergences.Add(new Divergence(seed, number, DifferentialFuzzer.Escape(bytes), string.Join(',', pieces), onTranscript, aloneTranscript));
                    }
                }
            }
        }

        await Task.WhenAll(running);
        return new Result(run, divergences, statuses);
    }

    // One write per byte for short inputs now and then (the timing oracle at its finest), else random pieces.
    private static int[] Cut(int length, Random random)
    {
        int maxPiece = random.Next(8) switch
        {
            0 when length <= 400 => 1,
            0 or 1 => 7,
            2 or 3 or 4 => 64,
            5 or 6 => 512,
            _ => int.MaxValue,
        };
        var pieces = new List<int>();
        for (int left = length; left > 0;)
        {
            int piece = Math.Min(left, random.Next(1, (int)Math.Min(maxPiece, int.MaxValue - 1L) + 1));
            pieces.Add(piece);
            left -= piece;
        }

        return [.. pieces];
    }

    [GeneratedRegex("HTTP/1\\.1 (\\d{3}) ")]
    private static partial Regex StatusLine();
}
