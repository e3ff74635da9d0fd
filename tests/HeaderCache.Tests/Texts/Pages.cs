namespace HeaderCache.Tests.Texts;

/// <summary>The pages that describe the library as it is. The raw results under docs/results keep the names and links of
/// their day, so they are not among them.</summary>
internal static class Pages
{
    public static readonly string[] Current =
    [
        "README.md", "CHANGELOG.md", "src/HeaderCache/README.md", "traffic/README.md",
        "docs/design.md", "docs/eviction.md", "docs/fuzzing.md", "docs/hardening.md", "docs/kestrel.md", "docs/results.md", "docs/security.md",
        "benchmarks/browser/README.md", "benchmarks/clients/README.md", "benchmarks/gateway/README.md", "benchmarks/h2/README.md", "benchmarks/wrk/README.md",
    ];
}
