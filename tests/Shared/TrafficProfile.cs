using System.Globalization;
using System.Text;
using System.Text.RegularExpressions;

namespace HeaderCache.Traffic;

/// <summary>
/// One <c>traffic/*.http</c> file: the request heads one keep-alive connection sends, in order, with
/// placeholders still in them (format in <c>traffic/README.md</c>). Shared by tests and benchmarks.
/// </summary>
/// <remarks>
/// Request <c>i</c> of a connection is head <c>i % Count</c> of the file, rendered with CRLF line ends
/// and placeholders filled from the connection's seed:
/// <list type="bullet">
/// <item><c>${uuid}</c>, <c>${hex16}</c>, <c>${hex32}</c>: fresh random values for every occurrence;</item>
/// <item><c>${n}</c>: the per-connection request counter, that is <c>i</c>;</item>
/// <item><c>${ip}</c>: one of 16 client addresses, picked once per request (every <c>${ip}</c> of that
/// request gets the same one, as a proxy's X-Real-IP and X-Forwarded-For would);</item>
/// <item><c>${cookie}</c>: one of 8 session cookies of 60 to 180 bytes, picked once per request.</item>
/// </list>
/// The two pools depend on the seed only, and request <c>i</c> depends only on the seed and <c>i</c>,
/// so any request can be rendered again, in any order, with the same bytes.
/// </remarks>
internal sealed partial class TrafficProfile
{
    private const int AddressCount = 16;
    private const int CookieCount = 8;

    private TrafficProfile(string name, IReadOnlyList<string> heads)
    {
        Name = name;
        Heads = heads;
    }

    /// <summary>The file name without extension, e.g. <c>chrome</c>.</summary>
    public string Name { get; }

    /// <summary>The request heads of the file with LF line ends and placeholders, without the empty line.</summary>
    public IReadOnlyList<string> Heads { get; }

    /// <summary>The number of request heads in the file.</summary>
    public int Count => Heads.Count;

    /// <summary>The folder holding the profiles: the first <c>traffic</c> folder with a <c>chrome.http</c>
    /// found upward from <see cref="AppContext.BaseDirectory"/>, then from the current directory.</summary>
    public static string FindDirectory()
    {
        foreach (string start in new[] { AppContext.BaseDirectory, Environment.CurrentDirectory })
        {
            for (var dir = new DirectoryInfo(start); dir is not null; dir = dir.Parent)
            {
                string candidate = Path.Combine(dir.FullName, "traffic");
                if (File.Exists(Path.Combine(candidate, "chrome.http")))
                {
                    return candidate;
                }
            }
        }

        throw new DirectoryNotFoundException(
            $"No 'traffic' folder with chrome.http above '{AppContext.BaseDirectory}' or '{Environment.CurrentDirectory}'.");
    }

    /// <summary>Loads <c>{name}.http</c> from <see cref="FindDirectory"/>.</summary>
    public static TrafficProfile Load(string name) => LoadFile(Path.Combine(FindDirectory(), name + ".http"));

    /// <summary>Loads every <c>*.http</c> file of <see cref="FindDirectory"/>, sorted by name.</summary>
    public static IReadOnlyList<TrafficProfile> LoadAll() =>
        Directory.GetFiles(FindDirectory(), "*.http").Order(StringComparer.Ordinal).Select(LoadFile).ToArray();

    /// <summary>Loads one <c>*.http</c> file.</summary>
    public static TrafficProfile LoadFile(string path)
    {
        var heads = new List<string>();
        var lines = new List<string>();
        foreach (string line in File.ReadAllText(path).ReplaceLineEndings("\n").Split('\n'))
        {
            if (line.Length > 0)
            {
                lines.Add(line);
            }
            else if (lines.Count > 0)
            {
                heads.Add(string.Join('\n', lines));
                lines.Clear();
            }
        }

        if (lines.Count > 0)
        {
            throw new InvalidDataException($"{path}: the last request head does not end with an empty line.");
        }

        if (heads.Count == 0)
        {
            throw new InvalidDataException($"{path}: no request head.");
        }

        return new TrafficProfile(Path.GetFileNameWithoutExtension(path), heads);
    }

    /// <summary>The placeholder values of one simulated connection.</summary>
    public Connection Connect(int seed) => new(this, seed);

    /// <inheritdoc/>
    public override string ToString() => Name;

    [GeneratedRegex(@"\$\{(\w+)\}")]
    private static partial Regex Placeholder();

    /// <summary>One keep-alive connection replaying the profile, with its own address and cookie pools.</summary>
    internal sealed class Connection
    {
        private const string CookieAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

        private readonly TrafficProfile _profile;

        internal Connection(TrafficProfile profile, int seed)
        {
            _profile = profile;
            Seed = seed;
            var random = new Random(seed);
            Addresses = MakeAddresses(random);
            Cookies = MakeCookies(random);
        }

        /// <summary>The seed of every random value of this connection.</summary>
        public int Seed { get; }

        /// <summary>The 16 client addresses <c>${ip}</c> picks from.</summary>
        public IReadOnlyList<string> Addresses { get; }

        /// <summary>The 8 session cookies <c>${cookie}</c> picks from.</summary>
        public IReadOnlyList<string> Cookies { get; }

        /// <summary>Request <paramref name="i"/> (0-based) of this connection as text with CRLF line ends,
        /// ending with the empty line.</summary>
        public string RenderText(int i)
        {
            ArgumentOutOfRangeException.ThrowIfNegative(i);
            var random = new Random(unchecked((Seed * 1_000_003) + i));
            string ip = Addresses[random.Next(Addresses.Count)];
            string cookie = Cookies[random.Next(Cookies.Count)];
            string head = Placeholder().Replace(_profile.Heads[i % _profile.Count], match => match.Groups[1].Value switch
            {
                "uuid" => Uuid(random),
                "hex16" => Hex(random, 16),
                "hex32" => Hex(random, 32),
                "n" => i.ToString(CultureInfo.InvariantCulture),
                "ip" => ip,
                "cookie" => cookie,
                _ => throw new InvalidDataException($"{_profile.Name}: unknown placeholder {match.Value}."),
            });
            return head.Replace("\n", "\r\n", StringComparison.Ordinal) + "\r\n\r\n";
        }

        /// <summary>Request <paramref name="i"/> (0-based) of this connection as wire bytes.</summary>
        public byte[] Render(int i) => Encoding.UTF8.GetBytes(RenderText(i));

        private static string[] MakeAddresses(Random random)
        {
            var addresses = new HashSet<string>(StringComparer.Ordinal);
            while (addresses.Count < AddressCount)
            {
                addresses.Add(string.Create(CultureInfo.InvariantCulture,
                    $"{random.Next(1, 224)}.{random.Next(256)}.{random.Next(256)}.{random.Next(1, 255)}"));
            }

            return [.. addresses];
        }

        private static string[] MakeCookies(Random random)
        {
            var cookies = new string[CookieCount];
            for (int c = 0; c < cookies.Length; c++)
            {
                const string prefix = "session=";
                int length = random.Next(60, 181);
                cookies[c] = string.Create(length, random, static (chars, rng) =>
                {
                    prefix.CopyTo(chars);
                    for (int k = prefix.Length; k < chars.Length; k++)
                    {
                        chars[k] = CookieAlphabet[rng.Next(CookieAlphabet.Length)];
                    }
                });
            }

            return cookies;
        }

        private static string Hex(Random random, int digits)
        {
            Span<byte> bytes = stackalloc byte[digits / 2];
            random.NextBytes(bytes);
            return Convert.ToHexStringLower(bytes);
        }

        private static string Uuid(Random random)
        {
            Span<byte> bytes = stackalloc byte[16];
            random.NextBytes(bytes);
            bytes[7] = (byte)((bytes[7] & 0x0F) | 0x40); // version 4 (Guid stores this group little-endian)
            bytes[8] = (byte)((bytes[8] & 0x3F) | 0x80); // RFC 4122 variant
            return new Guid(bytes).ToString("D");
        }
    }
}
