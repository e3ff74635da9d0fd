using System.IO.Pipelines;
using System.Runtime.CompilerServices;

namespace HeaderCache.Transport;

/// <summary>Kestrel's wait on a read of the transport that has not completed, through a reader that decides what
/// Kestrel sees of it. Kestrel's read is one async invocation that awaits the transport's read, hands its result to the
/// reader (<see cref="IReader.TryShow"/>), reads again while the reader shows nothing yet, and completes with what the
/// reader shows; Kestrel's continuation runs there, on the thread the transport resumed it on.</summary>
/// <remarks><para>Public API only. The invocation's state machine box comes from the builder's pool and goes back to it
/// once Kestrel has taken the result, as Kestrel awaits each read once, before it reads again: a connection keeps
/// nothing of its own for its waits. The transport's pipe queues a state machine box to the thread pool as it is, where
/// any other continuation gets a work item of its own on every read that waits; the box completes Kestrel's read where
/// it runs, so a read that waits is one resumption, as it is for Kestrel alone.</para>
/// <para>A read that Kestrel's continuation starts, there or on any thread, is an invocation of its own, so a
/// continuation that then blocks until that read completes gets it.</para>
/// <para>The reader's work runs in the execution context of Kestrel's read: the connection's.</para>
/// <para>One read at a time, as on any <see cref="PipeReader"/>: Kestrel takes each result before it reads
/// again.</para></remarks>
internal static class TransportReadHandoff
{
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
    /// that has not completed, or one after it shows something through <paramref name="reader"/>, and fails as they do
    /// (the transport's failure or the reader's, thrown by Kestrel's <c>GetResult</c> as the transport's would be).</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public static async ValueTask<ReadResult> Wait(IReader reader, PipeReader input, ValueTask<ReadResult> transportRead, CancellationToken cancellationToken)
    {
        while (true)
        {
            ReadResult read;
            try
            {
                read = await transportRead.ConfigureAwait(false);
            }
            finally
            {
                reader.WaitEnded();
            }

            if (reader.TryShow(read, out ReadResult shown))
            {
                return shown;
            }

#pragma warning disable CA2012 // Awaited once, at the top of this loop.
            transportRead = input.ReadAsync(cancellationToken);
#pragma warning restore CA2012
        }
    }
}
