using Microsoft.AspNetCore.Http.Features;

namespace HeaderCache.Requests;

/// <summary>A connection's entry among its features through which each request Kestrel creates on it gets back the
/// header fields its reader took out: found from the request's features when Kestrel creates its context (Kestrel's
/// request features fall back to the connection's, where the connection put this), it hands the request to the part of
/// the protocol the connection speaks.</summary>
internal sealed class ConnectionHeaders
{
    /// <summary>What puts a request's taken fields back on one protocol: the view of an HTTP/1.1 connection
    /// (<see cref="CachedRequestHeaders"/>, made by the connection's HTTP/1.1 part at its first request), or the streams
    /// of an HTTP/2 one (<see cref="Http2StreamHandoff"/>).</summary>
    public interface IPart
    {
        /// <summary>Puts the fields taken out of the head (or header block) of the request whose context is being
        /// created back into its headers: what to tell when hosting has ended that request, or <see langword="null"/>.</summary>
        IRequestEnd? Attach(IFeatureCollection requestFeatures);
    }

    /// <summary>What holds a request's fields past its creation, told when hosting has disposed the request's context.</summary>
    public interface IRequestEnd
    {
        /// <summary>Hosting's <c>DisposeContext</c> of the request returned: nothing above Kestrel reads its headers now.</summary>
        void RequestEnded();
    }

    /// <summary>The part of the protocol the connection speaks, set when that protocol starts, before Kestrel creates
    /// any request on it.</summary>
    public IPart? Part { get; set; }

    /// <summary>The entry of the connection of the request whose context is being created, or <see langword="null"/>
    /// when its connection has none.</summary>
    /// <remarks>The indexer, not <c>Get&lt;T&gt;</c>: a generic method called through an interface costs a runtime
    /// dictionary lookup.</remarks>
    public static ConnectionHeaders? Of(IFeatureCollection requestFeatures) =>
        requestFeatures[typeof(ConnectionHeaders)] as ConnectionHeaders;

    /// <summary>Puts the request's taken fields back through the part of the connection's protocol.</summary>
    public IRequestEnd? Attach(IFeatureCollection requestFeatures) => Part?.Attach(requestFeatures);
}
