#!/usr/bin/env python3
"""Summarizes benchmarks/h2/compare.sh's runs.csv.

The figures, medians over rounds, ratios to Kestrel alone, summary.csv's columns and the RESULT and CEILING lines are
wrk/summarize.py's (benchmarks/summary.py): compare.sh's runs.csv has the same columns, h2load's requests in wrk's.
The description line gives h2load's settings, and for every profile P measured with compare.sh --bare, one line more:
HEADER_BYTES <P> kestrel=<k> kestrel_bare=<b> headercache=<h> removed=<s>
bytes allocated per request, medians over rounds, of Kestrel alone on P and on P-bare (pseudo headers and h2load's
user-agent), of HeaderCache on P, and the share of the bytes P's headers cost Kestrel alone that HeaderCache removed,
(k - h) / (k - b): issue 48's "header-driven bytes per request removed", 0 for a connection HeaderCache passes through,
1 at best. Run it from the checkout: python3 -m benchmarks.h2.summarize <runs.csv> [--out DIR]. Standard library only.
"""
import statistics

from benchmarks.summary import BASELINE, arguments, per_run, summarize


def bytes_median(rows, profile, mode):
    values = [per_run(r)["bytes_per_req"] for r in rows if r["profile"] == profile and r["mode"] == mode]
    return statistics.median(values) if values else None


def header_bytes(rows):
    """The HEADER_BYTES line of every profile measured with its -bare heads."""
    lines = []
    for p in dict.fromkeys(r["profile"] for r in rows):
        k, b, h = (bytes_median(rows, p, "kestrel"), bytes_median(rows, p + "-bare", "kestrel"),
                   bytes_median(rows, p, "headercache"))
        if k is None or b is None or h is None:
            continue
        removed = (k - h) / (k - b) if k != b else float("nan")
        lines.append(f"HEADER_BYTES {p} kestrel={k:.0f} kestrel_bare={b:.0f} headercache={h:.0f} removed={removed:.3f}")
    return lines


def main():
    rows, out = arguments(__doc__)
    first = rows[0]
    note = (f"h2load -t1 -c{first['connections']} -m{first['streams']} over {first['transport']}, "
            f"{first['duration_s']}s measured per run; medians over rounds; (x) = ratio to '{BASELINE}' (stock Kestrel).")
    summarize(rows, out, note, "# h2load comparison (HTTP/2)", header_bytes(rows))


if __name__ == "__main__":
    main()
