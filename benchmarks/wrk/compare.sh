#!/usr/bin/env bash
# Side-by-side wrk comparison of the sample server in three modes, interleaved:
#   headercache      HeaderCache on (the sample's default)
#   kestrel          Sample__KestrelOnly=true: HeaderCache not registered at all (stock Kestrel, the baseline)
#   kestrel-noreuse  Sample__KestrelOnly=true, Kestrel__DisableStringReuse=true
# The app answers every request with "Hello, World!" (Sample__Echo=false) so that the figures are the
# server's own per-request cost; --echo measures with the sample's echo endpoint instead.
#
# For every round: a fresh server process per mode (all three started at the start of the round, idle
# while another one is measured), then for every profile the three modes one after the other, each with a
# warm-up run and a measured run. The order turns by one mode per round and runs backwards every other round
# (A B C, A C B, C A B, C B A, B C A, B A C: every order once in six rounds): the mode measured first in a round is
# measured at a different moment than the last, and a mode measured right after another may pay for what that one
# left running, so neither a fixed order nor a mere rotation (which keeps every mode after the same one) would do. With --pin the servers run on CPU 1 and wrk on CPU 0. With --no-spin the servers' thread
# pool does not spin before it waits (DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0): spinning burns CPU that
# depends on timing, not on the work per request, and is most of the round-to-round noise on 2 cores. With --pace MS
# each connection waits MS milliseconds after a response before its next request (profile.lua): the load is then
# fixed (use more --connections), the server waits between requests, and each request finds the connection's state
# as a server under moderate load does, no longer in the processor's caches. Around the measured run the script
# reads /stats for allocated bytes, request count and gen0 collections, and /proc for the server's CPU
# time. Results: a table on stdout, runs.csv / summary.csv / summary.md in benchmarks/wrk/results/<run>/
# (benchmarks/wrk/results/latest points to the last run), and with --quick one RESULT line per profile.
#
# With --against DIR the third mode is headercache-before instead of kestrel-noreuse: HeaderCache on, in the sample
# built from the checkout in DIR (another worktree, at the commit before a change), so that a change's effect on the
# socket path is measured in the same rounds as Kestrel alone; the RESULT lines then add before_round_median, the
# median over rounds of this checkout's CPU per request over DIR's, and before_cpu_round_median, DIR's over Kestrel
# alone's.
#
# Before its first profile, each fresh server replays every profile in --tier-up N short runs (3 by default) of 32
# connections each, a pause between runs. The runtime compiles a method again, optimized, only after it was called 30
# times, twice over (instrumented, then final), and the code a connection runs once (its start, its end, the first
# heads HeaderCache reads before it leaves a connection to Kestrel) is called that often only after many connections:
# without this, that compiling fell into the measured time, more of it in the mode with more code. The RESULT lines
# give the JIT's time in the measured runs (jit_us_per_req): flat out a few tenths of a percent of a request; at a fixed
# load more, as code run by the clock (the thread pool's hill climbing, timers) is still compiled minutes later.
#
# With --slices N the measured time of each profile is cut into N slices that the three modes take in turn
# (A B C A B C ...), each a wrk run of duration/N seconds; a mode's round is the sum of its slices. The machine's
# speed drifts from run to run (a shared VM), which turns into round-to-round noise when each
# mode is measured in one block; slices of a second or two put the modes under the same conditions.
#
# With --large-pages MB every server's GC heap lies on 2 MB pages (DOTNET_GCLargePages, with a heap of at most MB;
# 512 leaves the collector's budgets as they are here), so that a request's reads of memory touched long ago seldom
# need a walk of the page tables: the kernel must have the pages free (/proc/sys/vm/nr_hugepages; the script says how
# many). It measures how much of a mode's cost is address translation (docs/benchmarks.md, thirty-fourth pass).
#
# With --bare every profile P is followed by P-bare: P's heads with only the request line and the lines Kestrel acts on
# itself (Host, Connection, framing), written into the run's folder. Kestrel alone on P-bare against P is what the lines
# HeaderCache may take cost Kestrel, the most HeaderCache could save: a CEILING line per profile gives that ratio, and
# how much of that cost HeaderCache saved. Part of it is the kernel's, receiving more bytes, which no reader can save.
#
# Usage: benchmarks/wrk/compare.sh [--quick] [--duration S] [--warmup S] [--connections N] [--rounds N]
#                                  [--profiles "chrome proxy-pool ..."] [--pipeline N] [--gc workstation|server]
#                                  [--no-build] [--results DIR] [--echo] [--pin] [--no-spin] [--slices N]
#                                  [--against DIR] [--pace MS] [--tier-up N] [--large-pages MB] [--bare]
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/benchmarks/wrk"

DURATION=10
# A fresh server tiers its hot methods up for many seconds (tier 0, instrumented, then optimized code): a short
# warm-up leaves that JIT work, heavier with more code on the path, in the measured window (docs/benchmarks.md).
WARMUP=20
CONNECTIONS=4
ROUNDS=3
PROFILES="plaintext chrome firefox safari proxy-pool churn"
PIPELINE=1
PACE=0
GC=workstation
BUILD=1
QUICK=0
RESULTS_ROOT="$HERE/results"
APP_ENV="Sample__Echo=false"
PIN=0
SPIN_ENV=""
SLICES=1
AGAINST=""
TIER_UP=3
LARGE_PAGES=0
BARE=0

usage() { sed -n '2,55p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=1; DURATION=2; WARMUP=8; ROUNDS=3; PROFILES="chrome proxy-pool plaintext churn" ;;
    --duration) DURATION="${2%s}"; shift ;;
    --warmup) WARMUP="${2%s}"; shift ;;
    --connections) CONNECTIONS="$2"; shift ;;
    --rounds) ROUNDS="$2"; shift ;;
    --profiles) PROFILES="${2//,/ }"; shift ;;
    --pipeline) PIPELINE="$2"; shift ;;
    --pace) PACE="$2"; shift ;;
    --gc) GC="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --results) RESULTS_ROOT="$2"; shift ;;
    --echo) APP_ENV="Sample__Echo=true" ;;
    --pin) PIN=1 ;;
    --no-spin) SPIN_ENV="DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0" ;;
    --slices) SLICES="$2"; shift ;;
    --against) AGAINST="$(cd "$2" && pwd)"; shift ;;
    --tier-up) TIER_UP="$2"; shift ;;
    --large-pages) LARGE_PAGES="$2"; shift ;;
    --bare) BARE=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

for v in DURATION WARMUP CONNECTIONS ROUNDS PIPELINE SLICES; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || { echo "--${v,,} must be a whole number >= 1" >&2; exit 2; }
done
[[ "$PACE" =~ ^[0-9]+$ ]] || { echo "--pace must be a whole number of milliseconds >= 0" >&2; exit 2; }
[[ "$TIER_UP" =~ ^[0-9]+$ ]] || { echo "--tier-up must be a whole number of runs >= 0" >&2; exit 2; }
case "$GC" in workstation) GC_SERVER=0 ;; server) GC_SERVER=1 ;; *) echo "--gc workstation|server" >&2; exit 2 ;; esac
for p in $PROFILES; do [[ -f "$REPO/traffic/$p.http" ]] || { echo "no profile traffic/$p.http" >&2; exit 2; }; done

command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is needed to read /stats" >&2; exit 1; }

START_TIME=$(date +%s)
# shellcheck source=benchmarks/wrk/modes.sh
source "$HERE/modes.sh"
CHECKOUTS=("$REPO")
MODES=(headercache kestrel kestrel-noreuse)
if [[ -n "$AGAINST" ]]; then
  CHECKOUTS+=("$AGAINST")
  MODES=(headercache kestrel headercache-before)
fi
LARGE_PAGES_ENV=$(large_pages_env "$LARGE_PAGES" "${#MODES[@]}") || exit 2
for checkout in "${CHECKOUTS[@]}"; do
  if [[ $BUILD == 1 ]]; then
    echo "== build (Release, $checkout/artifacts/wrk)"
    build_sample "$checkout"
  fi
  [[ -f "$(sample_dll "$checkout")" ]] || { echo "build output $(sample_dll "$checkout") missing" >&2; exit 1; }
done

RUN_NAME="$(date +%Y%m%d-%H%M%S)-$([[ $QUICK == 1 ]] && echo quick || echo full)"
OUT="$RESULTS_ROOT/$RUN_NAME"
mkdir -p "$OUT/logs"
ln -sfn "$RUN_NAME" "$RESULTS_ROOT/latest"
if [[ $BARE == 1 ]]; then
  BARE_DIR="$OUT/traffic"
  # shellcheck disable=SC2086
  bare_profiles "$BARE_DIR" $PROFILES
  PROFILES=$(for p in $PROFILES; do printf '%s %s-bare ' "$p" "$p"; done)
  PROFILES=${PROFILES% }
fi
RUNS_CSV="$OUT/runs.csv"
echo "round,profile,mode,connections,pipeline,duration_s,wrk_requests,wrk_rps,p50_us,p90_us,p99_us,max_us,server_requests,allocated_bytes,gen0,cpu_ticks,clk_tck,errors,jit_us,user_ticks" > "$RUNS_CSV"

on_exit cleanup

start_server() { # mode round
  local checkout="$REPO"
  [[ $1 == headercache-before ]] && checkout="$AGAINST"
  # shellcheck disable=SC2086
  start_sample "$checkout" "$1" "$OUT/logs/server-$1-r$2.log" $SPIN_ENV DOTNET_gcServer=$GC_SERVER
  PID[$1]=$SAMPLE_PID
}

wait_server() { # mode round
  PORT[$1]=$(listening_port "$OUT/logs/server-$1-r$2.log" "${PID[$1]}") || exit 1
  stats "$1" >/dev/null   # JIT the /stats path now, so later /stats calls cost the same every time
}

stats() { # mode -> "allocated requests gen0 jit_us"; jit_us is 0 from a sample older than jitMicroseconds (--against)
  local json jit
  json=$(curl -fsS --max-time 10 "http://127.0.0.1:${PORT[$1]}/stats") || return 1
  jit=$(sed -nE 's/.*"jitMicroseconds":([0-9]+).*/\1/p' <<<"$json")
  sed -nE "s/.*\"allocatedBytes\":([0-9]+).*\"requests\":([0-9]+).*\"gen0\":([0-9]+).*/\\1 \\2 \\3 ${jit:-0}/p" <<<"$json" | grep .
}

run_wrk() { # mode profile seconds outfile
  local mode=$1 profile=$2 secs=$3
  $WRK_CPU timeout $((secs + 30)) wrk -t"$CONNECTIONS" -c"$CONNECTIONS" -d"${secs}s" --timeout 10s --latency \
    -s "$HERE/profile.lua" "http://127.0.0.1:${PORT[$mode]}" -- "$(profile_file "$profile")" "$PIPELINE" "$PACE" >"$4" 2>&1 \
    || { echo "wrk failed ($profile/$mode):" >&2; cat "$4" >&2; exit 1; }
}

(( DURATION % SLICES == 0 )) || { echo "--duration must be a multiple of --slices" >&2; exit 2; }
SLICE_SECONDS=$(( DURATION / SLICES ))
echo "== $ROUNDS round(s) x profiles [$PROFILES] x modes [${MODES[*]}]"
echo "   wrk -t$CONNECTIONS -c$CONNECTIONS (one connection per wrk thread), pipeline $PIPELINE, pace ${PACE} ms, warm-up ${WARMUP}s, measured ${DURATION}s in $SLICES slice(s) per mode"
echo "   tier-up: every profile in $TIER_UP run(s) of 1 s with 32 connections per fresh server"
echo "   server: dotnet, DOTNET_gcServer=$GC_SERVER ($GC GC), one fresh process per mode per round; results: $OUT"
CLK_TCK=$(getconf CLK_TCK)
SERVER_CPU=""; WRK_CPU=""
if [[ $PIN == 1 ]]; then
  SERVER_CPU="taskset -c 1"; WRK_CPU="taskset -c 0"
  echo "   pinned: servers on CPU 1, wrk on CPU 0"
fi
if [[ -n "$LARGE_PAGES_ENV" ]]; then
  echo "   large pages: each server's GC heap on 2 MB pages, at most $LARGE_PAGES MB ($LARGE_PAGES_ENV)"
fi

for round in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do start_server "$mode" "$round"; done
  for mode in "${MODES[@]}"; do wait_server "$mode" "$round"; done
  for mode in "${MODES[@]}"; do
    # shellcheck disable=SC2086
    tier_up "${PORT[$mode]}" "$OUT/logs/wrk-tierup-$mode-r$round" "$TIER_UP" "$PIPELINE" $PROFILES || exit 1
  done
  ORDER=("${MODES[@]:$(( (round - 1) % ${#MODES[@]} ))}" "${MODES[@]:0:$(( (round - 1) % ${#MODES[@]} ))}")
  (( round % 2 == 0 )) && ORDER=("${ORDER[2]}" "${ORDER[1]}" "${ORDER[0]}")
  for profile in $PROFILES; do
    declare -A C=() U=() R=() A=() G=() N=() E=() P50=() P99=() RPS=() P90=() MAX=() J=()
    for mode in "${ORDER[@]}"; do
      run_wrk "$mode" "$profile" "$WARMUP" "$OUT/logs/wrk-warmup-$profile-$mode-r$round.txt"
      measure_reset "$mode"
    done
    for slice in $(seq "$SLICES"); do
      for mode in "${ORDER[@]}"; do
        measure_start "$mode"
        wrk_out="$OUT/logs/wrk-$profile-$mode-r$round-s$slice.txt"
        run_wrk "$mode" "$profile" "$SLICE_SECONDS" "$wrk_out"
        measure_end "$mode"
        line=$(grep '^WRK_RESULT' "$wrk_out") || { echo "wrk failed ($profile/$mode):" >&2; cat "$wrk_out" >&2; exit 1; }
        field() { sed -E "s/.* $1=([0-9.]+).*/\\1/" <<<"$line"; }
        E[$mode]=$(( E[$mode] + $(field connect_err) + $(field read_err) + $(field write_err) + $(field status_err) + $(field timeout_err) ))
        N[$mode]=$(( N[$mode] + $(field requests) ))
        P50[$mode]+="$(field p50_us) "; P90[$mode]+="$(field p90_us) "; P99[$mode]+="$(field p99_us) "
        MAX[$mode]=$(( MAX[$mode] > $(field max_us) ? MAX[$mode] : $(field max_us) ))
      done
    done
    for mode in "${ORDER[@]}"; do
      # Latency percentiles of a sliced round: the median of its slices' percentiles.
      rps=$(awk -v n="${N[$mode]}" -v d="$DURATION" 'BEGIN { printf "%.2f", n / d }')
      echo "$round,$profile,$mode,$CONNECTIONS,$PIPELINE,$DURATION,${N[$mode]},$rps,$(med "${P50[$mode]}"),$(med "${P90[$mode]}"),$(med "${P99[$mode]}"),${MAX[$mode]},${R[$mode]},${A[$mode]},${G[$mode]},${C[$mode]},$CLK_TCK,${E[$mode]},${J[$mode]},${U[$mode]}" >> "$RUNS_CSV"
      printf '   round %d %-11s %-18s %9.0f req/s  p99 %6.2f ms  %7d B/req  errors %d\n' "$round" "$profile" "$mode" \
        "$rps" "$(awk -v u="$(med "${P99[$mode]}")" 'BEGIN { print u / 1000 }')" \
        "$(( A[$mode] / (R[$mode] > 0 ? R[$mode] : 1) ))" "${E[$mode]}"
    done
  done
  cleanup
done

echo "== finished in $(( $(date +%s) - START_TIME ))s, build included; results in $OUT"
# The table, then (last lines of the output) one "RESULT <profile> ..." line per profile.
python3 "$HERE/summarize.py" "$RUNS_CSV" --out "$OUT"
