#!/usr/bin/env bash
# Where a request's CPU goes in the socket path, HeaderCache against Kestrel alone: samples the sample server with
# `perf record` while wrk replays one traffic profile, and prints each function's CPU per request in both modes and
# the difference (profile_summary.py). compare.sh says how much the modes differ; this says where.
#
# Per round a fresh server per mode (HeaderCache on, and Kestrel alone: HeaderCache not registered), a warm-up wrk
# run each, then each mode sampled for the measured time while wrk runs, the order turning every round. A function's
# CPU per request is its share of the samples times the server's CPU time (from /proc) over wrk's request count.
# The JIT writes a perf map (DOTNET_PerfMapEnabled=3) and maps code as plain executable memory
# (DOTNET_EnableWriteXorExecute=0), without which perf cannot name managed frames: both modes run so.
#
# With --connections N, --pace MS, --no-spin, --tier-up N (3 by default) and --large-pages MB, wrk and the servers run
# as compare.sh's options of those names make them.
# With --against DIR the second mode is HeaderCache built from the checkout in DIR instead of Kestrel alone: where a
# change moves the time, function by function.
#
# Usage: benchmarks/wrk/profile.sh [--profile chrome] [--seconds 15] [--warmup 20] [--rounds 2] [--no-build]
#                                  [--connections 4] [--pace MS] [--no-spin] [--against DIR] [--tier-up N]
#                                  [--large-pages MB]
# Takes about rounds x 2 x (warmup + seconds + 4) and a few seconds of start-up (2.7 min by default). Needs perf, wrk, python3.
set -euo pipefail
# shellcheck source=benchmarks/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROFILE=chrome
SECONDS_MEASURED=15
WARMUP=20
ROUNDS=2
BUILD=1
CONNECTIONS=4
PIPELINE=1
PACE=0
SPIN_ENV=""
AGAINST=""
TIER_UP=3
LARGE_PAGES=0
RESULTS_ROOT="$REPO/benchmarks/wrk/results"
OPTIONS="warmup rounds no-build connections pace no-spin against tier-up large-pages"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --profile) PROFILE="${2:?--profile needs a value}"; shift 2 ;;
    --seconds) SECONDS_MEASURED="${2:?--seconds needs a value}"; shift 2 ;;
    *) shared_option "$@"; shift "$SHIFT" ;;
  esac
done
whole 1 SECONDS_MEASURED:seconds WARMUP ROUNDS CONNECTIONS
whole 0 PACE TIER_UP
PROFILES=$PROFILE
check_profiles
for tool in perf wrk python3; do need "$tool"; done

MODES=(headercache kestrel)
[[ -n "$AGAINST" ]] && MODES=(headercache headercache-before)
LARGE_PAGES_ENV=$(large_pages_env "$LARGE_PAGES" "${#MODES[@]}") || exit 2
for checkout in $(for mode in "${MODES[@]}"; do checkout_of "$mode"; done | sort -u); do
  [[ $BUILD == 1 ]] && build_sample "$checkout"
  built "$(sample_dll "$checkout")"
done

new_run "profile-$PROFILE"
on_exit cleanup
# The JIT's perf map and plain executable memory, so that perf names managed frames; no /stats warm-up call, as
# nothing here reads /stats.
SERVER_ENV="$SPIN_ENV DOTNET_gcServer=0 DOTNET_PerfMapEnabled=3 DOTNET_EnableWriteXorExecute=0"

echo "mode,round,cpu_ticks,clk_tck,requests,perf_data" > "$OUT/runs.csv"
for round in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do start_server "$mode" "$round"; done
  for mode in "${MODES[@]}"; do
    PORT[$mode]=$(listening_port "$(server_log "$mode" "$round")" "${PID[$mode]}") || exit 1
  done
  round_order "$round" "${MODES[@]}"
  for mode in "${ORDER[@]}"; do
    tier_up "$mode" "$round" "$PROFILE"
    load "$mode" "$PROFILE" "$WARMUP" "$OUT/logs/wrk-warmup-$mode-r$round.txt" warmup
  done
  for mode in "${ORDER[@]}"; do
    data="$OUT/$mode-r$round.perf"
    read -r c1 _ <<<"$(cpu_ticks "${PID[$mode]}")"
    perf record -F 999 -e cpu-clock -p "${PID[$mode]}" -o "$data" -- sleep "$SECONDS_MEASURED" >/dev/null 2>&1 &
    sampler=$!
    load "$mode" "$PROFILE" "$SECONDS_MEASURED" "$OUT/logs/wrk-$mode-r$round.txt" measured
    wait "$sampler"
    read -r c2 _ <<<"$(cpu_ticks "${PID[$mode]}")"
    requests=$(sed -nE 's/^WRK_RESULT requests=([0-9]+).*/\1/p' "$OUT/logs/wrk-$mode-r$round.txt")
    echo "$mode,$round,$((c2 - c1)),$CLK_TCK,$requests,$(basename "$data")" >> "$OUT/runs.csv"
  done
  cleanup
done

python3 "$REPO/benchmarks/wrk/profile_summary.py" "$OUT" | tee "$OUT/summary.txt"
