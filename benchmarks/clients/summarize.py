#!/usr/bin/env python3
"""Summary of benchmarks/clients/compare.sh's runs.csv: bytes per request per profile and mode (all rounds' bytes over
all rounds' requests, and each round's), the ratio to Kestrel alone, and for every profile P with a P-bare row the
HEADER_BYTES line: removed = (kestrel(P) - headercache(P)) / (kestrel(P) - kestrel(P-bare)) (grpc-static, a variant of
grpc, takes grpc-bare). With a P-kept row too (the
fields HeaderCache never takes, left in), the share of the header-driven bytes those fields cost Kestrel is given, and
the removed share of the rest."""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    rows = list(csv.DictReader(open(path, newline="")))
    total = defaultdict(lambda: [0, 0])      # (profile, mode) -> [bytes, requests]
    per_round = defaultdict(dict)            # (profile, mode) -> round -> bytes/request
    state = defaultdict(list)                # (profile, mode) -> [(active, hits, misses)]
    errors = 0
    for r in rows:
        key = (r["profile"], r["mode"])
        a, n = int(r["allocated_bytes"]), int(r["server_requests"])
        total[key][0] += a
        total[key][1] += n
        per_round[key][int(r["round"])] = a / n if n else 0
        state[key].append((r["hc_active"], int(r["hc_hits"]), int(r["hc_misses"])))
        errors += int(r["errors"])
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    rounds = sorted({int(r["round"]) for r in rows})

    def bpr(p, m):
        b, n = total.get((p, m), (0, 0))
        return b / n if n else None

    print(f"bytes allocated by the server per request (all rounds: {len(rounds)}; per round in brackets); errors {errors}")
    print(f"{'profile':<24} {'mode':<12} {'requests':>9} {'B/req':>8} {'x kestrel':>9}  rounds; HeaderCache on the connection")
    for p in profiles:
        k = bpr(p, "kestrel")
        for m in ("headercache", "kestrel"):
            v = bpr(p, m)
            if v is None:
                continue
            ratio = f"{v / k:9.3f}" if k else f"{'-':>9}"
            each = " ".join(f"{per_round[(p, m)][x]:.0f}" for x in rounds if x in per_round[(p, m)])
            hs = state[(p, m)]
            engaged = (f"active {sum(1 for s in hs if s[0] == 'true')}/{len(hs)} runs, hits {sum(s[1] for s in hs)},"
                       f" misses {sum(s[2] for s in hs)}")
            print(f"{p:<24} {m:<12} {total[(p, m)][1]:>9} {v:>8.1f} {ratio}  [{each}]; {engaged}")
    print()
    for p in profiles:
        if p.endswith(("-bare", "-kept")):
            continue
        # P's bare row, else that of the profile P varies (grpc-static: grpc-bare, the same requests' pseudo headers)
        bare = next((b for b in (p + "-bare", p.split("-")[0] + "-bare") if b in profiles), None)
        if bare is None:
            continue
        k, hc, kb = bpr(p, "kestrel"), bpr(p, "headercache"), bpr(bare, "kestrel")
        if None in (k, hc, kb) or k == kb:
            continue
        driven = k - kb
        removed = (k - hc) / driven
        rounds_removed = []
        for x in rounds:
            try:
                kr, hr, br = per_round[(p, "kestrel")][x], per_round[(p, "headercache")][x], per_round[(bare, "kestrel")][x]
                rounds_removed.append((kr - hr) / (kr - br))
            except (KeyError, ZeroDivisionError):
                pass
        spread = " ".join(f"{v * 100:.1f}" for v in rounds_removed)
        median = f"{statistics.median(rounds_removed) * 100:.1f} %" if rounds_removed else "-"
        line = (f"HEADER_BYTES {p}: kestrel {k:.1f} B/req, kestrel bare {kb:.1f}, header-driven {driven:.1f}; "
                f"headercache {hc:.1f}: removed {removed * 100:.1f} % (rounds: {spread}; median {median})")
        kept = bare[: -len("-bare")] + "-kept"
        kk = bpr(kept, "kestrel")
        if kk is not None:
            line += (f"; the fields left to Kestrel ({kept}) cost {kk - kb:.1f} B/req, {(kk - kb) / driven * 100:.1f} % of "
                     f"the header-driven bytes; of the rest, removed {(k - hc) / (k - kk) * 100:.1f} %")
        print(line)


if __name__ == "__main__":
    main(sys.argv[1])
