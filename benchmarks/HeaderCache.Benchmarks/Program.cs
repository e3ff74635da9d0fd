using BenchmarkDotNet.Running;
using HeaderCache.Benchmarks.ConnectionPath;
using HeaderCache.Benchmarks.Study;

if (args.Length > 0 && args[0] == "eviction-study")
{
    EvictionStudy.Run(Console.Out);
    return;
}

if (args.Length == 4 && args[0] == "connection-path-loop")
{
    ConnectionPathLoop.Run(args[1], args[2], double.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture), Console.Out);
    return;
}

if (args.Length is 3 or 4 && args[0] == "connection-path-pairs")
{
    int evictKilobytes = args.Length == 4 ? int.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture) : 0;
    ConnectionPathPairs.Run(args[1], double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture), evictKilobytes, Console.Out);
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
