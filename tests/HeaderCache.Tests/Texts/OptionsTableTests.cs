using System.Collections;
using System.Globalization;
using System.Reflection;
using System.Text.RegularExpressions;

namespace HeaderCache.Tests.Texts;

/// <summary>The package README's configuration table has a row for each setting of <see cref="HeaderCacheOptions"/>, with
/// the default a new instance has, and no row for a setting there is not.</summary>
public sealed partial class OptionsTableTests
{
    [Fact]
    public void The_readme_names_every_setting_with_its_default()
    {
        string readme = RepositoryFiles.Read("src/HeaderCache/README.md");
        string section = readme[readme.IndexOf("## Configuration", StringComparison.Ordinal)..];
        section = section[..section.IndexOf("\n## ", 3, StringComparison.Ordinal)];
        Dictionary<string, string> rows = Row().Matches(section).ToDictionary(row => row.Groups["name"].Value, row => row.Groups["default"].Value, StringComparer.Ordinal);

        var defaults = new HeaderCacheOptions();
        Dictionary<string, string> settings = typeof(HeaderCacheOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .ToDictionary(property => property.Name, property => Text(property.GetValue(defaults)), StringComparer.Ordinal);

        Assert.True(settings.Count >= 7, $"only {settings.Count} settings found");
        Assert.Equal(settings.OrderBy(pair => pair.Key, StringComparer.Ordinal), rows.OrderBy(pair => pair.Key, StringComparer.Ordinal));
    }

    // A default as appsettings.json would write it.
    private static string Text(object? value) => value switch
    {
        bool flag => flag ? "true" : "false",
        IList { Count: 0 } => "[]",
        IFormattable number => number.ToString(null, CultureInfo.InvariantCulture),
        _ => throw new InvalidOperationException($"no text for a default of type {value?.GetType()}"),
    };

    [GeneratedRegex(@"^\| `(?<name>[A-Za-z]+)` \| `(?<default>[^`]*)` \|", RegexOptions.Multiline)]
    private static partial Regex Row();
}
