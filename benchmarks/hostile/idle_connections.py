#!/usr/bin/env python3
"""Memory per idle keep-alive connection, with and without HeaderCache.

Starts the sample server (Release build) once per mode, opens N keep-alive connections to it, sends
one request of a traffic profile on each, waits for every response, then asks the server for its
live heap after a full collection (/stats?heap=1). Reports (heap with N idle connections - heap
before) / N for each mode and the difference: what the cache keeps per idle connection.

Usage: benchmarks/hostile/idle_connections.py [--connections 10000] [--profile chrome] [--dll PATH]
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


def start(dll, mode):
    return sample_server.start(dll, dict(DOTNET_gcServer="0", Sample__Echo="false", **MODES[mode]))


def heap(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats?heap=1", timeout=30) as r:
        return json.load(r)["heapBytes"]


def measure(dll, mode, n, request, settle):
    proc, port = start(dll, mode)
    try:
        heap(port)
        before = min(heap(port) for _ in range(3))
        sockets = []
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(request)
            sockets.append(s)
        for s in sockets:
            s.settimeout(30)
            got = b""
            while not got.endswith(b"Hello, World!"):
                chunk = s.recv(4096)
                if not chunk:
                    raise RuntimeError("server closed a connection")
                got += chunk
        time.sleep(settle)
        after = min(heap(port) for _ in range(3))
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
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds to wait after the last response before reading the heap; Kestrel's memory pool "
                             "releases blocks it no longer needs after a while, so a long wait leaves only what the "
                             "idle connections themselves hold. HeaderCache's connections let go of their memo of lines "
                             "and queue after ten heartbeats (about 10 s) without a request: 13 measures them after that")
    parser.add_argument("--dll", default=os.path.join(REPO, "artifacts", "wrk", "bin", "HeaderCache.Sample", "release", "HeaderCache.Sample.dll"))
    args = parser.parse_args()
    if not os.path.exists(args.dll):
        subprocess.run(["dotnet", "build", os.path.join(REPO, "samples", "HeaderCache.Sample"), "-c", "Release",
                        "--artifacts-path", os.path.join(REPO, "artifacts", "wrk"), "-nologo", "-v", "q"], check=True)
    request = first_request(args.profile)
    per = {}
    for mode in MODES:
        before, after = measure(args.dll, mode, args.connections, request, args.settle)
        per[mode] = (after - before) / args.connections
        print(f"{mode:12} heap before {before:>12,} B, with {args.connections} idle connections {after:>12,} B: {per[mode]:8.0f} B per connection")
    print(f"RESULT idle_connections={args.connections} profile={args.profile} extra_bytes_per_connection={per['headercache'] - per['kestrel']:.0f}")


if __name__ == "__main__":
    sys.exit(main())
