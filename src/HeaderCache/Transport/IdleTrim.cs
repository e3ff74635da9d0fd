namespace HeaderCache.Transport;

/// <summary>Lets an idle keep-alive connection hold only its caches: once Kestrel has waited for the connection's next
/// request through <see cref="HeartbeatsBeforeTrim"/> of its heartbeats, the reader lets go of what only speeds up
/// reading a head or a header block (<see cref="ITarget.Trim"/>), and the next one builds it again.</summary>
/// <remarks>The connection's own flow says when a wait starts (<see cref="Wait"/>) and ends (<see cref="Resume"/>);
/// Kestrel's heartbeat trims on its own thread (<see cref="OnHeartbeat"/>). The reader and the trim never run together:
/// a trim starts only by moving a wait to <c>Trimming</c> with a locked compare-exchange, a wait ends with a locked
/// exchange, and a wait that ends while a trim runs waits for it on the lock of this object, which a trim holds while it runs (no one
/// else has this object to lock).</remarks>
internal sealed class IdleTrim
{
    /// <summary>What lets go when the connection idles.</summary>
    internal interface ITarget
    {
        /// <summary>Lets go of what the next request can build again; runs only while the reader waits.</summary>
        void Trim();
    }

    // Kestrel beats once a second: a connection in use (a page's resources, a pooled proxy connection under load) keeps
    // everything, while an idle one gives it back long before Kestrel's keep-alive timeout (130 s by default).
    public const int HeartbeatsBeforeTrim = 10;

    private const int Running = 0, Waiting = 1, Trimming = 2, Ended = 3;
    private int _state;

    // Waits started so far, written by the connection's flow only; the heartbeat tells a new wait from a long one by it.
    private int _waits;

    // The heartbeat's own: the wait it last saw, how many beats it has seen it, and the last wait it trimmed.
    private int _seenWait;
    private int _beats;
    private int _trimmedWait = -1;

    /// <summary>Kestrel now waits for the next request and the reader reads nothing until <see cref="Resume"/>. A wait
    /// that <paramref name="continues"/> the last one (its read brought only a cancellation, so no request) counts as the
    /// same wait.</summary>
    public void Wait(bool continues = false)
    {
        if (!continues)
        {
            _waits++;
        }

        Volatile.Write(ref _state, Waiting);
    }

    /// <summary>The wait is over: from here the connection's flow may use what a trim lets go of.</summary>
    public void Resume() => Leave(Running);

    /// <summary>The connection reads no more: no trim starts from here, and one that runs has finished on return.</summary>
    public void End() => Leave(Ended);

    /// <summary>Called on each of Kestrel's heartbeats: trims, once per wait, when the wait has lasted
    /// <see cref="HeartbeatsBeforeTrim"/> of them; true when it did.</summary>
    public bool OnHeartbeat(ITarget target)
    {
        int wait = Volatile.Read(ref _waits);
        if (wait != _seenWait)
        {
            (_seenWait, _beats) = (wait, 0);
            return false;
        }

        // A beat that finds the reader between two parts of one wait counts, and the trim waits for the next beat.
        if (++_beats < HeartbeatsBeforeTrim || _trimmedWait == wait || Volatile.Read(ref _state) != Waiting)
        {
            return false;
        }

        // Held by a trim while it runs; a wait that ends during a trim takes it only to know the trim has finished.
        lock (this)
        {
            if (Interlocked.CompareExchange(ref _state, Trimming, Waiting) != Waiting)
            {
                return false;
            }

            target.Trim();
            _trimmedWait = wait;
            Interlocked.CompareExchange(ref _state, Waiting, Trimming);
            return true;
        }
    }

    // No trim starts once the state has left Waiting; one that already runs holds the lock until it has finished.
    private void Leave(int state)
    {
        if (Interlocked.Exchange(ref _state, state) == Trimming)
        {
            Monitor.Enter(this);
            Monitor.Exit(this);
        }
    }
}
