#!/usr/bin/env python3
"""Chart of a compare.sh run: bytes allocated per request and requests/s, by profile and mode.

    python3 benchmarks/wrk/chart.py [summary.csv] [-o docs/wrk-chart.svg]

Input: the summary.csv that compare.sh (summarize.py) writes; default benchmarks/wrk/results/latest/summary.csv.
Output: an SVG written by hand with the standard library only (no matplotlib needed), default docs/wrk-chart.svg.
Top panel: bytes allocated per request (median over rounds), labelled with the ratio to Kestrel default.
Bottom panel: requests/s relative to Kestrel default (= 1.0) with the median req/s on each bar and the
spread over rounds (min..max) as a whisker, since absolute rates differ by an order of magnitude between
the plaintext control and the browser profiles.
"""
import argparse
import csv
import os
from html import escape

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
MODES = [
    ("headercache", "HeaderCache on", "#2b7bba"),
    ("kestrel", "Kestrel default", "#8c8c8c"),
    ("kestrel-noreuse", "Kestrel, DisableStringReuse", "#e08a2c"),
]
BASELINE = "kestrel"


def nice_max(v):
    """A round axis maximum >= v."""
    if v <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(v))) / 10 if v >= 1 else 0.1
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * magnitude >= v:
            return step * magnitude
    return 10 * magnitude


def fmt_int(v):
    return f"{v / 1000:.1f}k" if v >= 10000 else f"{v:.0f}"


class Svg:
    def __init__(self, width, height):
        self.width, self.height, self.items = width, height, []

    def rect(self, x, y, w, h, fill, title=None):
        t = f"<title>{escape(title)}</title>" if title else ""
        self.items.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{max(h, 0):.1f}" fill="{fill}">{t}</rect>')

    def line(self, x1, y1, x2, y2, stroke="#000", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.items.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" stroke-width="{width}"{d}/>')

    def text(self, x, y, s, size=12, anchor="middle", weight="normal", fill="#222", rotate=None):
        r = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate else ""
        self.items.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                          f'font-weight="{weight}" fill="{fill}"{r}>{escape(s)}</text>')

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                    f'viewBox="0 0 {self.width} {self.height}" font-family="Helvetica, Arial, sans-serif">\n')
            f.write(f'<rect width="{self.width}" height="{self.height}" fill="#fff"/>\n')
            f.write("\n".join(self.items))
            f.write("\n</svg>\n")


def panel(svg, top, height, left, width, profiles, data, title, ylabel, value, ymax, label, whisker=None, ref=None):
    """Grouped bars: one group per profile, one bar per mode."""
    bottom = top + height
    svg.text(left + width / 2, top - 14, title, size=14, weight="bold")
    for k in range(6):  # grid and axis labels
        v = ymax * k / 5
        y = bottom - height * k / 5
        svg.line(left, y, left + width, y, stroke="#e3e3e3")
        svg.text(left - 6, y + 4, f"{v:g}" if ymax < 10 else f"{v:.0f}", size=11, anchor="end")
    svg.text(left - 52, top + height / 2, ylabel, size=12, rotate=-90)
    group = width / len(profiles)
    bar = group * 0.8 / len(MODES)
    for g, p in enumerate(profiles):
        x0 = left + g * group + group * 0.1
        for b, (mode, name, color) in enumerate(MODES):
            row = data.get((p, mode))
            if row is None:
                continue
            v = value(row)
            h = height * min(v, ymax) / ymax
            x = x0 + b * bar
            lines = label(row)
            svg.rect(x + 1, bottom - h, bar - 2, h, color, title=f"{p} / {name}: {' '.join(lines)}")
            label_y = bottom - h
            if whisker:
                lo, hi = whisker(row)
                ylo, yhi = bottom - height * min(lo, ymax) / ymax, bottom - height * min(hi, ymax) / ymax
                cx = x + bar / 2
                svg.line(cx, ylo, cx, yhi, stroke="#333")
                svg.line(cx - 3, ylo, cx + 3, ylo, stroke="#333")
                svg.line(cx - 3, yhi, cx + 3, yhi, stroke="#333")
                label_y = min(label_y, yhi)
            for k, text in enumerate(reversed(lines)):
                svg.text(x + bar / 2, label_y - 4 - 12 * k, text, size=10)
        svg.text(left + g * group + group / 2, bottom + 18, p, size=12)
    if ref is not None:
        y = bottom - height * ref / ymax
        svg.line(left, y, left + width, y, stroke="#555", dash="4 3")
    svg.line(left, bottom, left + width, bottom, stroke="#333")
    svg.line(left, top, left, bottom, stroke="#333")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summary_csv", nargs="?", default=os.path.join(HERE, "results", "latest", "summary.csv"))
    ap.add_argument("-o", "--output", default=os.path.join(REPO, "docs", "wrk-chart.svg"))
    args = ap.parse_args()

    with open(args.summary_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit("no rows in " + args.summary_csv)
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    data = {(r["profile"], r["mode"]): {k: (float(v) if k not in ("profile", "mode") else v) for k, v in r.items()}
            for r in rows}

    subtitle = f"{os.path.basename(os.path.dirname(os.path.realpath(args.summary_csv)))}: medians over {rows[0]['rounds']} rounds"
    runs_csv = os.path.join(os.path.dirname(os.path.abspath(args.summary_csv)), "runs.csv")
    if os.path.exists(runs_csv):
        with open(runs_csv, newline="") as f:
            first = next(csv.DictReader(f), None)
        if first:
            subtitle += (f"; wrk -t{first['connections']} -c{first['connections']}, {first['duration_s']}s per run, "
                         f"pipeline {first['pipeline']}")

    left, width = 90, max(720, 200 * len(profiles))
    svg = Svg(left + width + 30, 800)
    svg.text(svg.width / 2, 24, "HeaderCache vs Kestrel: sample server under wrk", size=16, weight="bold")
    svg.text(svg.width / 2, 42, subtitle, size=11, fill="#555")
    x = left
    for _, name, color in MODES:  # legend
        svg.rect(x, 56, 12, 12, color)
        svg.text(x + 18, 66, name, size=12, anchor="start")
        x += 18 + 7 * len(name) + 30

    def base(p, key):
        b = data.get((p, BASELINE))
        return b[key] if b and b[key] else float("nan")

    bmax = nice_max(max(r["bytes_per_req"] for r in data.values()) * 1.12)
    panel(svg, 130, 250, left, width, profiles, data, "Bytes allocated per request (lower is better)", "bytes / request",
          value=lambda r: r["bytes_per_req"], ymax=bmax,
          label=lambda r: [f"{r['bytes_per_req']:.0f}", f"{r['bytes_per_req'] / base(r['profile'], 'bytes_per_req'):.3f}x"])

    rel = [r["rps_max"] / base(r["profile"], "rps") for r in data.values()]
    rmax = nice_max(max([x for x in rel if x == x] + [1.0]) * 1.1)
    panel(svg, 470, 250, left, width, profiles, data, "Requests/s relative to Kestrel default (higher is better)",
          "req/s ÷ Kestrel default", value=lambda r: r["rps"] / base(r["profile"], "rps"), ymax=rmax,
          label=lambda r: [fmt_int(r["rps"]), f"{r['rps'] / base(r['profile'], 'rps'):.3f}x"],
          whisker=lambda r: (r["rps_min"] / base(r["profile"], "rps"), r["rps_max"] / base(r["profile"], "rps")),
          ref=1.0)
    svg.text(left, 770, "Top: median bytes allocated per request and its ratio to Kestrel default.", size=11,
             anchor="start", fill="#555")
    svg.text(left, 786, "Bottom: median requests/s and its ratio to Kestrel default; whisker: min..max over rounds.",
             size=11, anchor="start", fill="#555")

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    svg.save(args.output)
    print(args.output)


if __name__ == "__main__":
    main()
