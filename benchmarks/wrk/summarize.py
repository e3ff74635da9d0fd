#!/usr/bin/env python3
"""Summarizes wrk/compare.sh's runs.csv: medians over rounds per profile and mode, ratios to stock Kestrel, and the
RESULT and CEILING lines (benchmarks/summary.py says what they hold).

Writes summary.csv, summary.md and summary.txt next to runs.csv (or into --out) and prints the table. Run it from the
checkout: python3 -m benchmarks.wrk.summarize <runs.csv> [--out DIR]. Standard library only.
"""
from benchmarks.summary import BASELINE, arguments, summarize


def main():
    rows, out = arguments(__doc__)
    first = rows[0]
    pipeline, connections = first["pipeline"], first["connections"]
    note = (f"wrk -t{connections} -c{connections} (one connection per thread), {first['duration_s']}s measured per run, "
            f"pipeline depth {pipeline}; medians over rounds; (x) = ratio to '{BASELINE}' (stock Kestrel). "
            "req/s counts HTTP requests (wrk counts every response, pipelined or not).")
    if pipeline != "1":
        note += f" Latency is per pipelined batch of {pipeline} requests (write of the batch to its last response)."
    summarize(rows, out, note, "# wrk comparison")


if __name__ == "__main__":
    main()
