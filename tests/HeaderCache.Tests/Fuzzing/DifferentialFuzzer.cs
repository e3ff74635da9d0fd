using System.Text;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>One case: the bytes a client sends on one connection, the lengths of the writes it sends them in, and whether
/// it pauses long after every write the server answered.</summary>
internal sealed record FuzzCase(int Number, byte[] Bytes, int[] Pieces, bool Idle);

/// <summary>Sends a case on a new connection to one server and returns what the client saw.</summary>
internal delegate Task<string> FuzzExchange(FuzzCase fuzzCase);

/// <summary>
/// A protocol's part of a differential fuzz run: its inputs (<paramref name="Generator"/> and <paramref name="Mutator"/>
/// make a source of them from a seed), the bytes that end a case whose framing held (<paramref name="Terminator"/>), what
/// of a transcript may differ between two servers answering alike (<paramref name="Normalise"/> takes it out), and the
/// statuses of the responses in a transcript.
/// </summary>
internal sealed record FuzzProtocol(
    Func<int, Func<byte[]>> Generator,
    Func<int, Func<byte[]>> Mutator,
    byte[] Terminator,
    Func<string, string> Normalise,
    Func<string, IEnumerable<string>> Statuses);

/// <summary>
/// How a run draws its cases, as far as its transport allows: the share of mutated inputs (the rest are generated), of
/// cases that end with the protocol's terminator, and of cases whose client pauses after every answered write, and how a
/// case of a given length is cut into writes.
/// </summary>
internal sealed record FuzzMix(double Mutated, double Ended, double Idle, Func<int, Random, int[]> Cut)
{
    /// <summary><paramref name="length"/> bytes cut into writes of 1 to <paramref name="maxPiece"/> bytes each, drawn
    /// from <paramref name="random"/>: the pieces a <see cref="Cut"/> gives.</summary>
    public static int[] Pieces(int length, Random random, int maxPiece)
    {
        var pieces = new List<int>();
        for (int left = length; left > 0;)
        {
            int piece = Math.Min(left, random.Next(1, (int)Math.Min(maxPiece, int.MaxValue - 1L) + 1));
            pieces.Add(piece);
            left -= piece;
        }

        return [.. pieces];
    }
}

/// <summary>A case the two servers answered differently, with everything needed to replay it.</summary>
internal sealed record Divergence(int Seed, int Case, string Bytes, string Pieces, string On, string Alone)
{
    /// <summary>The first line of the transcripts that differs, with the last line before it that names a request
    /// (HTTP/2 streams and both fuzzers' header timelines start with "app", "request" or "stream").</summary>
    public string FirstDifference
    {
        get
        {
            (string[] on, string[] alone, int line) = FirstDifferingLine();
            string? within = alone.Take(line).LastOrDefault(l => l.StartsWith("app ", StringComparison.Ordinal)
                || l.StartsWith("request ", StringComparison.Ordinal) || l.StartsWith("stream ", StringComparison.Ordinal));
            string onLine = line < on.Length ? on[line] : "(end)", aloneLine = line < alone.Length ? alone[line] : "(end)";
            int at = 0;
            while (at < onLine.Length && at < aloneLine.Length && onLine[at] == aloneLine[at])
            {
                at++;
            }

            // From the stretch around the first differing character.
            int from = Math.Max(0, at - 60);
            return $"line {line + 1}{(within is null ? "" : $", within \"{within}\"")}, at {Point}:\n"
                + $"  on:    {Stretch(onLine, from)}\n  alone: {Stretch(aloneLine, from)}";
        }
    }

    /// <summary>
    /// Where the transcripts first differ: the point of a header timeline ("hosting-end", "on-starting", ...) when the
    /// first differing line is one, else "exchange" (what the client received, or an HTTP/2 app line).
    /// </summary>
    public string Point
    {
        get
        {
            (_, string[] alone, int line) = FirstDifferingLine();
            string text = line < alone.Length ? alone[line] : "";
            int colon = text.IndexOf(": ", StringComparison.Ordinal);
            if (!text.StartsWith("  ", StringComparison.Ordinal) || colon < 0 || text.TrimStart().StartsWith("HEADERS", StringComparison.Ordinal))
            {
                return "exchange";
            }

            string point = text[..colon].Trim();
            int detail = point.IndexOf(" (", StringComparison.Ordinal);
            return point.StartsWith("on-completed", StringComparison.Ordinal) || detail < 0 ? point : point[..detail];
        }
    }

    private (string[] On, string[] Alone, int Line) FirstDifferingLine()
    {
        string[] on = On.Split('\n'), alone = Alone.Split('\n');
        int line = 0;
        while (line < on.Length && line < alone.Length && on[line] == alone[line])
        {
            line++;
        }

        return (on, alone, line);
    }

    private static string Stretch(string line, int from) =>
        (from > 0 ? "..." : "") + (line.Length - from > 240 ? string.Concat(line.AsSpan(from, 240), "...") : line[Math.Min(from, line.Length)..]);

    public override string ToString() =>
        $"seed {Seed}, case {Case} (pieces {Pieces}): \"{Bytes}\"\n-- first difference, {FirstDifference}\n-- on --\n{On}\n-- alone --\n{Alone}";
}

/// <summary>Responses by status over a run, as Kestrel alone gave them: a run that never reached a status did not test it.</summary>
internal sealed class StatusTally
{
    private readonly Dictionary<string, int> _counts = new(StringComparer.Ordinal);

    /// <summary>Responses with <paramref name="status"/>.</summary>
    public int this[string status] => _counts.GetValueOrDefault(status);

    public void Add(IEnumerable<string> statuses)
    {
        foreach (string status in statuses)
        {
            _counts[status] = this[status] + 1;
        }
    }

    public override string ToString() =>
        string.Join(", ", _counts.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key}: {s.Value}"));
}

/// <summary>What a run did.</summary>
internal sealed record FuzzResult(int Seed, int Cases, IReadOnlyList<Divergence> Divergences, StatusTally Statuses)
{
    public override string ToString() => $"seed {Seed}: {Cases} cases, {Divergences.Count} divergences; responses by status: {Statuses}";
}

/// <summary>
/// The differential fuzzer, whatever the protocol and transport: each case goes to HeaderCache (<paramref name="on"/>)
/// and to Kestrel alone (<paramref name="alone"/>) in the same writes, and the two transcripts, normalised, must be equal.
/// </summary>
internal sealed class DifferentialFuzzer(FuzzProtocol protocol, FuzzExchange on, FuzzExchange alone)
{
    /// <summary>Both servers' normalised transcripts of <paramref name="fuzzCase"/>, sent to both at once.</summary>
    public async Task<(string On, string Alone)> ExchangeAsync(FuzzCase fuzzCase)
    {
        Task<string> onRun = on(fuzzCase);
        Task<string> aloneRun = alone(fuzzCase);
        return (protocol.Normalise(await onRun), protocol.Normalise(await aloneRun));
    }

    /// <summary>
    /// Runs <paramref name="cases"/> cases drawn from <paramref name="seed"/> by <paramref name="mix"/> (stopping early at
    /// <paramref name="deadline"/>), <paramref name="parallel"/> at a time.
    /// </summary>
    public async Task<FuzzResult> RunAsync(int seed, int cases, DateTime deadline, FuzzMix mix, int parallel, Action<string>? progress = null)
    {
        Func<byte[]> mutated = protocol.Mutator(seed);
        Func<byte[]> generated = protocol.Generator(~seed);
        var random = new Random(seed ^ 0x2545F491);

        // Drawn apart, so that the share of idle cases does not change which cases a seed gives.
        var idleDraws = new Random(seed ^ 0x1D1E);
        var divergences = new List<Divergence>();
        var statuses = new StatusTally();
        var running = new List<Task>();
        int run = 0;
        for (; run < cases && DateTime.UtcNow < deadline; run++)
        {
            // Cases are drawn in order, so a seed always gives the same cases whatever the parallelism.
            byte[] bytes = random.NextDouble() >= 1 - mix.Mutated ? mutated() : generated();
            if (random.NextDouble() >= 1 - mix.Ended)
            {
                bytes = [.. bytes, .. protocol.Terminator];
            }

            var fuzzCase = new FuzzCase(run, bytes, mix.Cut(bytes.Length, random), idleDraws.NextDouble() < mix.Idle);
            running.Add(CompareAsync(fuzzCase));
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
        }

        await Task.WhenAll(running);
        return new FuzzResult(seed, run, [.. divergences.OrderBy(d => d.Case)], statuses);

        async Task CompareAsync(FuzzCase fuzzCase)
        {
            var (onTranscript, aloneTranscript) = await ExchangeAsync(fuzzCase);
            lock (divergences)
            {
                statuses.Add(protocol.Statuses(aloneTranscript));
                if (onTranscript != aloneTranscript)
                {
                    divergences.Add(new Divergence(seed, fuzzCase.Number, Escape(fuzzCase.Bytes), string.Join(',', fuzzCase.Pieces), onTranscript, aloneTranscript));
                }
            }
        }
    }

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
