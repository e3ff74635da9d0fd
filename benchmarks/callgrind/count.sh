#!/usr/bin/env bash
# Instructions per request on the in-memory connection path (ConnectionPathBenchmarks: one keep-alive connection, real
# Kestrel over in-memory pipes), counted by valgrind's callgrind: HeaderCache against Kestrel alone, profile by profile.
#
# Seconds on this 2-core machine swing by several percent from run to run; instructions repeat to 0.1-0.8 % on an idle
# machine (HeaderCache seeds its caches at random). So this tells two builds apart by a fraction of a percent in one
# run each, and says where instructions go. In memory the seconds follow the instructions to 1 % on every profile but
# proxy-pool, where HeaderCache's state costs time that no instruction shows (docs/benchmarks.md, thirty-seventh
# pass). The goals of issue 11 stay in seconds (benchmarks/wrk/compare.sh, connection-path-pairs). Run one count at a
# time on an idle machine: with other work running, HeaderCache counted up to 3,000 more instructions a request.
#
# A count means something only with the code compiled as a server's is, and repeats only with the runtime held still:
#   compiled ahead, together     under valgrind the JIT gives up its optimized compile of some hot methods and
#                                compiles them again with MinOpts, without inlining (DOTNET_JitDisasm: TryRecall's
#                                Tier1 listing stops at its first call and a second one says "compiling with
#                                minopt"; the same with hardware intrinsics, PGO or a larger stack turned off), so
#                                JIT-compiled code counts many more instructions than a server runs. The script
#                                publishes the benchmarks self-contained and ReadyToRun composite: the framework,
#                                Kestrel and HeaderCache compiled ahead into one image, inlined across assemblies
#                                (about 3 minutes and 140 MB). Kestrel alone on chrome counts 78,200 instructions a
#                                request JIT-compiled, 49,100 with the framework's own ReadyToRun code, 37,200
#                                compiled together (docs/benchmarks.md, thirty-seventh pass). What no image holds is
#                                still JIT-compiled: --methods shows how much.
#   DOTNET_TieredCompilation=0   no tiering: under valgrind a request takes about 50 times as long, and tiering goes
#                                by the clock (it had not finished after 300 warm-up invocations; with
#                                DOTNET_TC_CallCountingDelayMs=0 it does, into the MinOpts code above). So the
#                                ReadyToRun code runs as compiled ahead, without PGO: crossgen2 leaves calls that tier 1 inlines
#                                natively, so a change that only inlines (an AggressiveInlining) shows here and not in
#                                a server's seconds (thirty-eighth pass). Compare builds and servers with it, and
#                                check a change's seconds with connection-path-pairs.
#   DOTNET_gcConcurrent=0        no background collector thread whose work depends on timing.
#   one thread-pool worker       (DOTNET_ThreadPool_ForceMin/MaxWorkerThreads=1, no spinning): client and server
#                                continuations run one after another on one thread, with no hand-off that spins.
# Counting starts after the warm-up invocations and stops after the measured ones (control.c, built here with gcc).
#
# Usage: benchmarks/callgrind/count.sh [--profiles "chrome ..."] [--modes "KestrelDefault HeaderCache"]
#                                      [--warmup N] [--invocations N] [--methods N] [--cache] [--no-build]
#                                      [--results DIR]
# --no-build counts the last publish as it is: after a change to the source, publish again.
# --methods N also writes each run's instructions by assembly and its N costliest methods (attribute.py, methods.txt).
# --cache adds callgrind's model of the processor's caches (first level and last level, reads and writes, misses per
# request in each run's events.txt); it is a model, not this processor, and doubles the time. An invocation is 64
# requests; a run of 100 takes about 20 seconds, two run at once, after the publish. Results: summary.md and one folder
# per run under benchmarks/callgrind/results/<stamp>/ (results/latest points to the last).
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
  # crossgen2 writes its map of the image (--mapcsv) only when it compiles, and skips an image that is up to date.
  R2R="$REPO/benchmarks/HeaderCache.Benchmarks/obj/Release/net10.0/linux-x64/R2R"
  [[ -f $R2R/HeaderCache.Benchmarks.r2r.map.csv ]] || rm -rf "$R2R"
  dotnet publish "$REPO/benchmarks/HeaderCache.Benchmarks" -c Release -r linux-x64 --self-contained true \
    -p:PublishReadyToRun=true -p:PublishReadyToRunComposite=true -p:PublishReadyToRunCrossgen2ExtraArgs=--mapcsv \
    -o "$APP" -v quiet -nologo > /dev/null
  # The compiled methods only (a tenth of the map): RVA, length, symbol.
  grep ',MethodWithGCInfo$' "$R2R/HeaderCache.Benchmarks.r2r.map.csv" | cut -d, -f1,2,5 > "$APP/r2r-methods.csv"
fi

OUT="$RESULTS_ROOT/$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
ln -sfn "$OUT" "$RESULTS_ROOT/latest"
gcc -O2 -shared -fPIC -o "$OUT/libcontrol.so" "$HERE/control.c"
# The runtime's map of JIT-compiled code names methods for --methods; only then, as writing it costs instructions.
PERF_MAP=0
[[ $METHODS -gt 0 ]] && PERF_MAP=3

# One run: prints "profile mode instructions-per-request requests-counted".
run_one() {
  local profile=$1 mode=$2 dir="$OUT/$1-$2"
  mkdir -p "$dir"
  env DOTNET_TieredCompilation=0 DOTNET_gcServer=0 DOTNET_gcConcurrent=0 \
      DOTNET_ThreadPool_ForceMinWorkerThreads=1 DOTNET_ThreadPool_ForceMaxWorkerThreads=1 \
      DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0 DOTNET_PerfMapEnabled="$PERF_MAP" DOTNET_PerfMapJitDumpPath="$dir" \
      HEADERCACHE_CALLGRIND_CONTROL="$OUT/libcontrol.so" HEADERCACHE_CALLGRIND_MAPS="$dir/maps" \
    valgrind --tool=callgrind --dump-instr=yes --cache-sim="$CACHE_SIM" --callgrind-out-file="$dir/callgrind.out" \
      "$APP/HeaderCache.Benchmarks" connection-path-count "$profile" "$mode" "$WARMUP" "$INVOCATIONS" > "$dir/run.log" 2>&1
  local measured=$dir/callgrind.out.1
  [[ -f $measured ]] || { echo "$profile $mode: no measured part, see $dir/run.log" >&2; return 1; }
  # How many requests an invocation makes is the benchmark's to say: it prints how many it counted.
  local requests pid
  requests=$(grep -oE '[0-9]+ requests counted' "$dir/run.log" | cut -d' ' -f1)
  pid=$(awk '/^pid:/ {print $2; exit}' "$measured")
  mv "$dir/perf-$pid.map" "$dir/perf.map" 2> /dev/null || true
  awk -v n="$requests" '/^events:/ {for (i = 2; i <= NF; i++) name[i] = $i}
    /^totals:/ {for (i = 2; i <= NF; i++) printf "%s %.1f\n", name[i], $i / n; exit}' "$measured" > "$dir/events.txt"
  local total
  total=$(awk '/^totals:/ {print $2; exit}' "$measured")
  if [[ $METHODS -gt 0 && -f $dir/perf.map ]]; then
    python3 "$HERE/attribute.py" "$measured" --requests "$requests" --perf-map "$dir/perf.map" --maps "$dir/maps" \
      --r2r-map "$APP/r2r-methods.csv" --top "$METHODS" > "$dir/methods.txt"
  fi
  echo "$profile $mode $((total / requests)) $requests"
}
export -f run_one
export OUT WARMUP INVOCATIONS METHODS HERE APP CACHE_SIM PERF_MAP

for profile in $PROFILES; do
  for mode in $MODES; do
    echo "$profile $mode"
  done
done | xargs -P 2 -L 1 bash -c 'run_one "$0" "$1"' > "$OUT/runs.txt"

count_of() { # profile mode -> instructions per request
  awk -v p="$1" -v m="$2" '$1 == p && $2 == m {print $3}' "$OUT/runs.txt"
}

{
  echo "Instructions per request, \`count.sh --warmup $WARMUP --invocations $INVOCATIONS\` ($(awk 'NR == 1 {print $4}' "$OUT/runs.txt") requests counted), $(date -u +%F)"
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
    base=$(count_of "$profile" "$first")
    for mode in $MODES; do
      printf ' %s |' "$(count_of "$profile" "$mode")"
    done
    for mode in $MODES; do
      [[ $mode == "$first" ]] && continue
      printf ' %s |' "$(awk -v a="$(count_of "$profile" "$mode")" -v b="$base" 'BEGIN {printf "%.3f", a / b}')"
    done
    echo
  done
} | tee "$OUT/summary.md"
