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
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/benchmarks/wrk"
PROFILE=chrome
SECONDS_MEASURED=15
WARMUP=20
ROUNDS=2
BUILD=1
CONNECTIONS=4
PACE=0
SPIN_ENV=""
AGAINST=""
TIER_UP=3
LARGE_PAGES=0
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --profile) PROFILE="$2"; shift ;;
    --seconds) SECONDS_MEASURED="$2"; shift ;;
    --warmup) WARMUP="$2"; shift ;;
    --rounds) ROUNDS="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --connections) CONNECTIONS="$2"; shift ;;
    --pace) PACE="$2"; shift ;;
    --no-spin) SPIN_ENV="DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0" ;;
    --against) AGAINST="$(cd "$2" && pwd)"; shift ;;
    --tier-up) TIER_UP="$2"; shift ;;
    --large-pages) LARGE_PAGES="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for option in seconds:"$SECONDS_MEASURED" warmup:"$WARMUP" rounds:"$ROUNDS" connections:"$CONNECTIONS"; do
  value=${option#*:}
  [[ "$value" =~ ^[0-9]+$ && "$value" -ge 1 ]] || { echo "--${option%%:*} must be a whole number >= 1" >&2; exit 2; }
done
[[ "$PACE" =~ ^[0-9]+$ ]] || { echo "--pace must be a whole number of milliseconds >= 0" >&2; exit 2; }
[[ "$TIER_UP" =~ ^[0-9]+$ ]] || { echo "--tier-up must be a whole number of runs >= 0" >&2; exit 2; }
[[ -f "$REPO/traffic/$PROFILE.http" ]] || { echo "no profile traffic/$PROFILE.http" >&2; exit 2; }
for tool in perf wrk python3; do command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 1; }; done

# shellcheck source=benchmarks/wrk/modes.sh
source "$HERE/modes.sh"
MODES=(headercache kestrel)
declare -A CHECKOUT=([headercache]="$REPO" [kestrel]="$REPO")
if [[ -n "$AGAINST" ]]; then
  MODES=(headercache headercache-before)
  CHECKOUT[headercache-before]="$AGAINST"
fi
LARGE_PAGES_ENV=$(large_pages_env "$LARGE_PAGES" "${#MODES[@]}") || exit 2
for checkout in $(printf '%s\n' "${CHECKOUT[@]}" | sort -u); do
  [[ $BUILD == 1 ]] && build_sample "$checkout"
  [[ -f "$(sample_dll "$checkout")" ]] || { echo "build output $(sample_dll "$checkout") missing" >&2; exit 1; }
done

OUT="$HERE/results/$(date +%Y%m%d-%H%M%S)-profile-$PROFILE"
mkdir -p "$OUT"
APP_ENV="Sample__Echo=false"
on_exit cleanup

run_wrk() { # mode seconds outfile
  timeout $(($2 + 30)) wrk -t"$CONNECTIONS" -c"$CONNECTIONS" -d"$2s" --timeout 10s -s "$HERE/profile.lua" "http://127.0.0.1:${PORT[$1]}" \
    -- "$REPO/traffic/$PROFILE.http" 1 "$PACE" >"$3" 2>&1 || { echo "wrk failed ($1):" >&2; cat "$3" >&2; exit 1; }
}

echo "mode,round,cpu_ticks,clk_tck,requests,perf_data" > "$OUT/runs.csv"
for round in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do
    # shellcheck disable=SC2086
    start_sample "${CHECKOUT[$mode]}" "$mode" "$OUT/server-$mode-r$round.log" $SPIN_ENV DOTNET_gcServer=0 \
      DOTNET_PerfMapEnabled=3 DOTNET_EnableWriteXorExecute=0
    PID[$mode]=$SAMPLE_PID
  done
  for mode in "${MODES[@]}"; do
    PORT[$mode]=$(listening_port "$OUT/server-$mode-r$round.log" "${PID[$mode]}") || exit 1
  done
  ORDER=("${MODES[@]}")
  (( round % 2 == 0 )) && ORDER=("${MODES[1]}" "${MODES[0]}")
  for mode in "${ORDER[@]}"; do
    tier_up "${PORT[$mode]}" "$OUT/wrk-tierup-$mode-r$round" "$TIER_UP" 1 "$PROFILE" || exit 1
    run_wrk "$mode" "$WARMUP" "$OUT/wrk-warmup-$mode-r$round.txt"
  done
  for mode in "${ORDER[@]}"; do
    data="$OUT/$mode-r$round.perf"
    read -r c1 _ <<<"$(cpu_ticks "${PID[$mode]}")"
    perf record -F 999 -e cpu-clock -p "${PID[$mode]}" -o "$data" -- sleep "$SECONDS_MEASURED" >/dev/null 2>&1 &
    sampler=$!
    run_wrk "$mode" "$SECONDS_MEASURED" "$OUT/wrk-$mode-r$round.txt"
    wait "$sampler"
    read -r c2 _ <<<"$(cpu_ticks "${PID[$mode]}")"
    requests=$(sed -nE 's/^WRK_RESULT requests=([0-9]+).*/\1/p' "$OUT/wrk-$mode-r$round.txt")
    echo "$mode,$round,$((c2 - c1)),$(getconf CLK_TCK),$requests,$(basename "$data")" >> "$OUT/runs.csv"
  done
  cleanup
done

python3 "$HERE/profile_summary.py" "$OUT" | tee "$OUT/summary.txt"
