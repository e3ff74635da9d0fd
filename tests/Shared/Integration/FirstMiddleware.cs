using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace HeaderCache.Testing;

/// <summary>A middleware put before the sample app's own, for tests that watch or hold its requests.</summary>
internal sealed class FirstMiddleware(Func<HttpContext, RequestDelegate, Task> middleware) : IStartupFilter
{
    /// <summary>Adds <paramref name="middleware"/> to the app <paramref name="builder"/> builds.</summary>
    public static void Install(WebApplicationBuilder builder, Func<HttpContext, RequestDelegate, Task> middleware) =>
        builder.Services.AddSingleton<IStartupFilter>(new FirstMiddleware(middleware));

    /// <inheritdoc />
    public Action<IApplicationBuilder> Configure(Action<IApplicationBuilder> next) => app =>
    {
        app.Use(middleware);
        next(app);
    };
}
