using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace HeaderCache.Connection;

/// <summary>What Kestrel does on an endpoint with a cleartext connection that begins with the HTTP/2 prior-knowledge
/// preface (h2c): Kestrel chooses a connection's protocol before reading it, by the endpoint's
/// <see cref="ListenOptions.Protocols"/> (and TLS's ALPN, when there is TLS).</summary>
internal enum CleartextHttp2
{
    Unknown,    // the endpoint's Protocols are not known (a listener of Kestrel's transport): a request Kestrel creates tells
    Served,     // Protocols is Http2 without Http1: Kestrel reads the preface as HTTP/2
    Refused,    // Protocols has Http1 (the default Http1AndHttp2): Kestrel reads HTTP/1.1 and answers the preface with a GOAWAY (HTTP_1_1_REQUIRED)
}

/// <summary>How an endpoint's <see cref="ListenOptions.Protocols"/> decide <see cref="CleartextHttp2"/>.</summary>
internal static class CleartextHttp2Of
{
    /// <summary>Kestrel speaks HTTP/2 on a cleartext connection only where HTTP/1.1 is off and HTTP/2 on.</summary>
    public static CleartextHttp2 Protocols(HttpProtocols protocols) =>
        (protocols & HttpProtocols.Http1AndHttp2) == HttpProtocols.Http2 ? CleartextHttp2.Served : CleartextHttp2.Refused;
}
