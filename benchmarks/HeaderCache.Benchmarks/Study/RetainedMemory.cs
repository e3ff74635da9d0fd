using HeaderCache.Testing;
using System.Buffers;
using System.IO.Pipelines;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Traffic;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http;
using static System.FormattableString;

namespace HeaderCache.Benchmarks.Study;

/// <summary>
/// What HeaderCache keeps alive per idle connection, measured without a server: many connections' worth of
/// the product's per-connection objects (cache, compactor, injection queue, compacting reader with its
/// private pipe) over in-memory transport pipes, a number of requests of a profile pushed through each,
/// then the live heap after a full collection, minus the same number of bare transport pipes that carried
/// the same bytes. Complements <c>benchmarks/hostile/idle_connections.py</c>, which measures the whole
/// server and cannot say where the bytes are.
/// </summary>
internal static class RetainedMemory
{
    public const string Command = "dotnet run -c Release --project benchmarks/HeaderCache.Benchmarks -- retained-memory";

    private const int Connections = 2000;

    public static void Run(TextWriter output)
    {
        output.WriteLine(Invariant($"Live heap per connection after N requests, {Connections} connections per row, 64-bit .NET {Environment.Version}."));
        output.WriteLine(Invariant($"Command: `{Command}`"));
        output.WriteLine();
        output.WriteLine("| profile | requests | total B/conn | cache slots + strings B/conn | cached strings/conn | rest (pipe, reader, compactor, queue) B/conn |");
        output.WriteLine("|---|---:|---:|---:|---:|---:|");
        foreach (TrafficProfile profile in TrafficProfile.LoadAll())
        {
            foreach ((int requests, bool trimmed) in ((int, bool)[])[(0, false), (1, false), (1, true), (200, false), (200, true)])
            {
                Row row = Measure(profile, requests, trimmed);
                string label = trimmed ? Invariant($"{requests}, then idle") : Invariant($"{requests}");
                output.WriteLine(Invariant(
                    $"| {profile.Name} | {label} | {row.Total:N0} | {row.Cache:N0} | {row.Strings:0.0} | {row.Total - row.Cache:N0} |"));
            }
        }

        output.WriteLine();
        output.WriteLine(Invariant($"Bound on cache slots + strings with the defaults, whatever a client sends: {HeaderStringCache.MaxRetainedBytes() + HeaderStringCache.MaxRetainedBytes(HeaderStringCache.NameSlotCount, HeaderStringCache.NameMaxLength):N0} B (values {HeaderStringCache.MaxRetainedBytes():N0} B, names {HeaderStringCache.MaxRetainedBytes(HeaderStringCache.NameSlotCount, HeaderStringCache.NameMaxLength):N0} B)."));
    }

    // trimmed: then the connection waits long enough for its next request that the compactor lets go (IdleTrim).
    private static Row Measure(TrafficProfile profile, int requests, bool trimmed)
    {
        long baseline = LiveHeap();
        var bare = new Pipe[Connections];
        for (int i = 0; i < Connections; i++)
        {
            bare[i] = new Pipe();
            for (int r = 0; r < requests; r++)
            {
                DrainBare(bare[i], profile.Connect(i).Render(r));
            }
        }

        long bareBytes = LiveHeap() - baseline;
        GC.KeepAlive(bare);
        bare = null!;

        baseline = LiveHeap();
        var connections = new Connection[Connections];
        for (int i = 0; i < Connections; i++)
        {
            var connection = new Connection();
            TrafficProfile.Connection traffic = profile.Connect(i);
            for (int r = 0; r < requests; r++)
            {
                connection.Send(traffic.Render(r));
            }

            if (trimmed)
            {
                connection.Trim();
            }

            connections[i] = connection;
        }

        long productBytes = LiveHeap() - baseline - bareBytes;
        double cache = connections.Average(c => (double)(c.Cache.RetainedBytes + c.Names.RetainedBytes));
        double strings = connections.Average(c => c.Cache.Count + c.Names.Count);
        foreach (Connection connection in connections)
        {
            connection.Dispose();
        }

        return new Row((double)productBytes / Connections, cache, strings);
    }

    private static void DrainBare(Pipe pipe, byte[] bytes)
    {
        pipe.Writer.Write(bytes);
        _ = pipe.Writer.FlushAsync().AsTask().Result;
        while (pipe.Reader.TryRead(out ReadResult result))
        {
            pipe.Reader.AdvanceTo(result.Buffer.End);
        }
    }

    private static long LiveHeap()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
        return GC.GetTotalMemory(forceFullCollection: true);
    }

    private readonly record struct Row(double Total, double Cache, double Strings);

    private sealed class Connection : IDisposable
    {
        private readonly ReaderDriver _driver = new(recordSeen: false);

        public HeaderStringCache Cache => _driver.Cache;

        public HeaderStringCache Names => _driver.Names;

        public void Send(byte[] bytes)
        {
            _driver.Send(bytes);
            _driver.Clear();
            while (_driver.Queue.TryApply(new HeaderDictionary()))
            {
            }
        }

        public void Trim() => _driver.Compactor.Trim();

        public void Dispose() => _driver.Dispose();
    }
}
