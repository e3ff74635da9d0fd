#!/usr/bin/env python3
"""Soak: mixed-profile wrk load on the sample while HeaderCache:Enabled flips in appsettings.json.

Runs the sample (Release) with a private copy of its appsettings.json as content root, puts wrk
load on it from several traffic profiles at once, rewrites appsettings.json every --flip seconds
(Enabled true <-> false; new connections follow it), and meanwhile:
- spot-checks the echo: new keep-alive connections send requests with known headers and compare
  the echoed view with the one expected from the bytes sent (any mismatch is a divergence);
- samples the live heap after a full collection (/stats?heap=1) to see whether memory grows;
- collects wrk's socket errors and non-2xx responses.
Ends with one line: RESULT soak minutes=.. requests=.. errors=.. divergences=.. heap_growth=..

Usage: benchmarks/hostile/soak.py [--minutes 10] [--flip 30] [--profiles chrome,proxy-pool,churn,firefox]
"""
import argparse, json, os, re, shutil, socket, subprocess, sys, tempfile, time, urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import sample_server  # noqa: E402


def stats(port, heap=False):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats" + ("?heap=1" if heap else ""), timeout=60) as r:
        return json.load(r)


def expected_view(method, target, headers):
    lines = [f"{method} {target} HTTP/1.1"]
    for name, value in sorted(enumerate(headers), key=lambda h: (h[1][0].lower(), h[0])):
        lines.append(f"{value[0].lower()}: {value[1]}")
    return lines


def echoed_view(body):
    lines = body.split("\n")
    first = lines[0]
    heads = []
    for line in lines[1:]:
        if line.startswith("body-length: "):
            break
        name, _, value = line.partition(": ")
        heads.append(f"{name.lower()}: {value}")
    return [first] + heads


def read_response(sock, buf):
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    return head.decode("latin-1"), rest[:length].decode("utf-8"), rest[length:]


def spot_check(port, n):
    """One connection, three requests whose values repeat, so the second and third are cache hits."""
    headers = [("Host", "soak.test"), ("sec-ch-ua", f'"Soak";v="{n % 7}"'), ("Accept", f"text/x-{n % 3}"),
               ("X-Spot", f"spot-{n}"), ("Sec-Fetch-Dest", "document"), ("Cookie", f"id={n % 5}")]
    target = f"/spot/{n}"
    request = (f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode()
    bad = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        buf = b""
        for _ in range(3):
            s.sendall(request)
            head, body, buf = read_response(s, buf)
            if not head.startswith("HTTP/1.1 200") or echoed_view(body) != expected_view("GET", target, headers):
                bad += 1
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--flip", type=float, default=30)
    p.add_argument("--profiles", default="chrome,proxy-pool,churn,firefox")
    args = p.parse_args()
    shutil.which("wrk") or subprocess.run("apt-get update && apt-get install -y wrk", shell=True, check=True)
    if not os.path.exists(sample_server.dll()):
        sample_server.build()
    root = tempfile.mkdtemp(prefix="headercache-soak-")
    settings = os.path.join(root, "appsettings.json")
    base = json.load(open(os.path.join(REPO, "samples", "HeaderCache.Sample", "appsettings.json")))

    def write_settings(enabled):
        base["HeaderCache"]["Enabled"] = enabled
        tmp = settings + ".tmp"
        with open(tmp, "w") as f:
            json.dump(base, f)
        os.replace(tmp, settings)

    write_settings(True)
    server, port = sample_server.start(sample_server.dll(), {"DOTNET_gcServer": "0"}, content_root=root)
    duration = int(args.minutes * 60)
    print(f"server on {port}; {args.minutes} min; flipping Enabled every {args.flip} s; profiles {args.profiles}", flush=True)
    start_stats = stats(port)
    wrks = []
    for profile in args.profiles.split(","):
        wrks.append(subprocess.Popen(["wrk", "-t1", "-c2", f"-d{duration}s", "--timeout", "10s", "-s", os.path.join(REPO, "benchmarks", "wrk", "profile.lua"),
                                      f"http://127.0.0.1:{port}", "--", os.path.join(REPO, "traffic", profile + ".http")],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    t0 = time.time()
    enabled, next_flip, spots, divergences, heaps = True, t0 + args.flip, 0, 0, []
    next_heap = t0 + 30
    while time.time() - t0 < duration:
        now = time.time()
        if now >= next_flip:
            enabled = not enabled
            write_settings(enabled)
            next_flip += args.flip
        if now >= next_heap:
            heaps.append(stats(port, heap=True)["heapBytes"])
            print(f"{int(now - t0):4d}s enabled={enabled} heap={heaps[-1]:,} spot checks={spots} divergences={divergences}", flush=True)
            next_heap += 30
        try:
            divergences += spot_check(port, spots)
        except Exception as e:  # a failed spot check counts as a divergence
            print("spot check failed:", e, flush=True)
            divergences += 1
        spots += 1
        time.sleep(0.5)
    errors, requests = 0, 0
    for w in wrks:
        out = w.communicate()[0]
        m = re.search(r"(\d+) requests in", out)
        requests += int(m.group(1)) if m else 0
        for pattern in (r"Non-2xx or 3xx responses: (\d+)", r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)"):
            for m in re.finditer(pattern, out):
                errors += sum(int(g) for g in m.groups())
    end_stats = stats(port)
    server.terminate()
    server.wait(timeout=30)
    shutil.rmtree(root, ignore_errors=True)
    growth = (heaps[-1] - heaps[1]) / heaps[1] if len(heaps) > 2 else 0.0
    print(f"heap samples (every 30 s): {', '.join(f'{h // 1024} KiB' for h in heaps)}")
    print(f"server requests: {end_stats['requests'] - start_stats['requests']}, spot checks: {spots}")
    print(f"RESULT soak minutes={args.minutes} requests={requests} errors={errors} divergences={divergences} heap_growth={growth:.3f}")
    return 0 if errors == 0 and divergences == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
