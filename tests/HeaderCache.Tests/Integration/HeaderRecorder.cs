using System.Collections.Concurrent;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Tests.Integration;

/// <summary>Records the header string instances every request saw, from the first middleware.</summary>
internal sealed class HeaderRecorder : IStartupFilter
{
    public sealed record Request(string ConnectionId, List<(string Name, string Value)> Headers);

    public ConcurrentQueue<Request> Requests { get; } = new();

    public void Install(WebApplicationBuilder builder) => builder.Services.AddSingleton<IStartupFilter>(this);

    public Action<IApplicationBuilder> Configure(Action<IApplicationBuilder> next) => app =>
    {
        app.Use((HttpContext context, RequestDelegate nextMiddleware) =>
        {
            var headers = context.Request.Headers.SelectMany(h => h.Value.Select(v => (h.Key, v!))).ToList();
            Requests.Enqueue(new Request(context.Connection.Id, headers));
            return nextMiddleware(context);
        });
        next(app);
    };
}
