using HeaderCache.Transport;

namespace HeaderCache.Tests.Transport;

/// <summary>When <see cref="IdleTrim"/> lets go: after <see cref="IdleTrim.HeartbeatsBeforeTrim"/> beats of one wait,
/// including a wait an HTTP/2 connection's reader resumes only for Kestrel's own cancellation of its read on each
/// heartbeat, and never across a wait that a read with bytes ended.</summary>
public sealed class IdleTrimTests
{
    [Fact]
    public void A_wait_that_a_cancellation_interrupts_every_beat_is_trimmed()
    {
        var idle = new IdleTrim();
        var target = new Target();
        idle.Wait();
        for (int beat = 0; beat < 2 * IdleTrim.HeartbeatsBeforeTrim && target.Trims == 0; beat++)
        {
            // A cancellation ends each read; the reader shows it and Kestrel reads again.
            idle.Resume();
            idle.OnHeartbeat(target);
            idle.Wait(continues: true);
            idle.OnHeartbeat(target);
        }

        Assert.Equal(1, target.Trims);
    }

    [Fact]
    public void A_wait_that_a_read_with_bytes_ended_starts_the_count_again()
    {
        var idle = new IdleTrim();
        var target = new Target();
        for (int request = 0; request < 4; request++)
        {
            idle.Wait();
            for (int beat = 0; beat < IdleTrim.HeartbeatsBeforeTrim - 1; beat++)
            {
                idle.OnHeartbeat(target);
            }

            idle.Resume();
        }

        Assert.Equal(0, target.Trims);

        idle.Wait();
        for (int beat = 0; beat <= IdleTrim.HeartbeatsBeforeTrim; beat++)
        {
            idle.OnHeartbeat(target);
        }

        Assert.Equal(1, target.Trims);
    }

    private sealed class Target : IdleTrim.ITarget
    {
        public int Trims { get; private set; }

        public void Trim() => Trims++;
    }
}
