using HeaderCache.Diagnostics;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Hosting;

/// <summary>Decorates the registered <see cref="IServer"/> (Kestrel) so that it runs the application through
/// <see cref="HeaderCacheApplication{TContext}"/>. The inner server is owned by the container.</summary>
internal sealed class HeaderCacheServer(IServer inner, HeaderCacheRuntime runtime) : IServer
{
    public IFeatureCollection Features => inner.Features;

    public async Task StartAsync<TContext>(IHttpApplication<TContext> application, CancellationToken cancellationToken)
        where TContext : notnull
    {
        runtime.RequestPartActive = true;
        await inner.StartAsync(new HeaderCacheApplication<TContext>(application), cancellationToken).ConfigureAwait(false);
        ReportEndpoints();
    }

    public Task StopAsync(CancellationToken cancellationToken) => inner.StopAsync(cancellationToken);

    // Kestrel builds the connection middleware of every endpoint and binds every listener while it starts, so now it
    // is known which bound addresses have HeaderCache: each one left without it is named with why, then the summary.
    private void ReportEndpoints()
    {
        IReadOnlyList<string> covered = runtime.Endpoints;
        ICollection<string> addresses = inner.Features.Get<IServerAddressesFeature>()?.Addresses ?? [];
        string[] uncovered = [.. addresses.Where(address => !IsCovered(address, covered))];

        // With only the request-level part registered, nothing is covered, and one error says so.
        if (runtime.EveryEndpoint || covered.Count != 0)
        {
            foreach (string address in uncovered)
            {
                runtime.ReportNotCovered(address);
            }
        }

        bool enabled = runtime.CurrentOptions().Enabled;
        if (covered.Count == 0)
        {
            if (enabled)
            {
                Log.ConnectionPartMissing(runtime.Logger);
            }

            return;
        }

        if (enabled)
        {
            Log.EndpointsCovered(runtime.Logger, string.Join(", ", covered));
        }
        else
        {
            Log.SwitchedOff(runtime.Logger, string.Join(", ", covered));
        }

        if (uncovered.Length != 0)
        {
            Log.EndpointsNotCovered(runtime.Logger, string.Join(", ", uncovered));
        }
    }

    // A bound address is shown as its endpoint is, except that "localhost" stands for the loopback endpoints it binds.
    private static bool IsCovered(string address, IReadOnlyList<string> covered)
    {
        if (covered.Contains(address, StringComparer.OrdinalIgnoreCase))
        {
            return true;
        }

        return Uri.TryCreate(address, UriKind.Absolute, out Uri? uri) && uri.IsLoopback && covered.Any(endpoint =>
            Uri.TryCreate(endpoint, UriKind.Absolute, out Uri? other) && other.IsLoopback && other.Scheme == uri.Scheme && other.Port == uri.Port);
    }

    public void Dispose()
    {
        // The inner server is a container-owned singleton; the container disposes it.
    }
}
