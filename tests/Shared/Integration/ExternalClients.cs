using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;

namespace HeaderCache.Testing;

/// <summary>
/// HTTP/2 clients outside .NET, run as processes with their script inline (<c>node -e</c>, <c>python3 -c</c>, so that
/// tests running at the same time share no file), and whether each runs here.
/// </summary>
internal static class ExternalClients
{
    private static readonly Lazy<bool> NodeRuns = new(() => Runs("node", "--version"));

    // The first python3 that imports h2: Debian's python3-h2 lives with /usr/bin/python3, which another python3 on the
    // PATH may hide.
    private static readonly Lazy<string?> PythonH2 = new(() => Array.Find(["python3", "/usr/bin/python3"], python => Runs(python, "-c", "import h2")));

    public static bool HasNode => NodeRuns.Value;

    public static bool HasPythonH2 => PythonH2.Value is not null;

    /// <summary>What Node printed running <paramref name="script"/>, the port its first argument (<c>process.argv[1]</c>).</summary>
    public static Task<string> NodeAsync(string script, int port) => RunCheckedAsync("node", "-e", script, port.ToString(CultureInfo.InvariantCulture));

    /// <summary>What a python3 with h2 printed running <paramref name="script"/>, the port its first argument (<c>sys.argv[1]</c>).</summary>
    public static Task<string> PythonH2Async(string script, int port) =>
        RunCheckedAsync(PythonH2.Value ?? throw new InvalidOperationException("no python3 with h2"), "-c", script, port.ToString(CultureInfo.InvariantCulture));

    /// <summary>Runs <paramref name="file"/> to its end, or kills it after 30 s: its exit code and what it printed.</summary>
    public static async Task<(int Exit, string Stdout, string Stderr)> RunAsync(string file, params string[] arguments)
    {
        using Process process = Process.Start(new ProcessStartInfo(file, arguments) { RedirectStandardOutput = true, RedirectStandardError = true })!;
        Task<string> stdout = process.StandardOutput.ReadToEndAsync();
        Task<string> stderr = process.StandardError.ReadToEndAsync();
        try
        {
            await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(30));
        }
        catch (TimeoutException)
        {
            process.Kill(entireProcessTree: true);
            throw;
        }

        return (process.ExitCode, await stdout, await stderr);
    }

    private static async Task<string> RunCheckedAsync(string file, params string[] arguments)
    {
        (int exit, string stdout, string stderr) = await RunAsync(file, arguments);
        Assert.True(exit == 0, $"{file} exited with {exit}: {stderr}");
        return stdout;
    }

    private static bool Runs(string file, params string[] arguments)
    {
        try
        {
            using Process process = Process.Start(new ProcessStartInfo(file, arguments) { RedirectStandardOutput = true, RedirectStandardError = true })!;
            process.WaitForExit(10_000);
            return process.HasExited && process.ExitCode == 0;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            // Not installed under that name.
            return false;
        }
    }
}

/// <summary>
/// A fact that is skipped where an external client is missing. <c>dotnet test</c> prints a skip's reason only at
/// detailed verbosity, so a skipped test's name says it too: "<c>Test (skipped: no node ... apt-get install nodejs)</c>".
/// </summary>
internal abstract class ExternalClientFactAttribute : FactAttribute
{
    protected ExternalClientFactAttribute(bool runs, string missing, string test)
    {
        if (!runs)
        {
            Skip = missing;
            DisplayName = $"{test} (skipped: {missing})";
        }
    }
}

/// <summary>A fact that is skipped, saying why, where <c>node</c> does not run (xunit 2 decides skips before a test runs).</summary>
internal sealed class NodeFactAttribute([CallerMemberName] string test = "")
    : ExternalClientFactAttribute(ExternalClients.HasNode, "no node on the PATH here; install it, e.g. apt-get install nodejs", test);

/// <summary>A fact that is skipped, saying why, where no python3 can import h2.</summary>
internal sealed class PythonH2FactAttribute([CallerMemberName] string test = "")
    : ExternalClientFactAttribute(ExternalClients.HasPythonH2, "no python3 that imports h2 here; install it, e.g. apt-get install python3-h2 (or pip install h2)", test);
