using System.Text.RegularExpressions;

namespace HeaderCache.Tests.Texts;

/// <summary>The library's folders depend one way, as docs/design.md draws them: read from every source file's
/// <c>using HeaderCache.X;</c> lines and qualified <c>HeaderCache.X.</c> names (in code and in doc comments), each folder
/// uses only the stages after it, neither protocol folder uses the other, and the folders form no cycle.</summary>
public sealed partial class FolderDependencyTests
{
    // What each folder may use besides itself, as docs/design.md draws them: the order bytes travel, each stage using
    // only stages after it. A folder added to src/HeaderCache must be added here (and to the drawing) to pass.
    private static readonly Dictionary<string, string[]> MayUse = new()
    {
        ["Hosting"] = ["Connection", "Requests", "Fields", "Caching", "Transport", "Diagnostics"],
        ["Connection"] = ["Http1", "Http2", "Transport", "Requests", "Fields", "Caching", "Diagnostics"],
        ["Http1"] = ["Transport", "Requests", "Fields", "Caching", "Diagnostics"],
        ["Http2"] = ["Transport", "Requests", "Fields", "Caching", "Diagnostics"],
        ["Transport"] = ["Diagnostics"],
        ["Requests"] = ["Fields", "Caching", "Diagnostics"],
        ["Fields"] = ["Caching", "Diagnostics"],
        ["Caching"] = [],
        ["Diagnostics"] = [],
    };

    [Fact]
    public void Folders_depend_one_way()
    {
        Dictionary<string, HashSet<string>> uses = Graph();
        Assert.Equal(MayUse.Keys.Order(StringComparer.Ordinal), uses.Keys.Order(StringComparer.Ordinal));
        foreach ((string folder, HashSet<string> used) in uses)
        {
            Assert.True(used.IsSubsetOf(MayUse[folder]), $"{folder} uses {string.Join(", ", used.Except(MayUse[folder]))}, which it must not");
        }

        Assert.DoesNotContain("Http2", uses["Http1"]);
        Assert.DoesNotContain("Http1", uses["Http2"]);
        Assert.Equal([], Cycle(uses));
        Assert.Equal([], Cycle(MayUse.ToDictionary(pair => pair.Key, pair => pair.Value.ToHashSet())));
    }

    [Fact]
    public void The_check_finds_a_cycle_where_there_is_one()
    {
        var uses = new Dictionary<string, HashSet<string>> { ["A"] = ["B"], ["B"] = ["C"], ["C"] = ["A"], ["D"] = ["A"] };
        Assert.Equal(3, Cycle(uses).Count);
    }

    // The folders of src/HeaderCache and the other folders each uses.
    private static Dictionary<string, HashSet<string>> Graph()
    {
        string source = RepositoryFiles.PathOf("src/HeaderCache");
        var uses = new Dictionary<string, HashSet<string>>(StringComparer.Ordinal);
        foreach (string directory in Directory.GetDirectories(source).Where(d => Path.GetFileName(d) is not ("bin" or "obj")))
        {
            string folder = Path.GetFileName(directory);
            var used = new HashSet<string>(StringComparer.Ordinal);
            foreach (string file in Directory.GetFiles(directory, "*.cs", SearchOption.AllDirectories))
            {
                foreach (Match match in Reference().Matches(File.ReadAllText(file)))
                {
                    used.Add(match.Groups[1].Value);
                }
            }

            used.Remove(folder);
            uses[folder] = used;
        }

        foreach (HashSet<string> used in uses.Values)
        {
            used.IntersectWith(uses.Keys);
        }

        return uses;
    }

    // The folders of one cycle, or none.
    private static List<string> Cycle(Dictionary<string, HashSet<string>> uses)
    {
        var state = new Dictionary<string, int>();
        var path = new List<string>();
        foreach (string start in uses.Keys.Order(StringComparer.Ordinal))
        {
            if (Visit(start) is { } cycle)
            {
                return cycle;
            }
        }

        return [];

        List<string>? Visit(string folder)
        {
            switch (state.GetValueOrDefault(folder))
            {
                case 1:
                    return path[path.IndexOf(folder)..];
                case 2:
                    return null;
            }

            state[folder] = 1;
            path.Add(folder);
            foreach (string used in uses[folder].Order(StringComparer.Ordinal))
            {
                if (Visit(used) is { } cycle)
                {
                    return cycle;
                }
            }

            path.RemoveAt(path.Count - 1);
            state[folder] = 2;
            return null;
        }
    }

    [GeneratedRegex(@"\bHeaderCache\.([A-Z][A-Za-z0-9]*)\b(?:;|\.)")]
    private static partial Regex Reference();
}
