using BenchmarkDotNet.Running;
using HeaderCache.Benchmarks.Study;

if (args.Length > 0 && args[0] == "eviction-study")
{
    EvictionStudy.Run(Console.Out);
    return;
}

if (args.Length > 0 && args[0] == "retained-memory")
{
    RetainedMemory.Run(Console.Out);
    return;
}

BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
