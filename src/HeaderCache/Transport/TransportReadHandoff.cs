using System.IO.Pipelines;
using System.Threading.Tasks.Sources;

namespace HeaderCache.Transport;

/// <summary>Kestrel's wait on a read of the transport that has not completed, through a reader that decides what
/// Kestrel sees of it. Kestrel gets a read of this source; one loop per reader awaits the transport's read, hands its
/// result to the reader (<see cref="IReader.TryShow"/>) and completes Kestrel's read, whose continuation runs there, on
/// the thread the transport resumed the loop on.</summary>
/// <remarks><para>Public API only. The loop is one async invocation for the reader's lifetime, so every wait resumes
/// the same state machine box: the transport's pipe queues a box to the thread pool as it is, where any other
/// continuation gets a work item of its own on every read that waits. Kestrel's read and the loop's wait between reads
/// are <see cref="ManualResetValueTaskSourceCore{TResult}"/>s that run their continuation where the result is set, so
/// a read that waits is one resumption, as it is for Kestrel alone, and allocates nothing.</para>
/// <para>The loop parks before Kestrel's read completes (<see cref="IValueTaskSource.OnCompleted"/>), so a read that
/// Kestrel's continuation starts, there or on any thread, resumes it and is waited on before <see cref="Wait"/>
/// returns, even when that continuation then blocks until the read completes.</para>
/// <para>The loop runs in the execution context of the reader's first wait: the connection's, where Kestrel reads its
/// first bytes.</para>
/// <para>One read at a time, as on any <see cref="PipeReader"/>: Kestrel takes each result before it reads
/// again.</para></remarks>
internal sealed class TransportReadHandoff : IValueTaskSource<ReadResult>, IValueTaskSource
{
    private readonly IReader _reader;
    private ManualResetValueTaskSourceCore<ReadResult> _kestrelRead;   // Kestrel waits on it
    private ManualResetValueTaskSourceCore<bool> _nextWait;            // the loop waits on it between reads
    private bool _looping;
    private ValueTask<ReadResult> _transportRead;
    private PipeReader? _input;
    private CancellationToken _cancellationToken;
    private ReadResult _shown;       // what Kestrel's read completes with once the loop has parked
    private Exception? _failure;     // or what it fails with

    public TransportReadHandoff(IReader reader) => _reader = reader;

    /// <summary>What a reader does with the transport's reads that Kestrel waits on through it.</summary>
    internal interface IReader
    {
        /// <summary>The transport's read completed (with bytes, the end, a cancellation or a failure).</summary>
        void WaitEnded();

        /// <summary>What Kestrel sees of the transport's read <paramref name="input"/>; false: nothing yet (the read
        /// was advanced), and the wait goes on with the transport's next read.</summary>
        bool TryShow(in ReadResult input, out ReadResult result);
    }

    /// <summary>Kestrel's read: it completes once <paramref name="transportRead"/>, a read of <paramref name="input"/>
    /// that has not completed, or one after it shows something, and fails as they do.</summary>
    public ValueTask<ReadResult> Wait(PipeReader input, ValueTask<ReadResult> transportRead, CancellationToken cancellationToken)
    {
        _kestrelRead.Reset();
        (_input, _transportRead, _cancellationToken) = (input, transportRead, cancellationToken);
        var kestrelRead = new ValueTask<ReadResult>(this, _kestrelRead.Version);

        // The loop, parked since the last read completed, waits on this one before this returns.
        if (_looping)
        {
            _nextWait.SetResult(true);
        }
        else
        {
            _looping = true;
            _ = WaitLoopAsync();
        }

        return kestrelRead;
    }

    ReadResult IValueTaskSource<ReadResult>.GetResult(short token) => _kestrelRead.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource<ReadResult>.GetStatus(short token) => _kestrelRead.GetStatus(token);

    void IValueTaskSource<ReadResult>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _kestrelRead.OnCompleted(continuation, state, token, flags);

    void IValueTaskSource.GetResult(short token) => _nextWait.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _nextWait.GetStatus(token);

    // The loop parks, then Kestrel's read completes: Kestrel's continuation runs here.
    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
    {
        _nextWait.OnCompleted(continuation, state, token, flags);
        (ReadResult shown, Exception? failure) = (_shown, _failure);
        (_shown, _failure) = (default, null);
        if (failure is null)
        {
            _kestrelRead.SetResult(shown);
        }
        else
        {
            _kestrelRead.SetException(failure);
        }
    }

    // Never returns: parked between reads, it goes with the reader.
    private async Task WaitLoopAsync()
    {
        while (true)
        {
            _nextWait.Reset();
            try
            {
                while (true)
                {
                    ReadResult input;
                    try
                    {
                        input = await _transportRead.ConfigureAwait(false);
                    }
                    finally
                    {
                        _transportRead = default;
                        _reader.WaitEnded();
                    }

                    if (_reader.TryShow(input, out _shown))
                    {
                        break;
                    }

#pragma warning disable CA2012 // Awaited once, at the top of this loop.
                    _transportRead = _input!.ReadAsync(_cancellationToken);
#pragma warning restore CA2012
                }
            }
            catch (Exception exception)
            {
                // The transport's failure or the reader's: Kestrel's GetResult throws it, as the transport's would.
                _failure = exception;
            }

            // Pending until the next Wait: awaiting it parks the loop and completes Kestrel's read.
            await new ValueTask(this, _nextWait.Version).ConfigureAwait(false);
        }
    }
}
