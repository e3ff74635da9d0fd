#!/usr/bin/env python3
"""Summarizes benchmarks/h2/compare.sh's runs.csv.

The figures, medians over rounds, ratios to Kestrel alone, summary.csv's columns and the RESULT and CEILING lines are
benchmarks/wrk/summarize.py's, run as it is: compare.sh's runs.csv has the same columns, h2load's requests in wrk's. This
replaces only its description line, which speaks of wrk, with h2load's settings, and adds, for every profile P measured
with compare.sh --bare, one line:
HEADER_BYTES <P> kestrel=<k> kestrel_bare=<b> headercache=<h> removed=<s>
bytes allocated per request, medians over rounds, of Kestrel alone on P and on P-bare (pseudo headers and h2load's
user-agent), of HeaderCache on P, and the share of the bytes P's headers cost Kestrel alone that HeaderCache removed,
(k - h) / (k - b): issue 48's "header-driven bytes per request removed", 0 for a connection HeaderCache passes through,
1 at best. Standard library only.
"""
import argparse
import contextlib
import csv
import importlib.util
import io
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("wrk_summarize", os.path.join(HERE, "..", "wrk", "summarize.py"))
wrk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wrk)


def bytes_median(rows, profile, mode):
    values = [wrk.per_run(r)["bytes_per_req"] for r in rows if r["profile"] == profile and r["mode"] == mode]
    return statistics.median(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("runs_csv")
    ap.add_argument("--out", help="folder for summary.csv/.md/.txt (default: the folder of runs.csv)")
    args = ap.parse_args()
    # wrk's summarizer takes the same arguments (and exits on an empty runs.csv), writes the three files and prints;
    # its first printed line is its description.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        wrk.main()
    wrk_note = printed.getvalue().split("\n", 1)[0]
    out = args.out or os.path.dirname(os.path.abspath(args.runs_csv))
    with open(args.runs_csv, newline="") as f:
        rows = list(csv.DictReader(f))

    first = rows[0]
    note = (f"h2load -t1 -c{first['connections']} -m{first['streams']} over {first['transport']}, "
            f"{first['duration_s']}s measured per run; medians over rounds; (x) = ratio to '{wrk.BASELINE}' (stock Kestrel).")

    extra = []
    for p in dict.fromkeys(r["profile"] for r in rows):
        k, b, h = (bytes_median(rows, p, "kestrel"), bytes_median(rows, p + "-bare", "kestrel"),
                   bytes_median(rows, p, "headercache"))
        if k is None or b is None or h is None:
            continue
        removed = (k - h) / (k - b) if k != b else float("nan")
        extra.append(f"HEADER_BYTES {p} kestrel={k:.0f} kestrel_bare={b:.0f} headercache={h:.0f} removed={removed:.3f}")

    for name, title in (("summary.txt", None), ("summary.md", "# h2load comparison (HTTP/2)")):
        path = os.path.join(out, name)
        with open(path) as f:
            text = f.read().replace(wrk_note, note, 1)
        if title:
            text = text.replace("# wrk comparison", title, 1)
        text += "".join(("    " if name == "summary.md" else "") + x + "\n" for x in extra)
        with open(path, "w") as f:
            f.write(text)

    print(printed.getvalue().replace(wrk_note, note, 1), end="")
    if extra:
        print("\n".join(extra))


if __name__ == "__main__":
    main()
