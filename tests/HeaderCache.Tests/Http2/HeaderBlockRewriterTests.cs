using System.Text;
using HeaderCache.Caching;
using HeaderCache.Fields;
using HeaderCache.H2Client;
using HeaderCache.Http2;
using HeaderCache.Requests;
using HeaderCache.Transport;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Tests.Http2;

/// <summary>Which fields <see cref="HeaderBlockRewriter"/> takes out of a block, what stays in the frame, and which
/// strings the taken fields get.</summary>
public class HeaderBlockRewriterTests
{
    private readonly HpackBlockDecoder _decoder = new(new HpackDynamicTable(4096), 32 * 1024);
    private readonly Http2StreamHandoff _handoff = new(200, 100);
    private HeaderBlockRewriter _rewriter;
    private int _stream = 1;

    public HeaderBlockRewriterTests() => _rewriter = Rewriter(LongValueCache.DefaultBudget);

    [Fact]
    public void Literals_without_indexing_are_taken_but_pseudo_headers_and_the_names_Kestrel_acts_on()
    {
        (string[] taken, string[] kept) = Rewrite(new HeaderBlock().Request("GET", "/").Without("user-agent", "ua").Without("x-a", "1")
            .Without("host", "h").Without("content-length", "0").Without("x-b", "2"));

        Assert.Equal(["User-Agent: ua", "x-a: 1", "x-b: 2"], taken);
        Assert.Equal([":method", ":scheme", ":path", ":authority", "host", "content-length"], kept);
    }

    [Fact]
    public void One_other_name_that_changes_the_table_keeps_every_other_name_and_known_names_are_taken()
    {
        (string[] taken, string[] kept) = Rewrite(new HeaderBlock().Request("GET", "/").Without("x-a", "1").Incremental("x-b", "2")
            .Without("accept", "*/*"));

        Assert.Equal(["Accept: */*"], taken);
        Assert.Equal([":method", ":scheme", ":path", ":authority", "x-a", "x-b"], kept);
    }

    [Fact]
    public void Never_indexed_literals_are_taken_as_literals_without_indexing_are_and_get_the_same_strings_when_they_repeat()
    {
        HeaderBlock Block() => new HeaderBlock().Request("GET", "/").Literal(FieldKind.NeverIndexed, 23, "Bearer abc")
            .Literal(FieldKind.NeverIndexed, 0, "s=1", "x-session").Literal(FieldKind.NeverIndexed, 32, "a=1").Without("accept", "*/*")
            .Literal(FieldKind.NeverIndexed, 32, "b=2");

        TakenHeader[] first = RewriteLines(Block(), out string[] kept);
        TakenHeader[] second = RewriteLines(Block());

        Assert.Equal(["Authorization: Bearer abc", "x-session: s=1", "Cookie: a=1; b=2", "Accept: */*"], first.Select(line => $"{line.Name}: {line.Value}"));
        Assert.Equal([":method", ":scheme", ":path", ":authority"], kept);
        Assert.All(first.Zip(second), pair => Assert.Same(pair.First.Value, pair.Second.Value));
    }

    [Fact]
    public void A_never_indexed_literal_of_an_excluded_name_stays_with_every_field_of_its_name()
    {
        var rewriter = new HeaderBlockRewriter(_decoder, FieldResolver.Create(25, 256, LongValueCache.DefaultBudget, ["authorization"]), _handoff, KestrelLimits.From(new KestrelServerLimits()));
        byte[] bytes = new HeaderBlock().Request("GET", "/").Literal(FieldKind.NeverIndexed, 23, "secret").Without("accept", "*/*").ToArray();
        Assert.True(_decoder.Decode(bytes));
        byte[] output = [];

        Assert.NotEqual(0, rewriter.TryRewrite([.. Header(bytes.Length), .. bytes], 9, 99, ref output));
        Assert.Equal(["Accept: */*"], _handoff.Take(99).Select(line => $"{line.Name}: {line.Value}"));
    }

    [Fact]
    public void Cookie_crumbs_become_one_value_joined_as_Kestrel_joins_them()
    {
        (string[] taken, _) = Rewrite(new HeaderBlock().Request("GET", "/").Literal(FieldKind.WithoutIndexing, 32, "a=1").Without("x-a", "1")
            .Literal(FieldKind.WithoutIndexing, 32, "b=2"));

        Assert.Equal(["Cookie: a=1; b=2", "x-a: 1"], taken);
    }

    [Fact]
    public void A_known_name_with_a_literal_too_long_for_the_caches_stays_with_every_field_of_its_name()
    {
        UseLongValueBudget(1000);
        string token = "Bearer " + new string('t', 1017);
        string custom = new('c', 300);
        (string[] taken, string[] kept) = Rewrite(new HeaderBlock().Request("GET", "/").Without("authorization", "Basic c2hvcnQ=")
            .Without("accept", "*/*").Literal(FieldKind.WithoutIndexing, 23, token).Without("x-long", custom));

        // Kestrel alone hands back its previous string for the token when the bytes repeat: a new string here would cost
        // more. It makes a new string for the other name's value and its name every time, so taking those costs no more.
        Assert.Equal(["Accept: */*", $"x-long: {custom}"], taken);
        Assert.Equal([":method", ":scheme", ":path", ":authority", "authorization", "authorization"], kept);
    }

    [Fact]
    public void A_value_of_the_longest_length_the_cache_holds_is_taken()
    {
        string value = new('v', 256);
        (string[] taken, _) = Rewrite(new HeaderBlock().Request("GET", "/").Without("user-agent", value));

        Assert.Equal([$"User-Agent: {value}"], taken);
    }

    [Fact]
    public void Long_literals_within_the_budget_are_taken_and_get_the_same_strings_when_they_repeat()
    {
        string token = "Bearer " + new string('t', 1017);
        string cookie = new('k', 1500);
        HeaderBlock Block() => new HeaderBlock().Request("GET", "/").Without("authorization", token).Without("cookie", cookie)
            .Without("x-long", new string('c', 300));

        TakenHeader[] first = RewriteLines(Block(), out string[] kept);
        TakenHeader[] second = RewriteLines(Block());

        Assert.Equal([$"Authorization: {token}", $"Cookie: {cookie}", $"x-long: {new string('c', 300)}"], first.Select(line => $"{line.Name}: {line.Value}"));
        Assert.Equal([":method", ":scheme", ":path", ":authority"], kept);
        Assert.All(first.Zip(second), pair => Assert.Same(pair.First.Value, pair.Second.Value));
        Assert.All(second, line => Assert.False(line.Created));
    }

    [Fact]
    public void A_known_name_whose_long_values_keep_missing_stays_from_then_on()
    {
        // Each token new: once the name's values are created without a look-up, Kestrel's own reuse of its previous
        // string is worth more than a new string here every time.
        string[] taken = [];
        string[] kept = [];
        for (int i = 0; i <= ValueAdmission.MissesBeforeNameBypass; i++)
        {
            (taken, kept) = Rewrite(new HeaderBlock().Request("GET", "/").Without("authorization", $"Bearer {i:D4}{new string('t', 1013)}")
                .Without("accept", "*/*"));
        }

        Assert.Equal(["Accept: */*"], taken);
        Assert.Contains("authorization", kept);
    }

    [Fact]
    public void A_long_cookie_stays_as_one_field_but_is_taken_in_crumbs_which_Kestrel_joins_into_a_new_string_every_time()
    {
        UseLongValueBudget(0);
        string crumb = new('k', 200);
        (string[] wholeTaken, string[] wholeKept) = Rewrite(new HeaderBlock().Request("GET", "/").Without("cookie", $"a={crumb}; b={crumb}")
            .Without("x-a", "1"));
        (string[] crumbsTaken, string[] crumbsKept) = Rewrite(new HeaderBlock().Request("GET", "/").Without("cookie", $"a={crumb}")
            .Without("x-a", "1").Without("cookie", $"b={crumb}"));

        Assert.Equal(["x-a: 1"], wholeTaken);
        Assert.Contains("cookie", wholeKept);
        Assert.Equal([$"Cookie: a={crumb}; b={crumb}", "x-a: 1"], crumbsTaken);
        Assert.DoesNotContain("cookie", crumbsKept);
    }

    [Fact]
    public void A_known_excluded_name_stays_and_an_excluded_other_name_is_taken()
    {
        var rewriter = new HeaderBlockRewriter(_decoder, FieldResolver.Create(25, 256, LongValueCache.DefaultBudget, ["Authorization", "X-Secret"]), _handoff, KestrelLimits.From(new KestrelServerLimits()));
        byte[] bytes = new HeaderBlock().Request("GET", "/").Without("authorization", "Bearer abc").Without("x-secret", "s")
            .Without("accept", "*/*").ToArray();
        Assert.True(_decoder.Decode(bytes));
        byte[] output = [];

        Assert.NotEqual(0, rewriter.TryRewrite([.. Header(bytes.Length), .. bytes], 9, _stream, ref output));
        Assert.Equal(["x-secret: s", "Accept: */*"], _handoff.Take(_stream).Select(line => $"{line.Name}: {line.Value}"));
    }

    [Fact]
    public void A_long_value_referred_to_in_the_table_is_taken_with_the_entrys_string()
    {
        string token = "Bearer " + new string('t', 1017);
        ArraySegment<TakenHeader> added = RewriteSegment(new HeaderBlock().Request("GET", "/").Literal(FieldKind.IncrementalIndexing, 23, token), out string[] kept);
        TakenHeader[] first = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(62));
        TakenHeader[] second = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(62));

        Assert.Contains("authorization", kept);
        Assert.Equal(token, first[0].Value);
        Assert.Empty(Stayed(added));
        Assert.Same(first[0].Value, second[0].Value);
        Assert.Equal((1, 1), (_rewriter.FieldsCreated, _rewriter.FieldsServed));
    }

    [Fact]
    public void A_reference_to_a_table_entry_gets_the_entrys_strings_every_time()
    {
        // The literal that adds the entry stays for Kestrel; the caches hold no string for it yet, so it gets none and
        // the application reads Kestrel's: a field that stays never costs a second string.
        TakenHeader[] added = Stayed(RewriteSegment(new HeaderBlock().Request("GET", "/").Incremental("x-entry", "value"), out string[] kept));
        TakenHeader[] first = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(62));
        TakenHeader[] second = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(62));

        Assert.Contains("x-entry", kept);
        Assert.Empty(added);
        Assert.Equal("value", first[0].Value);
        Assert.Same(first[0].Value, second[0].Value);
        Assert.Same(first[0].Name, second[0].Name);
        Assert.Equal((1, 1), (_rewriter.FieldsCreated, _rewriter.FieldsServed));
    }

    [Fact]
    public void A_field_that_stays_gets_the_strings_the_caches_hold_for_it_and_the_entry_keeps_them()
    {
        TakenHeader[] taken = RewriteLines(new HeaderBlock().Request("GET", "/").Without("x-entry", "value"));
        TakenHeader[] added = Stayed(RewriteSegment(new HeaderBlock().Request("GET", "/").Incremental("x-entry", "value"), out string[] kept));
        TakenHeader[] reference = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(62));

        Assert.Contains("x-entry", kept);
        Assert.Equal(["x-entry: value"], added.Select(line => $"{line.Name}: {line.Value}"));
        Assert.Same(taken[0].Value, added[0].Value);
        Assert.Same(taken[0].Name, added[0].Name);
        Assert.Same(added[0].Value, reference[0].Value);
        Assert.Equal((1, 1), (_rewriter.FieldsCreated, _rewriter.FieldsServed));
    }

    [Fact]
    public void Names_that_stay_when_one_adds_to_the_table_get_the_strings_the_caches_hold_but_a_repeated_name_or_one_Kestrel_acts_on_does_not()
    {
        RewriteLines(new HeaderBlock().Request("GET", "/").Without("x-entry", "value").Without("x-twice", "1"));
        RewriteLines(new HeaderBlock().Request("GET", "/").Incremental("x-entry", "value"));
        ArraySegment<TakenHeader> lines = RewriteSegment(
            new HeaderBlock().Request("GET", "/").Indexed(62).Incremental("x-new", "n").Incremental("x-twice", "1").Incremental("x-twice", "2")
                .Incremental("host", "h").Without("x-literal", "l"),
            out _);
        TakenHeader[] later = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(66));

        // x-new's value is in no cache (it stays Kestrel's); x-twice is sent twice; host is Kestrel's.
        Assert.Equal(0, lines.Count);
        Assert.Equal(["x-entry: value"], Stayed(lines).Select(line => $"{line.Name}: {line.Value}"));
        Assert.Same(Stayed(lines)[0].Value, later[0].Value);
    }

    [Fact]
    public void A_cookie_in_crumbs_that_stays_gets_the_joined_value_the_cache_holds()
    {
        TakenHeader[] taken = RewriteLines(
            new HeaderBlock().Request("GET", "/").Literal(FieldKind.NeverIndexed, 32, "a=12345678901234567890").Literal(FieldKind.NeverIndexed, 32, "b=1"));
        ArraySegment<TakenHeader> lines = RewriteSegment(
            new HeaderBlock().Request("GET", "/").Incremental("cookie", "a=12345678901234567890").Literal(FieldKind.NeverIndexed, 32, "b=1"),
            out string[] kept);
        TakenHeader[] later = RewriteLines(new HeaderBlock().Request("GET", "/").Indexed(62).Literal(FieldKind.NeverIndexed, 32, "b=1"));

        Assert.Equal(["cookie", "cookie"], kept.Where(name => name == "cookie"));
        Assert.Equal(["Cookie: a=12345678901234567890; b=1"], Stayed(lines).Select(line => $"{line.Name}: {line.Value}"));
        Assert.Same(taken[0].Value, Stayed(lines)[0].Value);
        Assert.Same(Stayed(lines)[0].Value, later[0].Value);
    }

    [Theory]
    [InlineData("uppercase name")]
    [InlineData("pseudo-header after a regular field")]
    [InlineData("connection")]
    [InlineData("te other than trailers")]
    [InlineData("a value with a leading space")]
    [InlineData("over the header count")]
    public void A_block_Kestrel_may_reject_passes_unchanged(string what)
    {
        HeaderBlock block = what switch
        {
            "uppercase name" => new HeaderBlock().Request("GET", "/").Without("X-A", "1"),
            "pseudo-header after a regular field" => new HeaderBlock().Indexed(2).Without("x-a", "1").Indexed(4),
            "connection" => new HeaderBlock().Request("GET", "/").Without("x-a", "1").Without("connection", "close"),
            "te other than trailers" => new HeaderBlock().Request("GET", "/").Without("x-a", "1").Without("te", "gzip"),
            "a value with a leading space" => new HeaderBlock().Request("GET", "/").Without("x-a", " 1"),
            _ => Enumerable.Range(0, 100).Aggregate(new HeaderBlock().Request("GET", "/"), (b, i) => b.Without("x-a", "1")),
        };

        byte[] bytes = block.ToArray();
        Assert.True(_decoder.Decode(bytes));
        byte[] output = [];
        Assert.Equal(0, _rewriter.TryRewrite([.. Header(bytes.Length), .. bytes], 9, _stream, ref output));
        Assert.Null(_handoff.Take(_stream).Array);
    }

    [Fact]
    public void The_array_a_request_gave_back_carries_the_next_streams_fields_and_nothing_of_the_last()
    {
        ArraySegment<TakenHeader> first = RewriteSegment(new HeaderBlock().Request("GET", "/").Without("x-a", "1").Without("x-a", "2")
            .Without("x-b", "3"), out _);
        Assert.True(first[1].Repeat && first[1].Created);
        _handoff.Return(first.Array!);

        ArraySegment<TakenHeader> second = RewriteSegment(new HeaderBlock().Request("GET", "/").Without("x-b", "3"), out _);

        Assert.Same(first.Array, second.Array);
        Assert.Equal(["x-b: 3"], second.Select(line => $"{line.Name}: {line.Value}"));
        Assert.False(second[0].Repeat || second[0].Created);
        Assert.All(second.Array!.Skip(second.Count), line => Assert.True(line.Name is null && line.Value is null && !line.Repeat && !line.Created));
    }

    private void UseLongValueBudget(int budget) => _rewriter = Rewriter(budget);

    private HeaderBlockRewriter Rewriter(int budget) =>
        new(_decoder, FieldResolver.Create(25, 256, budget), _handoff, KestrelLimits.From(new KestrelServerLimits()));

    private (string[] Taken, string[] Kept) Rewrite(HeaderBlock block)
    {
        TakenHeader[] lines = RewriteLines(block, out string[] kept);
        return ([.. lines.Select(line => $"{line.Name}: {line.Value}")], kept);
    }

    private TakenHeader[] RewriteLines(HeaderBlock block) => RewriteLines(block, out _);

    // The fields that stayed and were given strings: after the segment in its array, up to the first empty element.
    private static TakenHeader[] Stayed(ArraySegment<TakenHeader> lines) =>
        lines.Array is null ? [] : [.. lines.Array.Skip(lines.Offset + lines.Count).TakeWhile(line => line.Value is not null)];

    private TakenHeader[] RewriteLines(HeaderBlock block, out string[] kept) =>
        RewriteSegment(block, out kept) is { Array: not null } taken ? taken.ToArray() : [];

    private ArraySegment<TakenHeader> RewriteSegment(HeaderBlock block, out string[] kept)
    {
        byte[] bytes = block.ToArray();
        Assert.True(_decoder.Decode(bytes));
        byte[] output = [];
        int stream = _stream;
        _stream += 2;
        int written = _rewriter.TryRewrite([.. Header(bytes.Length), .. bytes], 9, stream, ref output);
        ArraySegment<TakenHeader> lines = _handoff.Take(stream);
        byte[] rest = written == 0 ? bytes : output[9..written];
        Assert.Equal(rest.Length, (output.Length == 0 ? bytes.Length : (output[0] << 16) | (output[1] << 8) | output[2]));

        // What stays decodes on its own: nothing taken changed the table.
        var check = new HpackBlockDecoder(new HpackDynamicTable(4096), 32 * 1024);
        kept = check.Decode(rest) ? [.. check.Fields.ToArray().Select(f => Encoding.ASCII.GetString(check.Name(rest, f)))] : ["(refers to the table)"];
        return lines;
    }

    private static byte[] Header(int length) => [(byte)(length >> 16), (byte)(length >> 8), (byte)length, 0x1, 0x5, 0, 0, 0, 1];
}
