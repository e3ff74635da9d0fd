using System.IO.Pipelines;
using System.Net;
using System.Threading.Channels;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.InMemory;

/// <summary>
/// A Kestrel transport made of in-memory pipes: the real Kestrel (connection middleware, HTTP/1.1
/// parser, hosting) runs, only the sockets are gone. <see cref="InMemoryKestrel"/> puts a server on it.
/// </summary>
internal sealed class InMemoryTransport : IConnectionListenerFactory, IConnectionListener
{
    private readonly Channel<ConnectionContext> _accepts = Channel.CreateUnbounded<ConnectionContext>();

    public EndPoint EndPoint { get; private set; } = new IPEndPoint(IPAddress.Loopback, 0);

    /// <summary>Opens a connection and returns the client's end of it.</summary>
    public InMemoryClient Connect()
    {
        var toServer = new Pipe(new PipeOptions(useSynchronizationContext: false));
        // The client reads what the server sent only once the server waits (ExchangeAsync): a server that could not
        // write more than a pipe's pause threshold of responses before that would wait on the client forever, with or
        // without HeaderCache (the fuzzers' heads of 17 KB values echo back to more than 64 KB).
        var toClient = new Pipe(new PipeOptions(pauseWriterThreshold: 0, useSynchronizationContext: false));
        var client = new InMemoryClient(toClient.Reader, toServer.Writer);
        var connection = new Connection(new DuplexPipe(new WatchedReader(toServer.Reader, client), toClient.Writer));
        client.ServerFeatures = connection.Features;
        client.ConnectionId = connection.ConnectionId;
        if (!_accepts.Writer.TryWrite(connection))
        {
            throw new InvalidOperationException("The listener is closed.");
        }

        return client;
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

    // The server's end of the client's bytes. A read that has to wait means the server has acted on every
    // byte it was given; completing it means the server is done with the connection. Both tell the client.
    private sealed class WatchedReader(PipeReader inner, InMemoryClient client) : PipeReader
    {
        public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
        {
            ValueTask<ReadResult> read = inner.ReadAsync(cancellationToken);
            if (!read.IsCompleted)
            {
                client.OnServerWaiting();
            }

            return read;
        }

        public override bool TryRead(out ReadResult result) => inner.TryRead(out result);

        public override void AdvanceTo(SequencePosition consumed) => inner.AdvanceTo(consumed);

        public override void AdvanceTo(SequencePosition consumed, SequencePosition examined) => inner.AdvanceTo(consumed, examined);

        public override void CancelPendingRead() => inner.CancelPendingRead();

        public override void Complete(Exception? exception = null)
        {
            inner.Complete(exception);
            client.OnServerDone();
        }
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
