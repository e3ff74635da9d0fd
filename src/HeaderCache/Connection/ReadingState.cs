using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Transport;

namespace HeaderCache.Connection;

/// <summary>What a connection's readers read with, and nothing a request or Kestrel reads: the resolver with its caches,
/// which both protocols share, the HTTP/1.1 compactor with its memo, and the HTTP/2 table mirror, decoder and rewriter,
/// each made when its protocol first starts. Lent to one connection at a time by its endpoint's
/// <see cref="ReadingStatePool"/>.</summary>
/// <remarks>What a request or code outside HeaderCache can hold stays with its connection and is never lent: the queue
/// and the view of HTTP/1.1 requests, the HTTP/2 hand-off and its requests' views, the readers Kestrel reads (their
/// waits and idle trimming), and the connection's feature. A state is lent again only once it is
/// <see cref="Reset"/>: then it holds no string, line, entry or count of the connection before, and none of its
/// objects.</remarks>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Design", "CA1001", Justification = "The part that reads with the compactor disposes it each time it is lent (Http1Part.Dispose).")]
internal sealed class ReadingState(HeaderCacheOptions options, KestrelLimits limits, bool kestrelReusesValues)
{
    private HeadCompactor? _compactor;
    private HpackBlockDecoder? _decoder;
    private HeaderBlockRewriter? _rewriter;

    /// <summary>The options the resolver was made with: a state is lent only to connections read with the same.</summary>
    public HeaderCacheOptions Options => options;

    /// <summary>The connection's resolver, which both protocols share.</summary>
    public FieldResolver Resolver { get; } = FieldResolver.Create(options.SlotCount, options.MaxValueLength, options.LongValueBudget, options.ExcludedHeaders);

    /// <summary>The HTTP/1.1 compactor, whose taken lines go to <paramref name="queue"/>, the connection's.</summary>
    public HeadCompactor Http1(HeaderInjectionQueue queue)
    {
        if (_compactor is null)
        {
            _compactor = new HeadCompactor(Resolver, queue, limits, kestrelReusesValues, new LineMemo());
        }
        else
        {
            _compactor.Reset(queue);
        }

        return _compactor;
    }

    /// <summary>The HTTP/2 decoder (with the table mirror) and rewriter, whose streams' fields go to
    /// <paramref name="streams"/>, the connection's.</summary>
    public (HpackBlockDecoder Decoder, HeaderBlockRewriter Rewriter) Http2(Http2StreamHandoff streams)
    {
        if (_decoder is null || _rewriter is null)
        {
            _decoder = new HpackBlockDecoder(new HpackDynamicTable(limits.HeaderTableSize), limits.MaxRequestHeaderFieldSize);
            _rewriter = new HeaderBlockRewriter(_decoder, Resolver, streams, limits);
        }
        else
        {
            _decoder.Reset();
            _rewriter.Reset(streams);
        }

        return (_decoder, _rewriter);
    }

    /// <summary>The connection that read with this state has ended and none of its readers reads again: every string,
    /// memo entry, table entry and count it left goes, and what it made stays for the next connection, empty.</summary>
    public void Reset()
    {
        Resolver.Reset();
        _compactor?.Reset(queue: null);
        _decoder?.Reset();
        _rewriter?.Reset(handoff: null);
    }
}
