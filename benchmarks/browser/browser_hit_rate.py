#!/usr/bin/env python3
"""Headless Chromium against the sample's small web site, HeaderCache against Kestrel alone.

Installs Debian's chromium if it is missing, builds the sample (Release, artifacts/browser), and for each mode
starts the sample, lets one browser session walk the site (/site/page1: about 30 resources of the same origin
per page, two fetch() calls with custom headers; then a reload, page2, a reload, page3, a reload, the form post,
a reload and page2 again; every reload revalidates each resource with If-None-Match), and reads the server's
/stats before and after. Prints the requests, bytes allocated per request, and for HeaderCache the header lines
served without a new string (of those it took out), the bytes Kestrel alone would have allocated for them
(headercache.allocation.avoided), evictions by kind and the connections by outcome; for both modes the requests by
protocol, the connections the browser opened, and of the header values equal to one the connection sent before, the
share the application got as the same string instance (the sample's valueReuse).

With --https the sample listens on TLS only (a self-signed certificate made with openssl for the run), Kestrel's
default Http1AndHttp2, so Chromium negotiates HTTP/2 by ALPN; the script's own requests stay HTTP/1.1.

Usage: benchmarks/browser/browser_hit_rate.py [--runs 3] [--no-build] [--https]
"""
import argparse
import base64
import hashlib
import http.client
import json
import os
import shutil
import signal
import ssl
import sys
import subprocess
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import sample_server  # noqa: E402
DLL = sample_server.dll("browser")
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
    sample_server.build("browser")


class Tls:
    """A throwaway certificate for 127.0.0.1 in folder, the sample's settings that listen with it, and the Chromium
    flag that trusts it."""

    def __init__(self, folder):
        self.cert, self.key = os.path.join(folder, "tls-cert.pem"), os.path.join(folder, "tls-key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                        "-keyout", self.key, "-out", self.cert], check=True, capture_output=True)
        public_key = subprocess.run(["openssl", "x509", "-in", self.cert, "-noout", "-pubkey"], check=True,
                                    capture_output=True).stdout
        der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public_key, check=True,
                             capture_output=True).stdout
        self.spki = base64.b64encode(hashlib.sha256(der).digest()).decode()

    def env(self):
        # Endpoints from configuration replace the --urls sample_server passes (Kestrel logs that it overrides them).
        return {"Kestrel__Endpoints__Tls__Url": "https://127.0.0.1:0",
                "Kestrel__Endpoints__Tls__Certificate__Path": self.cert,
                "Kestrel__Endpoints__Tls__Certificate__KeyPath": self.key}

    def browser_flags(self):
        # Trusting the key's hash makes the certificate valid for Chromium, not an error it was told to ignore:
        # Chromium keeps no responses of a certificate with errors in its cache, and then a reload would not
        # revalidate with If-None-Match as the HTTP walk does.
        return [f"--ignore-certificate-errors-spki-list={self.spki}"]


def start(mode, tls=None):
    return sample_server.start(DLL, {"DOTNET_gcServer": "0", "Sample__CacheStats": "true", "ASPNETCORE_ENVIRONMENT": "Production",
                                     "Logging__LogLevel__Microsoft.Hosting.Lifetime": "Information", **MODES[mode],
                                     **(tls.env() if tls else {})})


class Control:
    """The script's own requests (/stats, and whether the walk is done) on one keep-alive connection, counted: a
    connection per request would add a connection and a created User-Agent line to HeaderCache's figures each time.
    The sample leaves the connection that asks for /stats out of its valueReuse figures."""

    def __init__(self, port, tls=None):
        if tls:
            self._connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=30,
                                                           context=ssl.create_default_context(cafile=tls.cert))
        else:
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


def browse(browser, control, port, browser_port=None, tls=None):
    """One browser session walks the site; the walk's last step requests /site/done, then the browser is closed.
    The browser connects to browser_port when given (a relay in front of the server on port), over https with tls."""
    def done():
        return int(control.get("/site/done-count"))

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        scheme = "https" if tls else "http"
        proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                 f"--user-data-dir={profile}", *(tls.browser_flags() if tls else []),
                                 f"{scheme}://127.0.0.1:{browser_port or port}/site/page1"],
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


def run(browser, mode, tls=None):
    proc, port = start(mode, tls)
    control = Control(port, tls)
    try:
        s0 = control.stats()
        before = control.requests
        browse(browser, control, port, tls=tls)
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
    r0, r1 = s0["valueReuse"], s1["valueReuse"]
    reuse = {k: r1[k] - r0[k] for k in ("repeated", "sameInstance", "connections", "allocatedBytes")}
    reuse["protocols"] = {p: n - r0["protocols"].get(p, 0) for p, n in r1["protocols"].items() if n - r0["protocols"].get(p, 0)}
    # What the sample allocated to count valueReuse is no part of serving the requests.
    allocated = s1["allocatedBytes"] - s0["allocatedBytes"] - reuse["allocatedBytes"]
    return requests, allocated / requests, cache, reuse


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--https", action="store_true", help="TLS, so that Chromium speaks HTTP/2")
    args = parser.parse_args()
    browser = chromium()
    if not args.no_build:
        build()
    print(subprocess.run([browser, "--version"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as folder:
        measure(browser, args.runs, Tls(folder) if args.https else None)


def measure(browser, runs, tls):
    bytes_per = {m: [] for m in MODES}
    reuse_share = {m: [] for m in MODES}
    for i in range(runs):
        for mode in MODES:
            requests, per_request, cache, reuse = run(browser, mode, tls)
            bytes_per[mode].append(per_request)
            share = reuse["sameInstance"] / max(1, reuse["repeated"])
            reuse_share[mode].append(share)
            line = (f"run {i + 1} {mode:12} {requests} requests {reuse['protocols']} on {reuse['connections']} connection(s),"
                    f" {per_request:,.0f} B allocated per request (counting values took {reuse['allocatedBytes']:,} B, left out),"
                    f" values repeated on their connection"
                    f" {reuse['repeated']}, same instance {reuse['sameInstance']} ({share:.3f})")
            if mode == "headercache":
                connections = {k.split("|", 1)[1]: v for k, v in cache.items() if k.startswith("headercache.connections|")}
                served, created = cache.get("headercache.lines|served", 0), cache.get("headercache.lines|created", 0)
                avoided = cache.get("headercache.allocation.avoided", 0)
                # HeaderCache meters the bytes it avoided on HTTP/1.1 only: over TLS it would print 0.
                avoided_text = ("not metered on HTTP/2" if tls else f"{avoided:,} ({avoided / requests:,.0f} per request)")
                line += (f", lines served {served} of {served + created} ({served / max(1, served + created):.1%}),"
                         f" bytes avoided {avoided_text},"
                         f" evictions {cache.get('headercache.evictions|value', 0)} values / {cache.get('headercache.evictions|name', 0)} names,"
                         f" connections {connections}")
            print(line, flush=True)
    median = {m: sorted(v)[len(v) // 2] for m, v in bytes_per.items()}
    share = {m: sorted(v)[len(v) // 2] for m, v in reuse_share.items()}
    print(f"RESULT browser{'-https' if tls else ''} bytes_per_request_ratio={median['headercache'] / median['kestrel']:.3f} "
          f"headercache={median['headercache']:.0f} kestrel={median['kestrel']:.0f} "
          f"same_instance_share headercache={share['headercache']:.3f} kestrel={share['kestrel']:.3f}")


if __name__ == "__main__":
    main()
