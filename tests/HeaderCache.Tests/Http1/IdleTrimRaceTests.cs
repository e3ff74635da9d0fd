using System.Buffers;
using System.IO.Pipelines;
using System.Reflection;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Testing;
using HeaderCache.Traffic;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Tests.Http1;

/// <summary>
/// The heartbeat trims on its own thread while the connection's flow reads heads: it trims only while the reader waits for
/// a head, never while one is read, the heads read around its trims are shown, and their lines handed over, exactly as
/// without any trim, and a wait that ends while a trim runs waits for it.
/// </summary>
public sealed class IdleTrimRaceTests
{
    private enum Beats
    {
        None,

        // Before every other head the beats of a long wait (a trim), before the others half as many; while each head is
        // read, many more (no trim).
        InTurns,

        // Another thread beats without pause while the heads are read.
        Concurrent,
    }

    [Theory]
    [InlineData("chrome")]
    [InlineData("proxy-pool")]
    public async Task The_heartbeat_trims_after_a_long_wait_and_never_while_a_head_is_read(string profile)
    {
        byte[][] requests = Render(profile, 200);
        (List<string> expected, _) = await ReadAllAsync(requests, Beats.None);
        (List<string> trimmed, int trims) = await ReadAllAsync(requests, Beats.InTurns);

        Assert.Equal(expected, trimmed);
        Assert.Equal(requests.Length / 2, trims);
    }

    [Theory]
    [InlineData("chrome")]
    [InlineData("proxy-pool")]
    public async Task Heads_read_while_another_thread_beats_without_pause_are_read_as_without_trims(string profile)
    {
        byte[][] requests = Render(profile, 1000);
        (List<string> expected, _) = await ReadAllAsync(requests, Beats.None);
        (List<string> beaten, int trims) = await ReadAllAsync(requests, Beats.Concurrent);

        Assert.Equal(expected, beaten);

        // Not vacuous: the beating thread trimmed before most of the heads it was given time for.
        Assert.True(trims > requests.Length / 4, $"{trims} trims in {requests.Length} heads of {profile}");
    }

    [Fact]
    public void A_wait_that_ends_while_a_trim_runs_waits_for_the_trim()
    {
        // The window is a few field writes, too short for threads to meet in reliably: the test holds a trim at its
        // midpoint instead, as OnHeartbeat is there (its lock, on the IdleTrim itself, held, the wait moved to trimming), and
        // ends the wait.
        var idle = new IdleTrim();
        FieldInfo state = typeof(IdleTrim).GetField("_state", BindingFlags.NonPublic | BindingFlags.Instance)!;
        object trimming = typeof(IdleTrim).GetField("Trimming", BindingFlags.NonPublic | BindingFlags.Static)!.GetRawConstantValue()!;
        object waiting = typeof(IdleTrim).GetField("Waiting", BindingFlags.NonPublic | BindingFlags.Static)!.GetRawConstantValue()!;
        idle.Wait();
        var resumer = new Thread(idle.Resume);
        lock (idle)
        {
            Assert.Equal(waiting, state.GetValue(idle));
            state.SetValue(idle, trimming);
            resumer.Start();
            Assert.False(resumer.Join(TimeSpan.FromMilliseconds(500)), "the wait ended while the trim ran");
        }

        Assert.True(resumer.Join(TimeSpan.FromSeconds(30)), "the wait did not end once the trim had finished");
    }

    private static byte[][] Render(string profile, int count)
    {
        TrafficProfile.Connection traffic = TrafficProfile.Load(profile).Connect(3);
        return [.. Enumerable.Range(0, count).Select(traffic.Render)];
    }

    // Reads every request as Kestrel does, one at a time, each sent while the reader waits for it; returns what each head
    // showed and handed over, and how many trims the beats made.
    private static async Task<(List<string> Heads, int Trims)> ReadAllAsync(byte[][] requests, Beats beats)
    {
        var transport = new Pipe(new PipeOptions(pauseWriterThreshold: 0, useSynchronizationContext: false));
        var queue = new HeaderInjectionQueue();
        var compactor = new HeadCompactor(
            FieldResolver.Create(HeaderStringCache.DefaultSlotCount, HeaderStringCache.DefaultMaxLength, LongValueCache.DefaultBudget), queue, KestrelLimits.From(new KestrelServerLimits()), leaveReusedValues: true, new LineMemo());
        var reader = new CompactingPipeReader(transport.Reader, compactor, KestrelLimits.From(new KestrelServerLimits()));
        int trims = 0;
        using var stop = new CancellationTokenSource();
        using var started = new ManualResetEventSlim(beats != Beats.Concurrent);

        // A thread of its own, as Kestrel's heartbeat has: the pool's threads may all be busy with the test run.
        Task beating = beats != Beats.Concurrent ? Task.CompletedTask : Task.Factory.StartNew(
            () =>
            {
                started.Set();
                while (!stop.IsCancellationRequested)
                {
                    if (reader.OnHeartbeat())
                    {
                        Interlocked.Increment(ref trims);
                    }
                }
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        started.Wait();

        var heads = new List<string>();
        for (int i = 0; i < requests.Length; i++)
        {
            ValueTask<ReadResult> read = reader.ReadAsync();
            Assert.False(read.IsCompleted);
            if (beats == Beats.InTurns)
            {
                // The first beat of a wait starts counting it.
                for (int beat = 0; beat <= (i % 2 == 0 ? IdleTrim.HeartbeatsBeforeTrim : IdleTrim.HeartbeatsBeforeTrim / 2); beat++)
                {
                    trims += reader.OnHeartbeat() ? 1 : 0;
                }
            }
            else if (beats == Beats.Concurrent && i % 2 == 0)
            {
                // Every other head comes after a trim ...
                int before = Volatile.Read(ref trims);
                SpinWait.SpinUntil(() => Volatile.Read(ref trims) > before, TimeSpan.FromMilliseconds(100));
            }
            else if (beats == Beats.Concurrent)
            {
                // ... and the others so soon that the beats reach ten while the head is read, or a trim runs when its bytes
                // come.
                Thread.SpinWait(Random.Shared.Next(100));
            }

            transport.Writer.Write(requests[i]);
            await transport.Writer.FlushAsync();
            ReadResult result = await read;
            if (beats == Beats.InTurns)
            {
                // Kestrel has the head and has not yet advanced past it: no beat trims now.
                for (int beat = 0; beat < 3 * IdleTrim.HeartbeatsBeforeTrim; beat++)
                {
                    Assert.False(reader.OnHeartbeat(), "trimmed while a head was read");
                }
            }

            string shown = System.Text.Encoding.Latin1.GetString(result.Buffer.ToArray());
            reader.AdvanceTo(result.Buffer.End);
            var headers = new HeaderDictionary();
            while (queue.TryApply(headers))
            {
            }

            heads.Add(shown + string.Join('\n', headers.Select(h => $"{h.Key}: {h.Value}")));
        }

        await stop.CancelAsync();
        await beating;
        reader.Complete();
        return (heads, trims);
    }
}
