#!/usr/bin/env python3
"""Pools the rounds of several compare.sh runs of the same code: per profile, HeaderCache's CPU per request over Kestrel
alone's, round by round, as the number of rounds, their median, their mean with its standard error, and the range.

One run's 5 rounds move a ratio by 3-5 % on a 2-core machine that wrk shares with the server; the rounds of several
runs, each measured in the same minutes for both servers, narrow that by the square root of their number. Pass only
runs whose HeaderCache did the same per-request work. Standard library only.

    python3 -m benchmarks.wrk.pool docs/results/wrk-A-runs.csv docs/results/wrk-B-runs.csv [--figure user_us_per_req]

(from the checkout, which it imports benchmarks.summary from).
"""
import argparse
import csv
import math
import statistics

from benchmarks.summary import BASELINE, ratios_by_round


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs_csv", nargs="+")
    ap.add_argument("--figure", default="cpu_us_per_req", help="cpu_us_per_req (default) or user_us_per_req")
    args = ap.parse_args()

    pooled = {}
    for path in args.runs_csv:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        for profile in dict.fromkeys(r["profile"] for r in rows):
            ratios = ratios_by_round(rows, (profile, "headercache"), (profile, BASELINE), args.figure)
            pooled.setdefault(profile, []).extend(x for x in ratios if not math.isnan(x))

    print(f"HeaderCache / Kestrel alone, {args.figure}, by round, {len(args.runs_csv)} runs")
    print("| profile | rounds | median | mean +- standard error | range |")
    print("|---|---|---|---|---|")
    for profile, ratios in pooled.items():
        n = len(ratios)
        error = statistics.stdev(ratios) / math.sqrt(n) if n > 1 else float("nan")
        print(f"| {profile} | {n} | {statistics.median(ratios):.3f} | {statistics.mean(ratios):.3f} +- {error:.3f} "
              f"| {min(ratios):.2f}-{max(ratios):.2f} |")


if __name__ == "__main__":
    main()
