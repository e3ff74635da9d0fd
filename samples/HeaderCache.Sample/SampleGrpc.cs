using System.Buffers;
using Microsoft.Extensions.Primitives;

namespace HeaderCache.Sample;

/// <summary>
/// A minimal unary gRPC responder for <c>benchmarks/clients</c>: every POST to <c>/bench.Echo/...</c> is answered as
/// gRPC does, whatever its headers: status 200, <c>content-type: application/grpc</c>, the request's message sent back as
/// one length-prefixed message (5-byte header: compressed flag, big-endian length), and the trailer
/// <c>grpc-status: 0</c>. The path decides rather than the content type, so that the benchmark's bare requests (pseudo
/// headers only, no <c>content-type</c>) take the same handler and cost the same beyond their headers. No protobuf, no
/// gRPC server package: the bytes are the message.
/// </summary>
internal static class SampleGrpc
{
    private const string ContentType = "application/grpc";
    private const int MaxMessage = 64 * 1024;
    private static readonly StringValues StatusOk = new("0");

    public static bool Matches(HttpRequest request) =>
        HttpMethods.IsPost(request.Method) && request.Path.StartsWithSegments("/bench.Echo", StringComparison.Ordinal);

    public static async Task HandleAsync(HttpContext context)
    {
        HttpResponse response = context.Response;
        System.IO.Pipelines.PipeReader reader = context.Request.BodyReader;
        while (true)
        {
            System.IO.Pipelines.ReadResult read = await reader.ReadAsync(context.RequestAborted).ConfigureAwait(false);
            ReadOnlySequence<byte> body = read.Buffer;
            if (!read.IsCompleted && body.Length < MaxMessage)
            {
                reader.AdvanceTo(body.Start, body.End);
                continue;
            }

            response.StatusCode = StatusCodes.Status200OK;
            response.ContentType = ContentType;
            if (body.Length >= 5 && body.Length <= MaxMessage)
            {
                // The request's own frame (prefix and message) is a well-formed response message: send it back as is.
                int length = (int)body.Length;
                Span<byte> destination = response.BodyWriter.GetSpan(length);
                body.CopyTo(destination);
                response.BodyWriter.Advance(length);
            }
            else
            {
                // No whole message, or too long a one: an empty message (flag 0, length 0).
                response.BodyWriter.GetSpan(5)[..5].Clear();
                response.BodyWriter.Advance(5);
            }

            reader.AdvanceTo(body.End);
            break;
        }

        if (response.SupportsTrailers())
        {
            response.AppendTrailer("grpc-status", StatusOk);
        }
    }
}
