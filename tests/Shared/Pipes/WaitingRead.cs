using System.IO.Pipelines;

namespace HeaderCache.Testing;

/// <summary>A transport's reader scheduler that runs each continuation at once, on the thread that resumed the reader
/// (the writer's flush), and counts them.</summary>
internal sealed class CountingInlineScheduler : PipeScheduler
{
    /// <summary>Continuations the transport scheduled so far.</summary>
    public int Scheduled { get; private set; }

    /// <summary>Whether a continuation the transport scheduled is running.</summary>
    public bool Running { get; private set; }

    public override void Schedule(Action<object?> action, object? state)
    {
        Scheduled++;
        Running = true;
        try
        {
            action(state);
        }
        finally
        {
            Running = false;
        }
    }
}

/// <summary>Kestrel's side of reads that wait: one continuation, made once, registered the way an await registers it,
/// which takes the result and notes whether it ran inside a continuation the transport scheduled.</summary>
internal sealed class WaitingRead
{
    private readonly CountingInlineScheduler _scheduler;
    private readonly Action _continuation;
    private ValueTask<ReadResult> _read;

    public WaitingRead(CountingInlineScheduler scheduler)
    {
        _scheduler = scheduler;
        _continuation = OnCompleted;
    }

    public bool Completed { get; private set; }

    /// <summary>Whether the continuation ran inside the transport's (no second hop).</summary>
    public bool RanInTransportContinuation { get; private set; }

    public ReadResult Result { get; private set; }

    public Exception? Failure { get; private set; }

    /// <summary>Starts a read of <paramref name="reader"/>; false when it completed at once (it is then
    /// taken).</summary>
    public bool Start(PipeReader reader)
    {
        (Completed, RanInTransportContinuation, Result, Failure) = (false, false, default, null);
#pragma warning disable CA2012 // Taken once, by the continuation or below.
        _read = reader.ReadAsync();
#pragma warning restore CA2012
        if (_read.IsCompleted)
        {
            OnCompleted();
            return false;
        }

        _read.ConfigureAwait(false).GetAwaiter().UnsafeOnCompleted(_continuation);
        return true;
    }

    private void OnCompleted()
    {
        RanInTransportContinuation = _scheduler.Running;
        try
        {
            Result = _read.GetAwaiter().GetResult();
        }
        catch (Exception exception)
        {
            Failure = exception;
        }

        _read = default;
        Completed = true;
    }
}

/// <summary>A transport's reader scheduler that queues each continuation to the thread pool as the pipe's own does, and
/// counts the continuations whose queueing allocated.</summary>
internal sealed class ThreadPoolQueueingScheduler : PipeScheduler
{
    private int _allocating;
    private int _scheduled;

    /// <summary>Continuations whose queueing allocated: every one, where the pool wraps the continuation in a work item
    /// of its own; else now and then, when the pool's queues grow (other tests load the same pool).</summary>
    public int Allocating => Volatile.Read(ref _allocating);

    /// <summary>Continuations the transport scheduled so far.</summary>
    public int Scheduled => Volatile.Read(ref _scheduled);

    public override void Schedule(Action<object?> action, object? state)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        System.Threading.ThreadPool.UnsafeQueueUserWorkItem(action, state, preferLocal: false);
        if (GC.GetAllocatedBytesForCurrentThread() != before)
        {
            Interlocked.Increment(ref _allocating);
        }

        Interlocked.Increment(ref _scheduled);
    }
}
