using System.Diagnostics;
using System.Net;

namespace HeaderCache.Tests.Http2;

/// <summary>HTTP/2 clients outside .NET, run as processes: Node's <c>http2</c> module (HPACK with incremental indexing,
/// so later requests refer to the dynamic table).</summary>
internal static class ExternalClients
{
    // Sequential requests, then a burst of concurrent streams, on one session; prints what each answered, in request
    // order, as JSON.
    private const string NodeScript = """
        const http2 = require('http2');
        const port = process.argv[1];
        const session = http2.connect('http://127.0.0.1:' + port);
        function request(i) {
          return new Promise((resolve, reject) => {
            const headers = {
              ':method': i % 5 === 4 ? 'POST' : 'GET', ':path': '/node/' + i + '?k=' + (i % 3), ':authority': 'localhost',
              'user-agent': 'node-h2-test/1.0', 'accept': 'text/html,*/*;q=0.8', 'accept-language': 'en-GB,en;q=0.7',
              'x-client-kind': 'node', 'x-toggle': 'v' + (i % 2), 'sec-fetch-site': 'same-origin',
              'cookie': 'session=s' + (i % 2) + '; theme=dark', 'x-twice': ['one', 'two'],
            };
            const stream = session.request(headers);
            let status = 0, body = '';
            stream.on('response', h => { status = h[':status']; });
            stream.setEncoding('utf8');
            stream.on('data', d => { body += d; });
            stream.on('end', () => resolve(status + '\n' + body));
            stream.on('error', reject);
            stream.end(i % 5 === 4 ? 'payload-' + i : undefined);
          });
        }
        (async () => {
          const answers = [];
          for (let i = 0; i < 6; i++) answers.push(await request(i));
          answers.push(...await Promise.all([6, 7, 8, 9, 10, 11, 12, 13].map(request)));
          for (let i = 14; i < 18; i++) answers.push(await request(i));
          session.close();
          process.stdout.write(JSON.stringify(answers));
        })().catch(e => { console.error(e); process.exit(1); });
        """;

    /// <summary>Whether <paramref name="tool"/> runs here.</summary>
    public static bool Has(string tool)
    {
        try
        {
            using Process process = Process.Start(new ProcessStartInfo(tool, "--version") { RedirectStandardOutput = true, RedirectStandardError = true })!;
            process.WaitForExit(10_000);
            return process.ExitCode == 0;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return false;
        }
    }

    /// <summary>Node's answers, one per request.</summary>
    public static async Task<List<string>> NodeAsync(IPEndPoint endPoint)
    {
        string output = await RunAsync("node", ["-e", NodeScript, endPoint.Port.ToString(System.Globalization.CultureInfo.InvariantCulture)]);
        return System.Text.Json.JsonSerializer.Deserialize<List<string>>(output)!;
    }

    private static async Task<string> RunAsync(string tool, IEnumerable<string> arguments)
    {
        var start = new ProcessStartInfo(tool) { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        using Process process = Process.Start(start)!;
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        Task<string> output = process.StandardOutput.ReadToEndAsync(deadline.Token);
        string error = await process.StandardError.ReadToEndAsync(deadline.Token);
        await process.WaitForExitAsync(deadline.Token);
        Assert.True(process.ExitCode == 0, $"{tool} exited with {process.ExitCode}: {error}");
        return await output;
    }
}
