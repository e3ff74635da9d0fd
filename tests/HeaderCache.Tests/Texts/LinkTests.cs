using System.Text.RegularExpressions;

namespace HeaderCache.Tests.Texts;

/// <summary>Every link of the pages to a file of the repository finds it, and every link to a part of a page
/// (<c>page.md#part</c>, <c>#part</c>) finds a heading there, by the anchor GitHub makes of it: a heading renamed or a
/// file moved cannot leave a link pointing at nothing.</summary>
public sealed partial class LinkTests
{
    [Fact]
    public void Every_link_of_the_pages_finds_its_file_and_heading()
    {
        var links = Pages.Current.SelectMany(page => Links(RepositoryFiles.Read(page)).Select(link => (page, link))).ToList();

        // The pages link to each other dozens of times; fewer than 30 means the pattern stopped finding them.
        Assert.True(links.Count >= 30, $"only {links.Count} links found in the pages");
        string[] broken = [.. links.Where(l => !Resolves(l.page, l.link)).Select(l => $"{l.page}: {l.link}").Distinct()];
        Assert.True(broken.Length == 0, "links to nothing:" + Environment.NewLine + string.Join(Environment.NewLine, broken));
    }

    [Fact]
    public void Anchors_are_made_as_GitHub_makes_them_and_a_missing_one_is_found()
    {
        Assert.Equal(
            ["server-cpu-per-request-in-process-http11-code-6e3cbad", "at-the-current-code-issue-57s-goals-cost-from-the-first-request-every-client-long-values-http2-cpu", "http2", "http2-1"],
            Anchors("## Server CPU per request, in process (HTTP/1.1, code 6e3cbad)\n\n"
                + "## At the current code: issue 57's goals (cost from the first request, every client, long values, HTTP/2 CPU)\n"
                + "```\n# not a heading\n```\n## HTTP/2\n### `HTTP/2`\n"));
        Assert.Equal(
            ["design.md#folders-in-the-order-bytes-travel", "design.md#no-such-part", "no-such-page.md", "https://example.test/x"],
            Links("See [the folders](design.md#folders-in-the-order-bytes-travel), [a part](design.md#no-such-part), "
                + "[a page](no-such-page.md), [elsewhere](https://example.test/x) and `[code](not-a-link.md)`."));
        Assert.True(Resolves("docs/kestrel.md", "design.md#folders-in-the-order-bytes-travel"));
        Assert.False(Resolves("docs/kestrel.md", "design.md#no-such-part"));
        Assert.False(Resolves("docs/kestrel.md", "no-such-page.md"));
    }

    private static bool Resolves(string page, string link)
    {
        if (link.StartsWith("http://", StringComparison.Ordinal) || link.StartsWith("https://", StringComparison.Ordinal) || link.StartsWith("mailto:", StringComparison.Ordinal))
        {
            return true;
        }

        int hash = link.IndexOf('#', StringComparison.Ordinal);
        string path = hash < 0 ? link : link[..hash];
        string target = path.Length == 0 ? page : Path.GetRelativePath(RepositoryFiles.PathOf("."), Path.GetFullPath(Path.Combine(Path.GetDirectoryName(RepositoryFiles.PathOf(page))!, path)));
        string full = RepositoryFiles.PathOf(target);
        if (!File.Exists(full) && !Directory.Exists(full))
        {
            return false;
        }

        return hash < 0 || !target.EndsWith(".md", StringComparison.Ordinal) || Anchors(File.ReadAllText(full)).Contains(link[(hash + 1)..]);
    }

    // The targets of inline links and of reference definitions, outside code.
    private static IEnumerable<string> Links(string markdown)
    {
        string text = InlineCode().Replace(CodeBlock().Replace(markdown, ""), "");
        return InlineLink().Matches(text).Concat(Definition().Matches(text)).Select(match => match.Groups["target"].Value);
    }

    // GitHub's anchor for each heading: lower case, without punctuation but hyphens and underscores, spaces as hyphens,
    // and -1, -2, ... after a repeated one.
    private static List<string> Anchors(string markdown)
    {
        var anchors = new List<string>();
        foreach (Match heading in Heading().Matches(CodeBlock().Replace(markdown, "")))
        {
            string anchor = Punctuation().Replace(heading.Groups["text"].Value.Trim().ToLowerInvariant(), "").Replace(' ', '-');
            string unique = anchor;
            for (int n = 1; anchors.Contains(unique); n++)
            {
                unique = $"{anchor}-{n}";
            }

            anchors.Add(unique);
        }

        return anchors;
    }

    [GeneratedRegex(@"^```.*?^```", RegexOptions.Multiline | RegexOptions.Singleline)]
    private static partial Regex CodeBlock();

    [GeneratedRegex(@"`[^`\n]*`")]
    private static partial Regex InlineCode();

    [GeneratedRegex(@"\]\((?<target>[^)\s]+)\)")]
    private static partial Regex InlineLink();

    [GeneratedRegex(@"^\[[^\]]+\]:\s*(?<target>\S+)", RegexOptions.Multiline)]
    private static partial Regex Definition();

    [GeneratedRegex(@"^#{1,6} (?<text>.+)$", RegexOptions.Multiline)]
    private static partial Regex Heading();

    [GeneratedRegex(@"[^\p{L}\p{Nd}\-_ ]")]
    private static partial Regex Punctuation();
}
