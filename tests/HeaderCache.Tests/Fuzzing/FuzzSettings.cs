using System.Globalization;

namespace HeaderCache.Tests.Fuzzing;

/// <summary>A fuzz run's size and seed, from environment variables when set (see <c>docs/fuzzing.md</c>).</summary>
internal static class FuzzSettings
{
    public static int Get(string name, int fallback) =>
        int.TryParse(Environment.GetEnvironmentVariable(name), NumberStyles.Integer, CultureInfo.InvariantCulture, out int value) ? value : fallback;

    public static double Get(string name, double fallback) =>
        double.TryParse(Environment.GetEnvironmentVariable(name), NumberStyles.Float, CultureInfo.InvariantCulture, out double value) ? value : fallback;
}
