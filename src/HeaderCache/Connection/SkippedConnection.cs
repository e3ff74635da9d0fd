namespace HeaderCache.Connection;

/// <summary>The feature of a connection HeaderCache does not read at all; one shared instance per reason.</summary>
internal sealed class SkippedConnection : IHeaderStringCacheFeature
{
    /// <summary>HeaderCache is switched off (<c>Enabled</c> is false).</summary>
    public static readonly SkippedConnection Disabled = new("disabled");

    /// <summary>Kestrel's major or minor version is not the one HeaderCache was tested with, and
    /// <c>AllowUntestedKestrelVersion</c> is off.</summary>
    public static readonly SkippedConnection UntestedKestrel = new("untested_kestrel");

    private SkippedConnection(string reason) => InactiveReason = reason;

    /// <inheritdoc />
    public bool IsActive => false;

    /// <inheritdoc />
    public string InactiveReason { get; }

    /// <inheritdoc />
    public long Hits => 0;

    /// <inheritdoc />
    public long Misses => 0;
}
