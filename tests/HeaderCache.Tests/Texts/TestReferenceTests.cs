using System.Reflection;
using System.Text.RegularExpressions;

namespace HeaderCache.Tests.Texts;

/// <summary>The pages that describe the library as it is name the tests that show each fact (<c>Class.Method</c>, or the
/// start of a method's name where a page shortens it): every name they give is a test of this suite, so a renamed or
/// removed test cannot leave a page pointing at nothing.</summary>
public sealed partial class TestReferenceTests
{
    [Fact]
    public void Every_test_the_docs_name_is_in_the_suite()
    {
        Dictionary<string, string[]> suite = Suite(typeof(TestReferenceTests).Assembly);
        var named = Pages.Current.SelectMany(page => Names(RepositoryFiles.Read(page)).Select(name => (page, name))).ToList();

        // The pages name dozens of tests; fewer than 50 means the pattern stopped finding them.
        Assert.True(named.Count >= 50, $"only {named.Count} test names found in the pages");
        string[] missing = [.. named.Where(n => !Exists(suite, n.name)).Select(n => $"{n.page}: {n.name}").Distinct()];
        Assert.True(missing.Length == 0, "named but not in the suite:" + Environment.NewLine + string.Join(Environment.NewLine, missing));
    }

    [Fact]
    public void The_check_finds_a_name_that_is_not_there()
    {
        Dictionary<string, string[]> suite = Suite(typeof(TestReferenceTests).Assembly);
        string page = "Test: `TestReferenceTests.The_check_finds_a_name_that_is_not_there`, `TestReferenceTests.Every_test_...`, "
            + "`TestReferenceTests.A_test_that_was_renamed`, `NoSuchTests.Anything`, `RealClientTests.cs`.";

        Assert.Equal(
            [("TestReferenceTests.The_check_finds_a_name_that_is_not_there", true), ("TestReferenceTests.Every_test_", true),
             ("TestReferenceTests.A_test_that_was_renamed", false), ("NoSuchTests.Anything", false)],
            Names(page).Select(name => (name, Exists(suite, name))));
    }

    // Each test class of the assembly, by its name, with the names of its methods.
    private static Dictionary<string, string[]> Suite(Assembly assembly) =>
        assembly.GetTypes()
            .Where(type => type.Name.EndsWith("Tests", StringComparison.Ordinal))
            .GroupBy(type => type.Name, StringComparer.Ordinal)
            .ToDictionary(
                group => group.Key,
                group => group.SelectMany(type => type.GetMethods(BindingFlags.Public | BindingFlags.Instance | BindingFlags.DeclaredOnly)).Select(method => method.Name).ToArray(),
                StringComparer.Ordinal);

    // A name is the class and a method's whole name or its start (a page may cut a long name short).
    private static bool Exists(Dictionary<string, string[]> suite, string name)
    {
        int dot = name.IndexOf('.', StringComparison.Ordinal);
        return suite.TryGetValue(name[..dot], out string[]? methods)
            && methods.Any(method => method.StartsWith(name[(dot + 1)..], StringComparison.Ordinal));
    }

    private static IEnumerable<string> Names(string text) => TestName().Matches(text).Select(match => match.Value);

    // A class named ...Tests, a dot, and a name that starts with a capital (so `SomeTests.cs`, a file, is not one).
    [GeneratedRegex(@"\b[A-Z][A-Za-z0-9]*Tests\.[A-Z][A-Za-z0-9_]*")]
    private static partial Regex TestName();
}
