using HeaderCache.Caching;
using HeaderCache.Diagnostics;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HeaderCache.Hosting;

/// <summary>
/// Reads the <c>HeaderCache</c> configuration section into the options, at start-up and after every reload of the
/// configuration. A key that names no setting is ignored, as the configuration binder ignores it, and reported once, in a
/// warning naming the nearest setting. A value its setting's type cannot hold fails the options with one line naming the
/// setting, the value and what it must be, as <see cref="HeaderCacheOptionsValidator"/> fails one out of range: at
/// start-up that is the <see cref="OptionsValidationException"/> <c>ValidateOnStart</c> throws; while the server runs,
/// new connections keep the last valid options.
/// </summary>
internal sealed partial class HeaderCacheConfiguration(IConfiguration configuration, ILoggerFactory loggers) : IConfigureOptions<HeaderCacheOptions>
{
    /// <summary>What <see cref="HeaderCacheOptions.Protocols"/> must be: Kestrel's names of the protocols.</summary>
    public const string ProtocolsRequirement = "Http1, Http2, Http1AndHttp2 or None (Kestrel's HttpProtocols; Http3 is accepted and changes nothing)";

    // Every bindable property of HeaderCacheOptions, with what its value must be.
    private static readonly (string Key, Type Type, string Requirement)[] Settings =
    [
        (nameof(HeaderCacheOptions.Enabled), typeof(bool), "true or false"),
        (nameof(HeaderCacheOptions.Protocols), typeof(HttpProtocols), ProtocolsRequirement),
        (nameof(HeaderCacheOptions.AllowUntestedKestrelVersion), typeof(bool), "true or false"),
        (nameof(HeaderCacheOptions.SlotCount), typeof(int), $"a whole number from {HeaderStringCache.MinSlotCount} to {HeaderStringCache.MaxSlotCount}"),
        (nameof(HeaderCacheOptions.MaxValueLength), typeof(int), $"a whole number from 0 to {HeaderStringCache.MaxMaxLength}"),
        (nameof(HeaderCacheOptions.LongValueBudget), typeof(int), $"a whole number from 0 to {LongValueCache.MaxBudget}"),
        (nameof(HeaderCacheOptions.ExcludedHeaders), typeof(List<string>), "a list of header names"),
    ];

    private readonly ILogger _logger = loggers.CreateLogger(Log.Category);
    private readonly Lock _reportedLock = new();

    // The unknown keys of the configuration read last: a key is reported when it appears, not again while it stays.
    private HashSet<string> _reported = new(StringComparer.OrdinalIgnoreCase);

    /// <inheritdoc />
    public void Configure(HeaderCacheOptions options)
    {
        IConfigurationSection section = configuration.GetSection(HeaderCacheOptions.SectionName);
        var unknown = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        var failures = new List<string>();
        foreach (IConfigurationSection entry in section.GetChildren())
        {
            int index = Array.FindIndex(Settings, setting => string.Equals(setting.Key, entry.Key, StringComparison.OrdinalIgnoreCase));
            if (index < 0)
            {
                unknown.Add(entry.Path);
            }
            else if (!Binds(entry, Settings[index].Type))
            {
                failures.Add($"{entry.Path} is \"{entry.Value}\"; it must be {Settings[index].Requirement}.");
            }
        }

        ReportAppeared(unknown);
        if (failures.Count != 0)
        {
            throw new OptionsValidationException(Options.DefaultName, typeof(HeaderCacheOptions), failures);
        }

        section.Bind(options);
    }

    // The setting nearest to the key by edit distance, letter case aside: the one a typo meant.
    private static string Nearest(string key) => Settings.MinBy(setting => EditDistance(key, setting.Key)).Key;

    // Whether the binder reads the entry as the setting's type: the binder's own conversion, on the entry alone.
    private static bool Binds(IConfigurationSection entry, Type type)
    {
        try
        {
            entry.Get(type);
            return true;
        }
        catch (InvalidOperationException)
        {
            return false;
        }
    }

    private void ReportAppeared(HashSet<string> unknown)
    {
        lock (_reportedLock)
        {
            foreach (string path in unknown.Where(path => !_reported.Contains(path)))
            {
                UnknownSetting(_logger, path, Nearest(ConfigurationPath.GetSectionKey(path)), string.Join(", ", Settings.Select(setting => setting.Key)));
            }

            _reported = unknown;
        }
    }

    // Optimal string alignment distance: insertions, deletions, substitutions and swaps of two neighbours cost 1 each.
    private static int EditDistance(string a, string b)
    {
        a = a.ToUpperInvariant();
        b = b.ToUpperInvariant();
        var d = new int[a.Length + 1, b.Length + 1];
        for (int i = 0; i <= a.Length; i++)
        {
            d[i, 0] = i;
        }

        for (int j = 0; j <= b.Length; j++)
        {
            d[0, j] = j;
        }

        for (int i = 1; i <= a.Length; i++)
        {
            for (int j = 1; j <= b.Length; j++)
            {
                int cost = a[i - 1] == b[j - 1] ? 0 : 1;
                d[i, j] = Math.Min(Math.Min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + cost);
                if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                {
                    d[i, j] = Math.Min(d[i, j], d[i - 2, j - 2] + 1);
                }
            }
        }

        return d[a.Length, b.Length];
    }

    [LoggerMessage(20, LogLevel.Warning, "{Key} is not a HeaderCache setting, so it is ignored. Did you mean {Nearest}? The settings are {Settings}.")]
    private static partial void UnknownSetting(ILogger logger, string key, string nearest, string settings);
}
