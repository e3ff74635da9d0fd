using HeaderCache.Transport;

namespace HeaderCache.Connection;

/// <summary>An endpoint's idle <see cref="ReadingState"/>s, each lent to one connection at a time, so that a new
/// connection reads with the objects an ended one made instead of making its own. Bounded: at most a few per core stay
/// idle, and a state returned to a full pool is let go.</summary>
/// <remarks>A state comes back only once its connection has ended and Kestrel has completed every reader that read
/// with it (<see cref="HeaderCacheConnection.Dispose"/>), and it comes back empty (<see cref="ReadingState.Reset"/>):
/// no string, line or entry passes from one connection to another. Lock-free: each slot is taken and filled with a
/// compare-exchange.</remarks>
internal sealed class ReadingStatePool
{
    private readonly ReadingState?[] _idle = new ReadingState?[Math.Min(64, 4 * Environment.ProcessorCount)];

    /// <summary>An idle state made with <paramref name="options"/>, or a new one for Kestrel's
    /// <paramref name="limits"/>; one made with options since replaced is let go.</summary>
    public ReadingState Rent(HeaderCacheOptions options, KestrelLimits limits, bool kestrelReusesValues)
    {
        for (int i = 0; i < _idle.Length; i++)
        {
            ReadingState? state = Volatile.Read(ref _idle[i]);
            if (state is not null && Interlocked.CompareExchange(ref _idle[i], null, state) == state && state.Options == options)
            {
                return state;
            }
        }

        return new ReadingState(options, limits, kestrelReusesValues);
    }

    /// <summary>Empties <paramref name="state"/>, whose connection has ended and whose readers read no more, and keeps it
    /// for the next connection if there is room.</summary>
    public void Return(ReadingState state)
    {
        state.Reset();
        for (int i = 0; i < _idle.Length; i++)
        {
            if (Interlocked.CompareExchange(ref _idle[i], state, null) is null)
            {
                return;
            }
        }
    }
}
