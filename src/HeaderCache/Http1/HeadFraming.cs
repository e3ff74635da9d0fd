using HeaderCache.Diagnostics;
using System.Text;

namespace HeaderCache.Http1;

/// <summary>What a head's lines that Kestrel acts on tell the reader about what follows the head: a body of known
/// length, or an upgrade after which the connection is Kestrel's. Framing the reader does not follow ends
/// compaction.</summary>
internal struct HeadFraming
{
    private const int MaxContentLengthDigits = 18;

    public HeadFraming() => ContentLength = -1;

    /// <summary>The section's Content-Length, or -1 when it has none.</summary>
    public long ContentLength { readonly get; private set; }

    /// <summary>Whether the section asks for an upgrade (<c>Connection: upgrade</c> or an <c>Upgrade</c> header).</summary>
    public bool Upgrade { readonly get; private set; }

    /// <summary>Reads a line Kestrel acts on, its value checked: why it stops compaction, or
    /// <see cref="PassThroughReason.None"/>. A line that did not frame the request (<paramref name="framing"/> false)
    /// can be recognised by its bytes alone in later heads.</summary>
    public PassThroughReason Read(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, out bool framing)
    {
        framing = true;
        if (Ascii.EqualsIgnoreCase(name, "Content-Length"u8))
        {
            // Kestrel rejects a second Content-Length and anything its number parser refuses: only plain digits are
            // read here, everything else is Kestrel's to answer.
            if (ContentLength >= 0 || value.IsEmpty || value.Length > MaxContentLengthDigits || value.ContainsAnyExceptInRange((byte)'0', (byte)'9'))
            {
                return PassThroughReason.Malformed;
            }

            long length = 0;
            foreach (byte digit in value)
            {
                length = (length * 10) + (digit - '0');
            }

            ContentLength = length;
        }
        else if (Ascii.EqualsIgnoreCase(name, "Transfer-Encoding"u8))
        {
            return PassThroughReason.TransferEncoding;
        }
        else if (Ascii.EqualsIgnoreCase(name, "Upgrade"u8)
            || (Ascii.EqualsIgnoreCase(name, "Connection"u8) && ContainsIgnoreCase(value, "upgrade"u8)))
        {
            Upgrade = true;
        }
        else
        {
            framing = false;
        }

        return PassThroughReason.None;
    }

    private static bool ContainsIgnoreCase(ReadOnlySpan<byte> value, ReadOnlySpan<byte> token)
    {
        for (int i = 0; i + token.Length <= value.Length; i++)
        {
            if (Ascii.EqualsIgnoreCase(value.Slice(i, token.Length), token))
            {
                return true;
            }
        }

        return false;
    }
}
