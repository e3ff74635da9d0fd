#!/usr/bin/env python3
"""Headless Chromium against the sample's small web site, HeaderCache against Kestrel alone.

Installs Debian's chromium if it is missing, builds the sample (Release, artifacts/browser), and for each mode
starts the sample, lets one browser session walk the site (/site/page1: about 30 resources of the same origin
per page, two fetch() calls with custom headers; then a reload, page2, a reload, page3, a reload, the form post,
a reload and page2 again; every reload revalidates each resource with If-None-Match), and reads the server's
/stats before and after. Prints the requests, bytes allocated per request, and for HeaderCache the header lines
served without a new string (of those it took out), the bytes Kestrel alone would have allocated for them
(headercache.allocation.avoided), evictions by kind and the connections by outcome.

Usage: benchmarks/browser/browser_hit_rate.py [--runs 3] [--no-build]
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import sys
import subprocess
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import sample_server  # noqa: E402
DLL = os.path.join(REPO, "artifacts", "browser", "bin", "HeaderCache.Sample", "release", "HeaderCache.Sample.dll")
MODES = {
    "headercache": {"Sample__KestrelOnly": "false", "HeaderCache__Enabled": "true"},
    "kestrel": {"Sample__KestrelOnly": "true"},
}


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        path = shutil.which("chromium")
    return path


def build():
    """The sample, Release, into artifacts/browser (DLL)."""
    subprocess.run(["dotnet", "build", os.path.join(REPO, "samples", "HeaderCache.Sample"), "-c", "Release",
                    "--artifacts-path", os.path.join(REPO, "artifacts", "browser"), "-nologo", "-v", "q"], check=True)


def start(mode):
    return sample_server.start(DLL, {"DOTNET_gcServer": "0", "Sample__CacheStats": "true", "ASPNETCORE_ENVIRONMENT": "Production",
                                     "Logging__LogLevel__Microsoft.Hosting.Lifetime": "Information", **MODES[mode]})


class Control:
    """The script's own requests (/stats, and whether the walk is done) on one keep-alive connection, counted: a
    connection per request would add a connection and a created User-Agent line to HeaderCache's figures each time."""

    def __init__(self, port):
        self._connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.requests = 0

    def get(self, path):
        self._connection.request("GET", path)
        self.requests += 1
        with self._connection.getresponse() as r:
            return r.read()

    def stats(self):
        return json.loads(self.get("/stats"))

    def close(self):
        self._connection.close()


def browse(browser, control, port, browser_port=None):
    """One browser session walks the site; the walk's last step requests /site/done, then the browser is closed.
    The browser connects to browser_port when given (a relay in front of the server on port)."""
    def done():
        return int(control.get("/site/done-count"))

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                 f"--user-data-dir={profile}", f"http://127.0.0.1:{browser_port or port}/site/page1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.time() + 120
            while done() == 0:
                if time.time() > deadline:
                    raise RuntimeError("the browser did not finish the walk in 120 s")
                time.sleep(0.2)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)   # the browser and its helper processes
            proc.wait(timeout=30)


def run(browser, mode):
    proc, port = start(mode)
    control = Control(port)
    try:
        s0 = control.stats()
        before = control.requests
        browse(browser, control, port)
        time.sleep(1)
        s1 = control.stats()
    finally:
        control.close()
        proc.terminate()
        proc.wait(timeout=30)
    # The script's own requests after the first /stats, the second /stats included (they allocate little, alike in
    # both modes), are not the browser's.
    requests = s1["requests"] - s0["requests"] - (control.requests - before)
    cache = {k: v - (s0.get("cache") or {}).get(k, 0) for k, v in (s1.get("cache") or {}).items()}
    return requests, (s1["allocatedBytes"] - s0["allocatedBytes"]) / requests, cache


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    browser = chromium()
    if not args.no_build:
        build()
    print(subprocess.run([browser, "--version"], capture_output=True, text=True).stdout.strip())
    bytes_per = {m: [] for m in MODES}
    for i in range(args.runs):
        for mode in MODES:
            requests, per_request, cache = run(browser, mode)
            bytes_per[mode].append(per_request)
            line = f"run {i + 1} {mode:12} {requests} requests, {per_request:,.0f} B allocated per request"
            if mode == "headercache":
                connections = {k.split("|", 1)[1]: v for k, v in cache.items() if k.startswith("headercache.connections|")}
                served, created = cache.get("headercache.lines|served", 0), cache.get("headercache.lines|created", 0)
                avoided = cache.get("headercache.allocation.avoided", 0)
                line += (f", lines served {served} of {served + created} ({served / max(1, served + created):.1%}),"
                         f" bytes avoided {avoided:,} ({avoided / requests:,.0f} per request),"
                         f" evictions {cache.get('headercache.evictions|value', 0)} values / {cache.get('headercache.evictions|name', 0)} names,"
                         f" connections {connections}")
            print(line, flush=True)
    median = {m: sorted(v)[len(v) // 2] for m, v in bytes_per.items()}
    print(f"RESULT browser bytes_per_request_ratio={median['headercache'] / median['kestrel']:.3f} "
          f"headercache={median['headercache']:.0f} kestrel={median['kestrel']:.0f}")


if __name__ == "__main__":
    main()
