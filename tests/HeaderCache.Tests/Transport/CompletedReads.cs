using System.IO.Pipelines;

namespace HeaderCache.Tests.Transport;

/// <summary>What Kestrel gets from a reader it has completed: what a completed transport pipe gives Kestrel alone.</summary>
internal static class CompletedReads
{
    /// <summary>TryRead and ReadAsync of <paramref name="reader"/>, completed, fail with the exception and message a
    /// completed <see cref="Pipe"/>'s reader fails with.</summary>
    public static void FailAsTheTransportsOwn(PipeReader reader)
    {
        var alone = new Pipe();
        alone.Reader.Complete();
        Exception expected = Assert.ThrowsAny<Exception>(() => alone.Reader.TryRead(out _));
        Exception read = Assert.ThrowsAny<Exception>(() => reader.TryRead(out _));
        Exception readAsync = Assert.ThrowsAny<Exception>(() => reader.ReadAsync().AsTask().GetAwaiter().GetResult());
        Assert.Equal((expected.GetType(), expected.Message), (read.GetType(), read.Message));
        Assert.Equal((expected.GetType(), expected.Message), (readAsync.GetType(), readAsync.Message));
    }
}
