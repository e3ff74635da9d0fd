"""Builds the sample server for the Python benchmark scripts, starts it and finds the port it listens on (the bash
scripts' benchmarks/lib.sh does the same for them)."""
import os
import re
import subprocess
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def dll(artifacts="wrk"):
    """The sample built into artifacts/<artifacts> (wrk: the build the bash scripts share)."""
    return os.path.join(REPO, "artifacts", artifacts, "bin", "HeaderCache.Sample", "release", "HeaderCache.Sample.dll")


def build(artifacts="wrk"):
    """The sample, Release, into artifacts/<artifacts> (isolated from other builds)."""
    subprocess.run(["dotnet", "build", os.path.join(REPO, "samples", "HeaderCache.Sample"), "-c", "Release",
                    "--artifacts-path", os.path.join(REPO, "artifacts", artifacts), "-nologo", "-v", "q"], check=True)


def start(dll, env, content_root=os.path.join(REPO, "samples", "HeaderCache.Sample")):
    """Runs `dotnet dll` on 127.0.0.1 with a free port and `env` added to the environment; returns (process, port).
    The port is the first one the server logs, http or https (an endpoint in `env` replaces the --urls given here)."""
    proc = subprocess.Popen(["dotnet", dll, "--urls", "http://127.0.0.1:0", "--contentRoot", content_root],
                            env=dict(os.environ, **env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 30
    for line in proc.stdout:
        m = re.search(r"Now listening on: https?://127\.0\.0\.1:(\d+)", line)
        if m:
            # Keep reading the log, so that a chatty server never blocks on a full pipe.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, int(m.group(1))
        if time.time() > deadline:
            break
    proc.kill()
    raise RuntimeError("server did not start")
