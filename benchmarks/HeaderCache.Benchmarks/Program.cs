using System.Globalization;
using BenchmarkDotNet.Running;
using HeaderCache.Benchmarks.ConnectionPath;
using HeaderCache.Benchmarks.Study;

// One entry point per question; the README says what each answers and how long it takes.
if (args.Length > 0 && args[0] == "connection-path-pairs")
{
    // <profile> <seconds> [evictKB] [h2] [logging], the options in that order.
    int at = 3;
    int evictKilobytes = 0;
    if (at < args.Length && int.TryParse(args[at], NumberStyles.None, CultureInfo.InvariantCulture, out evictKilobytes))
    {
        at++;
    }

    bool http2 = at < args.Length && args[at] == "h2";
    at += http2 ? 1 : 0;
    bool hostLogging = at < args.Length && args[at] == "logging";
    at += hostLogging ? 1 : 0;
    if (args.Length < 3 || at != args.Length)
    {
        Console.Error.WriteLine("usage: connection-path-pairs <profile> <seconds> [evictKB] [h2] [logging]");
        Environment.ExitCode = 2;
        return;
    }

    ConnectionPathPairs.Run(args[1], double.Parse(args[2], CultureInfo.InvariantCulture), evictKilobytes, hostLogging, http2, Console.Out);
    return;
}

if (args.Length is >= 3 and <= 6 && args[0] == "connection-lengths" && args[1] is "h1" or "h2")
{
    // <h1|h2> <profile> [chrome|nghttp2|httpclient] [crumbs] [lengths=a,b,...]: the lengths, when given, last.
    int end = args.Length;
    int[] lengths = ConnectionLengths.DefaultLengths;
    if (end > 3 && args[end - 1].StartsWith("lengths=", StringComparison.Ordinal))
    {
        lengths = [.. args[--end]["lengths=".Length..].Split(',').Select(length => int.Parse(length, NumberStyles.None, CultureInfo.InvariantCulture))];
    }

    ConnectionLengths.Run(args[1] == "h2", args[2], end >= 4 ? args[3] : "chrome", end == 5 && args[4] == "crumbs", lengths, Console.Out);
    return;
}

if (args.Length is >= 3 and <= 6 && args[0] == "reuse" && args[1] is "h1" or "h2")
{
    // <h1|h2> <profile> [chrome|nghttp2|httpclient] [crumbs] [streams]: the streams, a number, last.
    int streams = 1;
    int end = args.Length;
    if (end > 3 && int.TryParse(args[end - 1], NumberStyles.None, CultureInfo.InvariantCulture, out int parsed))
    {
        streams = parsed;
        end--;
    }

    bool crumbs = end > 4 && args[4] == "crumbs";
    if (streams < 1 || end > (crumbs ? 5 : 4))
    {
        Console.Error.WriteLine("usage: reuse <h1|h2> <profile> [chrome|nghttp2|httpclient] [crumbs] [streams]");
        Environment.ExitCode = 2;
        return;
    }

    ValueReuse.Run(args[1] == "h2", args[2], end > 3 ? args[3] : "chrome", crumbs, streams, Console.Out);
    return;
}

if (args.Length > 0 && args[0] == "retained-memory")
{
    RetainedMemory.Run(Console.Out);
    return;
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
