using System.Diagnostics;
using System.Runtime.CompilerServices;
using HeaderCache.Fields;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Requests;

/// <summary>An HTTP/2 request's headers when fields of names Kestrel has no field for were taken out of its stream's
/// block: a view as on HTTP/1.1, one for each of Kestrel's stream objects, which reads the fields of the last request
/// that stream object carried (with those of such names that stayed in the block for the table, moved here from
/// Kestrel's collection in their places).</summary>
/// <remarks><para>Without a view every taken field would be written into Kestrel's collection whether or not anything
/// reads it, and a stream Kestrel has just made (its pooled streams expire after 5 s idle, and a page load's burst
/// needs many at once) would make its dictionary for them too.</para>
/// <para>A view lives and is reused exactly as the Kestrel stream object it belongs to: it is found from the request's
/// features (the stream object itself), and it shows another request's fields only when Kestrel starts another request
/// on that stream object, which Kestrel does only after it has disposed the previous request's context (after
/// <c>OnCompleted</c> and hosting's end of the request). So a request reads its own fields until Kestrel is done with
/// it, whatever other streams of the connection do meanwhile, as it reads its own collection. The array that held the
/// previous request's fields goes back to the connection's <see cref="Http2StreamHandoff"/> at that moment. Once hosting
/// has ended a view's request (told through <see cref="ConnectionHeaders.IRequestEnd"/>), its array goes back when the
/// connection idles or ends; a request still running when its connection ends keeps its fields until hosting ends it
/// (Kestrel disposes the connection before such a request's context). A view Kestrel's stream object lets go of while
/// the connection lives goes with it, and its array with it, unless the hand-off has given it back.</para></remarks>
internal sealed class Http2StreamHeaders : RequestHeadersView, ConnectionHeaders.IRequestEnd
{
    // Keyed by Kestrel's stream object, which the table does not keep alive.
    private static readonly ConditionalWeakTable<IFeatureCollection, Http2StreamHeaders> ByStream = [];

    private readonly Http2StreamHandoff _streams;

    private Http2StreamHeaders(Http2StreamHandoff streams) => _streams = streams;

    /// <summary>The fields of the last request Kestrel created on the stream object; set under the hand-off's lock.</summary>
    internal ArraySegment<TakenHeader> Held { get; set; }

    /// <summary>Hosting has ended the request whose fields <see cref="Held"/> holds; set under the hand-off's lock.</summary>
    internal bool RequestOver { get; set; }

    protected override ReadOnlySpan<TakenHeader> Lines => Held;

    /// <inheritdoc/>
    public void RequestEnded() => _streams.RequestEnded(this);

    /// <summary>Puts <paramref name="lines"/>, the fields taken out of the block of the stream whose request Kestrel is
    /// creating with <paramref name="stream"/>'s features, into that request: those of known names into Kestrel's
    /// collection, the others through the stream object's view when there are any. The fields that stayed in the block
    /// and were given strings (<see cref="Http2StreamHandoff"/>) replace, in Kestrel's collection, the strings Kestrel
    /// made for the same octets. The view they are read through, or <see langword="null"/> when none is needed.</summary>
    public static Http2StreamHeaders? Show(IFeatureCollection stream, IHttpRequestFeature request, ArraySegment<TakenHeader> lines, Http2StreamHandoff streams)
    {
        // Each of these names is in Kestrel's collection with one value, the field's: a replaced value keeps its place.
        TakenHeader[] array = lines.Array!;
        int end = lines.Offset + lines.Count;
        for (int i = end; i < array.Length && array[i].Value is not null; i++)
        {
            request.Headers[array[i].Name!] = array[i].Value;
        }

        // From the array's end, fields that stayed and added to the table without a string in the caches: Kestrel's
        // strings for them go back to the reader, read before the application can change the collection.
        for (int i = array.Length - 1; i >= end && array[i] is { Value: null, Name: { } name }; i--)
        {
            if (request.Headers.TryGetValue(name, out StringValues values) && values is [{ } value])
            {
                streams.Offer(array[i].Start, value);
            }
        }

        // Fields carried among the taken ones that stayed in the block: Kestrel's field moves into the view, in its
        // place among the other names, with Kestrel's string where the caches held none (offered back as above). From
        // the last, so that a change that copies the view's lines back into Kestrel's collection refills the places
        // they leave in its dictionary of other names in arrival order.
        for (int i = end - 1; i >= lines.Offset; i--)
        {
            ref TakenHeader line = ref array[i];
            if (!line.LeftInBlock)
            {
                continue;
            }

            if (line.Value is null && request.Headers.TryGetValue(line.Name!, out StringValues values) && values is [{ } value])
            {
                line.Value = value;
                if (line.Start >= 0)
                {
                    streams.Offer(line.Start, value);
                }
            }

            // Kestrel decoded the field, whose name the block sends once, into its collection under that name.
            Debug.Assert(line.Value is not null, "Kestrel's collection holds the carried field.");
            request.Headers.Remove(line.Name!);
        }

        if (!HoldsOtherNames(lines))
        {
            // Everything goes into Kestrel's collection: no view is needed, and the array is free at once.
            foreach (ref readonly TakenHeader line in lines.AsSpan())
            {
                Write(request.Headers, line);
            }

            streams.Return(lines.Array!);
            return null;
        }

        if (!ByStream.TryGetValue(stream, out Http2StreamHeaders? view))
        {
            view = new Http2StreamHeaders(streams);
            ByStream.Add(stream, view);
        }

        return view.Show(request, lines);
    }

    private Http2StreamHeaders? Show(IHttpRequestFeature request, ArraySegment<TakenHeader> lines)
    {
        // Kestrel has disposed the context of the stream object's previous request: nothing reads those fields now.
        _streams.Show(this, lines);
        if (Show(request.Headers))
        {
            request.Headers = this;
            return this;
        }

        // A repeated name copied every field into Kestrel's collection.
        _streams.Show(this, default);
        return null;
    }

    private static bool HoldsOtherNames(ArraySegment<TakenHeader> lines)
    {
        foreach (ref readonly TakenHeader line in lines.AsSpan())
        {
            if (line.Known < 0)
            {
                return true;
            }
        }

        return false;
    }
}
