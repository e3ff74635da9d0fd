using System.Text.RegularExpressions;

namespace HeaderCache.Tests.Texts;

/// <summary>docs/design.md's table of folders names, for each folder of src/HeaderCache, exactly the types its files
/// hold (one type a file; a type split over files counts once): a type added, moved or removed without the table fails.</summary>
public sealed partial class FolderTableTests
{
    [Fact]
    public void The_design_table_names_each_folders_types_and_no_others()
    {
        Dictionary<string, string[]> table = Table(RepositoryFiles.Read("docs/design.md"));
        string source = RepositoryFiles.PathOf("src/HeaderCache");
        string[] folders = [.. Directory.GetDirectories(source).Select(Path.GetFileName).OfType<string>().Where(d => d is not ("bin" or "obj")).Order(StringComparer.Ordinal)];

        Assert.True(folders.Length >= 8, $"only {folders.Length} folders found in {source}");
        Assert.Equal(folders, table.Keys.Order(StringComparer.Ordinal));
        foreach (string folder in folders)
        {
            string[] types = [.. Directory.GetFiles(Path.Combine(source, folder), "*.cs")
                .Select(file => Path.GetFileName(file).Split('.')[0]).Distinct().Order(StringComparer.Ordinal)];
            Assert.True(types.Length > 0, $"{folder} holds no source file");
            string[] unnamed = [.. types.Except(table[folder], StringComparer.Ordinal)];
            string[] unknown = [.. table[folder].Except(types, StringComparer.Ordinal)];
            Assert.True(unnamed.Length == 0 && unknown.Length == 0,
                $"{folder}: the table lacks [{string.Join(", ", unnamed)}] and names [{string.Join(", ", unknown)}], which no file holds");
        }
    }

    // Each folder's row: | `Folder` | `TypeA`, `TypeB<T>`, ... | role |, with generic parameters left out.
    private static Dictionary<string, string[]> Table(string design) =>
        Row().Matches(design).ToDictionary(
            row => row.Groups["folder"].Value,
            row => Name().Matches(row.Groups["types"].Value).Select(name => name.Groups["type"].Value).ToArray(),
            StringComparer.Ordinal);

    [GeneratedRegex(@"^\| `(?<folder>[A-Za-z0-9]+)` \| (?<types>[^|]+) \|", RegexOptions.Multiline)]
    private static partial Regex Row();

    [GeneratedRegex(@"`(?<type>[A-Za-z0-9]+)(<[A-Za-z, ]+>)?`")]
    private static partial Regex Name();
}
