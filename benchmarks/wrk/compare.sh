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
# many). It measures how much of a mode's cost is address translation.
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
# shellcheck source=benchmarks/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

DURATION=10
# A fresh server tiers its hot methods up for many seconds (tier 0, instrumented, then optimized code): a short
# warm-up leaves that JIT work, heavier with more code on the path, in the measured window.
WARMUP=20
CONNECTIONS=4
ROUNDS=3
PROFILES="plaintext chrome firefox safari proxy-pool churn"
PIPELINE=1
PACE=0
GC=workstation
BUILD=1
QUICK=0
RESULTS_ROOT="$REPO/benchmarks/wrk/results"
PIN=0
SPIN_ENV=""
SLICES=1
AGAINST=""
TIER_UP=3
LARGE_PAGES=0
BARE=0
OPTIONS="duration warmup connections rounds profiles pipeline pace gc no-build results no-spin slices against tier-up large-pages bare"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=1; DURATION=2; WARMUP=8; ROUNDS=3; PROFILES="chrome proxy-pool plaintext churn"; shift ;;
    --echo) APP_ENV="Sample__Echo=true"; shift ;;
    --pin) PIN=1; shift ;;
    *) shared_option "$@"; shift "$SHIFT" ;;
  esac
done

whole 1 DURATION WARMUP CONNECTIONS ROUNDS PIPELINE SLICES
whole 0 PACE TIER_UP
check_gc
check_profiles
check_slices
need wrk wrk
need python3
need curl

START_TIME=$(date +%s)
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
  built "$(sample_dll "$checkout")"
done

new_run "$([[ $QUICK == 1 ]] && echo quick || echo full)"
if [[ $BARE == 1 ]]; then
  BARE_DIR="$OUT/traffic"
  # shellcheck disable=SC2086
  bare_profiles "$BARE_DIR" $PROFILES
  PROFILES=$(for p in $PROFILES; do printf '%s %s-bare ' "$p" "$p"; done)
  PROFILES=${PROFILES% }
fi
RUNS_CSV="$OUT/runs.csv"
echo "$RUN_COLUMNS" > "$RUNS_CSV"

on_exit cleanup
SERVER_ENV="$SPIN_ENV DOTNET_gcServer=$GC_SERVER"

echo "== $ROUNDS round(s) x profiles [$PROFILES] x modes [${MODES[*]}]"
echo "   wrk -t$CONNECTIONS -c$CONNECTIONS (one connection per wrk thread), pipeline $PIPELINE, pace ${PACE} ms, warm-up ${WARMUP}s, measured ${DURATION}s in $SLICES slice(s) per mode"
echo "   tier-up: every profile in $TIER_UP run(s) of 1 s with 32 connections per fresh server"
echo "   server: dotnet, DOTNET_gcServer=$GC_SERVER ($GC GC), one fresh process per mode per round; results: $OUT"
if [[ $PIN == 1 ]]; then
  SERVER_CPU="taskset -c 1"; WRK_CPU="taskset -c 0"
  echo "   pinned: servers on CPU 1, wrk on CPU 0"
fi
if [[ -n "$LARGE_PAGES_ENV" ]]; then
  echo "   large pages: each server's GC heap on 2 MB pages, at most $LARGE_PAGES MB ($LARGE_PAGES_ENV)"
fi

measure_rounds

echo "== finished in $(( $(date +%s) - START_TIME ))s, build included; results in $OUT"
# The table, then (last lines of the output) one "RESULT <profile> ..." line per profile.
summarize wrk "$RUNS_CSV" --out "$OUT"
