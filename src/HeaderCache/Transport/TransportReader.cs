using System.Buffers;
using System.IO.Pipelines;

namespace HeaderCache.Transport;

/// <summary>What a <see cref="PipeReader"/> that Kestrel reads instead of the transport's does with the transport,
/// whatever the protocol: the reads, the waits (<see cref="TransportReadHandoff"/>), cancellation, completion, a buffer
/// of its own shown in place of transport bytes, and idle trimming. The protocol's reader decides what Kestrel sees of
/// each transport read (<see cref="TryPresent"/>) and how Kestrel's <c>AdvanceTo</c> moves the transport
/// (<see cref="Examined"/>, <see cref="Taken"/>).</summary>
/// <remarks><para>Each of Kestrel's calls goes one of three ways. While the reader passes through
/// (<see cref="PassesThrough"/>), and once Kestrel has completed it, the call goes to the transport's reader as it is,
/// so that after <see cref="Complete"/> Kestrel gets what the completed transport gives it alone. While a held buffer is
/// shown (<see cref="ShowsHeld"/>), Kestrel reads it from the reader's own array and the transport's read stays pending;
/// once Kestrel has taken all of it, the transport moves past the bytes it stands for. Otherwise each transport read is
/// presented, and one that shows nothing yet was advanced and is read again.</para>
/// <para>One read at a time, as on any <see cref="PipeReader"/>; <see cref="CancelPendingRead"/> may come from any
/// thread.</para></remarks>
internal abstract class TransportReader : PipeReader, TransportReadHandoff.IReader, IdleTrim.ITarget
{
    private IdleTrim? _idle;      // from the first read that waits; Kestrel's heartbeat reads it on its own thread
    private int _cancelRequested;
    private bool _showsNothing;   // the last read showed Kestrel no bytes: its AdvanceTo has nothing to pass on
    private bool _completed;      // Kestrel completed this reader, and with it the transport's, or the connection ended
    private int _showing;         // Showing while a wait decides what Kestrel sees of a transport read; Ended after End

    // The held buffer: Kestrel sees _held[_heldStart.._heldLength] in place of the first _heldReplaces bytes of Buffer.
    private byte[] _held = [];
    private int _heldStart;
    private int _heldLength;
    private int _heldReplaces;

    private const int Showing = 1, Ended = 2;

    protected TransportReader(PipeReader input) => Input = input;

    /// <summary>The reader every call reads: the transport's, or one that took over the connection.</summary>
    protected PipeReader Input { get; set; }

    /// <summary>The transport's pending read, from Kestrel's consumed position; default between reads.</summary>
    protected ReadOnlySequence<byte> Buffer { get; set; }

    /// <summary>Bytes at the front of <see cref="Buffer"/> the last view showed.</summary>
    protected long ViewLength { get; private set; }

    /// <summary>Every call goes straight to <see cref="Input"/>.</summary>
    protected abstract bool PassesThrough { get; }

    /// <summary>Kestrel is shown the held buffer (<see cref="Hold"/>) in place of the transport's bytes.</summary>
    protected abstract bool ShowsHeld { get; }

    /// <summary>A buffer is held (<see cref="Hold"/>) and Kestrel has not yet taken all of it.</summary>
    protected bool Holds => _heldLength != 0;

    /// <summary>The array a held buffer is written to; the protocol's reader sizes it.</summary>
    protected ref byte[] Held => ref _held;

    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        if (_completed || PassesThrough)
        {
            return Input.ReadAsync(cancellationToken);
        }

        if (ShowsHeld)
        {
            return new(HeldView());
        }

        ValueTask<ReadResult> read = Input.ReadAsync(cancellationToken);
        while (read.IsCompleted)
        {
            if (!read.IsCompletedSuccessfully)
            {
                // A failure, or a cancellation by the caller's token, as the transport has it.
                return read;
            }

            if (TryPresent(read.Result, out ReadResult result))
            {
                return new(result);
            }

            // That read was advanced: read on. Once another reader took the connection over, its read is Kestrel's as
            // it is.
            read = Input.ReadAsync(cancellationToken);
            if (PassesThrough)
            {
                return read;
            }
        }

        WaitStarts(_idle ?? StartIdleTrim());
        return TransportReadHandoff.Wait(this, Input, read, cancellationToken);
    }

    public override bool TryRead(out ReadResult result)
    {
        if (_completed || PassesThrough)
        {
            return Input.TryRead(out result);
        }

        if (ShowsHeld)
        {
            result = HeldView();
            return true;
        }

        // A read that shows nothing yet was advanced as looked at: the transport has nothing more until new bytes
        // arrive, which a wait would see.
        while (Input.TryRead(out ReadResult input))
        {
            if (TryPresent(input, out result))
            {
                return true;
            }

            if (PassesThrough)
            {
                return Input.TryRead(out result);
            }
        }

        result = default;
        return false;
    }

    public override void AdvanceTo(SequencePosition consumed) => AdvanceTo(consumed, consumed);

    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined)
    {
        if (_showsNothing && !_completed)
        {
            // The transport's read was advanced when it was presented.
            _showsNothing = false;
            return;
        }

        if (_completed || PassesThrough)
        {
            Input.AdvanceTo(consumed, examined);
            return;
        }

        if (ShowsHeld)
        {
            _heldStart = consumed.GetInteger();
            if (_heldStart == _heldLength)
            {
                // All of it: the transport moves past the bytes it stands for, as the client sent them.
                SequencePosition end = Buffer.GetPosition(_heldReplaces);
                Input.AdvanceTo(end, end);
                (Buffer, _heldLength, _heldReplaces) = (default, 0, 0);
                HeldTaken();
            }

            return;
        }

        long taken = Buffer.Slice(0, consumed).Length;
        Input.AdvanceTo(consumed, Examined(taken, consumed, examined));
        Buffer = default;
        Taken(taken);
    }

    public override void CancelPendingRead()
    {
        // Kestrel sees one cancelled read per call; the transport's own cancellation only wakes a waiting read.
        Volatile.Write(ref _cancelRequested, 1);
        Input.CancelPendingRead();
    }

    public override void Complete(Exception? exception = null)
    {
        bool first = !_completed;
        _completed = true;
        Volatile.Read(ref _idle)?.End();
        Input.Complete(exception);
        if (first)
        {
            Release();
        }
    }

    /// <summary>Called on each of Kestrel's heartbeats, on its thread (<see cref="IdleTrim"/>); true when the reader
    /// let go of what the next request builds again.</summary>
    public bool OnHeartbeat() => Volatile.Read(ref _idle)?.OnHeartbeat(this) == true;

    /// <summary>Kestrel is done with the connection: from here every call goes to the transport's reader as it is, as
    /// after <see cref="Complete"/> (which then completes only the transport's), and none touches what the protocol's
    /// reader reads with. On return no trim runs or starts, a transport read a wait was showing has been shown,
    /// and the reader has let go of everything.</summary>
    public void End()
    {
        bool first = !Volatile.Read(ref _completed);
        Volatile.Write(ref _completed, true);
        Volatile.Read(ref _idle)?.End();
        SpinWait wait = default;
        while (Interlocked.CompareExchange(ref _showing, Ended, 0) == Showing)
        {
            wait.SpinOnce();
        }

        if (first)
        {
            Release();
        }
    }

    void IdleTrim.ITarget.Trim() => TrimIdle();

    // A reader that never waits (one that hands the connection over at its first bytes) makes none: the connection's
    // flow made it, before its first wait, and the heartbeat finds it from there.
    private IdleTrim StartIdleTrim()
    {
        var idle = new IdleTrim();
        Volatile.Write(ref _idle, idle);
        return idle;
    }

    // Only a read that waited ends a wait, and it made the idle trim.
    void TransportReadHandoff.IReader.WaitEnded() => _idle!.Resume();

    // A read that ends after Kestrel completed the reader, or after the connection ended, touches none of the reader's
    // buffers, which went back to the shared pool at Complete or End: Kestrel gets the transport's result as it is. End
    // waits for a read being shown, after which the protocol's state may serve another connection.
    bool TransportReadHandoff.IReader.TryShow(in ReadResult input, out ReadResult result)
    {
        if (Interlocked.CompareExchange(ref _showing, Showing, 0) == Ended)
        {
            result = input;
            return true;
        }

        try
        {
            if (Volatile.Read(ref _completed))
            {
                result = input;
                return true;
            }

            return TryShowWaited(input, out result);
        }
        finally
        {
            Volatile.Write(ref _showing, 0);
        }
    }

    /// <summary>Decides what Kestrel sees of the transport's read <paramref name="input"/>; false: nothing yet, and the
    /// read was advanced.</summary>
    protected abstract bool TryPresent(in ReadResult input, out ReadResult result);

    /// <summary>What Kestrel's read that waited sees of the transport's read <paramref name="input"/>; false: nothing
    /// yet (the read was advanced), and the wait goes on with the transport's next read.</summary>
    protected abstract bool TryShowWaited(in ReadResult input, out ReadResult result);

    /// <summary>Kestrel's read is about to wait on the transport's: tells <paramref name="idle"/> whether the connection
    /// now waits for a request.</summary>
    protected abstract void WaitStarts(IdleTrim idle);

    /// <summary>Where the transport's examined position goes when Kestrel took <paramref name="taken"/> bytes of the
    /// last view.</summary>
    protected abstract SequencePosition Examined(long taken, SequencePosition consumed, SequencePosition examined);

    /// <summary>Kestrel took <paramref name="taken"/> bytes of the last view, and the transport moved past them.</summary>
    protected abstract void Taken(long taken);

    /// <summary>Kestrel took all of the held buffer, and the transport moved past the bytes it stood for.</summary>
    protected abstract void HeldTaken();

    /// <summary>Lets go of what the next request can build again; runs only while Kestrel waits (<see cref="IdleTrim"/>).</summary>
    protected abstract void TrimIdle();

    /// <summary>Kestrel completed the reader: lets go of everything.</summary>
    protected abstract void Release();

    /// <summary>Kestrel is shown the first <paramref name="length"/> bytes of <see cref="Buffer"/>, and the
    /// transport's completion when <paramref name="completed"/>.</summary>
    protected ReadResult View(long length, bool canceled, bool completed = false)
    {
        ViewLength = length;
        return new ReadResult(Buffer.Slice(0, length), canceled, completed);
    }

    /// <summary>Kestrel's read that waited sees no bytes, and reads again: the transport's read was advanced, so Kestrel's
    /// AdvanceTo has nothing to pass on.</summary>
    protected ReadResult ShowNothing()
    {
        _showsNothing = true;
        return new ReadResult(default, isCanceled: false, isCompleted: false);
    }

    /// <summary>Whether the transport's read <paramref name="input"/> is cancelled by Kestrel's own
    /// <see cref="CancelPendingRead"/>; Kestrel sees that cancellation once.</summary>
    protected bool KestrelCanceled(in ReadResult input) => input.IsCanceled && Interlocked.Exchange(ref _cancelRequested, 0) == 1;

    /// <summary><paramref name="length"/> bytes written to <see cref="Held"/> stand for the first
    /// <paramref name="replaces"/> bytes of <see cref="Buffer"/>.</summary>
    protected void Hold(int length, int replaces) => (_heldStart, _heldLength, _heldReplaces) = (0, length, replaces);

    /// <summary>What Kestrel has not yet taken of the held buffer.</summary>
    protected ReadResult HeldView(bool canceled = false)
    {
        // Read before it is exchanged: the locked exchange runs only when a cancellation is pending.
        canceled |= Volatile.Read(ref _cancelRequested) == 1 && Interlocked.Exchange(ref _cancelRequested, 0) == 1;
        return new ReadResult(new ReadOnlySequence<byte>(_held, _heldStart, _heldLength - _heldStart), canceled, isCompleted: false);
    }
}
