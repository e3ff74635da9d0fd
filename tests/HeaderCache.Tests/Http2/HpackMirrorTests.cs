using System.Text;
using HeaderCache.Http2;

namespace HeaderCache.Tests.Http2;

/// <summary>The HPACK table mirror against RFC 7541 Appendix C: each block decodes to the listed fields, and the table
/// holds the listed entries, newest first, with the listed size. C.3 and C.5 use raw literals, C.4 and C.6 Huffman;
/// C.5 and C.6 evict from a 256-octet table.</summary>
public class HpackMirrorTests
{
    public static TheoryData<string, int, string[]> Sequences => new()
    {
        // C.3, requests without Huffman coding.
        { "C.3", 4096, [
            "828684410f7777772e6578616d706c652e636f6d|:method GET|:scheme http|:path /|:authority www.example.com#57|:authority www.example.com",
            "828684be58086e6f2d6361636865|:method GET|:scheme http|:path /|:authority www.example.com|cache-control no-cache#110|cache-control no-cache|:authority www.example.com",
            "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565|:method GET|:scheme https|:path /index.html|:authority www.example.com|custom-key custom-value#164|custom-key custom-value|cache-control no-cache|:authority www.example.com",
        ] },

        // C.4, the same requests with Huffman coding.
        { "C.4", 4096, [
            "828684418cf1e3c2e5f23a6ba0ab90f4ff|:method GET|:scheme http|:path /|:authority www.example.com#57|:authority www.example.com",
            "828684be5886a8eb10649cbf|:method GET|:scheme http|:path /|:authority www.example.com|cache-control no-cache#110|cache-control no-cache|:authority www.example.com",
            "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf|:method GET|:scheme https|:path /index.html|:authority www.example.com|custom-key custom-value#164|custom-key custom-value|cache-control no-cache|:authority www.example.com",
        ] },

        // C.5, responses without Huffman coding, a 256-octet table that evicts.
        { "C.5", 256, [
            "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d|:status 302|cache-control private|date Mon, 21 Oct 2013 20:13:21 GMT|location https://www.example.com#222|location https://www.example.com|date Mon, 21 Oct 2013 20:13:21 GMT|cache-control private|:status 302",
            "4803333037c1c0bf|:status 307|cache-control private|date Mon, 21 Oct 2013 20:13:21 GMT|location https://www.example.com#222|:status 307|location https://www.example.com|date Mon, 21 Oct 2013 20:13:21 GMT|cache-control private",
            "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31|:status 200|cache-control private|date Mon, 21 Oct 2013 20:13:22 GMT|location https://www.example.com|content-encoding gzip|set-cookie foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1#215|set-cookie foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1|content-encoding gzip|date Mon, 21 Oct 2013 20:13:22 GMT",
        ] },

        // C.6, the same responses with Huffman coding.
        { "C.6", 256, [
            "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3|:status 302|cache-control private|date Mon, 21 Oct 2013 20:13:21 GMT|location https://www.example.com#222|location https://www.example.com|date Mon, 21 Oct 2013 20:13:21 GMT|cache-control private|:status 302",
            "4883640effc1c0bf|:status 307|cache-control private|date Mon, 21 Oct 2013 20:13:21 GMT|location https://www.example.com#222|:status 307|location https://www.example.com|date Mon, 21 Oct 2013 20:13:21 GMT|cache-control private",
            "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007|:status 200|cache-control private|date Mon, 21 Oct 2013 20:13:22 GMT|location https://www.example.com|content-encoding gzip|set-cookie foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1#215|set-cookie foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1|content-encoding gzip|date Mon, 21 Oct 2013 20:13:22 GMT",
        ] },
    };

    [Theory]
    [MemberData(nameof(Sequences))]
    public void Appendix_C_blocks_decode_to_their_fields_and_leave_the_listed_table(string section, int tableSize, string[] steps)
    {
        var mirror = new HpackDynamicTable(tableSize);
        var decoder = new HpackBlockDecoder(mirror, 32 * 1024);
        foreach (string step in steps)
        {
            string[] parts = step.Split('#');
            string[] block = parts[0].Split('|');
            string[] table = parts[1].Split('|');
            byte[] bytes = Convert.FromHexString(block[0]);

            Assert.True(decoder.Decode(bytes), section);
            Assert.Equal(block[1..], Fields(decoder, bytes));
            Assert.Equal(int.Parse(table[0], System.Globalization.CultureInfo.InvariantCulture), mirror.Size);
            Assert.Equal(table[1..], Entries(mirror));
        }
    }

    [Theory]
    [InlineData("8286ff", "an integer cut short")]
    [InlineData("80", "index 0")]
    [InlineData("be", "an index beyond the table")]
    [InlineData("8220", "a size update after a field")]
    [InlineData("3fe221", "a size update above the advertised size")]
    [InlineData("4000", "an empty literal name")]
    [InlineData("0fffffffff0f", "an integer that needs more than 31 bits")]
    [InlineData("0f8000", "an overlong integer")]
    [InlineData("40016181ff", "Huffman padding longer than 7 bits")]
    [InlineData("4001618118", "Huffman padding that is not all ones")]
    [InlineData("4001618461", "a string longer than the block")]
    public void Kestrel_rejects_are_rejected(string hex, string what)
    {
        var decoder = new HpackBlockDecoder(new HpackDynamicTable(4096), 32 * 1024);
        Assert.False(decoder.Decode(Convert.FromHexString(hex)), what);
    }

    [Fact]
    public void A_size_update_evicts_and_an_entry_larger_than_the_table_empties_it()
    {
        var mirror = new HpackDynamicTable(4096);
        var decoder = new HpackBlockDecoder(mirror, 32 * 1024);
        Assert.True(decoder.Decode(Convert.FromHexString("828684410f7777772e6578616d706c652e636f6d")));
        Assert.Equal(1, mirror.Count);

        // Size update to 0 then to 60: the entry goes; a 57-octet entry fits again, a second one evicts the first.
        Assert.True(decoder.Decode(Convert.FromHexString("203f1d410f7777772e6578616d706c652e636f6d")));
        Assert.Equal(57, mirror.Size);
        Assert.True(decoder.Decode(Convert.FromHexString("410f7777772e6578616d706c652e6f7267")));
        Assert.Equal([":authority www.example.org"], Entries(mirror));

        // An entry larger than the whole table empties it.
        Assert.True(decoder.Decode(Convert.FromHexString("2f410f7777772e6578616d706c652e636f6d")));
        Assert.Equal(0, mirror.Count);
    }

    [Fact]
    public void A_string_offered_for_an_entry_is_kept_only_while_the_entry_is_there_and_equals_its_octets()
    {
        var mirror = new HpackDynamicTable(4096);
        var decoder = new HpackBlockDecoder(mirror, 32 * 1024);

        // ":authority www.example.com" (C.3.1) becomes entry serial 0; "cache-control no-cache" (C.3.2) serial 1.
        Assert.True(decoder.Decode(Convert.FromHexString("828684410f7777772e6578616d706c652e636f6d")));
        Assert.True(decoder.Decode(Convert.FromHexString("828684be58086e6f2d6361636865")));
        HpackEntry authority = mirror[1]!, cacheControl = mirror[0]!;
        Assert.Equal((0, 1), (authority.Serial, cacheControl.Serial));

        string kestrels = string.Concat("no-", "cache".AsSpan());
        mirror.Offer(1, "no-cachf");            // other octets
        mirror.Offer(1, "no-cache ");           // other length
        mirror.Offer(2, "no-cache");            // no entry made yet
        mirror.Offer(0, "no-cache");            // another entry
        Assert.Null(cacheControl.Offered);
        Assert.Null(authority.Offered);
        mirror.Offer(1, kestrels);
        Assert.Same(kestrels, cacheControl.Offered);

        // Once the entry is gone (a size update to 0 evicts everything), an offer for it is dropped.
        Assert.True(decoder.Decode(Convert.FromHexString("20")));
        mirror.Offer(0, "www.example.com");
        Assert.Equal(0, mirror.Count);
        Assert.Null(authority.Offered);
    }

    private static string[] Fields(HpackBlockDecoder decoder, byte[] block)
    {
        var fields = new List<string>();
        foreach (HpackField field in decoder.Fields)
        {
            fields.Add(Encoding.ASCII.GetString(decoder.Name(block, field)) + " " + Encoding.ASCII.GetString(decoder.Value(block, field)));
        }

        return [.. fields];
    }

    private static string[] Entries(HpackDynamicTable table)
    {
        var entries = new string[table.Count];
        for (int i = 0; i < table.Count; i++)
        {
            entries[i] = Encoding.ASCII.GetString(table[i]!.Name) + " " + Encoding.ASCII.GetString(table[i]!.Value);
        }

        return entries;
    }
}
