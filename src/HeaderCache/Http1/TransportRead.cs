using System.Diagnostics.CodeAnalysis;
using System.IO.Pipelines;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;

namespace HeaderCache.Http1;

/// <summary>The source and token behind a pending read of the transport, so that Kestrel can wait on the transport's
/// read itself, with the reader taking the result when Kestrel does.</summary>
/// <remarks><para>A reader that awaited the transport's read itself would add a second continuation to every read that
/// waits, which the pipe queues to the thread pool before it resumes Kestrel. With Kestrel's own continuation on the
/// transport's read, the wait is what it is without HeaderCache, and the reader's work runs in
/// <see cref="IValueTaskSource{TResult}.GetResult"/>, on the thread Kestrel resumes on.</para>
/// <para><see cref="ValueTask{TResult}"/> exposes neither its source nor its token, so they are read from its fields by
/// name; on a runtime without those fields (found out at the first use) the reader awaits the read
/// itself.</para></remarks>
internal static class TransportRead
{
    private static readonly bool Readable = Probe();

    /// <summary>The source and token of <paramref name="read"/>, when it has a source (not a task, not a result).</summary>
    public static bool TryGet(ref ValueTask<ReadResult> read, [NotNullWhen(true)] out IValueTaskSource<ReadResult>? source, out short token)
    {
        source = Readable ? SourceOf(ref read) as IValueTaskSource<ReadResult> : null;
        token = source is null ? (short)0 : TokenOf(ref read);
        return source is not null;
    }

    private static bool Probe()
    {
        try
        {
            ValueTask<ReadResult> read = default;
            _ = SourceOf(ref read);
            _ = TokenOf(ref read);
            return true;
        }
        catch (MissingFieldException)
        {
            return false;
        }
    }

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_obj")]
    private static extern ref readonly object? SourceOf(ref ValueTask<ReadResult> read);

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_token")]
    private static extern ref readonly short TokenOf(ref ValueTask<ReadResult> read);
}
