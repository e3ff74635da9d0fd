using System.Reflection;
using System.Text.RegularExpressions;
using HeaderCache.Diagnostics;
using HeaderCache.Fields;
using HeaderCache.Http1;
using HeaderCache.Requests;
using Microsoft.AspNetCore.Http;

namespace HeaderCache.Tests.Caching;

public class FieldNamesTests
{
    // The lists FieldNames classifies names by, which nothing in the library hands out: read from the fields that hold them.
    private static readonly string[] Kept = List("KeptForKestrel");
    private static readonly string[] Known = List("Known");

    // DESIGN.md 2.3: headers Kestrel itself acts on always stay in the bytes.
    private static readonly string[] MustBeKept =
    [
        "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Expect", "Upgrade", "TE",
    ];

    private static readonly string[] Unknown =
    [
        "", "sec-ch-ua", "Sec-Fetch-Mode", "X-Forwarded-For", "x-request-id", "Priority", "Accept-Datetime",
        "Hosts", "Cookies", "Accepts", "Content", "Accept-", "Transfer_Encoding",
        "Content Length", "Content-Length:", " Host", "Host ", "Te\t", new string('a', 1000),
    ];

    public static TheoryData<string> KeptNames() => [.. Kept];

    public static TheoryData<string> KnownNames() => [.. Known];

    [Fact]
    public void Every_header_Kestrel_acts_on_is_kept()
    {
        foreach (string name in MustBeKept)
        {
            Assert.Contains(name, Kept);
        }
    }

    [Theory]
    [MemberData(nameof(KeptNames))]
    public void IsKeptForKestrel_matches_a_kept_name_in_any_casing(string name)
    {
        var random = new Random(name.Length);
        Assert.True(IsKeptForKestrel(TestBytes.Bytes(name)));
        Assert.True(IsKeptForKestrel(TestBytes.Bytes(name.ToLowerInvariant())));
        Assert.True(IsKeptForKestrel(TestBytes.Bytes(name.ToUpperInvariant())));
        for (int i = 0; i < 20; i++)
        {
            string cased = TestBytes.RandomCasing(random, name);
            Assert.True(IsKeptForKestrel(TestBytes.Bytes(cased)), cased);
            Assert.Null(GetKnownName(TestBytes.Bytes(cased)));
        }
    }

    [Theory]
    [MemberData(nameof(KeptNames))]
    public void IsKeptForKestrel_refuses_near_misses_of_a_kept_name(string name)
    {
        foreach (string nearMiss in NearMisses(name))
        {
            Assert.False(IsKeptForKestrel(TestBytes.Bytes(nearMiss)), nearMiss);
        }
    }

    [Theory]
    [MemberData(nameof(KnownNames))]
    public void GetKnownName_returns_the_canonical_constant_in_any_casing(string name)
    {
        // Theory data may be serialized, so take the table's own instance to check identity.
        string constant = Assert.Single(Known, n => n == name);
        var random = new Random(name.Length);
        Assert.Same(constant, GetKnownName(TestBytes.Bytes(name)));
        Assert.Same(constant, GetKnownName(TestBytes.Bytes(name.ToLowerInvariant())));
        Assert.Same(constant, GetKnownName(TestBytes.Bytes(name.ToUpperInvariant())));
        for (int i = 0; i < 20; i++)
        {
            string cased = TestBytes.RandomCasing(random, name);
            Assert.Same(constant, GetKnownName(TestBytes.Bytes(cased)));
            Assert.False(IsKeptForKestrel(TestBytes.Bytes(cased)), cased);
        }
    }

    [Theory]
    [MemberData(nameof(KnownNames))]
    public void GetKnownName_refuses_near_misses_of_a_known_name(string name)
    {
        foreach (string nearMiss in NearMisses(name))
        {
            string? found = GetKnownName(TestBytes.Bytes(nearMiss));

            // A near miss of one known name may be another known name ("If-Range" less a letter is not one,
            // but the check must allow it in principle).
            Assert.True(found is null || Known.Contains(nearMiss, StringComparer.OrdinalIgnoreCase), nearMiss);
        }
    }

    [Fact]
    public void Unknown_names_are_neither_kept_nor_known()
    {
        foreach (string name in Unknown)
        {
            Assert.False(IsKeptForKestrel(TestBytes.Bytes(name)), name);
            Assert.Null(GetKnownName(TestBytes.Bytes(name)));
        }
    }

    [Fact]
    public void Non_ASCII_bytes_never_match()
    {
        // 0xC8 is 'H' | 0x80; the UTF-8 Kelvin sign folds to 'k' in Unicode but is not ASCII.
        Assert.False(IsKeptForKestrel([0xC8, (byte)'o', (byte)'s', (byte)'t']));
        Assert.Null(GetKnownName([(byte)'V', (byte)'i', 0xE1]));
        Assert.False(IsKeptForKestrel([(byte)'K', (byte)'e', (byte)'e', (byte)'p', (byte)'-', (byte)'A', (byte)'l', (byte)'i', (byte)'v', 0xC5]));
        Assert.Null(GetKnownName("\u212Aookie"u8)); // Kelvin sign, 3 bytes
    }

    [Fact]
    public void No_name_is_both_kept_and_known_and_none_is_listed_twice()
    {
        Assert.Empty(Kept.Intersect(Known, StringComparer.OrdinalIgnoreCase));
        Assert.Equal(Kept.Length, Kept.Distinct(StringComparer.OrdinalIgnoreCase).Count());
        Assert.Equal(Known.Length, Known.Distinct(StringComparer.OrdinalIgnoreCase).Count());
        foreach (string kept in Kept)
        {
            Assert.Null(GetKnownName(TestBytes.Bytes(kept)));
        }

        foreach (string known in Known)
        {
            Assert.False(IsKeptForKestrel(TestBytes.Bytes(known)), known);
        }
    }

    [Fact]
    public void Every_listed_name_is_an_HTTP_token()
    {
        const string TokenChars = "!#$%&'*+-.^_`|~";
        foreach (string name in Kept.Concat(Known))
        {
            Assert.NotEmpty(name);
            Assert.All(name, c => Assert.True(char.IsAsciiLetterOrDigit(c) || TokenChars.Contains(c, StringComparison.Ordinal), name));
        }
    }

    /// <summary>
    /// The contract of the known list: Kestrel itself reports each of these names with the canonical
    /// constant whatever casing was sent, so re-injecting under the constant changes nothing the
    /// application sees. Checked against the running Kestrel through its request header collection.
    /// </summary>
    [Theory]
    [MemberData(nameof(KnownNames))]
    public void Kestrel_reports_each_known_name_as_the_canonical_constant(string name)
    {
        var random = new Random(name.Length + 1);
        foreach (string sent in new[] { name.ToLowerInvariant(), name.ToUpperInvariant(), TestBytes.RandomCasing(random, name) })
        {
            Assert.Equal(name, KestrelReportedName(sent));
        }
    }

    [Fact]
    public void Kestrel_keeps_the_casing_of_a_name_it_does_not_know()
    {
        // Sanity check of the probe used above: unknown names keep the casing of the line.
        Assert.Equal("sec-ch-ua", KestrelReportedName("sec-ch-ua"));
        Assert.Equal("x-Forwarded-FOR", KestrelReportedName("x-Forwarded-FOR"));
    }

    private delegate void AppendHeader(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, bool checkForNewlineChars);

    /// <summary>The name Kestrel's HTTP/1.1 request header collection reports for a parsed header line.</summary>
    private static string KestrelReportedName(string sentName)
    {
        Type headersType = typeof(Microsoft.AspNetCore.Server.Kestrel.Core.KestrelServerOptions).Assembly
            .GetType("Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpRequestHeaders", throwOnError: true)!;
        object headers = Activator.CreateInstance(headersType, false, null)!;
        MethodInfo append = headersType.GetMethod(
            "Append",
            BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic,
            [typeof(ReadOnlySpan<byte>), typeof(ReadOnlySpan<byte>), typeof(bool)])!;
        var appendHeader = (AppendHeader)Delegate.CreateDelegate(typeof(AppendHeader), headers, append);

        appendHeader(TestBytes.Bytes(sentName), "1"u8, checkForNewlineChars: false);
        return Assert.Single(((IHeaderDictionary)headers).Keys);
    }

    [Fact]
    public void The_wrk_bare_profiles_keep_exactly_the_kept_names()
    {
        // compare.sh --bare measures what the lines HeaderCache may take cost Kestrel alone: its heads keep the names
        // this table keeps, listed again in lib.sh's awk, which cannot read the table.
        string script = File.ReadAllText(FindUpward(Path.Combine("benchmarks", "lib.sh")));
        Match names = Regex.Match(script, @"name ~ /\^\(([a-z|-]+)\)\$/");
        Assert.True(names.Success, "lib.sh's bare_profiles has no list of kept names");
        Assert.Equal(
            Kept.Select(n => n.ToLowerInvariant()).Order(StringComparer.Ordinal),
            names.Groups[1].Value.Split('|').Order(StringComparer.Ordinal));
    }

    private static string FindUpward(string relativePath)
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir is not null; dir = dir.Parent)
        {
            string candidate = Path.Combine(dir.FullName, relativePath);
            if (File.Exists(candidate))
            {
                return candidate;
            }
        }

        throw new FileNotFoundException($"No '{relativePath}' above '{AppContext.BaseDirectory}'.");
    }

    /// <summary>
    /// Names that must not match <paramref name="name"/>: one character shorter or longer, a changed
    /// character, and every character XOR 0x20 where that is not a letter's other case (a naive
    /// "OR 0x20" case-insensitive compare would match '-' with CR, for example).
    /// </summary>
    private static IEnumerable<string> NearMisses(string name)
    {
        yield return name[..^1];
        yield return name[1..];
        yield return name + "s";
        yield return name + "-";
        yield return name + " ";
        yield return "X" + name;
        for (int i = 0; i < name.Length; i++)
        {
            char c = name[i];
            char flipped = (char)(c ^ 0x20);
            if (!char.IsAsciiLetter(c))
            {
                yield return string.Concat(name.AsSpan(0, i), [flipped], name.AsSpan(i + 1));
            }

            char other = char.ToLowerInvariant(c) == 'q' ? 'x' : 'q';
            yield return string.Concat(name.AsSpan(0, i), [other], name.AsSpan(i + 1));
        }
    }

    private static string[] List(string field) =>
        (string[])typeof(FieldNames).GetField(field, BindingFlags.Static | BindingFlags.NonPublic)!.GetValue(null)!;

    private static bool IsKeptForKestrel(ReadOnlySpan<byte> name) => FieldNames.Classify(name) == FieldNames.Kept;

    private static string? GetKnownName(ReadOnlySpan<byte> name) => FieldNames.Classify(name) is >= 0 and var index ? FieldNames.KnownName(index) : null;
}
