using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Hosting;

/// <summary>
/// The Kestrel HeaderCache was compared with and the Kestrel it runs on, as versions of the
/// <c>Microsoft.AspNetCore.Server.Kestrel.Core</c> assembly (major.minor: ASP.NET Core keeps the assembly version at
/// <c>major.minor.0.0</c> through its patches).
/// </summary>
/// <remarks>
/// HeaderCache's readers follow the HTTP/1.1 parser and the HTTP/2 frame loop and HPACK decoder of one Kestrel. On
/// another one a request that Kestrel now rejects could be accepted after HeaderCache took the offending field out, so
/// connections pass through unless <see cref="HeaderCacheOptions.AllowUntestedKestrelVersion"/> says otherwise. Registered in dependency injection so that
/// a test can put another running version in place.
/// </remarks>
/// <param name="Tested">The Kestrel this build of HeaderCache references, which its differential suite runs against.</param>
/// <param name="Running">The Kestrel loaded in this process.</param>
internal sealed record KestrelVersions(Version Tested, Version Running)
{
    /// <summary>The assembly both versions are of.</summary>
    public const string AssemblyName = "Microsoft.AspNetCore.Server.Kestrel.Core";

    /// <summary>The versions of this process: the reference compiled into HeaderCache, and the assembly loaded.</summary>
    public static KestrelVersions Current { get; } = new(Referenced(), typeof(KestrelServerOptions).Assembly.GetName().Version!);

    /// <summary>Whether the running Kestrel has the major and minor version HeaderCache was tested with.</summary>
    public bool Match => Tested.Major == Running.Major && Tested.Minor == Running.Minor;

    /// <summary>A version as the logs and the README name it.</summary>
    public static string Name(Version version) => $"{version.Major}.{version.Minor}";

    // The compiler records the version of every referenced assembly in HeaderCache's own metadata: that is the Kestrel
    // the build (and so the test suite, which runs on that same shared framework) used, with nothing to keep in step by hand.
    private static Version Referenced() =>
        typeof(KestrelVersions).Assembly.GetReferencedAssemblies().First(reference => reference.Name == AssemblyName).Version!;
}
