using System.Reflection;
using System.Text.RegularExpressions;
using System.Xml.Linq;
using HeaderCache.Connection;
using HeaderCache.Diagnostics;
using Microsoft.Extensions.Logging;

namespace HeaderCache.Tests.Texts;

/// <summary>
/// What a user reads first (the package's description and tags, the IntelliSense of the public API, the log messages,
/// both READMEs) describes the library as it is: HTTP/1.1 and HTTP/2 served. Each rule names a way these texts went out
/// of date before; a text that breaks one is named with the sentence that does.
/// </summary>
public sealed partial class UserTextTests
{
    // Each source with the fewest texts it has, so that a source the test no longer finds fails rather than passes.
    public static TheoryData<string, int> Sources => new()
    {
        { "XML documentation", 20 },
        { "log messages", 10 },
        { "package metadata", 2 },
        { "README.md", 10 },
        { "src/HeaderCache/README.md", 20 },
    };

    [Theory]
    [MemberData(nameof(Sources))]
    public void No_user_text_says_HeaderCache_serves_HTTP_1_1_only(string source, int fewest)
    {
        IReadOnlyList<(string Where, string Text)> units = Units(source);
        Assert.True(units.Count >= fewest, $"{source}: only {units.Count} texts found, so the rules would check less than they should");

        string[] broken =
        [
            .. units.SelectMany(unit => Sentences(unit.Text)
                .SelectMany(sentence => Contradictions()
                    .Where(rule => rule.Pattern.IsMatch(sentence))
                    .Select(rule => $"{unit.Where} {rule.Says}: \"{sentence}\""))),
            .. units.Where(unit => OneProtocolConnection().IsMatch(unit.Text) && !unit.Text.Contains("HTTP/2", StringComparison.Ordinal))
                .Select(unit => $"{unit.Where} speaks of HTTP/1.1 connections and never of HTTP/2: \"{unit.Text}\""),
        ];

        Assert.True(broken.Length == 0, string.Join(Environment.NewLine, broken));
    }

    [Fact]
    public void The_package_is_described_and_tagged_for_both_protocols()
    {
        XElement project = XElement.Parse(RepositoryFiles.Read("src/HeaderCache/HeaderCache.csproj"));
        string description = project.Descendants("Description").Single().Value;
        string[] tags = project.Descendants("PackageTags").Single().Value.Split(';');

        Assert.Contains("HTTP/1.1", description, StringComparison.Ordinal);
        Assert.Contains("HTTP/2", description, StringComparison.Ordinal);
        Assert.Contains("http2", tags);
    }

    [Fact]
    public void InactiveReason_and_the_package_README_name_every_reason_there_is()
    {
        string[] reasons =
        [
            .. Enum.GetValues<PassThroughReason>().Where(reason => reason != PassThroughReason.None).Select(reason => reason.Name()),
            .. typeof(SkippedConnection).GetFields(BindingFlags.Public | BindingFlags.Static)
                .Select(field => ((IHeaderStringCacheFeature)field.GetValue(null)!).InactiveReason!),
        ];
        Assert.Contains("untested_kestrel", reasons);
        string documented = Documentation().Single(member => member.Where == $"P:{typeof(IHeaderStringCacheFeature).FullName}.{nameof(IHeaderStringCacheFeature.InactiveReason)}").Text;
        string readme = RepositoryFiles.Read("src/HeaderCache/README.md");

        Assert.All(reasons, reason => Assert.Contains($"`{reason}`", readme, StringComparison.Ordinal));
        Assert.All(reasons, reason => Assert.Matches($@"\b{reason}\b", documented));
    }

    // Sentences that contradict what the library does.
    private static (string Says, Regex Pattern)[] Contradictions() =>
    [
        ("says HTTP/1.1 only", HttpOneOnly()),
        ("leaves HTTP/2 connections to Kestrel", Http2LeftToKestrel()),
        ("says HTTP/2 connections are not read", Http2NeverRead()),
    ];

    private static IReadOnlyList<(string Where, string Text)> Units(string source) => source switch
    {
        "XML documentation" => Documentation(),
        "log messages" => LogMessages(),
        "package metadata" => [.. XElement.Parse(RepositoryFiles.Read("src/HeaderCache/HeaderCache.csproj")).Descendants("PropertyGroup").Elements()
            .Where(property => property.Name.LocalName is "Description" or "PackageTags" or "PackageReleaseNotes")
            .Select(property => (property.Name.LocalName, property.Value))],
        _ => Paragraphs(source),
    };

    // The documentation of every public type and member, from the XML file the build writes beside the assembly (and
    // the package carries): what IntelliSense shows.
    private static IReadOnlyList<(string Where, string Text)> Documentation()
    {
        Assembly library = typeof(HeaderCacheOptions).Assembly;
        string file = Path.ChangeExtension(library.Location, ".xml");
        return
        [
            .. XDocument.Load(file).Descendants("member")
                .Select(member => (Where: (string)member.Attribute("name")!, Text: Normalized(member.Value)))
                .Where(member => library.GetType(TypeOf(member.Where)) is { IsVisible: true }),
        ];

        // "T:Ns.Type" names a type; "M:Ns.Type.Method(...)", "P:Ns.Type.Property" and "F:Ns.Type.Field" a member of one.
        static string TypeOf(string name)
        {
            string path = name[2..].Split('(')[0];
            return name.StartsWith("T:", StringComparison.Ordinal) ? path : path[..path.LastIndexOf('.')];
        }
    }

    // The template of every LoggerMessage in the assembly.
    private static IReadOnlyList<(string Where, string Text)> LogMessages() =>
    [
        .. typeof(HeaderCacheOptions).Assembly.GetTypes()
            .SelectMany(type => type.GetMethods(BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static | BindingFlags.DeclaredOnly))
            .Select(method => (Method: method, Message: method.GetCustomAttribute<LoggerMessageAttribute>()))
            .Where(logged => logged.Message is not null)
            .Select(logged => ($"event {logged.Message!.EventId} ({logged.Method.DeclaringType!.Name}.{logged.Method.Name})", logged.Message.Message)),
    ];

    // A Markdown file's paragraphs, and each table row on its own.
    private static IReadOnlyList<(string Where, string Text)> Paragraphs(string path) =>
    [
        .. Regex.Split(RepositoryFiles.Read(path), @"\n\s*\n")
            .SelectMany(paragraph => paragraph.TrimStart().StartsWith('|') ? paragraph.Split('\n') : [paragraph])
            .Select(Normalized)
            .Where(text => text.Length != 0)
            .Select(text => (path, text)),
    ];

    private static IEnumerable<string> Sentences(string text) => Regex.Split(text, @"(?<=[.;])\s+").Where(sentence => sentence.Length != 0);

    private static string Normalized(string text) => Whitespace().Replace(text, " ").Trim();

    [GeneratedRegex(@"\s+")]
    private static partial Regex Whitespace();

    [GeneratedRegex(@"HTTP/1\.1(\s+connections)?\s+only", RegexOptions.IgnoreCase)]
    private static partial Regex HttpOneOnly();

    // "connections that negotiate HTTP/2 are left to Kestrel", "HTTP/2 and HTTP/3 connections are left to Kestrel".
    [GeneratedRegex(@"(HTTP/2|\bh2c?\b)[\w\s/,]*\b(are|is|stay)\s+(left\s+)?(to|for)\s+Kestrel\b", RegexOptions.IgnoreCase)]
    private static partial Regex Http2LeftToKestrel();

    // "the connection was never read: HeaderCache is switched off, or TLS negotiated HTTP/2".
    [GeneratedRegex(@"(never|not)\s+read\b[^.]*HTTP/2", RegexOptions.IgnoreCase)]
    private static partial Regex Http2NeverRead();

    // "the HTTP/1.1 connections of ...": where both protocols are served, a text naming one names the other.
    [GeneratedRegex(@"HTTP/1\.1\s+connections?\b", RegexOptions.IgnoreCase)]
    private static partial Regex OneProtocolConnection();
}
