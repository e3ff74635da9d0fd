using System.Buffers.Binary;
using System.Text;
using HeaderCache.Fields;
using HeaderCache.H2Client;

namespace HeaderCache.Tests.Http2Fuzzing;

/// <summary>How a generated client encodes its header blocks.</summary>
internal enum HpackPolicy
{
    /// <summary>Chrome's: every field indexed once it is in the table, new ones with incremental indexing, Huffman, the cookie in crumbs.</summary>
    Chrome,

    /// <summary>.NET HttpClient's (and so grpc-dotnet's and YARP's): literals without indexing, names by static index, raw strings, one cookie.</summary>
    HttpClient,

    /// <summary>Any representation for any field, Huffman or not, names by index or not.</summary>
    Random,
}

/// <summary>
/// Makes the bytes of whole HTTP/2 connections from a seed: a preface, SETTINGS, then requests in batches on streams
/// 1, 3, 5..., the same header sets again and again (so that a cache would hit), encoded with one <see cref="HpackPolicy"/>
/// per connection, with bodies, trailers, CONTINUATION, padding, PRIORITY and the other frames a client sends; sync
/// points (<see cref="Http2Fuzzing.SyncPing"/>) between batches. Mutated connections are the same with one to four
/// faults from <see cref="Fault"/>. Framing always holds (every frame's length is its payload's) except in a tail
/// after the last sync point, so that the client can find its own frames and sync points again
/// (<see cref="ClientScript"/>).
/// </summary>
internal sealed class Http2CaseGenerator(int seed)
{
    /// <summary>The faults a mutated connection carries.</summary>
    internal enum Fault
    {
        IndexOutOfRange,
        IndexZero,
        InvalidHuffman,
        SizeUpdateAtStart,
        SizeUpdateAfterField,
        SizeUpdatesEvictAll,
        SizeUpdateTooLarge,
        UppercaseName,
        ConnectionSpecific,
        PseudoAfterRegular,
        DuplicatePseudo,
        UnknownPseudo,
        MissingPseudo,
        EmptyName,
        BadValueBytes,
        LongValue,
        TooManyFields,
        OversizeBlock,
        OverlongInteger,
        ContentLengthMismatch,
        FlippedBlockByte,
        BadPadding,
        SelfDependency,
        ContinuationOnOtherStream,
        FrameInsideBlock,
        MissingEndHeaders,
        EvenStreamId,
        ReusedStreamId,
        DataOnClosedStream,
        WindowUpdateZero,
        WindowOverflow,
        RstOnIdleStream,
        BadPing,
        BadSettings,
        FrameTooLarge,
        PseudoInTrailers,
        TrailersWithoutEndStream,
        PushPromise,
        RefusedStream,
        TruncatedTail,
        TinyTable,
    }

    private static readonly string[] Paths = ["/", "/index.html", "/app.js?v=3", "/style.css", "/api/items?page=2", "/img/logo.png", "/a/b/c", "/search?q=h%C3%A9"];

    private static readonly (string Name, string Value)[][] BrowserSets =
    [
        [
            ("sec-ch-ua", "\"Chromium\";v=\"130\", \"Google Chrome\";v=\"130\", \"Not?A_Brand\";v=\"99\""), ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", "\"Windows\""), ("upgrade-insecure-requests", "1"),
            ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"),
            ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
            ("sec-fetch-site", "none"), ("sec-fetch-mode", "navigate"), ("sec-fetch-user", "?1"), ("sec-fetch-dest", "document"),
            ("accept-encoding", "gzip, deflate, br, zstd"), ("accept-language", "en-US,en;q=0.9"), ("priority", "u=0, i"),
        ],
        [
            ("sec-ch-ua-platform", "\"macOS\""), ("user-agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 Safari/605.1.15"),
            ("accept", "image/avif,image/webp,image/apng,*/*;q=0.8"), ("sec-fetch-site", "same-origin"), ("sec-fetch-mode", "no-cors"),
            ("sec-fetch-dest", "image"), ("referer", "http://example.test/index.html"), ("accept-encoding", "gzip, deflate, br"),
            ("accept-language", "de-DE,de;q=0.9,en;q=0.8"), ("priority", "i"),
        ],
        [
            ("content-type", "application/grpc"), ("te", "trailers"), ("grpc-accept-encoding", "identity,deflate,gzip"),
            ("user-agent", "grpc-dotnet/2.66.0 (.NET 10.0.0; CLR 10.0.0; net10.0; linux; x64)"), ("grpc-timeout", "100m"),
            ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("x-tenant", "blue"),
        ],
        [
            ("accept", "application/json"), ("user-agent", "MyService/1.2"), ("x-request-id", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
            ("authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo"), ("cache-control", "no-cache"),
            ("x-custom", "Casing Stays In Values"), ("accept-encoding", "gzip"),
        ],
    ];

    private static readonly string[] LongValues =
    [
        "Bearer " + new string('j', 1017), "Bearer " + new string('k', 1400), new('c', 1500), new('w', 4000), new('z', 12000),
    ];

    private static readonly string[] CookieCrumbs = ["sid=31d4d96e407aad42", "lang=en-US", "theme=dark", "_ga=GA1.2.1234567890.1700000000", "consent=yes", "a=", "cart=3"];

    private readonly Random _random = new(seed);

    /// <summary>A generated connection, with no fault.</summary>
    public byte[] Generated() => new Connection(_random, []).Build();

    /// <summary>A connection with one to four faults.</summary>
    public byte[] Mutated()
    {
        var faults = new List<Fault>();
        int count = 1 + (_random.Next(4) == 0 ? _random.Next(1, 4) : 0);
        Fault[] all = Enum.GetValues<Fault>();
        while (faults.Count < count)
        {
            Fault fault = all[_random.Next(all.Length)];

            // The expensive ones (over a hundred streams, or 64 KiB blocks) less often.
            if (fault is Fault.RefusedStream or Fault.OversizeBlock && _random.Next(4) != 0)
            {
                continue;
            }

            faults.Add(fault);
        }

        return new Connection(_random, faults).Build();
    }

    private sealed class Connection(Random random, List<Fault> faults)
    {
        private readonly FrameWriter _writer = new();
        private readonly HpackEncoder _encoder = new();
        private readonly HpackPolicy _policy = (HpackPolicy)random.Next(3);
        private readonly List<int> _held = [];
        private readonly List<int> _closed = [];
        private int _nextStream = 1;
        private int _syncs;
        private int _fired;
        private bool _tail;

        private bool Take(Fault fault)
        {
            // Each fault lands on a random request or batch: taken with some chance at each opportunity, and certainly at
            // the last (Build gives every remaining fault one more chance at the end).
            int at = faults.IndexOf(fault);
            if (at < 0 || random.Next(3) != 0)
            {
                return false;
            }

            faults.RemoveAt(at);
            _fired++;
            return true;
        }

        private bool TakeNow(Fault fault) => faults.Remove(fault);

        /// <summary>
        /// Runs <paramref name="write"/>; if a fault fired in it or before, puts a sync point before what it wrote. A fault may end
        /// the connection, and streams started earlier in the same stretch would race with that end (whether their
        /// handler ran, what it read): settled first, they cannot.
        /// </summary>
        private T SyncedIfFaulted<T>(Func<T> write)
        {
            int mark = _writer.Bytes.Count;
            int fired = _fired;
            T result = write();

            // After a fault, every later request too: a fault may leave the HPACK tables apart (a flipped octet), so that a
            // later block ends the connection.
            if (_fired > 0)
            {
                var ping = new FrameWriter();
                ping.Ping(Http2Fuzzing.SyncPing(_syncs++));
                _writer.Bytes.InsertRange(mark, ping.Bytes);
            }

            return result;
        }

        public byte[] Build()
        {
            _writer.Preface();
            WriteSettings();
            if (random.Next(2) == 0)
            {
                _writer.SettingsAck();
            }

            if (Take(Fault.TinyTable) || random.Next(8) == 0)
            {
                // A small table: the client sizes it down at the start of its first block (below), so entries evict early.
                _tinyTable = true;
                faults.Remove(Fault.TinyTable);
            }

            (string Name, string Value)[][] sets = [.. Enumerable.Range(0, random.Next(1, 4)).Select(_ => HeaderSet())];

            // One connection in six churns: every value of every request is new, so the reader steps aside
            // (values_do_not_repeat) within its first requests, between two frames, with later blocks referring to
            // entries added before the step.
            _churn = random.Next(6) == 0;

            // One other connection in sixteen starts with enough requests of pseudo-headers alone that the reader steps
            // aside (nothing_to_cache), then sends its header sets, referring to entries added before the step.
            _bareLeft = !_churn && random.Next(16) == 0 ? ValueAdmission.RequestsWithNothingToTake + random.Next(3) : 0;
            int requests = _churn ? random.Next(10, 17) : _bareLeft > 0 ? _bareLeft + random.Next(1, 5) : random.Next(2, 13);
            while (requests > 0)
            {
                int batch = Math.Min(requests, random.Next(4) == 0 ? random.Next(2, 7) : 1);
                requests -= batch;
                var ends = new List<Action>();
                for (int i = 0; i < batch; i++)
                {
                    (string Name, string Value)[] set = sets[random.Next(sets.Length)];
                    ends.Add(SyncedIfFaulted(() => Request(set)));
                }

                foreach (Action end in ends)
                {
                    if (_fired > 0)
                    {
                        Sync();
                    }

                    end();
                }

                SyncedIfFaulted(() =>
                {
                    Extras();
                    return 0;
                });
                if (random.Next(3) != 0 || _held.Count > 0)
                {
                    Sync();
                    ResolveHeld();
                }
            }

            // The faults no request took.
            foreach (Fault fault in faults.ToArray())
            {
                if (fault is Fault.TruncatedTail or Fault.RefusedStream)
                {
                    continue;
                }

                Sync();
                if (!ConnectionFault(fault))
                {
                    SyncedIfFaulted(() => Request(sets[0], fault))();
                }

                faults.Remove(fault);

                // A request held open here (its fault never fired) is resolved across a sync point, as everywhere else:
                // ended short of its Content-Length while its handler starts, it gets an empty body or a failed read from
                // Kestrel alone, as its threads decide (docs/fuzzing.md).
                if (_held.Count > 0)
                {
                    Sync();
                }

                ResolveHeld();
            }

            if (TakeNow(Fault.RefusedStream))
            {
                Refused(sets[0]);
            }

            if (TakeNow(Fault.TruncatedTail))
            {
                // After the last sync point: a frame cut short (the terminator's ping is read into it).
                Sync();
                var block = new List<byte>();
                HpackEncoder.Indexed(block, 2);
                _tail = true;
                _writer.Frame(FrameType.Headers, FrameFlags.EndHeaders | FrameFlags.EndStream, _nextStream, [.. block], declaredLength: block.Count + random.Next(1, 40));
            }

            return [.. _writer.Bytes];
        }

        private bool _tinyTable;
        private bool _churn;
        private int _churned;   // churn values written so far: each is new to the connection
        private int _bareLeft;  // requests still to be sent with pseudo-headers alone
        private bool _flipped;   // a block of this connection had an octet flipped: the tables may differ from here

        // The faults that are frames of their own rather than part of a request.
        private bool ConnectionFault(Fault fault)
        {
            switch (fault)
            {
                case Fault.RstOnIdleStream:
                    _writer.RstStream(_nextStream + 10, 8);
                    return true;
                case Fault.BadPing:
                    _writer.Frame(FrameType.Ping, 0, random.Next(2), RandomBytes(random.Next(2) == 0 ? 7 : 8));
                    return true;
                case Fault.PushPromise:
                    _writer.Frame(FrameType.PushPromise, FrameFlags.EndHeaders, 1, [0, 0, 0, 2, 0x82]);
                    return true;
                case Fault.BadSettings:
                    _writer.Frame(FrameType.Settings, 0, 0, [0, 5, 0, 0, 0, 100]);
                    return true;
                case Fault.TinyTable:
                    return true;
                default:
                    return false;
            }
        }

        private void WriteSettings()
        {
            var settings = new List<(ushort, uint)>();
            if (random.Next(3) == 0)
            {
                settings.Add((1, (uint)Pick([0, 64, 256, 4096, 65536])));
            }

            if (random.Next(2) == 0)
            {
                settings.Add((2, 0));
            }

            if (random.Next(3) == 0)
            {
                settings.Add((4, (uint)Pick([65535, 1 << 20, 1000])));
            }

            if (random.Next(4) == 0)
            {
                settings.Add((5, (uint)Pick([16384, 65536])));
            }

            if (random.Next(4) == 0)
            {
                settings.Add((6, 65536));
            }

            if (Take(Fault.BadSettings))
            {
                switch (random.Next(3))
                {
                    case 0:
                        settings.Add((5, 100));
                        break;
                    case 1:
                        settings.Add((4, 0x80000000));
                        break;
                    default:
                        _writer.Settings([.. settings]);
                        _writer.Frame(FrameType.Settings, 0, 0, [0, 3, 0, 0, 0]);
                        return;
                }
            }

            _writer.Settings([.. settings]);
        }

        private (string Name, string Value)[] HeaderSet()
        {
            (string Name, string Value)[] baseSet = BrowserSets[random.Next(BrowserSets.Length)];
            var set = baseSet.Where(_ => random.Next(8) != 0).ToList();
            if (random.Next(2) == 0)
            {
                int crumbs = random.Next(1, 6);
                IEnumerable<string> chosen = CookieCrumbs.OrderBy(_ => random.Next()).Take(crumbs);
                if (_policy == HpackPolicy.HttpClient)
                {
                    set.Add(("cookie", string.Join("; ", chosen)));
                }
                else
                {
                    set.AddRange(chosen.Select(crumb => ("cookie", crumb)));
                }
            }

            if (random.Next(4) == 0)
            {
                set.Add(("x-trace", new string('t', Pick([0, 1, 31, 32, 33, 300]))));
            }

            // Long values that repeat across the case's requests, as a session's token and cookie do: the cache of long
            // values hits, misses and evicts (some together are longer than the default LongValueBudget).
            if (random.Next(3) == 0)
            {
                set.Add((Pick(["authorization", "cookie", "x-api-key"]), Pick(LongValues)));
            }

            return [.. set];
        }

        // Writes a request's HEADERS (and its body unless it is held open); returns what ends it after the batch.
        private Action Request((string Name, string Value)[] set, Fault? forced = null)
        {
            bool Take(Fault fault)
            {
                if (forced == fault)
                {
                    _fired++;
                    return true;
                }

                return forced is null && this.Take(fault);
            }

            // Faulty trailers go on an otherwise valid request: on a stream Kestrel has reset, what trailers meet depends
            // on whether Kestrel has already dropped the stream, which its threads decide.
            bool pseudoTrailer = Take(Http2CaseGenerator.Fault.PseudoInTrailers);
            bool trailersOpen = !pseudoTrailer && Take(Http2CaseGenerator.Fault.TrailersWithoutEndStream);
            bool Fault(Fault fault) => !pseudoTrailer && !trailersOpen && Take(fault);

            int stream = _nextStream;
            _nextStream += 2;
            bool post = random.Next(4) == 0;
            var fields = new List<(string Name, string Value)>
            {
                (":method", post ? "POST" : random.Next(20) == 0 ? "HEAD" : "GET"),
                (":authority", random.Next(10) == 0 ? "other.test:8080" : "example.test"),
                (":scheme", "http"),
                (":path", Paths[random.Next(Paths.Length)]),
            };
            if (random.Next(10) == 0)
            {
                // The order Kestrel accepts but browsers do not use.
                fields.Reverse();
            }

            fields.AddRange(_churn ? Churned(set) : _bareLeft > 0 ? [] : set);
            _bareLeft = Math.Max(0, _bareLeft - 1);
            byte[] body = post ? RandomBytes(Pick([0, 1, 100, 300, 5000])) : [];
            if (post && random.Next(2) == 0)
            {
                fields.Add(("content-length", body.Length.ToString(System.Globalization.CultureInfo.InvariantCulture)));
            }

            int firedBefore = _fired;
            ApplyFieldFaults(fields, Fault, body.Length);

            var block = new List<byte>();
            if (_tinyTable && stream == 1)
            {
                _encoder.SizeUpdate(block, Pick([0, 64, 128]));
            }

            EncodeBlock(block, fields, Fault);
            if (Fault(Http2CaseGenerator.Fault.FlippedBlockByte) && block.Count > 0)
            {
                block[random.Next(block.Count)] ^= (byte)(1 << random.Next(8));
                _flipped = true;
            }

            bool trailers = random.Next(8) == 0 || pseudoTrailer || trailersOpen;
            // A request with a faulty block ends in its HEADERS frame: Kestrel may answer it (431) or reset it (a
            // Content-Length the body does not match) while its body is still coming, and whether the body's end comes
            // before the answer (no RST_STREAM(NO_ERROR)) or the reset (the handler sees the end) depends on threads.
            bool lengthMismatch = _fired > firedBefore;
            if (lengthMismatch)
            {
                body = [];
                post = false;
            }

            trailers &= !lengthMismatch;
            bool hold = !trailers && !lengthMismatch && random.Next(12) == 0;
            bool endStream = lengthMismatch || (!post && !hold && !trailers && random.Next(10) != 0);
            int headerStream = Fault(Http2CaseGenerator.Fault.EvenStreamId) ? stream + 1
                : Fault(Http2CaseGenerator.Fault.ReusedStreamId) && stream > 1 ? stream - 2 : stream;
            WriteBlock(headerStream, block, endStream, Fault);
            if (Fault(Http2CaseGenerator.Fault.DataOnClosedStream) && _closed.Count > 0)
            {
                Sync();
                _writer.Data(_closed[random.Next(_closed.Count)], "x"u8, endStream: true);
            }

            if (endStream)
            {
                _closed.Add(stream);
                return () => { };
            }

            if (hold)
            {
                _held.Add(stream);
                return () => { };
            }

            bool windowOverflow = Fault(Http2CaseGenerator.Fault.WindowOverflow);
            bool windowZero = Fault(Http2CaseGenerator.Fault.WindowUpdateZero);
            return () =>
            {
                // Once a flipped octet may have put Kestrel's table out of step with the client's, any request may carry
                // a Content-Length its body does not match, which Kestrel resets it for: its body and its trailers each
                // come after a sync point, or whether they meet the stream or the reset is the threads' choice.
                // Trailers that end a stream with no body octets come after one too: a stream that starts after Kestrel
                // marked its end received gets an empty body at once, and whether its handler then finds the trailers
                // available depends on Kestrel's frame loop having got that far (docs/fuzzing.md).
                if (windowOverflow || windowZero || pseudoTrailer || trailersOpen || _flipped || (trailers && body.Length == 0))
                {
                    Sync();
                }

                if (windowOverflow)
                {
                    _writer.WindowUpdate(stream, int.MaxValue);
                }

                if (windowZero)
                {
                    _writer.WindowUpdate(random.Next(2) == 0 ? 0 : stream, 0);
                }

                WriteBody(stream, body, endStream: !trailers);
                if (trailers)
                {
                    var trailerFields = new List<(string, string)> { ("x-checksum", "abc123"), ("grpc-status", "0") };
                    if (pseudoTrailer)
                    {
                        // Kestrel rejects both in trailers: a pseudo-header, an uppercase name.
                        trailerFields.Insert(random.Next(3), random.Next(2) == 0 ? (":path", "/") : ("X-Upper", "1"));
                    }

                    if (pseudoTrailer || trailersOpen || _flipped)
                    {
                        // The handler reads the body before the faulty trailers end the connection.
                        Sync();
                    }

                    var trailerBlock = new List<byte>();
                    EncodeBlock(trailerBlock, trailerFields, _ => false);
                    _writer.Headers(stream, [.. trailerBlock], endStream: !trailersOpen, endHeaders: true);
                }

                _closed.Add(stream);
            };
        }

        private void ApplyFieldFaults(List<(string Name, string Value)> fields, Func<Fault, bool> fault, int bodyLength)
        {
            if (fault(Http2CaseGenerator.Fault.UppercaseName))
            {
                fields.Insert(random.Next(4, fields.Count + 1), ("X-Upper-Case", "v"));
            }

            if (fault(Http2CaseGenerator.Fault.ConnectionSpecific))
            {
                string[] names = ["connection", "te", "te", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];
                string[] values = ["keep-alive", "gzip", "trailers", "timeout=5", "keep-alive", "chunked", "websocket"];
                int which = random.Next(names.Length);
                fields.Insert(random.Next(4, fields.Count + 1), (names[which], values[which]));
            }

            if (fault(Http2CaseGenerator.Fault.PseudoAfterRegular) && fields.Count > 4)
            {
                (string, string) pseudo = fields[3];
                fields.RemoveAt(3);
                fields.Insert(random.Next(4, fields.Count + 1), pseudo);
            }

            if (fault(Http2CaseGenerator.Fault.DuplicatePseudo))
            {
                fields.Insert(random.Next(1, 4), fields[random.Next(4)]);
            }

            if (fault(Http2CaseGenerator.Fault.UnknownPseudo))
            {
                fields.Insert(random.Next(0, 4), Pick([(":foo", "bar"), (":status", "200"), (":protocol", "websocket")]));
            }

            if (fault(Http2CaseGenerator.Fault.MissingPseudo))
            {
                int at = fields.FindIndex(f => f.Name == Pick([":method", ":scheme", ":path", ":authority"]));
                if (at >= 0)
                {
                    fields.RemoveAt(at);
                }

                if (random.Next(3) == 0)
                {
                    fields.Add(("host", "host.test"));
                }
            }

            if (fault(Http2CaseGenerator.Fault.BadValueBytes))
            {
                string[] bad = ["a\rb", "a\nb", "a\0b", "caf\u00c3\u00a9", "\u00ff\u00fe", " padded ", "\t"];
                fields.Add((random.Next(5) == 0 ? "x-n\0ame" : "x-bad", bad[random.Next(bad.Length)]));
            }

            if (fault(Http2CaseGenerator.Fault.LongValue))
            {
                fields.Add(("x-long", new string('v', Pick([4095, 4097, 8000, 16500, 32768, 33000]))));
            }

            if (fault(Http2CaseGenerator.Fault.TooManyFields))
            {
                int count = Pick([95, 96, 97, 100, 101, 150, 196, 197, 201]);
                for (int i = fields.Count; i < count; i++)
                {
                    fields.Add(($"x-f{i % 7}", (i % 3).ToString(System.Globalization.CultureInfo.InvariantCulture)));
                }
            }

            if (fault(Http2CaseGenerator.Fault.OversizeBlock))
            {
                int total = Pick([32000, 33000, 65000, 66000]);
                for (int i = 0; total > 0; i++, total -= 1010)
                {
                    fields.Add(($"x-big-{i}", new string((char)('a' + (i % 26)), 1000)));
                }
            }

            if (fault(Http2CaseGenerator.Fault.ContentLengthMismatch))
            {
                fields.Add(("content-length", random.Next(2) == 0 ? (bodyLength + 1).ToString(System.Globalization.CultureInfo.InvariantCulture) : "abc"));
            }
        }

        private void EncodeBlock(List<byte> block, List<(string Name, string Value)> fields, Func<Fault, bool> fault)
        {
            if (fault(Http2CaseGenerator.Fault.SizeUpdateAtStart))
            {
                _encoder.SizeUpdate(block, Pick([0, 1, 32, 100, 4096]));
            }

            if (fault(Http2CaseGenerator.Fault.SizeUpdatesEvictAll))
            {
                _encoder.SizeUpdate(block, 0);
                _encoder.SizeUpdate(block, 4096);
            }

            if (fault(Http2CaseGenerator.Fault.SizeUpdateTooLarge))
            {
                _encoder.SizeUpdate(block, 4097 + random.Next(100_000));
            }

            int faultAt = random.Next(fields.Count + 1);
            for (int i = 0; i <= fields.Count; i++)
            {
                if (i == faultAt)
                {
                    if (fault(Http2CaseGenerator.Fault.IndexOutOfRange))
                    {
                        HpackEncoder.Indexed(block, HpackTable.Static.Length + 1 + _encoder.Table.Count + random.Next(3));
                    }

                    if (fault(Http2CaseGenerator.Fault.IndexZero))
                    {
                        HpackEncoder.Indexed(block, 0);
                    }

                    if (fault(Http2CaseGenerator.Fault.InvalidHuffman))
                    {
                        HpackEncoder.Integer(block, 0, 4, 0);
                        HpackEncoder.String(block, "x-h"u8, huffman: false);
                        byte[][] invalid = [[0x00], [0xFF, 0xFF, 0xFF, 0xFF], [0x1F, 0x00], [0xFF]];
                        byte[] value = invalid[random.Next(invalid.Length)];
                        HpackEncoder.Integer(block, value.Length, 7, 0x80);
                        block.AddRange(value);
                    }

                    if (fault(Http2CaseGenerator.Fault.OverlongInteger))
                    {
                        // Static index 2 (:method GET) spelled 0x7F + 0x80 0x00 ... : Kestrel's decoder rejects the overlong form.
                        block.AddRange(random.Next(2) == 0 ? new byte[] { 0xFF, 0x80, 0x00 } : [0xFF, 0x00]);
                    }

                    if (fault(Http2CaseGenerator.Fault.EmptyName))
                    {
                        HpackEncoder.Integer(block, 0, 4, 0);
                        HpackEncoder.String(block, [], huffman: false);
                        HpackEncoder.String(block, "v"u8, huffman: false);
                    }

                    if (fault(Http2CaseGenerator.Fault.SizeUpdateAfterField) && i > 0)
                    {
                        _encoder.SizeUpdate(block, _encoder.Table.MaxSize);
                    }
                }

                if (i < fields.Count)
                {
                    EncodeField(block, fields[i].Name, fields[i].Value);
                }
            }
        }

        private void EncodeField(List<byte> block, string name, string value)
        {
            switch (_policy)
            {
                case HpackPolicy.Chrome:
                    bool literalPath = name is ":path" || (name == ":method" && value != "GET" && value != "POST");
                    _encoder.Field(block, name, value, literalPath ? FieldKind.IncrementalIndexing : FieldKind.Indexed, huffman: true);
                    break;
                case HpackPolicy.HttpClient:
                    if (_encoder.Table.Find(Encoding.Latin1.GetBytes(name), Encoding.Latin1.GetBytes(value), nameOnly: false) is > 0 and <= 61 and int index)
                    {
                        HpackEncoder.Indexed(block, index);
                    }
                    else
                    {
                        _encoder.Field(block, name, value, FieldKind.WithoutIndexing, huffman: false);
                    }

                    break;
                default:
                    _encoder.Field(block, name, value, (FieldKind)random.Next(4), huffman: random.Next(2) == 0, indexName: random.Next(3) != 0);
                    break;
            }
        }

        // The block in a HEADERS frame and, when split, CONTINUATION frames; padding and PRIORITY at random.
        private void WriteBlock(int stream, List<byte> block, bool endStream, Func<Fault, bool> fault)
        {
            byte[] bytes = [.. block];
            var pieces = new List<byte[]>();
            int maxPiece = random.Next(4) == 0 ? random.Next(1, 64) : 16000;
            if (fault(Http2CaseGenerator.Fault.FrameTooLarge))
            {
                maxPiece = 20000;
                bytes = [.. bytes, .. new byte[Math.Max(0, 16400 - bytes.Length)].Select(_ => (byte)0x82)];
            }

            for (int at = 0; at < bytes.Length || pieces.Count == 0; at += maxPiece)
            {
                pieces.Add(bytes[at..Math.Min(bytes.Length, at + maxPiece)]);
            }

            int? padding = random.Next(6) == 0 ? random.Next(0, 20) : null;
            int? declaredPad = null;
            if (fault(Http2CaseGenerator.Fault.BadPadding))
            {
                padding ??= 2;
                declaredPad = pieces[0].Length + padding + random.Next(0, 3);
            }

            int? dependency = random.Next(6) == 0 ? random.Next(0, stream) : null;
            if (fault(Http2CaseGenerator.Fault.SelfDependency))
            {
                dependency = stream;
            }

            bool missingEnd = fault(Http2CaseGenerator.Fault.MissingEndHeaders);
            _writer.Headers(stream, pieces[0], endStream, endHeaders: pieces.Count == 1 && !missingEnd, padding, dependency, (byte)random.Next(256), declaredPad);
            for (int i = 1; i < pieces.Count; i++)
            {
                if (i == 1 && fault(Http2CaseGenerator.Fault.FrameInsideBlock))
                {
                    _writer.Ping("inside!!"u8);
                }

                int continuationStream = i == 1 && fault(Http2CaseGenerator.Fault.ContinuationOnOtherStream) ? stream + 2 : stream;
                _writer.Continuation(continuationStream, pieces[i], endHeaders: i == pieces.Count - 1 && !missingEnd);
            }

            if (pieces.Count == 1 && fault(Http2CaseGenerator.Fault.FrameInsideBlock))
            {
                // With one fragment, the frame in the block is a CONTINUATION-less end: HEADERS without END_HEADERS, then PING;
                // after a sync point, so that the stream just opened is settled before the connection ends.
                Sync();
                _writer.Frame(FrameType.Headers, 0, _nextStream, [0x82]);
                _nextStream += 2;
                _writer.Ping("inside!!"u8);
            }
        }

        private void WriteBody(int stream, byte[] body, bool endStream)
        {
            if (body.Length == 0)
            {
                _writer.Data(stream, [], endStream);
                return;
            }

            int at = 0;
            while (at < body.Length)
            {
                int length = Math.Min(body.Length - at, random.Next(2) == 0 ? body.Length : random.Next(1, 16000));
                int? padding = random.Next(8) == 0 ? random.Next(0, 10) : null;
                _writer.Data(stream, body.AsSpan(at, length), endStream && at + length == body.Length, padding);
                at += length;
            }
        }

        // Frames a client sends between requests that are not requests.
        private void Extras()
        {
            if (random.Next(6) == 0)
            {
                _writer.Priority(_nextStream + 2 * random.Next(3), random.Next(0, _nextStream), (byte)random.Next(256));
            }

            if (random.Next(8) == 0)
            {
                _writer.Ping("pingpong"u8);
            }

            if (random.Next(8) == 0)
            {
                _writer.WindowUpdate(0, random.Next(1, 100_000));
            }

            if (random.Next(12) == 0)
            {
                // An unknown frame type, on the connection or an odd stream: ignored.
                _writer.Frame((FrameType)0x2A, 0xFF, random.Next(2) == 0 ? 0 : 1 + (2 * random.Next(3)), RandomBytes(random.Next(0, 12)));
            }

            if (random.Next(12) == 0)
            {
                _writer.Settings((4, (uint)(65535 + random.Next(1000))));
            }

            if (Take(Fault.RstOnIdleStream))
            {
                _writer.RstStream(_nextStream + 10, 8);
            }

            if (Take(Fault.BadPing))
            {
                _writer.Frame(FrameType.Ping, 0, random.Next(2), RandomBytes(random.Next(2) == 0 ? 7 : 8));
            }

            if (Take(Fault.PushPromise))
            {
                _writer.Frame(FrameType.PushPromise, FrameFlags.EndHeaders, 1, [0, 0, 0, 2, 0x82]);
            }
        }

        /// <summary>A sync point: the client waits here until the server has acted on every byte before it (<see cref="ClientScript"/>).</summary>
        // The set with every value new (but te's and content-type's, which Kestrel and gRPC act on), and new names too.
        private IEnumerable<(string Name, string Value)> Churned((string Name, string Value)[] set)
        {
            foreach ((string name, string value) in set)
            {
                yield return name is "te" or "content-type" ? (name, value) : (name, FormattableString.Invariant($"{value}-{++_churned}"));
            }

            for (int i = random.Next(1, 5); i > 0; i--)
            {
                yield return (FormattableString.Invariant($"x-churn-{i}"), FormattableString.Invariant($"c{++_churned}"));
            }
        }

        private void Sync() => _writer.Ping(Http2Fuzzing.SyncPing(_syncs++));

        // Streams held open across a sync point: their handlers wait for the body there; then each is reset or ended.
        private void ResolveHeld()
        {
            foreach (int stream in _held)
            {
                if (random.Next(3) == 0)
                {
                    _writer.RstStream(stream, 8);
                }
                else
                {
                    _writer.Data(stream, RandomBytes(random.Next(0, 20)), endStream: true);
                }

                _closed.Add(stream);
            }

            _held.Clear();
            if (!_tail && random.Next(2) == 0)
            {
                Sync();
            }
        }

        // 101 streams held open: Kestrel refuses the last (REFUSED_STREAM); then all end.
        private void Refused((string Name, string Value)[] set)
        {
            Sync();
            for (int i = 0; i < 101; i++)
            {
                int stream = _nextStream;
                _nextStream += 2;
                var block = new List<byte>();
                var fields = new List<(string, string)> { (":method", "POST"), (":scheme", "http"), (":authority", "example.test"), (":path", "/held") };
                fields.AddRange(set.Take(3));
                EncodeBlock(block, fields, _ => false);
                _writer.Headers(stream, [.. block], endStream: false, endHeaders: true);
                _held.Add(stream);
            }

            Sync();
            ResolveHeld();
        }

        private T Pick<T>(ReadOnlySpan<T> choices) => choices[random.Next(choices.Length)];

        private byte[] RandomBytes(int length)
        {
            var bytes = new byte[length];
            random.NextBytes(bytes);
            return bytes;
        }
    }
}

/// <summary>A stream as the client left it at a sync point: whether it ended or reset it, and the DATA octets it sent on it.</summary>
internal sealed record ClientStream(int Id, bool Ended, bool Reset, long Data);

/// <summary>
/// What the client reads back from its own bytes: where its sync points end, and the streams whose header block ended
/// before each, with what the client had sent on them. The bytes are read frame by frame; the first frame that does not
/// fit (a truncated tail) ends the reading, and nothing after it is a sync point.
/// </summary>
internal sealed record ClientScript(IReadOnlyList<(int End, ClientStream[] Streams)> Syncs)
{
    public static ClientScript Parse(byte[] bytes)
    {
        var syncs = new List<(int, ClientStream[])>();
        var streams = new Dictionary<int, ClientStream>();
        var order = new List<int>();
        int at = FrameWriter.PrefaceBytes.Length;
        if (bytes.Length < at || !bytes.AsSpan(0, at).SequenceEqual(FrameWriter.PrefaceBytes))
        {
            return new ClientScript([]);
        }

        int highest = 0;
        (int Stream, bool EndStream)? openBlock = null;
        while (at + 9 <= bytes.Length)
        {
            int length = (bytes[at] << 16) | (bytes[at + 1] << 8) | bytes[at + 2];
            var type = (FrameType)bytes[at + 3];
            byte flags = bytes[at + 4];
            int stream = BinaryPrimitives.ReadInt32BigEndian(bytes.AsSpan(at + 5)) & int.MaxValue;
            if (at + 9 + length > bytes.Length)
            {
                break;
            }

            ReadOnlySpan<byte> payload = bytes.AsSpan(at + 9, length);
            at += 9 + length;
            bool endStream = (flags & FrameFlags.EndStream) != 0;
            switch (type)
            {
                case FrameType.Headers when stream % 2 == 1 && stream > highest:
                    highest = stream;
                    openBlock = (stream, endStream);
                    if ((flags & FrameFlags.EndHeaders) != 0)
                    {
                        Open(stream, endStream);
                    }

                    break;
                case FrameType.Headers when streams.TryGetValue(stream, out ClientStream? known):
                    streams[stream] = known with { Ended = known.Ended || endStream };
                    break;
                case FrameType.Continuation when openBlock?.Stream == stream && (flags & FrameFlags.EndHeaders) != 0:
                    Open(stream, openBlock.Value.EndStream);
                    break;
                case FrameType.Data when streams.TryGetValue(stream, out ClientStream? known):
                    int data = (flags & FrameFlags.Padded) != 0 && payload.Length > 0 ? payload.Length - 1 - payload[0] : payload.Length;
                    streams[stream] = known with { Ended = known.Ended || endStream, Data = known.Data + Math.Max(0, data) };
                    break;
                case FrameType.RstStream when streams.TryGetValue(stream, out ClientStream? known):
                    streams[stream] = known with { Reset = true };
                    break;
                case FrameType.Ping when Http2Fuzzing.IsSync(flags, stream, payload):
                    syncs.Add((at, [.. order.Select(id => streams[id])]));
                    break;
            }

            if (type != FrameType.Headers && type != FrameType.Continuation)
            {
                openBlock = null;
            }
        }

        return new ClientScript(syncs);

        void Open(int stream, bool ended)
        {
            streams[stream] = new ClientStream(stream, ended, Reset: false, Data: 0);
            order.Add(stream);
            openBlock = null;
        }
    }
}
