"""Medians over rounds and their tables, for the summarizers of runs.csv files with benchmarks/lib.sh's RUN_COLUMNS
(wrk/summarize.py, h2/summarize.py, gateway/summarize.py, wrk/pool.py; they import it as benchmarks.summary, run as
modules of the checkout: python3 -m benchmarks.wrk.summarize ...).

summarize() writes summary.csv, summary.md and summary.txt into a folder and prints the table, then one line per
profile: RESULT <profile> cpu_ratio=<w> rps_ratio=<x> alloc_ratio=<y> p99_ratio=<z> jit_us_per_req=<h>/<k>
cpu_rounds=<min>-<max> cpu_round_median=<m> control_round_median=<c> (HeaderCache on divided by Kestrel default;
jit_us_per_req is the JIT's time in the measured runs of each of the two; the cpu_round figures divide within each
round, the control is Kestrel without reuse over Kestrel default), and for a run with compare.sh --against,
before_rounds=<min>-<max> before_round_median=<b>: HeaderCache on over HeaderCache on in the other checkout, round by
round, and before_cpu_round_median=<c>: the other checkout over Kestrel default, round by round (its cpu_ratio is in the
table), so that such a run measures both checkouts against Kestrel alone. Runs that recorded user-mode time add
user_ratio=<u> user_round_median=<v>: the same for the user-mode part alone. For a run with compare.sh --bare, one line
per profile P measured with P-bare: CEILING <P> bare_cpu_ratio=<r> bare_rounds=<min>-<max> bare_round_median=<m>
saved_of_ceiling=<s>: Kestrel default's CPU per request on P-bare over P (the most HeaderCache could save, were its own
work free), and the part of that difference HeaderCache saved on P, (kestrel - headercache) / (kestrel - kestrel on
P-bare), by medians over rounds; then bare_user_ratio=<a> user_saved_of_ceiling=<b>, the same for user mode. Standard
library only.
"""
import argparse
import csv
import math
import os
import statistics
import sys

MODES = ["headercache", "kestrel", "kestrel-noreuse", "headercache-before"]
BASELINE = "kestrel"
# (key, header, format) of the figures, all medians over rounds; ratios are median(mode) / median(kestrel).
FIGURES = [
    ("rps", "req/s", "{:.0f}"),
    ("p50_ms", "p50 ms", "{:.3f}"),
    ("p99_ms", "p99 ms", "{:.3f}"),
    ("bytes_per_req", "B/req", "{:.0f}"),
    ("gen0_per_100k", "gen0/100k", "{:.1f}"),
    ("cpu_us_per_req", "CPU us/req", "{:.1f}"),
    # The user-mode part of it (nan for runs before compare.sh recorded it).
    ("user_us_per_req", "user us/req", "{:.1f}"),
    # The JIT's time in the measured runs, most of which compare.sh's tier-up keeps out (nan for runs before it).
    ("jit_us_per_req", "JIT us/req", "{:.3f}"),
]


def per_run(row):
    requests = int(row["server_requests"])
    n = max(requests, 1)
    return {
        "rps": float(row["wrk_rps"]),
        "p50_ms": int(row["p50_us"]) / 1000.0,
        "p99_ms": int(row["p99_us"]) / 1000.0,
        "bytes_per_req": int(row["allocated_bytes"]) / n,
        "gen0_per_100k": int(row["gen0"]) * 100000.0 / n,
        "cpu_us_per_req": int(row["cpu_ticks"]) * 1e6 / int(row["clk_tck"]) / n,
        "jit_us_per_req": int(row["jit_us"]) / n if row.get("jit_us") else float("nan"),
        "user_us_per_req": int(row["user_ticks"]) * 1e6 / int(row["clk_tck"]) / n if row.get("user_ticks") else float("nan"),
        "errors": int(row["errors"]),
        "wrk_requests": int(row["wrk_requests"]),
        "server_requests": requests,
    }


def ratio(a, b):
    return a / b if b else float("nan")


def ratios_by_round(rows, top, bottom, figure="cpu_us_per_req"):
    """figure of top over bottom's, each a (profile, mode), round by round: what a round measures is measured in the same
    minutes (the modes in turns with --slices, the profiles one after the other), so these show how far one round's
    ratio is from another's."""
    value = {(r["profile"], r["mode"], r["round"]): per_run(r)[figure] for r in rows}
    rounds = sorted({rd for p, m, rd in value if (p, m) == top and (*bottom, rd) in value}, key=int)
    return [ratio(value[(*top, rd)], value[(*bottom, rd)]) for rd in rounds]


def median_of(summary, profile, mode, figure):
    """The median over rounds of figure for mode on profile, nan when it was not measured."""
    return next((x[figure] for x in summary if x["profile"] == profile and x["mode"] == mode), float("nan"))


def ceiling(summary, profile, figure):
    """Kestrel default's figure on profile-bare over profile's, and the share of that difference HeaderCache saved on
    profile (nan when HeaderCache was not measured); None when a Kestrel default median is missing."""
    full, bare = median_of(summary, profile, BASELINE, figure), median_of(summary, profile + "-bare", BASELINE, figure)
    if math.isnan(full) or math.isnan(bare):
        return None
    saved = median_of(summary, profile, "headercache", figure)
    return ratio(bare, full), ratio(full - saved, full - bare)


def read_runs(path):
    """The rows of a runs.csv; exits when it has none."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("no runs in " + path)
    return rows


def arguments(description):
    """A summarizer's command line, runs.csv [--out DIR]: the rows of runs.csv and the folder for the summary files."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("runs_csv")
    ap.add_argument("--out", help="folder for summary.csv/.md/.txt (default: the folder of runs.csv)")
    args = ap.parse_args()
    return read_runs(args.runs_csv), args.out or os.path.dirname(os.path.abspath(args.runs_csv))


def medians(rows):
    """Per profile and mode, in the order measured: the medians over rounds of FIGURES, each with its ratio to
    Kestrel default's median (nan where it was not measured), the rounds, the range of req/s and the totals."""
    runs = {}
    for r in rows:
        runs.setdefault((r["profile"], r["mode"]), []).append(per_run(r))
    summary = []
    for p in dict.fromkeys(r["profile"] for r in rows):
        med = {}
        for m in MODES:
            rs = runs.get((p, m), [])
            if rs:
                med[m] = {k: statistics.median(x[k] for x in rs) for k, _, _ in FIGURES}
                med[m]["rounds"] = len(rs)
                med[m]["rps_min"] = min(x["rps"] for x in rs)
                med[m]["rps_max"] = max(x["rps"] for x in rs)
                med[m]["errors"] = sum(x["errors"] for x in rs)
                med[m]["wrk_requests"] = sum(x["wrk_requests"] for x in rs)
                med[m]["server_requests"] = sum(x["server_requests"] for x in rs)
        base = med.get(BASELINE)
        for m in MODES:
            if m not in med:
                continue
            row = {"profile": p, "mode": m}
            row.update(med[m])
            for k, _, _ in FIGURES:
                row[k + "_ratio"] = ratio(med[m][k], base[k]) if base else float("nan")
            summary.append(row)
    return summary


def text_table(headers, table):
    """The lines of a table in columns, the first two left-aligned, the others right-aligned."""
    widths = [max(len(headers[i]), *(len(t[i]) for t in table)) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(t, widths)))
            for t in [headers] + table]


def result_lines(rows, summary):
    """The RESULT line of every profile HeaderCache was measured on, then the CEILING line of every profile measured
    with its -bare heads."""
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    results = []
    for p in profiles:
        r = next((x for x in summary if x["profile"] == p and x["mode"] == "headercache"), None)
        if r is not None:
            rounds = ratios_by_round(rows, (p, "headercache"), (p, BASELINE))
            control = ratios_by_round(rows, (p, "kestrel-noreuse"), (p, BASELINE))
            before = ratios_by_round(rows, (p, "headercache"), (p, "headercache-before"))
            before_kestrel = ratios_by_round(rows, (p, "headercache-before"), (p, BASELINE))
            user = ratios_by_round(rows, (p, "headercache"), (p, BASELINE), "user_us_per_req")
            results.append(f"RESULT {p} cpu_ratio={r['cpu_us_per_req_ratio']:.3f} rps_ratio={r['rps_ratio']:.3f} "
                           f"alloc_ratio={r['bytes_per_req_ratio']:.3f} "
                           f"p99_ratio={r['p99_ms_ratio']:.3f}"
                           f" jit_us_per_req={r['jit_us_per_req']:.3f}/{median_of(summary, p, BASELINE, 'jit_us_per_req'):.3f}"
                           + (f" cpu_rounds={min(rounds):.2f}-{max(rounds):.2f} cpu_round_median={statistics.median(rounds):.3f}"
                              if rounds else "")
                           + (f" control_round_median={statistics.median(control):.3f}" if control else "")
                           + (f" user_ratio={r['user_us_per_req_ratio']:.3f} user_round_median={statistics.median(user):.3f}"
                              if user and not math.isnan(r["user_us_per_req"]) else "")
                           + (f" before_rounds={min(before):.2f}-{max(before):.2f} before_round_median={statistics.median(before):.3f}"
                              f" before_cpu_round_median={statistics.median(before_kestrel):.3f}"
                              if before else ""))

    for p in profiles:
        cpu = ceiling(summary, p, "cpu_us_per_req")
        if cpu is None:
            continue
        rounds = ratios_by_round(rows, (p + "-bare", BASELINE), (p, BASELINE))
        user = ceiling(summary, p, "user_us_per_req")
        results.append(f"CEILING {p} bare_cpu_ratio={cpu[0]:.3f}"
                       + (f" bare_rounds={min(rounds):.2f}-{max(rounds):.2f} bare_round_median={statistics.median(rounds):.3f}"
                          if rounds else "")
                       + (f" saved_of_ceiling={cpu[1]:.2f}" if not math.isnan(cpu[1]) else "")
                       + (f" bare_user_ratio={user[0]:.3f}" if user else "")
                       + (f" user_saved_of_ceiling={user[1]:.2f}" if user and not math.isnan(user[1]) else ""))
    return results


def summarize(rows, out, note, title, extra=()):
    """Writes summary.csv, summary.md (headed title) and summary.txt into out and prints note, the table and the
    RESULT and CEILING lines, then the lines of extra (a summarizer's own)."""
    summary = medians(rows)
    keys = ["profile", "mode", "rounds"]
    for k, _, _ in FIGURES:
        keys += [k, k + "_ratio"]
    keys += ["rps_min", "rps_max", "errors", "wrk_requests", "server_requests"]
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for row in summary:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})

    def cell(row, k, fmt):
        return f"{fmt.format(row[k])} ({row[k + '_ratio']:.3f})"

    headers = ["profile", "mode"] + [h for _, h, _ in FIGURES] + ["errors"]
    table = [[r["profile"], r["mode"]] + [cell(r, k, fmt) for k, _, fmt in FIGURES] + [str(r["errors"])] for r in summary]
    text_lines = text_table(headers, table)

    md = [title, "", note, "",
          "| " + " | ".join(headers) + " |",
          "|" + "|".join(["---", "---"] + ["---:"] * (len(headers) - 2)) + "|"]
    md += ["| " + " | ".join(t) + " |" for t in table]

    results = result_lines(rows, summary) + list(extra)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(md + [""] + ["    " + x for x in results]) + "\n")
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join([note, ""] + text_lines + [""] + results) + "\n")

    print(note)
    print()
    print("\n".join(text_lines))
    errors = sum(r["errors"] for r in summary)
    if errors:
        print(f"WARNING: {errors} wrk errors (socket errors, timeouts or non-2xx/3xx responses); see logs/.")
    print()
    print("\n".join(results))
