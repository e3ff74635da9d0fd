using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Transport;
using System.IO.Pipelines;

namespace HeaderCache.Http1;

/// <summary>The <see cref="PipeReader"/> Kestrel reads instead of the transport's. Kestrel reads the transport's own
/// memory: the request line, bodies and everything between requests as slices of the transport's buffer, and each
/// header section either as it is (nothing to take out) or compacted into one small buffer. This file holds the stages
/// and how Kestrel's reads and AdvanceTo move through them (the calls themselves are <see cref="TransportReader"/>'s);
/// which bytes each stage of a request shows is in CompactingPipeReader.Stages.cs.</summary>
/// <remarks><para>Kestrel sees every byte it would act on when it would see it alone: the request line as soon as it
/// arrives (Kestrel starts its request-headers timeout, and rejects a line too long or with a NUL, on the same byte),
/// then the header section once the empty line has arrived, unless the <see cref="HeadCompactor"/> finds something
/// Kestrel would decide on earlier or does not follow: then every later call goes straight to the transport's
/// reader.</para>
/// <para>A view that is a slice of the transport's buffer keeps the transport's positions, so Kestrel's
/// <c>AdvanceTo</c> goes to the transport as it is, except that when Kestrel took all of a view that ends before the
/// buffer does, what follows is shown at once, and when it looked at all of it without taking it all, the next read
/// waits for new bytes, as it would on the transport. A compacted section holds the transport's read until Kestrel has
/// taken all of it; then the transport moves past the original section.</para></remarks>
internal sealed partial class CompactingPipeReader : TransportReader
{
    // Heads in a row with nothing to take out after which the connection is left to Kestrel.
    internal const int HeadsWithNothingToTake = ValueAdmission.RequestsWithNothingToTake;

    private readonly HeadCompactor _compactor;
    private readonly KestrelLimits _limits;

    private Stage _stage;
    private bool _inputEnded;        // the transport's read brought the client's end
    private long _lineEnd;
    private long _bodyRemaining;
    private bool _sawFirstByte;
    private bool _prefaceMayStart;   // the request line being read began at the connection's first byte
    private int _sectionLength;      // transport bytes of the section Kestrel is shown (Section) or shown compacted
    private ContiguousBytes _contiguous = new();
    private int _headsWithNothingTaken;

    // Input is the transport's reader, or the HTTP/2 reader over it once the preface arrived.
    public CompactingPipeReader(PipeReader input, HeadCompactor compactor, KestrelLimits limits)
        : base(input)
    {
        _compactor = compactor;
        _limits = limits;
    }

    private enum Stage
    {
        RequestLine,        // between requests and in a request line: Kestrel sees the bytes up to the end of the line
        Headers,            // the header section is arriving: Kestrel sees nothing of it yet
        Section,            // the complete section, unchanged, as a slice of the transport's buffer
        CompactedSection,   // the complete section, compacted into the held buffer
        Body,               // a body of known length, as slices of the transport's buffer
        PassThrough,        // every call goes straight to the transport's reader
    }

    public PassThroughReason PassThroughReason { get; private set; }

    /// <summary>What the connection the reader reads does when the reader steps aside.</summary>
    public interface IOwner
    {
        /// <summary>Called once when the connection switches to pass-through for a reason worth reporting.</summary>
        void PassThroughStarted(PassThroughReason reason);

        /// <summary>Given the transport's reader when the HTTP/2 preface arrives, returns the reader every later call
        /// goes to.</summary>
        PipeReader Http2Started(PipeReader input);
    }

    /// <summary>The connection told when the reader steps aside; without one, the connection passes through at the
    /// preface too.</summary>
    public IOwner? Owner { get; init; }

    /// <summary>HTTP/1.1 is switched off: a request line (neither TLS nor the HTTP/2 preface) passes the connection
    /// through, for <see cref="PassThroughReason.Http1Disabled"/>.</summary>
    public bool PassesHeadsThrough { get; init; }

    protected override bool PassesThrough => _stage == Stage.PassThrough;

    protected override bool ShowsHeld => _stage == Stage.CompactedSection;

    protected override void WaitStarts(IdleTrim idle)
    {
        if (_stage == Stage.RequestLine && _lineEnd == 0)
        {
            // No head has begun (a complete request line begins one): until the read completes, the compactor holds
            // nothing of a head, and the requests before have ended.
            idle.Wait();
        }
    }

    protected override bool TryShowWaited(in ReadResult input, out ReadResult result)
    {
        // Between requests and in a request line a read Kestrel waited on shows it something: bytes, or no bytes for a
        // cancellation Kestrel did not ask for (of the transport's reader itself) or the HTTP/2 preface, and Kestrel
        // reads again, as it does after a cancellation of its own. Elsewhere a read may have nothing to show yet (a
        // section not yet complete), and the wait goes on.
        bool requestLine = _stage == Stage.RequestLine;
        if (TryPresent(input, out result))
        {
            return true;
        }

        if (!requestLine)
        {
            return false;
        }

        result = ShowNothing();
        return true;
    }

    protected override SequencePosition Examined(long taken, SequencePosition consumed, SequencePosition examined)
    {
        if (ViewLength == 0 || (taken < ViewLength && Buffer.Slice(0, examined).Length >= ViewLength))
        {
            // Everything shown was looked at: wait for bytes that are new to the transport too.
            return Buffer.End;
        }

        // Everything shown was taken: what follows it is shown at once.
        return taken == ViewLength ? consumed : examined;
    }

    protected override void HeldTaken() => AfterHead();

    protected override void TrimIdle() => _compactor.Trim();

    protected override void Release()
    {
        _compactor.Dispose();
        ContiguousBytes.Return(ref Held);
        _contiguous.Return();
    }
}
