namespace HeaderCache.Diagnostics;

/// <summary>Why the HTTP/2 reader stopped following a connection: <see cref="PassThroughReason.ValuesDoNotRepeat"/> and
/// <see cref="PassThroughReason.NothingToCache"/> for the steps aside of the same names, as HTTP/1.1 reports them,
/// <see cref="PassThroughReason.Http2Stopped"/> for every other one, which is logged at Debug, never a metric tag.</summary>
internal enum Http2StopCause
{
    None,
    NotPreface,         // the connection's first bytes are not the client preface
    ClientEnded,        // the client ended the connection before the reader had shown Kestrel all it sent
    FrameRejected,      // a frame header Kestrel ends the connection for: over MaxFrameSize, an even stream, HEADERS on
                        // stream 0, a CONTINUATION out of place or another frame inside a header block
    FieldsDoNotFit,     // a HEADERS frame whose padding or priority fields are longer than its payload
    DependsOnItself,    // a HEADERS frame that opens a stream and names that stream as its own dependency
    BlockUndecodable,   // a header block the table mirror cannot decode as Kestrel's decoder would
    BlockTooLong,       // a header block far longer than any Kestrel accepts, which the reader does not collect
    ValuesDoNotRepeat,  // too few of the last values repeated (ValueAdmission): the reader steps aside between frames
    NothingToCache,     // blocks in a row had nothing to take (ValueAdmission.RequestsWithNothingToTake): steps aside too
}

/// <summary>The <see cref="PassThroughReason"/> of each <see cref="Http2StopCause"/>.</summary>
internal static class Http2StopCauses
{
    /// <summary>Why a connection whose HTTP/2 reader stopped for <paramref name="cause"/> passes through.</summary>
    public static PassThroughReason Reason(this Http2StopCause cause) => cause switch
    {
        Http2StopCause.ValuesDoNotRepeat => PassThroughReason.ValuesDoNotRepeat,
        Http2StopCause.NothingToCache => PassThroughReason.NothingToCache,
        _ => PassThroughReason.Http2Stopped,
    };
}
