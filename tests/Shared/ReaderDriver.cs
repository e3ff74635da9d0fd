using System.Buffers;
using System.IO.Pipelines;
using System.Linq.Expressions;
using System.Reflection;
using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Testing;

/// <summary>
/// A <see cref="CompactingPipeReader"/> over an in-memory transport pipe, read the way Kestrel reads a
/// connection that takes everything it is shown: what the reader showed is what Kestrel would have parsed.
/// Synchronous and allocation-free in steady state, for unit tests and studies.
/// </summary>
internal sealed class ReaderDriver : IDisposable
{
    private readonly Pipe _transport = new(new PipeOptions(pauseWriterThreshold: 0, useSynchronizationContext: false));
    private readonly ArrayBufferWriter<byte> _seen = new();
    private readonly bool _recordSeen;

    // Whether the reader's last view is the start of a request (leading CR/LF and the request line so far): its stage,
    // which only a test looks at from outside; compiled once, so that reading it allocates nothing.
    private static readonly Func<CompactingPipeReader, bool> ShowsRequestLine = CompileShowsRequestLine();

    /// <param name="recordSeen">Whether <see cref="Seen"/> keeps what the reader showed; studies of what a connection
    /// keeps alive turn it off, as that record is the driver's, not the connection's.</param>
    /// <param name="cache">The connection's cache of values, when a test sets its size or seed.</param>
    /// <param name="recallLines">Whether the compactor has a memo of lines (the product's does).</param>
    public ReaderDriver(
        HeaderStringCache? cache = null, KestrelLimits? limits = null, IEnumerable<string>? excluded = null, bool recordSeen = true, bool recallLines = true)
    {
        _recordSeen = recordSeen;
        FieldResolver fields = FieldResolver.Create(HeaderStringCache.DefaultSlotCount, HeaderStringCache.DefaultMaxLength, LongValueCache.DefaultBudget, excluded);
        if (cache is not null)
        {
            fields = new FieldResolver(cache, fields.Names, LongValueCache.DefaultBudget, excluded);
        }

        Fields = fields;
        Memo = recallLines ? new LineMemo() : null;
        Compactor = new HeadCompactor(fields, Queue, limits ?? KestrelLimits.From(new KestrelServerLimits()), leaveReusedValues: true, Memo);
        Reader = new CompactingPipeReader(_transport.Reader, Compactor, limits ?? KestrelLimits.From(new KestrelServerLimits()));
    }

    /// <summary>The compactor's field resolver, with its caches.</summary>
    public FieldResolver Fields { get; }

    /// <summary>The compactor's memo of lines, when it has one.</summary>
    public LineMemo? Memo { get; }

    /// <summary>The compactor's cache of values.</summary>
    public HeaderStringCache Cache => Fields.Values;

    /// <summary>The compactor's cache of names.</summary>
    public HeaderStringCache Names => Fields.Names;

    public HeaderInjectionQueue Queue { get; } = new();

    public HeadCompactor Compactor { get; }

    public CompactingPipeReader Reader { get; }

    /// <summary>The bytes the reader showed since the last <see cref="Clear"/>.</summary>
    public ReadOnlySpan<byte> Seen => _seen.WrittenSpan;

    /// <summary>Sends <paramref name="bytes"/> and takes everything the reader shows.</summary>
    public void Send(ReadOnlySpan<byte> bytes)
    {
        _transport.Writer.Write(bytes);
        ValueTask<FlushResult> flush = _transport.Writer.FlushAsync();
        if (!flush.IsCompletedSuccessfully)
        {
            throw new InvalidOperationException("The transport pipe applied back-pressure.");
        }

        _ = flush.Result;
        Drain();
    }

    /// <summary>Ends the client's bytes and takes what the reader still shows.</summary>
    public void Complete()
    {
        _transport.Writer.Complete();
        Drain();
    }

    /// <summary>Forgets what was seen so far.</summary>
    public void Clear() => _seen.ResetWrittenCount();

    public void Dispose() => Reader.Complete();

    private static Func<CompactingPipeReader, bool> CompileShowsRequestLine()
    {
        FieldInfo stage = typeof(CompactingPipeReader).GetField("_stage", BindingFlags.NonPublic | BindingFlags.Instance)!;
        ParameterExpression reader = Expression.Parameter(typeof(CompactingPipeReader));
        BinaryExpression isRequestLine = Expression.Equal(
            Expression.Field(reader, stage), Expression.Constant(Enum.Parse(stage.FieldType, "RequestLine"), stage.FieldType));
        return Expression.Lambda<Func<CompactingPipeReader, bool>>(isRequestLine, reader).Compile();
    }

    // Takes what Kestrel takes: all of a view, but of a request line only whole lines (and leading CR/LF).
    private void Drain()
    {
        while (Reader.TryRead(out ReadResult result))
        {
            ReadOnlySequence<byte> buffer = result.Buffer;
            ReadOnlySequence<byte> taken = buffer;
            if (ShowsRequestLine(Reader) && buffer.PositionOf((byte)'\n') is null)
            {
                var reader = new SequenceReader<byte>(buffer);
                reader.AdvancePastAny((byte)'\r', (byte)'\n');
                taken = buffer.Slice(0, reader.Position);
            }

            Record(taken);

            Reader.AdvanceTo(taken.End, buffer.End);
            if (result.IsCompleted)
            {
                if (taken.Length < buffer.Length)
                {
                    // The client ended inside a request line: Kestrel sees the rest and rejects it.
                    Record(buffer.Slice(taken.End));
                }

                return;
            }
        }
    }

    private void Record(ReadOnlySequence<byte> shown)
    {
        if (!_recordSeen)
        {
            return;
        }

        foreach (ReadOnlyMemory<byte> segment in shown)
        {
            _seen.Write(segment.Span);
        }
    }
}
