using BenchmarkDotNet.Running;
using HeaderCache.Benchmarks.ConnectionPath;
using HeaderCache.Benchmarks.Study;

if (args.Length > 0 && args[0] == "eviction-study")
{
    EvictionStudy.Run(Console.Out);
    return;
}

if (args.Length == 5 && args[0] == "connection-path-count")
{
    ConnectionPathCount.Run(args[1], args[2], int.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture), int.Parse(args[4], System.Globalization.CultureInfo.InvariantCulture), Console.Out);
    return;
}

if (args.Length == 4 && args[0] == "connection-path-loop")
{
    ConnectionPathLoop.Run(args[1], args[2], double.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture), Console.Out);
    return;
}

if (args.Length is >= 3 and <= 5 && args[0] == "connection-path-pairs" && (args.Length < 5 || args[^1] == "logging"))
{
    bool hostLogging = args[^1] == "logging";
    string[] numbers = hostLogging ? args[..^1] : args;
    int evictKilobytes = numbers.Length == 4 ? int.Parse(numbers[3], System.Globalization.CultureInfo.InvariantCulture) : 0;
    ConnectionPathPairs.Run(args[1], double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture), evictKilobytes, hostLogging, Console.Out);
    return;
}

if (args.Length == 3 && args[0] == "reader-pairs")
{
    ReaderPairs.Run(args[1], double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture), Console.Out);
    return;
}

if (args.Length == 3 && args[0] == "reader-loop")
{
    ReaderLoop.Run(args[1], double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture), Console.Out);
    return;
}

if (args.Length > 0 && args[0] == "retained-memory")
{
    RetainedMemory.Run(Console.Out);
    return;
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
