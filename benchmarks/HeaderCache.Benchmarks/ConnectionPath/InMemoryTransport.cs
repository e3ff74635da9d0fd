using System.IO.Pipelines;
using System.Net;
using System.Threading.Channels;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Benchmarks.ConnectionPath;

/// <summary>
/// A Kestrel transport made of in-memory pipes: the real Kestrel (connection middleware, HTTP/1.1
/// parser, hosting) runs, only the sockets are gone, so a benchmark measures the connection path alone.
/// </summary>
internal sealed class InMemoryTransport : IConnectionListenerFactory, IConnectionListener
{
    private readonly Channel<ConnectionContext> _accepts = Channel.CreateUnbounded<ConnectionContext>();

    public EndPoint EndPoint { get; private set; } = new IPEndPoint(IPAddress.Loopback, 0);

    /// <summary>Opens a connection; the returned pipe is the client's end.</summary>
    public IDuplexPipe Connect()
    {
        var input = new Pipe(new PipeOptions(useSynchronizationContext: false));
        var output = new Pipe(new PipeOptions(useSynchronizationContext: false));
        var connection = new Connection(new DuplexPipe(input.Reader, output.Writer));
        if (!_accepts.Writer.TryWrite(connection))
        {
            throw new InvalidOperationException("The listener is closed.");
        }

        return new DuplexPipe(output.Reader, input.Writer);
    }

    public ValueTask<IConnectionListener> BindAsync(EndPoint endpoint, CancellationToken cancellationToken = default)
    {
        EndPoint = endpoint;
        return new(this);
    }

    public async ValueTask<ConnectionContext?> AcceptAsync(CancellationToken cancellationToken = default)
    {
        try
        {
            return await _accepts.Reader.ReadAsync(cancellationToken);
        }
        catch (ChannelClosedException)
        {
            return null;
        }
    }

    public ValueTask UnbindAsync(CancellationToken cancellationToken = default)
    {
        _accepts.Writer.TryComplete();
        return default;
    }

    public ValueTask DisposeAsync() => UnbindAsync();

    private sealed class DuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }

    private sealed class Connection(IDuplexPipe transport) : ConnectionContext
    {
        private static int s_ids;

        public override string ConnectionId { get; set; } = "mem-" + Interlocked.Increment(ref s_ids);

        public override IFeatureCollection Features { get; } = new FeatureCollection();

        public override IDictionary<object, object?> Items { get; set; } = new Dictionary<object, object?>();

        public override IDuplexPipe Transport { get; set; } = transport;

        public override void Abort(ConnectionAbortedException abortReason) => Transport.Input.Complete(abortReason);

        public override async ValueTask DisposeAsync()
        {
            await Transport.Input.CompleteAsync();
            await Transport.Output.CompleteAsync();
            await base.DisposeAsync();
        }
    }
}
