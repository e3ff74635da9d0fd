using System.Globalization;
using BenchmarkDotNet.Running;
using HeaderCache.Benchmarks.ConnectionPath;
using HeaderCache.Benchmarks.Study;

// One entry point per question; the README says what each answers and how long it takes.
if (args.Length is >= 3 and <= 5 && args[0] == "connection-path-pairs" && (args.Length < 5 || args[^1] == "logging"))
{
    bool hostLogging = args[^1] == "logging";
    string[] numbers = hostLogging ? args[..^1] : args;
    int evictKilobytes = numbers.Length == 4 ? int.Parse(numbers[3], CultureInfo.InvariantCulture) : 0;
    ConnectionPathPairs.Run(args[1], double.Parse(args[2], CultureInfo.InvariantCulture), evictKilobytes, hostLogging, Console.Out);
    return;
}

if (args.Length > 0 && args[0] == "retained-memory")
{
    RetainedMemory.Run(Console.Out);
    return;
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
