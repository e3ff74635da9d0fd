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

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
GATEWAY_DIR="$REPO/benchmarks/gateway"
WRK_DIR="$REPO/benchmarks/wrk"
HERE="$WRK_DIR"   # modes.sh's tier_up finds profile.lua there

ROUNDS=4
DURATION=10
WARMUP=10
PROFILES="chrome proxy-pool"
CONNECTIONS=4
SLOTS=""
TIER_UP=3
CACHE_STATS=1
BUILD=1
RESULTS_ROOT="$GATEWAY_DIR/results"
# The backend answers every request with "Hello, World!", so that its share of the 2 cores is small and the same.
APP_ENV="Sample__Echo=false"
PIPELINE=1

usage() { sed -n '2,38p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --duration) DURATION="${2%s}"; shift ;;
    --warmup) WARMUP="${2%s}"; shift ;;
    --profiles) PROFILES="${2//,/ }"; shift ;;
    --connections) CONNECTIONS="$2"; shift ;;
    --slots) SLOTS="$2"; shift ;;
    --tier-up) TIER_UP="$2"; shift ;;
    --no-cache-stats) CACHE_STATS=0 ;;
    --no-build) BUILD=0 ;;
    --results) RESULTS_ROOT="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

for v in ROUNDS DURATION WARMUP CONNECTIONS; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || { echo "--${v,,} must be a whole number >= 1" >&2; exit 2; }
done
[[ "$TIER_UP" =~ ^[0-9]+$ ]] || { echo "--tier-up must be a whole number of runs >= 0" >&2; exit 2; }
[[ -z "$SLOTS" || ( "$SLOTS" =~ ^[0-9]+$ && "$SLOTS" -ge 1 && "$SLOTS" -le 256 ) ]] || { echo "--slots must be 1 to 256" >&2; exit 2; }
for p in $PROFILES; do [[ -f "$REPO/traffic/$p.http" ]] || { echo "no profile traffic/$p.http" >&2; exit 2; }; done

command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is needed to read /stats" >&2; exit 1; }

START_TIME=$(date +%s)
# build_sample, start_sample, listening_port, tier_up, cleanup, cpu_ticks: the same backend and helpers as
# benchmarks/wrk/compare.sh.
# shellcheck source=benchmarks/wrk/modes.sh
source "$WRK_DIR/modes.sh"

GATEWAY_DLL="$REPO/artifacts/gateway/bin/HeaderCache.Gateway/release/HeaderCache.Gateway.dll"
if [[ $BUILD == 1 ]]; then
  echo "== build (Release, $REPO/artifacts/wrk and $REPO/artifacts/gateway)"
  build_sample "$REPO"
  dotnet build "$REPO/samples/HeaderCache.Gateway" -c Release --artifacts-path "$REPO/artifacts/gateway" -nologo -v q \
    | grep -E "error|Warn|Elapsed" || true
fi
for dll in "$(sample_dll "$REPO")" "$GATEWAY_DLL"; do
  [[ -f "$dll" ]] || { echo "build output $dll missing" >&2; exit 1; }
done

RUN_NAME="$(date +%Y%m%d-%H%M%S)-gateway"
OUT="$RESULTS_ROOT/$RUN_NAME"
mkdir -p "$OUT/logs" "$OUT/traffic"
ln -sfn "$RUN_NAME" "$RESULTS_ROOT/latest"

# P-floor: P's heads with the request line and Host only.
FLOOR_DIR="$OUT/traffic"
for p in $PROFILES; do
  awk 'BEGIN { first = 1 }
    /^$/ { print; first = 1; next }
    first { print; first = 0; next }
    tolower($0) ~ /^host:/ { print }' "$REPO/traffic/$p.http" >"$FLOOR_DIR/$p-floor.http"
done
profile_file() { # profile -> its traffic file (replaces modes.sh's, which tier_up calls)
  if [[ "$1" == *-floor ]]; then echo "$FLOOR_DIR/$1.http"; else echo "$REPO/traffic/$1.http"; fi
}

RUNS_CSV="$OUT/runs.csv"
echo "round,profile,mode,connections,pipeline,duration_s,wrk_requests,wrk_rps,p50_us,p90_us,p99_us,max_us,server_requests,allocated_bytes,gen0,cpu_ticks,clk_tck,errors,jit_us,user_ticks,backend_cpu_ticks,lines_served,lines_created,evictions_value,evictions_name" > "$RUNS_CSV"

BACKEND_PID=""
stop_all() {
  cleanup
  if [[ -n "$BACKEND_PID" ]]; then kill "$BACKEND_PID" 2>/dev/null || true; wait "$BACKEND_PID" 2>/dev/null || true; fi
}
on_exit stop_all

start_gateway() { # mode round
  local log="$OUT/logs/gateway-$1-r$2.log" kestrel_only=false slots=()
  [[ $1 == kestrel ]] && kestrel_only=true
  [[ -n "$SLOTS" ]] && slots=("HeaderCache__SlotCount=$SLOTS")
  env Gateway__KestrelOnly=$kestrel_only Gateway__Backend="http://127.0.0.1:$BACKEND_PORT" \
    Gateway__CacheStats=$([[ $CACHE_STATS == 1 ]] && echo true || echo false) "${slots[@]}" \
    DOTNET_gcServer=0 ASPNETCORE_ENVIRONMENT=Production "Logging__LogLevel__Microsoft.Hosting.Lifetime=Information" \
    dotnet "$GATEWAY_DLL" --urls "http://127.0.0.1:0" --contentRoot "$REPO/samples/HeaderCache.Gateway" >"$log" 2>&1 &
  PID[$1]=$!
}

stats() { # mode -> "allocated requests gen0 jit_us served created evictions_value evictions_name"
  local json jit
  json=$(curl -fsS --max-time 10 "http://127.0.0.1:${PORT[$1]}/stats") || return 1
  jit=$(sed -nE 's/.*"jitMicroseconds":([0-9]+).*/\1/p' <<<"$json")
  metric() { sed -nE "s/.*\"headercache\\.$1\":([0-9]+).*/\\1/p" <<<"$json"; }
  local served created ev en
  served=$(metric 'lines\|served'); created=$(metric 'lines\|created')
  ev=$(metric 'evictions\|value'); en=$(metric 'evictions\|name')
  sed -nE "s/.*\"allocatedBytes\":([0-9]+).*\"requests\":([0-9]+).*\"gen0\":([0-9]+).*/\\1 \\2 \\3/p" <<<"$json" | grep . \
    | sed "s/\$/ ${jit:-0} ${served:-0} ${created:-0} ${ev:-0} ${en:-0}/"
}

run_wrk() { # mode profile seconds outfile
  timeout $(($3 + 30)) wrk -t"$CONNECTIONS" -c"$CONNECTIONS" -d"${3}s" --timeout 10s --latency \
    -s "$WRK_DIR/profile.lua" "http://127.0.0.1:${PORT[$1]}" -- "$(profile_file "$2")" "$PIPELINE" 0 >"$4" 2>&1 \
    || { echo "wrk failed ($2/$1):" >&2; cat "$4" >&2; exit 1; }
}

start_sample "$REPO" kestrel "$OUT/logs/backend.log" DOTNET_gcServer=0
BACKEND_PID=$SAMPLE_PID
BACKEND_PORT=$(listening_port "$OUT/logs/backend.log" "$BACKEND_PID") || exit 1

CLK_TCK=$(getconf CLK_TCK)
echo "== $ROUNDS round(s) x profiles [$PROFILES] x [headercache kestrel floor]; HeaderCache slots ${SLOTS:-25 (default)}"
echo "   wrk -t$CONNECTIONS -c$CONNECTIONS through the gateway, warm-up ${WARMUP}s, measured ${DURATION}s; tier-up $TIER_UP x 1 s per profile"
echo "   backend: the main sample as Kestrel alone on port $BACKEND_PORT (pid $BACKEND_PID); gateways fresh every round, workstation GC"
echo "   results: $OUT"

KINDS=(headercache kestrel floor)
for round in $(seq "$ROUNDS"); do
  for mode in headercache kestrel; do start_gateway "$mode" "$round"; done
  for mode in headercache kestrel; do
    PORT[$mode]=$(listening_port "$OUT/logs/gateway-$mode-r$round.log" "${PID[$mode]}") || exit 1
    stats "$mode" >/dev/null   # JIT the /stats path now, so later /stats calls cost the same every time
    # shellcheck disable=SC2046
    tier_up "${PORT[$mode]}" "$OUT/logs/wrk-tierup-$mode-r$round" "$TIER_UP" "$PIPELINE" $(for p in $PROFILES; do echo "$p $p-floor"; done) || exit 1
  done
  shift_by=$(( (round - 1) % 3 ))
  ORDER=("${KINDS[@]:$shift_by}" "${KINDS[@]:0:$shift_by}")
  (( round % 2 == 0 )) && ORDER=("${ORDER[2]}" "${ORDER[1]}" "${ORDER[0]}")
  for profile in $PROFILES; do
    for kind in "${ORDER[@]}"; do
      mode=$kind; run_profile=$profile
      [[ $kind == floor ]] && { mode=kestrel; run_profile="$profile-floor"; }
      run_wrk "$mode" "$run_profile" "$WARMUP" "$OUT/logs/wrk-warmup-$run_profile-$mode-r$round.txt"
      s0=$(stats "$mode"); s1=$(stats "$mode")
      read -r a0 _ <<<"$s0"
      read -r a1 r1 g1 j1 v1 c1x e1 n1 <<<"$s1"
      stats_cost=$((a1 - a0))            # bytes one /stats request allocates (subtracted once below)
      read -r c1 u1 <<<"$(cpu_ticks "${PID[$mode]}")"
      read -r b1 _ <<<"$(cpu_ticks "$BACKEND_PID")"
      wrk_out="$OUT/logs/wrk-$run_profile-$mode-r$round.txt"
      run_wrk "$mode" "$run_profile" "$DURATION" "$wrk_out"
      read -r c2 u2 <<<"$(cpu_ticks "${PID[$mode]}")"
      read -r b2 _ <<<"$(cpu_ticks "$BACKEND_PID")"
      s2=$(stats "$mode")
      read -r a2 r2 g2 j2 v2 c2x e2 n2 <<<"$s2"
      line=$(grep '^WRK_RESULT' "$wrk_out") || { echo "wrk failed ($run_profile/$mode):" >&2; cat "$wrk_out" >&2; exit 1; }
      field() { sed -E "s/.* $1=([0-9.]+).*/\\1/" <<<"$line"; }
      errors=$(( $(field connect_err) + $(field read_err) + $(field write_err) + $(field status_err) + $(field timeout_err) ))
      requests=$(( r2 - r1 - 1 ))        # the second /stats request itself is counted in r2
      allocated=$(( a2 - a1 - stats_cost ))
      echo "$round,$run_profile,$mode,$CONNECTIONS,$PIPELINE,$DURATION,$(field requests),$(field rps),$(field p50_us),$(field p90_us),$(field p99_us),$(field max_us),$requests,$allocated,$((g2 - g1)),$((c2 - c1)),$CLK_TCK,$errors,$((j2 - j1)),$((u2 - u1)),$((b2 - b1)),$((v2 - v1)),$((c2x - c1x)),$((e2 - e1)),$((n2 - n1))" >> "$RUNS_CSV"
      printf '   round %d %-16s %-12s %9.0f req/s  %7d B/req  gen0 %4d  errors %d\n' "$round" "$run_profile" "$mode" \
        "$(field rps)" "$(( allocated / (requests > 0 ? requests : 1) ))" "$((g2 - g1))" "$errors"
    done
  done
  cleanup
done

echo "== finished in $(( $(date +%s) - START_TIME ))s, build included; results in $OUT"
python3 "$GATEWAY_DIR/summarize.py" "$RUNS_CSV" --out "$OUT"
