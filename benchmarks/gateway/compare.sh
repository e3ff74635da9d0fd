#!/usr/bin/env bash
# The YARP gateway sample (samples/HeaderCache.Gateway) with and without HeaderCache, in front of the same Kestrel
# backend, under wrk through the gateway: what HeaderCache saves a reverse proxy.
#   headercache   the gateway with the one line (HeaderCache on, options from --slots)
#   kestrel       Gateway__KestrelOnly=true: the gateway on Kestrel alone, the baseline every ratio divides by
#   floor         the kestrel gateway again, on each profile's heads cut to the request line and Host (profile P-floor,
#                 written into the run's folder): what the gateway allocates when there are no other headers at all,
#                 which a perfect header cache could not go below (YARP's own work per request, the path, the response)
# The backend is the main sample as Kestrel alone answering "Hello, World!" to everything (Sample__Echo=false): one
# process for the whole run, which gets the same bytes from both gateways and so is a control for the CPU figures.
#
# Every round starts both gateways fresh (workstation GC, as the issue measured), replays every profile and its floor
# through each in --tier-up N one-second runs of 32 connections (compiling what a connection runs once, as
# benchmarks/wrk/compare.sh does), then for every profile runs the three kinds (headercache on P, kestrel on P, kestrel on
# P-floor) one after the other, each a warm-up wrk run and a measured one. The order turns by one per round and runs
# backwards every other round (A B C, A C B, C A B, C B A, B C A, B A C), so that no kind is always first or always after
# the same other. Around the measured run the script reads the gateway's /stats (bytes allocated, requests, gen0
# collections, JIT time and, unless --no-cache-stats, HeaderCache's metric totals) and /proc for the gateway's and the
# backend's CPU time. HeaderCache's instruments are observable counters: listening to them costs a request nothing, only
# the /stats call that reads them, whose own allocation is subtracted.
#
# Per profile, the summary gives the medians over rounds: bytes per request, gen0 collections per 100k requests, CPU per
# request of the gateway (and of the backend, the control), each with its ratio to the gateway on Kestrel alone; the
# floor's bytes per request, and how close each mode is to it (bytes over the floor's, and the share of Kestrel alone's
# distance to the floor that HeaderCache covered); with cache stats, the share of taken lines served and the value
# evictions per request. Results: runs.csv (benchmarks/wrk/compare.sh's columns, then the gateway's extras;
# summarize.py given several runs.csv pools their rounds), summary.txt in benchmarks/gateway/results/<run>/ (results/latest points
# to the last run); the last lines of the output are one GATEWAY line per profile.
#
# How long: per round, the tier-up (about 4 s per profile, floor and gateway: 32 s for two profiles), then per profile
# three times (warm-up + duration). The defaults (4 rounds, chrome and proxy-pool, 10 s + 10 s) take about 11 minutes
# plus the build; --rounds 8 about 21 minutes; --rounds 2 --duration 5 --warmup 5 about 3 minutes.
#
# Usage: benchmarks/gateway/compare.sh [--rounds N] [--duration S] [--warmup S] [--profiles "chrome proxy-pool ..."]
#                                      [--connections N] [--slots N] [--tier-up N] [--no-cache-stats] [--no-build]
#                                      [--results DIR]
set -euo pipefail
# shellcheck source=benchmarks/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

ROUNDS=4
DURATION=10
WARMUP=10
PROFILES="chrome proxy-pool"
CONNECTIONS=4
SLOTS=""
TIER_UP=3
CACHE_STATS=1
BUILD=1
RESULTS_ROOT="$REPO/benchmarks/gateway/results"
PIPELINE=1
PACE=0
OPTIONS="rounds duration warmup profiles connections tier-up no-build results"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --slots) SLOTS="${2:?--slots needs a value}"; shift 2 ;;
    --no-cache-stats) CACHE_STATS=0; shift ;;
    *) shared_option "$@"; shift "$SHIFT" ;;
  esac
done

whole 1 ROUNDS DURATION WARMUP CONNECTIONS
whole 0 TIER_UP
[[ -z "$SLOTS" || ( "$SLOTS" =~ ^[0-9]+$ && "$SLOTS" -ge 1 && "$SLOTS" -le 256 ) ]] || { echo "--slots must be 1 to 256" >&2; exit 2; }
check_profiles
need wrk wrk
need python3
need curl

START_TIME=$(date +%s)
GATEWAY_DLL="$REPO/artifacts/gateway/bin/HeaderCache.Gateway/release/HeaderCache.Gateway.dll"
if [[ $BUILD == 1 ]]; then
  echo "== build (Release, $REPO/artifacts/wrk and $REPO/artifacts/gateway)"
  build_sample "$REPO"
  build "$REPO/samples/HeaderCache.Gateway" "$REPO/artifacts/gateway"
fi
built "$(sample_dll "$REPO")" "$GATEWAY_DLL"

new_run gateway

# P-floor: P's heads with the request line and Host only.
FLOOR_DIR="$OUT/traffic"
mkdir -p "$FLOOR_DIR"
for p in $PROFILES; do
  awk 'BEGIN { first = 1 }
    /^$/ { print; first = 1; next }
    first { print; first = 0; next }
    tolower($0) ~ /^host:/ { print }' "$REPO/traffic/$p.http" >"$FLOOR_DIR/$p-floor.http"
done
profile_file() { # profile -> its traffic file (replaces lib.sh's, which load calls)
  if [[ "$1" == *-floor ]]; then echo "$FLOOR_DIR/$1.http"; else echo "$REPO/traffic/$1.http"; fi
}

RUNS_CSV="$OUT/runs.csv"
echo "$RUN_COLUMNS,backend_cpu_ticks,lines_served,lines_created,evictions_value,evictions_name" > "$RUNS_CSV"

BACKEND_PID=""
stop_all() {
  cleanup
  if [[ -n "$BACKEND_PID" ]]; then kill "$BACKEND_PID" 2>/dev/null || true; wait "$BACKEND_PID" 2>/dev/null || true; fi
}
on_exit stop_all

SERVER_LOG=gateway
start_server() { # mode round: the gateway (replaces lib.sh's, which starts the sample)
  local kestrel_only=false slots=()
  [[ $1 == kestrel ]] && kestrel_only=true
  [[ -n "$SLOTS" ]] && slots=("HeaderCache__SlotCount=$SLOTS")
  env Gateway__KestrelOnly=$kestrel_only Gateway__Backend="http://127.0.0.1:$BACKEND_PORT" \
    Gateway__CacheStats=$([[ $CACHE_STATS == 1 ]] && echo true || echo false) "${slots[@]}" \
    DOTNET_gcServer=0 ASPNETCORE_ENVIRONMENT=Production "Logging__LogLevel__Microsoft.Hosting.Lifetime=Information" \
    dotnet "$GATEWAY_DLL" --urls "http://127.0.0.1:0" --contentRoot "$REPO/samples/HeaderCache.Gateway" >"$(server_log "$1" "$2")" 2>&1 &
  PID[$1]=$!
}

stats() { # mode -> "allocated requests gen0 jit_us served created evictions_value evictions_name" (HeaderCache's
  # metric totals, 0 without them)
  local json figures
  json=$(stats_json "$1") || return 1
  figures=$(stats_figures "$json") || return 1
  metric() { local v; v=$(sed -nE "s/.*\"headercache\\.$1\":([0-9]+).*/\\1/p" <<<"$json"); echo "${v:-0}"; }
  echo "$figures $(metric 'lines\|served') $(metric 'lines\|created') $(metric 'evictions\|value') $(metric 'evictions\|name')"
}

start_sample "$REPO" kestrel "$OUT/logs/backend.log" DOTNET_gcServer=0
BACKEND_PID=$SAMPLE_PID
BACKEND_PORT=$(listening_port "$OUT/logs/backend.log" "$BACKEND_PID") || exit 1

echo "== $ROUNDS round(s) x profiles [$PROFILES] x [headercache kestrel floor]; HeaderCache slots ${SLOTS:-25 (default)}"
echo "   wrk -t$CONNECTIONS -c$CONNECTIONS through the gateway, warm-up ${WARMUP}s, measured ${DURATION}s; tier-up $TIER_UP x 1 s per profile"
echo "   backend: the main sample as Kestrel alone on port $BACKEND_PORT (pid $BACKEND_PID); gateways fresh every round, workstation GC"
echo "   results: $OUT"

measure_kind() { # round profile kind: the kind's warm-up and measured run, one runs.csv row; floor is the kestrel
  # gateway on profile-floor
  local round=$1 profile=$2 mode=$3 b1 b2 out result requests errors p50 p90 p99 max rps
  local -A C=() U=() R=() A=() G=() J=() X=() N=() E=() P50=() P90=() P99=() MAX=()
  [[ $3 == floor ]] && { mode=kestrel; profile="$profile-floor"; }
  load "$mode" "$profile" "$WARMUP" "$OUT/logs/wrk-warmup-$profile-$mode-r$round.txt" warmup
  measure_reset "$mode"
  measure_start "$mode"
  read -r b1 _ <<<"$(cpu_ticks "$BACKEND_PID")"
  out="$OUT/logs/wrk-$profile-$mode-r$round.txt"
  load "$mode" "$profile" "$DURATION" "$out" measured
  read -r b2 _ <<<"$(cpu_ticks "$BACKEND_PID")"
  measure_end "$mode"
  result=$(load_result "$out") || exit 1
  read -r requests errors p50 p90 p99 max rps <<<"$result"
  echo "$round,$profile,$mode,$CONNECTIONS,$PIPELINE,$DURATION,$requests,$rps,$p50,$p90,$p99,$max,${R[$mode]},${A[$mode]},${G[$mode]},${C[$mode]},$CLK_TCK,$errors,${J[$mode]},${U[$mode]},$((b2 - b1)),${X[$mode]// /,}" >> "$RUNS_CSV"
  show_run "$round" "$profile" "$mode" "$rps" "$p99" "$errors"
}

MODES=(headercache kestrel)
for round in $(seq "$ROUNDS"); do
  start_servers "$round"
  # shellcheck disable=SC2046
  for mode in "${MODES[@]}"; do tier_up "$mode" "$round" $(for p in $PROFILES; do echo "$p $p-floor"; done); done
  round_order "$round" headercache kestrel floor
  for profile in $PROFILES; do
    for kind in "${ORDER[@]}"; do measure_kind "$round" "$profile" "$kind"; done
  done
  cleanup
done

echo "== finished in $(( $(date +%s) - START_TIME ))s, build included; results in $OUT"
summarize gateway "$RUNS_CSV" --out "$OUT"
