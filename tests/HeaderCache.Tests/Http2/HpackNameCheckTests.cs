using HeaderCache.Caching;
using HeaderCache.Fields;
using HeaderCache.Http2;

namespace HeaderCache.Tests.Http2;

/// <summary>The checks the rewriter keeps per table entry: what it relies on to skip them for the static table, and that
/// an entry reused for another field is checked anew.</summary>
public class HpackNameCheckTests
{
    [Fact]
    public void Every_static_value_passes_the_value_check_the_rewriter_skips_for_it()
    {
        for (int index = 1; index <= HpackStaticTable.Count; index++)
        {
            ReadOnlySpan<byte> value = HpackStaticTable.Value(index);
            Assert.False(value.ContainsAnyExcept(HttpBytes.Visible), $"static entry {index}");
            Assert.True(value.Length == 0 || (value[0] != HttpBytes.SP && value[^1] != HttpBytes.SP), $"static entry {index}");
        }
    }

    [Fact]
    public void A_static_names_check_is_the_check_of_its_octets()
    {
        for (int index = 1; index <= HpackStaticTable.Count; index++)
        {
            HpackNameCheck expected = HpackNameCheck.Of(HpackStaticTable.Name(index));
            HpackNameCheck actual = HpackNameCheck.Static(index);
            Assert.Equal((expected.Kind, expected.Pseudo, expected.Rejected, expected.IsTe), (actual.Kind, actual.Pseudo, actual.Rejected, actual.IsTe));
        }

        Assert.Equal(HpackNameCheck.PseudoPath, HpackNameCheck.Static(4).Pseudo);
        Assert.True(HpackNameCheck.Static(8).Rejected);   // :status in a request
        Assert.Equal(FieldNames.Classify("user-agent"u8), HpackNameCheck.Static(58).Kind);
    }

    [Fact]
    public void An_entry_emptied_and_reused_for_another_field_carries_no_check_of_the_last()
    {
        var table = new HpackDynamicTable(64);
        table.Insert("x-a"u8, "1"u8, 0);
        HpackEntry first = table[0]!;
        first.NameCheck = HpackNameCheck.Of(first.Name);
        first.ValueVisible = true;

        // The next insert evicts it (64 octets hold one entry); it is emptied and reused once the next block starts.
        table.Insert("x-b"u8, "2"u8, 0);
        table.BlockStarts();
        table.Insert("connection"u8, "\tclose"u8, 0);

        HpackEntry reused = table[0]!;
        Assert.Same(first, reused);
        Assert.Null(reused.NameCheck);
        Assert.Null(reused.ValueVisible);
    }
}
