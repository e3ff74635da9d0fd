using System.IO.Pipelines;
using System.Runtime.CompilerServices;

namespace HeaderCache.Compaction;

/// <summary>
/// The <see cref="PipeReader"/> Kestrel reads instead of the transport's: it pulls the client's bytes
/// through a <see cref="HeadCompactor"/> into a private <see cref="Pipe"/> and serves Kestrel from it.
/// </summary>
/// <remarks>
/// <para>Nothing runs in the background: input is pulled only when Kestrel asks for data it has not
/// examined yet, inside Kestrel's own read, so memory stays bounded by what Kestrel has not consumed
/// plus one transport read, and the transport's back-pressure is untouched.</para>
/// <para>The private pipe implements the reading side of the contract (<c>AdvanceTo(consumed,
/// examined)</c>, <c>TryRead</c>, completion). <see cref="CancelPendingRead"/> is sent to both pipes:
/// the private one makes the read return <c>IsCanceled</c>, the transport one wakes a read waiting for
/// input (Kestrel's request-headers and keep-alive timeouts rely on this). A cancellation left over on the
/// transport side only makes one transport read return early, which the loop absorbs.</para>
/// </remarks>
internal sealed class CompactingPipeReader : PipeReader
{
    private readonly PipeReader _input;
    private readonly Pipe _pipe;
    private readonly HeadCompactor _compactor;
    private bool _inputCompleted;

    /// <summary>Wraps <paramref name="input"/>.</summary>
    public CompactingPipeReader(PipeReader input, HeadCompactor compactor, PipeOptions pipeOptions)
    {
        _input = input;
        _compactor = compactor;
        _pipe = new Pipe(pipeOptions);
    }

    /// <summary>Options for the private pipe: inline scheduling (no thread hops) and no writer pause,
    /// because the writer only ever writes what one transport read delivered.</summary>
    public static PipeOptions CreatePipeOptions(System.Buffers.MemoryPool<byte>? pool) => new(
        pool: pool,
        readerScheduler: PipeScheduler.Inline,
        writerScheduler: PipeScheduler.Inline,
        pauseWriterThreshold: 0,
        resumeWriterThreshold: 0,
        minimumSegmentSize: Math.Min(4096, pool?.MaxBufferSize is > 0 and var max ? max : 4096),
        useSynchronizationContext: false);

    /// <inheritdoc />
    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        ValueTask<ReadResult> pending = _pipe.Reader.ReadAsync(cancellationToken);
        if (pending.IsCompleted || _inputCompleted)
        {
            return pending;
        }

        return PullAsync(pending, cancellationToken);
    }

    /// <inheritdoc />
    public override bool TryRead(out ReadResult result)
    {
        // Bring in whatever the transport already has, so TryRead sees all data, as on the transport's pipe.
        if (!_inputCompleted && _input.TryRead(out ReadResult input))
        {
            Transfer(input);
        }

        return _pipe.Reader.TryRead(out result);
    }

    /// <inheritdoc />
    public override void AdvanceTo(SequencePosition consumed) => _pipe.Reader.AdvanceTo(consumed);

    /// <inheritdoc />
    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined) =>
        _pipe.Reader.AdvanceTo(consumed, examined);

    /// <inheritdoc />
    public override void CancelPendingRead()
    {
        _pipe.Reader.CancelPendingRead();
        _input.CancelPendingRead();
    }

    /// <inheritdoc />
    public override void Complete(Exception? exception = null)
    {
        _pipe.Reader.Complete(exception);
        _pipe.Writer.Complete();
        _input.Complete(exception);
        _compactor.Dispose();
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<ReadResult> PullAsync(ValueTask<ReadResult> pending, CancellationToken cancellationToken)
    {
        try
        {
            while (!pending.IsCompleted)
            {
                ReadResult input = await _input.ReadAsync(cancellationToken).ConfigureAwait(false);
                Transfer(input);
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The caller's token also completes the pending read on the private pipe, with the same exception.
        }
        catch (Exception ex)
        {
            // The transport failed: Kestrel must see the same failure.
            _inputCompleted = true;
            _pipe.Writer.Complete(ex);
        }

        return await pending.ConfigureAwait(false);
    }

    private void Transfer(ReadResult input)
    {
        System.Buffers.ReadOnlySequence<byte> buffer = input.Buffer;
        if (!buffer.IsEmpty)
        {
            _compactor.Process(buffer, _pipe.Writer);
        }

        _input.AdvanceTo(buffer.End);
        if (input.IsCompleted)
        {
            _inputCompleted = true;
            _compactor.Complete(_pipe.Writer);
            _pipe.Writer.Complete();
            return;
        }

        // Never waits: the pipe has no pause threshold.
        ValueTask<FlushResult> flush = _pipe.Writer.FlushAsync(CancellationToken.None);
        if (!flush.IsCompletedSuccessfully)
        {
            throw new InvalidOperationException("The compaction pipe unexpectedly applied back-pressure.");
        }

        _ = flush.Result;
    }
}
