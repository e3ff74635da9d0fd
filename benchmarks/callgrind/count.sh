#!/usr/bin/env bash
# Instructions per request on the in-memory connection path (ConnectionPathBenchmarks: one keep-alive connection, real
# Kestrel over in-memory pipes), counted by valgrind's callgrind: HeaderCache against Kestrel alone, profile by profile.
#
# Seconds on this 2-core machine swing by several percent from run to run; instructions repeat to 0.2 % whatever else
# the machine does (Kestrel alone to 0.02 %; HeaderCache seeds its caches at random). So this tells two builds apart by a fraction of a percent in one run each, and says where
# instructions go method by method. It does not measure time: a cache miss or a page walk costs no instruction, and
# fewer allocations save time beyond their instructions (docs/benchmarks.md, thirty-seventh pass). The goals of
# issue 11 stay in seconds (benchmarks/wrk/compare.sh, connection-path-pairs).
#
# A count means something only with the code compiled as a server's is, and repeats only with the runtime held still:
#   ReadyToRun                   under valgrind the JIT inlines far less than it does natively (DOTNET_JitDisasm:
#                                TryRecall calls ReadOnlySpan's Length and its own one-line members), so JIT-compiled
#                                code counts many more instructions than a server runs: Kestrel alone on chrome 78,200
#                                a request with the framework JIT-compiled against 49,100 with its ReadyToRun code. The
#                                script publishes the benchmarks ReadyToRun, so HeaderCache's code too is compiled ahead,
#                                as the framework's and Kestrel's are (code neither holds, such as generic code over
#                                HeaderCache's types, is still JIT-compiled: --methods shows how much).
#   DOTNET_TieredCompilation=0   no tiering: under valgrind a request takes about 50 times as long, and tiering, which
#                                goes by the clock, had not finished after 300 warm-up invocations. So the ReadyToRun
#                                code runs as compiled ahead (no PGO), not as a server's hot methods end up after
#                                tiering: compare builds and servers with it, not with the socket path's figures.
#   DOTNET_gcConcurrent=0        no background collector thread whose work depends on timing.
#   one thread-pool worker       (DOTNET_ThreadPool_ForceMin/MaxWorkerThreads=1, no spinning): client and server
#                                continuations run one after another on one thread, with no hand-off that spins.
# Counting starts after the warm-up invocations and stops after the measured ones (control.c, built here with gcc).
#
# Usage: benchmarks/callgrind/count.sh [--profiles "chrome ..."] [--modes "KestrelDefault HeaderCache"]
#                                      [--warmup N] [--invocations N] [--methods N] [--cache] [--no-build]
#                                      [--results DIR]
# --methods N also writes each run's N costliest methods (attribute.py). --cache adds callgrind's model of the
# processor's caches (first level and last level, reads and writes, misses per request in each run's events.txt); it
# is a model, not this processor, and doubles the time. An invocation is 64 requests; a run of 100
# takes about 40 seconds, two run at once. Results: summary.md and one folder per run under
# benchmarks/callgrind/results/<stamp>/ (results/latest points to the last).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/benchmarks/callgrind"
PROFILES="plaintext chrome firefox safari proxy-pool churn"
MODES="KestrelDefault HeaderCache"
WARMUP=10
INVOCATIONS=100
METHODS=0
BUILD=1
CACHE_SIM=no
RESULTS_ROOT="$HERE/results"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --profiles) PROFILES="$2"; shift ;;
    --modes) MODES="$2"; shift ;;
    --warmup) WARMUP="$2"; shift ;;
    --invocations) INVOCATIONS="$2"; shift ;;
    --methods) METHODS="$2"; shift ;;
    --cache) CACHE_SIM=yes ;;
    --no-build) BUILD=0 ;;
    --results) RESULTS_ROOT="$2"; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

command -v valgrind > /dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
[[ -f /usr/include/valgrind/callgrind.h ]] || { echo "valgrind's headers are missing (apt-get install valgrind)" >&2; exit 1; }

APP="$REPO/benchmarks/HeaderCache.Benchmarks/bin/ReadyToRun"
if [[ $BUILD == 1 ]]; then
  dotnet publish "$REPO/benchmarks/HeaderCache.Benchmarks" -c Release -r linux-x64 --self-contained false \
    -p:PublishReadyToRun=true -o "$APP" -v quiet -nologo > /dev/null
fi
DLL="$APP/HeaderCache.Benchmarks.dll"

OUT="$RESULTS_ROOT/$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
ln -sfn "$OUT" "$RESULTS_ROOT/latest"
gcc -O2 -shared -fPIC -o "$OUT/libcontrol.so" "$HERE/control.c"
REQUESTS=$((INVOCATIONS * 64))
# The runtime's map of JIT-compiled code names methods for --methods; only then, as writing it costs instructions.
PERF_MAP=0
[[ $METHODS -gt 0 ]] && PERF_MAP=3

# One run: prints "profile mode instructions-per-request".
run_one() {
  local profile=$1 mode=$2 dir="$OUT/$1-$2"
  mkdir -p "$dir"
  env DOTNET_TieredCompilation=0 DOTNET_gcServer=0 DOTNET_gcConcurrent=0 \
      DOTNET_ThreadPool_ForceMinWorkerThreads=1 DOTNET_ThreadPool_ForceMaxWorkerThreads=1 \
      DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0 DOTNET_PerfMapEnabled="$PERF_MAP" DOTNET_PerfMapJitDumpPath="$dir" \
      HEADERCACHE_CALLGRIND_CONTROL="$OUT/libcontrol.so" HEADERCACHE_CALLGRIND_MAPS="$dir/maps" \
    valgrind --tool=callgrind --dump-instr=yes --cache-sim="$CACHE_SIM" --callgrind-out-file="$dir/callgrind.out" \
      dotnet "$DLL" connection-path-count "$profile" "$mode" "$WARMUP" "$INVOCATIONS" > "$dir/run.log" 2>&1
  local measured=$dir/callgrind.out.1
  [[ -f $measured ]] || { echo "$profile $mode: no measured part, see $dir/run.log" >&2; return 1; }
  local pid
  pid=$(awk '/^pid:/ {print $2; exit}' "$measured")
  mv "$dir/perf-$pid.map" "$dir/perf.map" 2> /dev/null || true
  awk -v n="$REQUESTS" '/^events:/ {for (i = 2; i <= NF; i++) name[i] = $i}
    /^totals:/ {for (i = 2; i <= NF; i++) printf "%s %.1f\n", name[i], $i / n; exit}' "$measured" > "$dir/events.txt"
  local total
  total=$(awk '/^totals:/ {print $2; exit}' "$measured")
  if [[ $METHODS -gt 0 && -f $dir/perf.map ]]; then
    python3 "$HERE/attribute.py" "$measured" "$dir/perf.map" "$dir/maps" "$REQUESTS" "$METHODS" > "$dir/methods.txt"
  fi
  echo "$profile $mode $((total / REQUESTS))"
}
export -f run_one
export OUT WARMUP INVOCATIONS METHODS REQUESTS HERE DLL CACHE_SIM PERF_MAP

for profile in $PROFILES; do
  for mode in $MODES; do
    echo "$profile $mode"
  done
done | xargs -P 2 -L 1 bash -c 'run_one "$0" "$1"' > "$OUT/runs.txt"

{
  echo "Instructions per request, \`count.sh --warmup $WARMUP --invocations $INVOCATIONS\` ($REQUESTS requests counted), $(date -u +%F)"
  echo
  printf '| profile |'; for mode in $MODES; do printf ' %s |' "$mode"; done
  first=${MODES%% *}
  for mode in $MODES; do [[ $mode == "$first" ]] || printf ' %s / %s |' "$mode" "$first"; done
  echo
  printf '|---|'; for mode in $MODES; do printf -- '---|'; done
  for mode in $MODES; do [[ $mode == "$first" ]] || printf -- '---|'; done
  echo
  for profile in $PROFILES; do
    printf '| %s |' "$profile"
    base=$(awk -v p="$profile" -v m="$first" '$1 == p && $2 == m {print $3}' "$OUT/runs.txt")
    for mode in $MODES; do
      printf ' %s |' "$(awk -v p="$profile" -v m="$mode" '$1 == p && $2 == m {print $3}' "$OUT/runs.txt")"
    done
    for mode in $MODES; do
      [[ $mode == "$first" ]] && continue
      value=$(awk -v p="$profile" -v m="$mode" '$1 == p && $2 == m {print $3}' "$OUT/runs.txt")
      printf ' %s |' "$(awk -v a="$value" -v b="$base" 'BEGIN {printf "%.3f", a / b}')"
    done
    echo
  done
} | tee "$OUT/summary.md"
