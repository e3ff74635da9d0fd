using HeaderCache.Caching;

namespace HeaderCache.Tests;

public class AsciiHashTests
{
    [Fact]
    public void All_paths_agree_on_a_simple_value()
    {
        byte[] bytes = "text/html"u8.ToArray();
        Assert.True(AsciiHash.TryHashScalar(bytes, 7, out uint scalar));
        Assert.True(AsciiHash.TryHashVector128(bytes, 7, out uint v128));
        Assert.True(AsciiHash.TryHashVector256(bytes, 7, out uint v256));
        Assert.Equal(scalar, v128);
        Assert.Equal(scalar, v256);
    }
}
