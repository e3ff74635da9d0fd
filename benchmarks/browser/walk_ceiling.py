#!/usr/bin/env python3
"""What any cache could serve of the browser walk: the walk's header lines, each classed by where it was sent before.

Runs the walk of browser_hit_rate.py once against Kestrel alone, with a relay between Chromium and the sample that
records the bytes each connection sends, and classes every header line (Host, Connection, Content-Length and
Transfer-Encoding left out: Kestrel acts on them, nothing takes them) by its exact bytes:

  connection  sent earlier on the same connection: a cache per connection with unlimited room could serve it;
  elsewhere   first on its connection, sent earlier on another: only something shared by the process could;
  new         first in the whole walk: nothing learned from traffic can serve it (only a fixed list of values).

The three shares bound what a design can reach on this walk; the product's own figure (lines served, of the lines it
takes out) is browser_hit_rate.py's, whose denominator also leaves out the lines Kestrel reuses by itself.

Usage: benchmarks/browser/walk_ceiling.py [--no-build]
"""
import argparse
import asyncio
import collections
import threading

import browser_hit_rate as walk

KESTREL_ACTS_ON = {b"host", b"connection", b"content-length", b"transfer-encoding"}


class Relay:
    """Forwards every connection to the sample and keeps what the client sent on it."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.sent = []
        self.port = None
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait()

    def _run(self):
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, client_reader, client_writer):
        recorded = bytearray()
        self.sent.append(recorded)
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def pump(reader, writer, record):
            try:
                while data := await reader.read(65536):
                    if record is not None:
                        record += data
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pump(client_reader, server_writer, recorded), pump(server_reader, client_writer, None))


def header_lines(stream):
    """The header lines of every request head in what one connection sent; bodies skipped by Content-Length."""
    position = 0
    while (end := stream.find(b"\r\n\r\n", position)) >= 0:
        lines = bytes(stream[position:end]).split(b"\r\n")[1:]
        length = 0
        for line in lines:
            name = line.split(b":", 1)[0].lower()
            if name == b"content-length":
                length = int(line.split(b":", 1)[1])
            if name not in KESTREL_ACTS_ON:
                yield line
        position = end + 4 + length


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    browser = walk.chromium()
    if not args.no_build:
        walk.build()
    proc, port = walk.start("kestrel")
    control = walk.Control(port)
    try:
        relay = Relay(port)
        walk.browse(browser, control, port, relay.port)
    finally:
        control.close()
        proc.terminate()
        proc.wait(timeout=30)

    classes = collections.Counter()
    by_name = collections.defaultdict(collections.Counter)
    walk_seen = set()
    for stream in relay.sent:
        connection_seen = set()
        for line in header_lines(stream):
            kind = "connection" if line in connection_seen else "elsewhere" if line in walk_seen else "new"
            connection_seen.add(line)
            walk_seen.add(line)
            classes[kind] += 1
            by_name[line.split(b":", 1)[0].decode("ascii", "replace")][kind] += 1

    total = sum(classes.values())
    print(f"{len(relay.sent)} connections, {total} header lines (Host, Connection, Content-Length, Transfer-Encoding left out)")
    for kind in ("connection", "elsewhere", "new"):
        print(f"  {kind:10} {classes[kind]:5} ({classes[kind] / total:.1%})")
    print("not sent before on their connection, by name:")
    for name, counts in sorted(by_name.items(), key=lambda item: -(item[1]["elsewhere"] + item[1]["new"])):
        if counts["elsewhere"] + counts["new"] > 0:
            print(f"  {name:28} elsewhere {counts['elsewhere']:4}  new {counts['new']:4}  (of {sum(counts.values())})")
    print(f"RESULT walk_ceiling per_connection={classes['connection'] / total:.3f} "
          f"shared={(classes['connection'] + classes['elsewhere']) / total:.3f} lines={total}")


if __name__ == "__main__":
    main()
