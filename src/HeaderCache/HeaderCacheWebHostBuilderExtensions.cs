using HeaderCache;
using Microsoft.Extensions.DependencyInjection;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>
/// Enables HeaderCache on a web host in one call.
/// </summary>
public static class HeaderCacheWebHostBuilderExtensions
{
    /// <summary>
    /// Registers HeaderCache (options from the <c>HeaderCache</c> configuration section, the request-level
    /// part, metrics) and gives every connection on every Kestrel endpoint its connection part, through Kestrel's
    /// connection listeners: the application's own endpoint configuration, before or after this call, stays as it is
    /// (see <see cref="HeaderCacheKestrelExtensions.UseHeaderStringCache(Microsoft.AspNetCore.Server.Kestrel.Core.KestrelServerOptions)"/>).
    /// </summary>
    /// <param name="builder">The web host builder, e.g. <c>WebApplicationBuilder.WebHost</c>.</param>
    /// <param name="configure">Optional code configuration, applied after the configuration section.</param>
    /// <returns>The <see cref="IWebHostBuilder"/>.</returns>
    public static IWebHostBuilder UseHeaderStringCache(this IWebHostBuilder builder, Action<HeaderCacheOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.ConfigureServices(services => services.AddHeaderStringCache(configure));
        builder.ConfigureKestrel(options => options.UseHeaderStringCache());
        return builder;
    }
}
