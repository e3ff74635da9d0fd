using HeaderCache.Caching;

namespace HeaderCache.Tests.Caching;

/// <remarks>
/// The Vector128 and Vector256 paths are called on every machine: when a width is not hardware
/// accelerated, the <c>System.Runtime.Intrinsics</c> APIs fall back to a functionally identical
/// software implementation, so the paths must still agree with the scalar one. <see cref="AsciiHash.TryHash"/>
/// is checked too; it dispatches to the widest accelerated path of the machine running the tests.
/// </remarks>
public class AsciiHashTests
{
    private delegate bool HashPath(ReadOnlySpan<byte> bytes, uint seed, out uint hash);

    private static readonly (string Name, HashPath Hash)[] Paths =
    [
        ("Scalar", AsciiHash.TryHashScalar),
        ("Vector128", AsciiHash.TryHashVector128),
        ("Vector256", AsciiHash.TryHashVector256),
        ("TryHash", AsciiHash.TryHash),
    ];

    public static TheoryData<int> BoundaryLengths => new() { 0, 1, 15, 16, 31, 32, 33, 63, 64, 255, 256, 257 };

    [Fact]
    public void All_paths_agree_on_random_inputs_including_invalid_ones()
    {
        var random = new Random(0x5EED_0001);
        const int Slack = 64;
        byte[] buffer = new byte[300 + (2 * Slack)];
        int validCount = 0;
        int invalidCount = 0;
        var failures = new List<string>();

        for (int iteration = 0; iteration < 10_000 && failures.Count < 10; iteration++)
        {
            int length = random.Next(0, 301);
            int offset = random.Next(0, Slack);

            // The bytes around the slice are random (mostly invalid): they must not affect the result.
            random.NextBytes(buffer);
            Span<byte> bytes = buffer.AsSpan(offset, length);
            switch (random.Next(8))
            {
                case 0:
                    random.NextBytes(bytes); // almost always invalid
                    break;
                case 1 or 2 when length > 0:
                    TestBytes.FillValid(random, bytes);
                    bytes[random.Next(length)] = TestBytes.Invalid(random);
                    break;
                default:
                    TestBytes.FillValid(random, bytes);
                    break;
            }

            bool expectedValid = true;
            foreach (byte b in bytes)
            {
                expectedValid &= TestBytes.IsFieldByte(b);
            }

            uint seed = TestBytes.Seed(random);
            byte[] copy = bytes.ToArray(); // exact-size array: nothing readable past the end
            bool scalarValid = AsciiHash.TryHashScalar(copy, seed, out uint scalarHash);
            foreach ((string name, HashPath hash) in Paths)
            {
                bool validSlice = hash(bytes, seed, out uint sliceHash);
                bool validCopy = hash(copy, seed, out uint copyHash);
                if (validSlice != expectedValid || validCopy != expectedValid)
                {
                    failures.Add($"{name}: validity {validSlice}/{validCopy}, expected {expectedValid}, length {length}, iteration {iteration}");
                }
                else if (expectedValid && (sliceHash != scalarHash || copyHash != scalarHash))
                {
                    failures.Add($"{name}: hash {sliceHash:X8}/{copyHash:X8}, scalar {scalarHash:X8}, length {length}, iteration {iteration}");
                }
            }

            Assert.Equal(expectedValid, scalarValid);
            if (expectedValid)
            {
                validCount++;
            }
            else
            {
                invalidCount++;
            }
        }

        Assert.Empty(failures);

        // Both outcomes were exercised in quantity.
        Assert.InRange(validCount, 2_500, 10_000);
        Assert.InRange(invalidCount, 1_500, 10_000);
    }

    [Theory]
    [MemberData(nameof(BoundaryLengths))]
    public void Every_byte_value_at_every_position_is_judged_alike_on_every_path(int length)
    {
        var random = new Random(length);
        byte[] bytes = TestBytes.Valid(random, length);
        const uint Seed = 0xC0FFEE;
        var failures = new List<string>();

        Assert.True(AsciiHash.TryHashScalar(bytes, Seed, out uint baseHash));
        foreach ((string name, HashPath hash) in Paths)
        {
            Assert.True(hash(bytes, Seed, out uint pathHash), name);
            Assert.Equal(baseHash, pathHash);
        }

        for (int position = 0; position < length && failures.Count < 10; position++)
        {
            byte original = bytes[position];
            for (int value = 0; value < 256; value++)
            {
                bytes[position] = (byte)value;
                bool expectedValid = TestBytes.IsFieldByte(value);
                bool scalarValid = AsciiHash.TryHashScalar(bytes, Seed, out uint scalarHash);
                if (scalarValid != expectedValid)
                {
                    failures.Add($"Scalar: byte 0x{value:X2} at {position} valid={scalarValid}");
                }

                // Lanes are mixed by bijections and folded by bijections, so a single changed byte
                // always changes the hash: this is guaranteed by construction, not just likely.
                if (expectedValid && value != original && scalarHash == baseHash)
                {
                    failures.Add($"Scalar: byte 0x{value:X2} at {position} did not change the hash");
                }

                foreach ((string name, HashPath hash) in Paths)
                {
                    bool valid = hash(bytes, Seed, out uint pathHash);
                    if (valid != expectedValid)
                    {
                        failures.Add($"{name}: byte 0x{value:X2} at {position} valid={valid}");
                    }
                    else if (valid && pathHash != scalarHash)
                    {
                        failures.Add($"{name}: byte 0x{value:X2} at {position} hash {pathHash:X8}, scalar {scalarHash:X8}");
                    }
                }
            }

            bytes[position] = original;
        }

        Assert.Empty(failures);
    }

    [Fact]
    public void Empty_input_is_valid_and_hashes_alike_on_every_path()
    {
        Assert.True(AsciiHash.TryHashScalar([], 99, out uint expected));
        foreach ((string name, HashPath hash) in Paths)
        {
            Assert.True(hash([], 99, out uint actual), name);
            Assert.Equal(expected, actual);
        }
    }

    [Fact]
    public void IsValid_accepts_exactly_HTAB_SP_and_visible_ASCII()
    {
        for (int b = 0; b < 256; b++)
        {
            Assert.True(TestBytes.IsFieldByte(b) == AsciiHash.IsValid((byte)b), $"byte 0x{b:X2}");
        }
    }

    [Theory]
    [InlineData("")]
    [InlineData("a")]
    [InlineData("text/html")]
    [InlineData("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36")]
    public void Different_seeds_give_different_hashes(string text)
    {
        byte[] bytes = TestBytes.Bytes(text);
        var random = new Random(0x5EED_0002);
        var consecutive = new HashSet<uint>();
        var scattered = new HashSet<uint>();
        for (uint seed = 0; seed < 1000; seed++)
        {
            Assert.True(AsciiHash.TryHash(bytes, seed, out uint hash));
            consecutive.Add(hash);
            Assert.True(AsciiHash.TryHash(bytes, TestBytes.Seed(random), out hash));
            scattered.Add(hash);
        }

        // 1000 random 32-bit values collide with probability about 1e-4; allow a handful anyway.
        Assert.InRange(consecutive.Count, 995, 1000);
        Assert.InRange(scattered.Count, 995, 1000);
    }

    [Fact]
    public void Distinct_inputs_rarely_collide_under_one_seed()
    {
        var random = new Random(0x5EED_0003);
        var inputs = new HashSet<string>(StringComparer.Ordinal);
        while (inputs.Count < 10_000)
        {
            inputs.Add(TestBytes.Text(TestBytes.Valid(random, random.Next(0, 80))));
        }

        var hashes = new HashSet<uint>();
        foreach (string input in inputs)
        {
            Assert.True(AsciiHash.TryHash(TestBytes.Bytes(input), 12345, out uint hash));
            hashes.Add(hash);
        }

        // Expected collisions among 10,000 random 32-bit values: about 0.01.
        Assert.InRange(hashes.Count, 9_990, 10_000);
    }

    [Fact]
    public void Length_is_part_of_the_hash()
    {
        // The last block is padded with SP, so these differ only by their length.
        string[] inputs = ["", " ", "  ", "a", "a ", "a  ", "text/html", "text/html "];
        foreach ((string name, HashPath hash) in Paths)
        {
            var seen = new Dictionary<uint, string>();
            foreach (string input in inputs)
            {
                Assert.True(hash(TestBytes.Bytes(input), 7, out uint value), name);
                Assert.True(seen.TryAdd(value, input), $"{name}: \"{input}\" hashes like \"{seen.GetValueOrDefault(value)}\"");
            }
        }
    }

    [Fact]
    public void Runs_of_spaces_of_every_length_up_to_300_hash_apart()
    {
        byte[] spaces = new byte[300];
        spaces.AsSpan().Fill((byte)' ');
        var seen = new HashSet<uint>();
        for (int length = 0; length <= spaces.Length; length++)
        {
            Assert.True(AsciiHash.TryHashScalar(spaces.AsSpan(0, length), 3, out uint hash));
            Assert.True(seen.Add(hash), $"length {length}");
        }
    }

    [Fact]
    public void Hash_depends_only_on_bytes_and_seed()
    {
        byte[] bytes = TestBytes.Bytes("gzip, deflate, br, zstd");
        Assert.True(AsciiHash.TryHash(bytes, 1, out uint first));
        Assert.True(AsciiHash.TryHash(bytes.ToArray(), 1, out uint second));
        Assert.True(AsciiHash.TryHash(bytes, 2, out uint otherSeed));
        Assert.Equal(first, second);
        Assert.NotEqual(first, otherSeed);
    }
}
