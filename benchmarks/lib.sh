# shellcheck shell=bash disable=SC2034 # sourced: the variables it sets are for the scripts
# The harness the benchmark scripts source (*/compare.sh, wrk/profile.sh, h2/bursts.sh): their shared options, the
# run's folder, the sample server built and started in each mode, the servers' figures around a measured run, the order
# of the modes in a round, wrk's runs, and the summary. REPO is the checkout this file is in. The sample's modes:
#   headercache         HeaderCache on
#   headercache-before  the same, from another checkout's build (--against)
#   kestrel             HeaderCache not registered at all: stock Kestrel, the baseline
#   kestrel-noreuse     the same with Kestrel's string reuse off
# APP_ENV is every mode's (the app answers "Hello, World!" to everything; wrk/compare.sh --echo changes it).
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APP_ENV="Sample__Echo=false"
CLK_TCK=$(getconf CLK_TCK)
# runs.csv's columns, which the summarizers read (a script may add its own after them).
RUN_COLUMNS="round,profile,mode,connections,pipeline,duration_s,wrk_requests,wrk_rps,p50_us,p90_us,p99_us,max_us,server_requests,allocated_bytes,gen0,cpu_ticks,clk_tck,errors,jit_us,user_ticks"

# --- Options: a script sets its defaults and OPTIONS (the shared options it takes, without --), reads its own options
# and hands the others to shared_option.

usage() { # the comment block at the top of the script
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

shared_option() { # option [value]: sets the option's variable; SHIFT is how many words it took
  if [[ $1 == -h || $1 == --help ]]; then usage; exit 0; fi
  if [[ $1 != --* || " $OPTIONS " != *" ${1#--} "* ]]; then echo "unknown option: $1" >&2; usage >&2; exit 2; fi
  SHIFT=1
  case "$1" in
    --no-build) BUILD=0; return ;;
    --no-spin) SPIN_ENV="DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0"; return ;;
    --bare) BARE=1; return ;;
  esac
  [[ $# -ge 2 ]] || { echo "$1 needs a value" >&2; exit 2; }
  SHIFT=2
  case "$1" in
    --rounds) ROUNDS=$2 ;;
    --duration) DURATION=${2%s} ;;
    --warmup) WARMUP=${2%s} ;;
    --connections) CONNECTIONS=$2 ;;
    --profiles) PROFILES=${2//,/ } ;;
    --slices) SLICES=$2 ;;
    --pipeline) PIPELINE=$2 ;;
    --pace) PACE=$2 ;;
    --tier-up) TIER_UP=$2 ;;
    --large-pages) LARGE_PAGES=$2 ;;
    --gc) GC=$2 ;;
    --results) RESULTS_ROOT=$2 ;;
    --against) AGAINST=$(cd "$2" && pwd) ;;
  esac
}

whole() { # minimum variable[:option]...: each variable holds a whole number >= minimum, else says so of its option
  local min=$1 v option
  shift
  for v in "$@"; do
    option=${v#*:}
    v=${v%%:*}
    if [[ $option == "$v" ]]; then option=${v,,}; option=${option//_/-}; fi
    [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge $min ]] || { echo "--$option must be a whole number >= $min" >&2; exit 2; }
  done
}

check_profiles() { # every profile in PROFILES has its traffic/<profile>.http
  local p
  for p in $PROFILES; do [[ -f "$REPO/traffic/$p.http" ]] || { echo "no profile traffic/$p.http" >&2; exit 2; }; done
}

check_gc() { # GC (workstation or server) -> GC_SERVER, DOTNET_gcServer's value
  case "$GC" in workstation) GC_SERVER=0 ;; server) GC_SERVER=1 ;; *) echo "--gc workstation|server" >&2; exit 2 ;; esac
}

check_slices() { # the measured time splits into whole seconds
  (( DURATION % SLICES == 0 )) || { echo "--duration must be a multiple of --slices" >&2; exit 2; }
}

need() { # tool [Debian package]: installs the package when the tool is missing, or says the tool is needed
  command -v "$1" >/dev/null && return
  [[ -n ${2:-} ]] || { echo "$1 is needed" >&2; exit 1; }
  apt-get update && apt-get install -y "$2"
}

# --- Builds and the run's folder.

build() { # project artifacts: Release, into its own artifacts folder (isolated from other builds)
  dotnet build "$1" -c Release --artifacts-path "$2" -nologo -v q | grep -E "error|Warn|Elapsed" || true
}

sample_dll() { # checkout -> the sample server built from it
  echo "$1/artifacts/wrk/bin/HeaderCache.Sample/release/HeaderCache.Sample.dll"
}

build_sample() { # checkout
  build "$1/samples/HeaderCache.Sample" "$1/artifacts/wrk"
}

built() { # file...: each build output is there
  local f
  for f in "$@"; do [[ -f "$f" ]] || { echo "build output $f missing" >&2; exit 1; }; done
}

new_run() { # name: OUT, the folder RESULTS_ROOT/<date>-<name> with its logs/, which RESULTS_ROOT/latest points to
  RUN_NAME="$(date +%Y%m%d-%H%M%S)-$1"
  OUT="$RESULTS_ROOT/$RUN_NAME"
  mkdir -p "$OUT/logs"
  ln -sfn "$RUN_NAME" "$RESULTS_ROOT/latest"
}

summarize() { # benchmark argument...: benchmarks/<benchmark>/summarize.py, run as a module of the checkout
  (cd "$REPO" && python3 -m "benchmarks.$1.summarize" "${@:2}")
}

# --- Servers. The servers a script started, by mode, and their ports; cleanup stops them: at the end of every round,
# and on exit (on_exit).
declare -A PID PORT
SERVER_ENV=""      # environment assignments for every server of the run
SERVER_LOG=server  # the first word of the servers' log names
STATS_CURL=()      # curl's options for /stats: the HTTP/2 scripts read it as they measure
SCHEME=http

mode_env() { # mode -> environment assignments
  case "$1" in
    headercache|headercache-before) echo "Sample__KestrelOnly=false HeaderCache__Enabled=true Kestrel__DisableStringReuse=false $APP_ENV" ;;
    kestrel) echo "Sample__KestrelOnly=true Kestrel__DisableStringReuse=false $APP_ENV" ;;
    kestrel-noreuse) echo "Sample__KestrelOnly=true Kestrel__DisableStringReuse=true $APP_ENV" ;;
  esac
}

checkout_of() { # mode -> the checkout its server is built from: AGAINST's for headercache-before, else this one
  if [[ $1 == headercache-before ]]; then echo "$AGAINST"; else echo "$REPO"; fi
}

cleanup() {
  for m in "${!PID[@]}"; do kill "${PID[$m]}" 2>/dev/null || true; done
  for m in "${!PID[@]}"; do wait "${PID[$m]}" 2>/dev/null || true; done
  PID=()
}

on_exit() { # command: runs when the script exits, an interrupt or TERM included (they exit with 130)
  # shellcheck disable=SC2064
  trap "$1" EXIT
  trap 'exit 130' INT TERM
}

start_sample() { # checkout mode log [env assignment...]: starts the sample built from checkout in mode, on a port of its
  # choosing, in the background, with the caller's environment assignments and LARGE_PAGES_ENV; its pid in SAMPLE_PID
  # and its port, once it listens, from listening_port. SERVER_CPU, when set, is a command to run it under (taskset).
  local checkout=$1 mode=$2 log=$3
  shift 3
  # shellcheck disable=SC2046,SC2086
  ${SERVER_CPU:-} env $(mode_env "$mode") ${LARGE_PAGES_ENV:-} "$@" ASPNETCORE_ENVIRONMENT=Production \
    "Logging__LogLevel__Microsoft.Hosting.Lifetime=Information" \
    dotnet "$(sample_dll "$checkout")" --urls "http://127.0.0.1:0" --contentRoot "$checkout/samples/HeaderCache.Sample" >"$log" 2>&1 &
  SAMPLE_PID=$!
}

listening_port() { # log pid -> the port the server logged (http or https); fails, with the log, when it exits or takes 30 s
  local log=$1 pid=$2 port=""
  for _ in $(seq 300); do
    # The log may not exist yet: the shell that starts the server creates it.
    port=$(grep -oE 'Now listening on: https?://127\.0\.0\.1:[0-9]+' "$log" 2>/dev/null | head -1 | sed 's/.*://') || true
    [[ -n "$port" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n "$port" ]] || { echo "server did not start; log $log:" >&2; cat "$log" >&2; return 1; }
  echo "$port"
}

server_log() { # mode round -> its server's log
  echo "$OUT/logs/$SERVER_LOG-$1-r$2.log"
}

start_server() { # mode round: the sample in mode with SERVER_ENV (a script that measures another server replaces this)
  # shellcheck disable=SC2086
  start_sample "$(checkout_of "$1")" "$1" "$(server_log "$1" "$2")" $SERVER_ENV
  PID[$1]=$SAMPLE_PID
}

start_servers() { # round: every mode's server, all started before any is waited for (one idles while another is measured)
  local mode
  for mode in "${MODES[@]}"; do start_server "$mode" "$1"; done
  for mode in "${MODES[@]}"; do
    PORT[$mode]=$(listening_port "$(server_log "$mode" "$1")" "${PID[$mode]}") || exit 1
    stats "$mode" >/dev/null   # JIT the /stats path now, so later /stats calls cost the same every time
  done
}

large_pages_env() { # megabytes servers -> environment assignments that put each server's GC heap on 2 MB pages, a
  # heap of at most megabytes each (the runtime needs a limit for large pages, and takes twice that in pages at start);
  # nothing for 0 megabytes (--large-pages not given); fails, saying how to reserve them, when the kernel has too few free
  local mb=$1 servers=$2 free need
  [[ "$mb" == 0 ]] && return 0
  [[ "$mb" =~ ^[0-9]+$ && "$mb" -ge 64 ]] || { echo "--large-pages takes megabytes per server, 64 or more" >&2; return 1; }
  free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
  need=$(( mb * servers ))
  (( ${free:-0} >= need )) || {
    echo "--large-pages $mb needs $need free 2 MB pages for $servers servers, the kernel has ${free:-0}:" >&2
    echo "  echo $need | sudo tee /proc/sys/vm/nr_hugepages" >&2
    return 1
  }
  printf 'DOTNET_GCLargePages=1 DOTNET_GCHeapHardLimit=0x%x\n' $(( mb * 1024 * 1024 ))
}

# --- A server's figures around a measured run.

stats_json() { # mode -> its /stats
  curl -fsS "${STATS_CURL[@]}" --max-time 10 "$SCHEME://127.0.0.1:${PORT[$1]}/stats"
}

stats_figures() { # /stats -> "allocated requests gen0 jit_us"; jit_us is 0 from a sample older than jitMicroseconds (--against)
  local jit
  jit=$(sed -nE 's/.*"jitMicroseconds":([0-9]+).*/\1/p' <<<"$1")
  sed -nE "s/.*\"allocatedBytes\":([0-9]+).*\"requests\":([0-9]+).*\"gen0\":([0-9]+).*/\\1 \\2 \\3 ${jit:-0}/p" <<<"$1" | grep .
}

stats() { # mode -> "allocated requests gen0 jit_us [more figures]" (a script may add figures after these four)
  local json
  json=$(stats_json "$1") || return 1
  stats_figures "$json"
}

cpu_ticks() { # pid -> "utime+stime utime" in clock ticks: the modes make the same system calls a request, and the
  # kernel's part, two thirds of a request here, swings most from run to run; their own work differs in user mode
  awk '{ print $14 + $15, $14 }' "/proc/$1/stat"
}

med() { # "n n n ..." -> their median (the lower middle one of an even count)
  tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# A mode's totals over a round's measured runs (slices), in the caller's associative arrays: C U CPU ticks (all, user),
# R requests and A bytes allocated by the server (from /stats), G gen0 collections, J JIT microseconds, X the sums of
# the figures a script's stats adds; N the client's requests, E its errors, P50 P90 P99 its latency percentiles per
# slice, MAX the highest latency.
measure_reset() { # mode
  C[$1]=0; U[$1]=0; R[$1]=0; A[$1]=0; G[$1]=0; J[$1]=0; X[$1]=""; N[$1]=0; E[$1]=0
  P50[$1]=""; P90[$1]=""; P99[$1]=""; MAX[$1]=0
}

measure_start() { # mode: before a measured run, the server's /stats and CPU ticks; /stats is read twice, back to back,
  # for what one /stats request allocates
  local s0 s1 a0
  s0=$(stats "$1"); s1=$(stats "$1")
  read -r a0 _ <<<"$s0"
  read -r M_A1 M_R1 M_G1 M_J1 M_X1 <<<"$s1"
  M_STATS_COST=$((M_A1 - a0))
  read -r M_C1 M_U1 <<<"$(cpu_ticks "${PID[$1]}")"
}

measure_end() { # mode: after the run, adds what the server spent on it to the mode's totals
  local s2 a2 r2 g2 j2 x2 c2 u2
  read -r c2 u2 <<<"$(cpu_ticks "${PID[$1]}")"
  s2=$(stats "$1")
  read -r a2 r2 g2 j2 x2 <<<"$s2"
  R[$1]=$(( R[$1] + r2 - M_R1 - 1 ))   # the second /stats request itself is counted in r2
  A[$1]=$(( A[$1] + a2 - M_A1 - M_STATS_COST ))
  G[$1]=$(( G[$1] + g2 - M_G1 ))
  J[$1]=$(( J[$1] + j2 - M_J1 ))
  C[$1]=$(( C[$1] + c2 - M_C1 ))
  U[$1]=$(( U[$1] + u2 - M_U1 ))
  if [[ -n $x2 ]]; then
    X[$1]=$(awk -v s="${X[$1]}" -v a="$M_X1" -v b="$x2" \
      'BEGIN { n = split(b, after); split(a, before); split(s, sum); for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), sum[i] + after[i] - before[i]; print "" }')
  fi
}

# --- The rounds.

round_order() { # round mode... -> ORDER: the modes turned by one per round and, with three or more, backwards every
  # other round (A B C, A C B, C A B, C B A, B C A, B A C: every order of three once in six rounds): the mode measured
  # first in a round is measured at a different moment than the last, and a mode measured right after another may pay
  # for what that one left running, so neither a fixed order nor a mere rotation (which keeps every mode after the same
  # one) would do. Two modes simply alternate (turning and reversing them would give the same order every round).
  local round=$1 turn i reversed=()
  shift
  turn=$(( (round - 1) % $# ))
  ORDER=("${@:turn+1}" "${@:1:turn}")
  if (( $# > 2 && round % 2 == 0 )); then
    for (( i = ${#ORDER[@]} - 1; i >= 0; i-- )); do reversed+=("${ORDER[i]}"); done
    ORDER=("${reversed[@]}")
  fi
}

tier_up() { # mode round profile...: each profile in TIER_UP one-second runs of 32 connections (load ... tierup), a pause
  # after each, so that what a connection runs once is compiled before a measurement (the scripts' --tier-up)
  local mode=$1 round=$2 profile run
  shift 2
  for profile in "$@"; do
    for run in $(seq "$TIER_UP"); do
      load "$mode" "$profile" 1 "$OUT/logs/$LOAD-tierup-$mode-r$round-$profile-$run.txt" tierup
      sleep 0.3
    done
  done
}

measure_profile() { # round profile: every mode in ORDER warmed up, then measured in SLICES turns of DURATION / SLICES
  # seconds each (A B C A B C ...: the machine's speed drifts, and slices put the modes under the same conditions); a
  # mode's round is the sum of its slices, one runs.csv row (ROW_EXTRA after RUN_COLUMNS) and one line of progress
  local round=$1 profile=$2 mode slice out result requests errors p50 p90 p99 max rps
  local -A C=() U=() R=() A=() G=() J=() X=() N=() E=() P50=() P90=() P99=() MAX=()
  for mode in "${ORDER[@]}"; do
    load "$mode" "$profile" "$WARMUP" "$OUT/logs/$LOAD-warmup-$profile-$mode-r$round.txt" warmup
    measure_reset "$mode"
  done
  for slice in $(seq "$SLICES"); do
    for mode in "${ORDER[@]}"; do
      out="$OUT/logs/$LOAD-$profile-$mode-r$round-s$slice.txt"
      measure_start "$mode"
      load "$mode" "$profile" $(( DURATION / SLICES )) "$out" measured
      measure_end "$mode"
      result=$(load_result "$out") || exit 1
      read -r requests errors p50 p90 p99 max _ <<<"$result"
      N[$mode]=$(( N[$mode] + requests ))
      E[$mode]=$(( E[$mode] + errors ))
      P50[$mode]+="$p50 "; P90[$mode]+="$p90 "; P99[$mode]+="$p99 "
      MAX[$mode]=$(( MAX[$mode] > max ? MAX[$mode] : max ))
    done
  done
  for mode in "${ORDER[@]}"; do
    # Latency percentiles of a sliced round: the median of its slices' percentiles.
    rps=$(awk -v n="${N[$mode]}" -v d="$DURATION" 'BEGIN { printf "%.2f", n / d }')
    echo "$round,$profile,$mode,$CONNECTIONS,$PIPELINE,$DURATION,${N[$mode]},$rps,$(med "${P50[$mode]}"),$(med "${P90[$mode]}"),$(med "${P99[$mode]}"),${MAX[$mode]},${R[$mode]},${A[$mode]},${G[$mode]},${C[$mode]},$CLK_TCK,${E[$mode]},${J[$mode]},${U[$mode]}${ROW_EXTRA:-}" >> "$RUNS_CSV"
    show_run "$round" "$profile" "$mode" "$rps" "$(med "${P99[$mode]}")" "${E[$mode]}"
  done
}

measure_rounds() { # ROUNDS rounds of MODES on PROFILES: each round fresh servers, every profile's tier-up in each, then
  # every profile measured in the round's order of the modes (measure_profile)
  local round mode profile
  for round in $(seq "$ROUNDS"); do
    start_servers "$round"
    # shellcheck disable=SC2086
    for mode in "${MODES[@]}"; do tier_up "$mode" "$round" $PROFILES; done
    round_order "$round" "${MODES[@]}"
    for profile in $PROFILES; do measure_profile "$round" "$profile"; done
    cleanup
  done
}

show_run() { # round profile mode rps p99_us errors: a line of progress, from the caller's C R A
  printf '   round %d %-16s %-18s %9.0f req/s  p99 %6.2f ms  %7.1f us CPU/req  %7d B/req  errors %d\n' "$1" "$2" "$3" "$4" \
    "$(awk -v u="$5" 'BEGIN { print u / 1000 }')" \
    "$(awk -v c="${C[$3]}" -v t="$CLK_TCK" -v r="${R[$3]}" 'BEGIN { print c * 1e6 / t / (r > 0 ? r : 1) }')" \
    "$(( A[$3] / (R[$3] > 0 ? R[$3] : 1) ))" "$6"
}

# --- wrk: the load of wrk/compare.sh, gateway/compare.sh and wrk/profile.sh (h2/compare.sh replaces load and
# load_result with h2load's).
LOAD=wrk   # the first word of the load's log names

profile_file() { # profile -> its traffic file: traffic/<profile>.http, or for <profile>-bare the file bare_profiles wrote
  if [[ "$1" == *-bare && -n "${BARE_DIR:-}" ]]; then echo "$BARE_DIR/$1.http"; else echo "$REPO/traffic/$1.http"; fi
}

bare_profiles() { # dir profile...: writes dir/<profile>-bare.http for each profile, its heads with only the request line
  # and the lines Kestrel acts on itself, which HeaderCache never takes (HeaderNameTable's KeptForKestrel; a test checks
  # that the two lists agree). Kestrel alone on the bare heads, against the whole ones, is what the other lines cost
  # it: the most that HeaderCache could save, were its own work free (compare.sh --bare).
  local dir=$1 profile
  shift
  mkdir -p "$dir"
  for profile in "$@"; do
    awk 'BEGIN { first = 1 }
      /^$/ { print; first = 1; next }
      first { print; first = 0; next }
      { name = tolower($0); sub(/:.*/, "", name) }
      name ~ /^(host|content-length|transfer-encoding|connection|keep-alive|expect|upgrade|te)$/ { print }' \
      "$REPO/traffic/$profile.http" >"$dir/$profile-bare.http"
  done
}

load() { # mode profile seconds out kind: wrk on the mode's server; kind tierup: 32 connections on 2 threads without a
  # pace, else one connection per thread (profile.lua's rotation is per thread), CONNECTIONS of them, PIPELINE, PACE;
  # under WRK_CPU when set, as the servers under SERVER_CPU
  local mode=$1 profile=$2 secs=$3 out=$4 threads=$CONNECTIONS connections=$CONNECTIONS pace=$PACE
  [[ $5 == tierup ]] && { threads=2; connections=32; pace=0; }
  ${WRK_CPU:-} timeout $((secs + 30)) wrk -t"$threads" -c"$connections" -d"${secs}s" --timeout 10s --latency \
    -s "$REPO/benchmarks/wrk/profile.lua" "http://127.0.0.1:${PORT[$mode]}" -- "$(profile_file "$profile")" "$PIPELINE" "$pace" \
    >"$out" 2>&1 || { echo "wrk failed ($profile/$mode):" >&2; cat "$out" >&2; exit 1; }
}

load_result() { # wrk's output -> "requests errors p50_us p90_us p99_us max_us rps", from profile.lua's WRK_RESULT line
  awk '/^WRK_RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      print f["requests"], f["connect_err"] + f["read_err"] + f["write_err"] + f["status_err"] + f["timeout_err"],
        f["p50_us"], f["p90_us"], f["p99_us"], f["max_us"], f["rps"]; found = 1 }
    END { exit !found }' "$1" || { echo "wrk failed: no WRK_RESULT in $1:" >&2; cat "$1" >&2; return 1; }
}
