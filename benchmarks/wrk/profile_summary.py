#!/usr/bin/env python3
"""Summarizes profile.sh's samples: each function's CPU per request in both modes, averaged over rounds.

The modes are HeaderCache and Kestrel alone, or with profile.sh --against, HeaderCache and HeaderCache built from the
other checkout ("before").

A function's figure is its share of a run's samples times the server's CPU time over wrk's requests in that run.
Prints the totals (kernel, HeaderCache's own frames, the rest of user mode), then the functions whose figures differ
by at least --min-ns, most saved first. Standard library and perf only.
"""
import argparse
import collections
import csv
import os
import re
import subprocess

LABELS = {"kestrel": "Kestrel alone", "headercache-before": "before"}
# "  12.34%  <dso>  [.] <symbol>" (perf report --sort dso,sym; a JIT dso is "[JIT] tid N", with a space).
ROW = re.compile(r"^\s+([\d.]+)%\s+(.*?)\s+\[([.k])\]\s+(.*?)\s*$")


def shares(path):
    """(percent, kernel, symbol) for every symbol of one perf data file."""
    report = subprocess.run(
        ["perf", "report", "-i", path, "--no-children", "--sort", "dso,sym", "--stdio"],
        capture_output=True, text=True, check=True).stdout
    for line in report.splitlines():
        match = ROW.match(line)
        if match:
            yield float(match.group(1)), match.group(3) == "k", match.group(4)


def name(kernel, symbol):
    """The symbol without its signature and tier; managed names keep their assembly in brackets."""
    if kernel:
        return "kernel " + symbol
    symbol = re.sub(r"\(.*$", "", symbol)
    managed = re.search(r"\[([\w.]+)\] (\S+)$", symbol)
    return f"[{managed.group(1)}] {managed.group(2)}" if managed else symbol


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results", help="profile.sh's results directory (runs.csv and the .perf files)")
    parser.add_argument("--min-ns", type=float, default=25.0, help="smallest difference listed, ns per request")
    args = parser.parse_args()

    with open(os.path.join(args.results, "runs.csv"), newline="") as f:
        rows_of_runs = list(csv.DictReader(f))
    other = "headercache-before" if any(row["mode"] == "headercache-before" for row in rows_of_runs) else "kestrel"
    per_mode = {mode: collections.Counter() for mode in ("headercache", other)}
    totals = {mode: collections.Counter() for mode in ("headercache", other)}
    runs = collections.Counter()
    for row in rows_of_runs:
        mode = row["mode"]
        cpu_ns = int(row["cpu_ticks"]) * 1e9 / int(row["clk_tck"]) / max(int(row["requests"]), 1)
        runs[mode] += 1
        totals[mode]["CPU per request (/proc)"] += cpu_ns
        for percent, kernel, symbol in shares(os.path.join(args.results, row["perf_data"])):
            ns = percent / 100 * cpu_ns
            key = name(kernel, symbol)
            per_mode[mode][key] += ns
            group = "kernel" if kernel else "HeaderCache's own frames" if key.startswith("[HeaderCache] ") else "rest of user mode"
            totals[mode][group] += ns

    def mean(counter, mode, key):
        return counter[mode][key] / max(runs[mode], 1)

    print(f"ns per request, mean of {runs['headercache']} and {runs[other]} runs   HeaderCache {LABELS[other]:>15}   difference")
    for group in ["CPU per request (/proc)", "kernel", "HeaderCache's own frames", "rest of user mode"]:
        h, k = mean(totals, "headercache", group), mean(totals, other, group)
        print(f"{group:58} {h:11.0f} {k:15.0f} {h - k:12.0f}")
    print()
    rows = []
    for key in set(per_mode["headercache"]) | set(per_mode[other]):
        h, k = mean(per_mode, "headercache", key), mean(per_mode, other, key)
        if abs(h - k) >= args.min_ns:
            rows.append((h - k, h, k, key))
    for difference, h, k, key in sorted(rows):
        print(f"{difference:8.0f} {h:8.0f} {k:8.0f}  {key[:150]}")


if __name__ == "__main__":
    main()
