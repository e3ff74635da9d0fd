using System.Collections.Concurrent;
using Microsoft.AspNetCore.Builder;

namespace HeaderCache.Testing;

/// <summary>Records the header string instances every request saw, from the first middleware.</summary>
internal sealed class HeaderRecorder
{
    public sealed record Request(string ConnectionId, List<(string Name, string Value)> Headers);

    public ConcurrentQueue<Request> Requests { get; } = new();

    public void Install(WebApplicationBuilder builder) => FirstMiddleware.Install(builder, (context, next) =>
    {
        var headers = context.Request.Headers.SelectMany(h => h.Value.Select(v => (h.Key, v!))).ToList();
        Requests.Enqueue(new Request(context.Connection.Id, headers));
        return next(context);
    });
}
