namespace HeaderCache.Tests;

/// <summary>Files of the repository the tests run from, by their path from its root.</summary>
internal static class RepositoryFiles
{
    private static readonly Lazy<string> Root = new(() =>
    {
        DirectoryInfo? directory = new(AppContext.BaseDirectory);
        while (directory is not null && !File.Exists(Path.Combine(directory.FullName, "HeaderCache.sln")))
        {
            directory = directory.Parent;
        }

        return directory?.FullName ?? throw new InvalidOperationException($"no HeaderCache.sln above {AppContext.BaseDirectory}");
    });

    /// <summary>The full path of <paramref name="path"/>, a path from the repository's root with <c>/</c>.</summary>
    public static string PathOf(string path) => Path.Combine(Root.Value, path);

    /// <summary>The text of <paramref name="path"/>, a path from the repository's root with <c>/</c>.</summary>
    public static string Read(string path) => File.ReadAllText(PathOf(path));
}
