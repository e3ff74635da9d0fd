#!/usr/bin/env python3
"""Memory per idle keep-alive connection, with and without HeaderCache.

Starts the sample server (Release build) once per mode, opens N keep-alive connections to it, sends
one request of a traffic profile on each, waits for every response, then asks the server for its
live heap after a full collection (/stats?heap=1). Reports (heap with N idle connections - heap
before) / N for each mode and the difference: what the cache keeps per idle connection. The blocks Kestrel's memory
pool holds free (Sample:PoolStats) are taken off the heap first: they belong to no connection, their number follows the
peak of the burst that opened the connections and the pool's last eviction, and they moved runs by 2 KB a connection.
The heap with them is reported too (extra_heap_bytes_per_connection).

With --http2 the connections are h2c (prior knowledge; the sample's endpoints then take HTTP/2 only and /stats is read
with curl --http2-prior-knowledge): each sends the profile's first request twice, the first time every field a literal
with incremental indexing, the second time every field a reference to the entry the first made, as a browser's HPACK
encoder does. HeaderCache's part of an idle HTTP/2 connection is then its mirror of the HPACK table, with the strings of
the entries it served, and the arrays its streams' fields travelled in.

Usage: benchmarks/hostile/idle_connections.py [--connections 10000] [--profile chrome] [--http2] [--dll PATH]
"""
import argparse, json, os, re, socket, subprocess, sys, time, urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import sample_server  # noqa: E402
MODES = {
    "headercache": {"Sample__KestrelOnly": "false", "HeaderCache__Enabled": "true"},
    "kestrel": {"Sample__KestrelOnly": "true"},
}


def first_request(profile):
    text = open(os.path.join(REPO, "traffic", profile + ".http"), encoding="utf-8").read()
    head = text.split("\n\n")[0]
    fills = {"uuid": "0f8fad5b-d9cb-469f-a165-70867728950e", "hex16": "0123456789abcdef", "hex32": "0123456789abcdef0123456789abcdef",
             "n": "0", "ip": "203.0.113.7", "cookie": "session=" + "a" * 100}
    head = re.sub(r"\$\{(\w+)\}", lambda m: fills[m.group(1)], head)
    return (head.replace("\n", "\r\n") + "\r\n\r\n").encode("ascii")


def http2_requests(request):
    """The HTTP/1.1 head as the bytes of an h2c connection that sends it twice (streams 1 and 3), and the stream whose
    end finishes the exchange."""
    lines = request.decode("ascii").split("\r\n")
    method, target, _ = lines[0].split(" ")
    fields = [(n.strip().lower(), v.strip()) for n, v in (line.split(":", 1) for line in lines[1:] if line)]
    authority = next((v for n, v in fields if n == "host"), "localhost")
    fields = [(n, v) for n, v in fields if n not in ("host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade")]

    def integer(value, prefix_bits, first):
        limit = (1 << prefix_bits) - 1
        if value < limit:
            return bytes([first | value])
        out, value = [first | limit], value - limit
        while value >= 128:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        return bytes(out + [value])

    def literal(name, value):  # with incremental indexing, new name, no Huffman
        n, v = name.encode("ascii"), value.encode("ascii")
        return b"\x40" + integer(len(n), 7, 0) + n + integer(len(v), 7, 0) + v

    pseudo = [(":method", method), (":scheme", "http"), (":authority", authority), (":path", target)]
    first = b"".join(literal(n, v) for n, v in pseudo + fields)
    # The table holds the first block's entries newest first: entry k of m is index 62 + (m - 1 - k). :path stays a literal.
    m = len(pseudo) + len(fields)
    second = b"".join(integer(62 + m - 1 - k, 7, 0x80) for k in range(3))
    second += literal(":path", target).replace(b"\x40", b"\x00", 1)
    second += b"".join(integer(62 + m - 1 - k, 7, 0x80) for k in range(4, m))

    def frame(kind, flags, stream, payload):
        return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload

    return (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(1, 5, 1, first) + frame(1, 5, 3, second)), 3


def http2_done(got, stream):
    """Whether the server's bytes so far end stream `stream` (a HEADERS or DATA frame with END_STREAM); raises on GOAWAY."""
    at = 0
    while at + 9 <= len(got):
        length, kind, flags = int.from_bytes(got[at:at + 3], "big"), got[at + 3], got[at + 4]
        sid = int.from_bytes(got[at + 5:at + 9], "big") & 0x7FFFFFFF
        if at + 9 + length > len(got):
            return False
        if kind == 7:
            raise RuntimeError("server sent GOAWAY")
        if kind in (0, 1) and flags & 1 and sid == stream:
            return True
        at += 9 + length
    return False


def start(dll, mode, http2):
    env = dict(DOTNET_gcServer="0", Sample__Echo="false", Sample__PoolStats="true", **MODES[mode])
    if http2:
        env["Kestrel__EndpointDefaults__Protocols"] = "Http2"
    return sample_server.start(dll, env)


def heap(port, http2):
    if http2:
        out = subprocess.run(["curl", "-s", "--http2-prior-knowledge", f"http://127.0.0.1:{port}/stats?heap=1"],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        stats = json.loads(out)
    else:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats?heap=1", timeout=30) as r:
            stats = json.load(r)
    return stats["heapBytes"], stats["poolFreeBytes"]


def measure(dll, mode, n, request, settle, http2):
    proc, port = start(dll, mode, http2)
    if http2:
        request, last_stream = http2_requests(request)
        done = lambda got: http2_done(got, last_stream)  # noqa: E731
    else:
        done = lambda got: got.endswith(b"Hello, World!")  # noqa: E731
    try:
        heap(port, http2)
        before = min((heap(port, http2) for _ in range(3)), key=lambda h: h[0] - h[1])
        sockets = []
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(request)
            sockets.append(s)
        for s in sockets:
            s.settimeout(30)
            got = b""
            while not done(got):
                chunk = s.recv(4096)
                if not chunk:
                    raise RuntimeError("server closed a connection")
                got += chunk
        time.sleep(settle)
        after = min((heap(port, http2) for _ in range(3)), key=lambda h: h[0] - h[1])
        for s in sockets:
            s.close()
        return before, after
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--profile", default="chrome")
    parser.add_argument("--http2", action="store_true", help="h2c connections, each sending the request twice (see above)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds to wait after the last response before reading the heap; Kestrel's memory pool "
                             "releases blocks it no longer needs after a while, so a long wait leaves only what the "
                             "idle connections themselves hold. HeaderCache's connections let go of their memo of lines "
                             "and queue after ten heartbeats (about 10 s) without a request: 13 measures them after that")
    parser.add_argument("--dll", default=sample_server.dll())
    args = parser.parse_args()
    if not os.path.exists(args.dll):
        sample_server.build()
    request = first_request(args.profile)
    per, raw = {}, {}
    for mode in MODES:
        (before, free_before), (after, free_after) = measure(args.dll, mode, args.connections, request, args.settle, args.http2)
        per[mode] = ((after - free_after) - (before - free_before)) / args.connections
        raw[mode] = (after - before) / args.connections
        print(f"{mode:12} heap before {before:>12,} B ({free_before:,} free in the pool), with {args.connections} idle connections "
              f"{after:>12,} B ({free_after:,} free in the pool): {per[mode]:8.0f} B per connection without the pool's free blocks, "
              f"{raw[mode]:8.0f} with them")
    print(f"RESULT idle_connections={args.connections} profile={args.profile} http2={int(args.http2)} "
          f"extra_bytes_per_connection={per['headercache'] - per['kestrel']:.0f} "
          f"extra_heap_bytes_per_connection={raw['headercache'] - raw['kestrel']:.0f}")


if __name__ == "__main__":
    sys.exit(main())
