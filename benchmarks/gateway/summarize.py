#!/usr/bin/env python3
"""Summarizes benchmarks/gateway/compare.sh's runs.csv: per profile, the medians over rounds of the gateway with
HeaderCache ("headercache") and on Kestrel alone ("kestrel"), each figure with its ratio to Kestrel alone's, and the
floor (the Kestrel-alone gateway on the profile's heads cut to the request line and Host, profile "<P>-floor").

Prints a table and one line per profile (the last lines of the output):
  GATEWAY <P> alloc_ratio=<hc/k bytes per request> gen0_ratio=<> cpu_ratio=<> cpu_round_median=<> backend_cpu_ratio=<>
          floor_bytes=<B> floor_ratio=<floor/k> hc_over_floor=<hc/floor> floor_distance_covered=<(k - hc)/(k - floor)>
          [served_share=<served/(served+created)> value_evictions_per_req=<>]
cpu_round_median divides within each round (the two gateways measured minutes apart), backend_cpu_ratio is the control:
the backend's CPU per request while each gateway was measured, which gets the same bytes from both. Given several
runs.csv of the same code, it pools their rounds (python3 -m benchmarks.gateway.summarize results/*/runs.csv, from the
checkout) and writes summary.txt only with --out. Standard library only.
"""
import argparse
import csv
import math
import os
import statistics
import sys

from benchmarks.summary import per_run, ratio, ratios_by_round, text_table

FIGURES = [
    ("rps", "req/s", "{:.0f}"),
    ("p99_ms", "p99 ms", "{:.2f}"),
    ("bytes_per_req", "B/req", "{:.0f}"),
    ("gen0_per_100k", "gen0/100k", "{:.1f}"),
    ("cpu_us_per_req", "CPU us/req", "{:.1f}"),
    ("backend_us_per_req", "backend us/req", "{:.1f}"),
    # The JIT's time in the measured runs: a figure near the CPU difference between the two gateways means the run
    # measured the JIT (a longer --warmup or --tier-up keeps more of it out).
    ("jit_us_per_req", "JIT us/req", "{:.2f}"),
]


def figures(row):
    f = per_run(row)
    n = max(f["server_requests"], 1)
    f["backend_us_per_req"] = int(row["backend_cpu_ticks"]) * 1e6 / int(row["clk_tck"]) / n
    f["served"] = int(row["lines_served"])
    f["created"] = int(row["lines_created"])
    f["value_evictions_per_req"] = int(row["evictions_value"]) / n
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs_csv", nargs="+")
    ap.add_argument("--out", help="folder for summary.txt (default: the folder of runs.csv when there is one)")
    args = ap.parse_args()
    out = args.out or (os.path.dirname(os.path.abspath(args.runs_csv[0])) if len(args.runs_csv) == 1 else None)
    rows = []
    for index, path in enumerate(args.runs_csv):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                r["round"] = str(index * 1000 + int(r["round"]))   # rounds of different runs stay apart
                rows.append(r)
    if not rows:
        sys.exit("no runs in " + " ".join(args.runs_csv))

    runs = {}
    for r in rows:
        runs.setdefault((r["profile"], r["mode"]), []).append(figures(r))

    def med(profile, mode, key):
        rs = runs.get((profile, mode), [])
        return statistics.median(x[key] for x in rs) if rs else float("nan")

    profiles = [p for p in dict.fromkeys(r["profile"] for r in rows) if not p.endswith("-floor")]
    headers = ["profile", "mode", "rounds"] + [h for _, h, _ in FIGURES] + ["errors"]
    table = []
    for p in profiles:
        for profile, mode, label in [(p, "headercache", "headercache"), (p, "kestrel", "kestrel"), (p + "-floor", "kestrel", "floor")]:
            rs = runs.get((profile, mode), [])
            if not rs:
                continue
            cells = [p, label, str(len(rs))]
            for key, _, fmt in FIGURES:
                value, base = med(profile, mode, key), med(p, "kestrel", key)
                cells.append(f"{fmt.format(value)} ({ratio(value, base):.3f})")
            cells.append(str(sum(x["errors"] for x in rs)))
            table.append(cells)
    lines = text_table(headers, table)

    results = []
    for p in profiles:
        hc, k, floor = (med(p, "headercache", "bytes_per_req"), med(p, "kestrel", "bytes_per_req"),
                        med(p + "-floor", "kestrel", "bytes_per_req"))
        rounds = ratios_by_round(rows, (p, "headercache"), (p, "kestrel"))
        line = (f"GATEWAY {p} alloc_ratio={ratio(hc, k):.3f}"
                f" gen0_ratio={ratio(med(p, 'headercache', 'gen0_per_100k'), med(p, 'kestrel', 'gen0_per_100k')):.3f}"
                f" cpu_ratio={ratio(med(p, 'headercache', 'cpu_us_per_req'), med(p, 'kestrel', 'cpu_us_per_req')):.3f}"
                + (f" cpu_rounds={min(rounds):.2f}-{max(rounds):.2f} cpu_round_median={statistics.median(rounds):.3f}" if rounds else "")
                + f" backend_cpu_ratio={ratio(med(p, 'headercache', 'backend_us_per_req'), med(p, 'kestrel', 'backend_us_per_req')):.3f}")
        if not math.isnan(floor):
            line += (f" floor_bytes={floor:.0f} floor_ratio={ratio(floor, k):.3f} hc_over_floor={ratio(hc, floor):.3f}"
                     f" floor_distance_covered={ratio(k - hc, k - floor):.2f}")
        served, created = med(p, "headercache", "served"), med(p, "headercache", "created")
        if served + created > 0:
            line += (f" served_share={served / (served + created):.3f}"
                     f" value_evictions_per_req={med(p, 'headercache', 'value_evictions_per_req'):.2f}")
        results.append(line)

    note = (f"wrk -t{rows[0]['connections']} -c{rows[0]['connections']} through the gateway, {rows[0]['duration_s']}s measured per run; "
            "medians over rounds; (x) = ratio to the gateway on Kestrel alone on the same profile; "
            "floor = the Kestrel-alone gateway on the profile's heads with Host only; backend = the backend's CPU per request (control).")
    text = "\n".join([note, ""] + lines + [""] + results)
    if out:
        with open(os.path.join(out, "summary.txt"), "w") as f:
            f.write(text + "\n")
    print(text)
    errors = sum(x["errors"] for rs in runs.values() for x in rs)
    if errors:
        print(f"WARNING: {errors} wrk errors (socket errors, timeouts or non-2xx/3xx responses); see logs/.")


if __name__ == "__main__":
    main()
