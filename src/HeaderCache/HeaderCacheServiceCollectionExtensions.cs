using HeaderCache;
using HeaderCache.Diagnostics;
using HeaderCache.Hosting;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>
/// Registers HeaderCache's services.
/// </summary>
public static class HeaderCacheServiceCollectionExtensions
{
    /// <summary>
    /// Registers the request-level part of HeaderCache (it decorates the registered <see cref="IServer"/>,
    /// so call it after the server is added, as <c>WebApplication.CreateBuilder</c> does), its options
    /// bound from the <c>HeaderCache</c> configuration section and validated at start-up (see
    /// <see cref="HeaderCacheOptions"/> for unknown keys and bad values), and its metrics. Connections get the cache
    /// on every endpoint with <c>KestrelServerOptions.UseHeaderStringCache()</c> (which <c>builder.WebHost.UseHeaderStringCache()</c>
    /// calls), or on the endpoints whose <c>ListenOptions</c> call <c>UseHeaderStringCache()</c>.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">Optional code configuration, applied after the configuration section.</param>
    /// <returns>The <see cref="IServiceCollection"/>.</returns>
    public static IServiceCollection AddHeaderStringCache(this IServiceCollection services, Action<HeaderCacheOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        OptionsBuilder<HeaderCacheOptions> options = services.AddOptions<HeaderCacheOptions>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IConfigureOptions<HeaderCacheOptions>, HeaderCacheConfiguration>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IOptionsChangeTokenSource<HeaderCacheOptions>, ConfigurationChangeTokenSource<HeaderCacheOptions>>(
            provider => new(provider.GetRequiredService<IConfiguration>())));
        if (configure is not null)
        {
            options.Configure(configure);
        }

        options.ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<HeaderCacheOptions>, HeaderCacheOptionsValidator>());

        if (services.Any(d => d.ServiceType == typeof(HeaderCacheRuntime)))
        {
            return services;
        }

        services.AddMetrics();
        services.TryAddSingleton<HeaderCacheMetrics>();
        services.TryAddSingleton(KestrelVersions.Current);
        services.TryAddSingleton<HeaderCacheRuntime>();
        DecorateServer(services);
        return services;
    }

    private static void DecorateServer(IServiceCollection services)
    {
        ServiceDescriptor? server = services.LastOrDefault(d => d.ServiceType == typeof(IServer) && !d.IsKeyedService);
        if (server is null)
        {
            // No server yet: the connection middleware will report the request-level part as missing.
            return;
        }

        services.Remove(server);
        Func<IServiceProvider, IServer> createInner;
        if (server.ImplementationInstance is IServer instance)
        {
            createInner = _ => instance;
        }
        else if (server.ImplementationFactory is { } factory)
        {
            // Keep the original factory's instance a container-owned singleton.
            services.AddSingleton<InnerServer>(sp => new InnerServer((IServer)factory(sp)));
            createInner = sp => sp.GetRequiredService<InnerServer>().Server;
        }
        else
        {
            Type type = server.ImplementationType!;
            services.AddSingleton<InnerServer>(sp => new InnerServer(CreateServer(sp, type)));
            createInner = sp => sp.GetRequiredService<InnerServer>().Server;
        }

        services.AddSingleton<IServer>(sp => new HeaderCacheServer(createInner(sp), sp.GetRequiredService<HeaderCacheRuntime>()));
    }

    // Kestrel takes every registered connection listener factory (the sockets transport's, and any an application or a
    // test adds, before or after this call) in its constructor. Each one gets HeaderCache's decorator here, when the
    // server is made, so that none escapes it whatever the order of registration; the decorators act only once
    // KestrelServerOptions.UseHeaderStringCache() asked for every endpoint. HTTP/3's multiplexed factories stay as they are.
    private static IServer CreateServer(IServiceProvider services, Type type)
    {
        bool takesListenerFactories = type.GetConstructors().Any(constructor =>
            constructor.GetParameters().Any(parameter => parameter.ParameterType == typeof(IEnumerable<IConnectionListenerFactory>)));
        if (!takesListenerFactories)
        {
            return (IServer)ActivatorUtilities.CreateInstance(services, type);
        }

        HeaderCacheRuntime runtime = services.GetRequiredService<HeaderCacheRuntime>();
        IOptions<KestrelServerOptions> kestrel = services.GetRequiredService<IOptions<KestrelServerOptions>>();
        IEnumerable<IConnectionListenerFactory> factories =
            [.. services.GetServices<IConnectionListenerFactory>().Select(factory => HeaderCacheListenerFactory.Decorate(factory, runtime, kestrel))];
        runtime.ListenerFactoriesDecorated = true;
        return (IServer)ActivatorUtilities.CreateInstance(services, type, factories);
    }

    private sealed class InnerServer(IServer server) : IDisposable
    {
        public IServer Server { get; } = server;

        public void Dispose() => Server.Dispose();
    }
}
