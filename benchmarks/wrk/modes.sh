# The sample server the wrk scripts measure, built the same way, and its settings for each mode; sourced by compare.sh
# and profile.sh so that both measure the same servers. APP_ENV is the caller's (Sample__Echo=false unless --echo).
#   headercache         HeaderCache on
#   headercache-before  the same, from another checkout's build (compare.sh --against)
#   kestrel             HeaderCache not registered at all: stock Kestrel, the baseline
#   kestrel-noreuse     the same with Kestrel's string reuse off
mode_env() { # mode -> environment assignments
  case "$1" in
    headercache|headercache-before) echo "Sample__KestrelOnly=false HeaderCache__Enabled=true Kestrel__DisableStringReuse=false $APP_ENV" ;;
    kestrel) echo "Sample__KestrelOnly=true Kestrel__DisableStringReuse=false $APP_ENV" ;;
    kestrel-noreuse) echo "Sample__KestrelOnly=true Kestrel__DisableStringReuse=true $APP_ENV" ;;
  esac
}

sample_dll() { # checkout -> the sample server built from it
  echo "$1/artifacts/wrk/bin/HeaderCache.Sample/release/HeaderCache.Sample.dll"
}

build_sample() { # checkout: Release, into its artifacts/wrk (isolated from other builds)
  dotnet build "$1/samples/HeaderCache.Sample" -c Release --artifacts-path "$1/artifacts/wrk" -nologo -v q \
    | grep -E "error|Warn|Elapsed" || true
}

# The servers a script started, by mode, and their ports. cleanup stops them: at the end of every round, and on exit
# (on_exit).
declare -A PID PORT
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

cpu_ticks() { # pid -> "utime+stime utime" in clock ticks: the modes make the same system calls a request, and the
  # kernel's part, two thirds of a request here, swings most from run to run; their own work differs in user mode
  awk '{ print $14 + $15, $14 }' "/proc/$1/stat"
}

med() { # "n n n ..." -> their median (the lower middle one of an even count)
  tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# A mode's totals over a round's measured runs (slices), in the caller's associative arrays: C U CPU ticks (all, user),
# R requests and A bytes allocated by the server (from /stats), G gen0 collections, J JIT microseconds; N the client's
# requests, E its errors, P50 P90 P99 its latency percentiles per slice, MAX the highest latency.
measure_reset() { # mode
  C[$1]=0; U[$1]=0; R[$1]=0; A[$1]=0; G[$1]=0; J[$1]=0; N[$1]=0; E[$1]=0
  P50[$1]=""; P90[$1]=""; P99[$1]=""; MAX[$1]=0
}

measure_start() { # mode: before a measured run, the server's /stats (the caller's stats: "allocated requests gen0
  # jit_us ...") and CPU ticks; /stats is read twice, back to back, for what one /stats request allocates
  local s0 s1 a0
  s0=$(stats "$1"); s1=$(stats "$1")
  read -r a0 _ <<<"$s0"
  read -r M_A1 M_R1 M_G1 M_J1 _ <<<"$s1"
  M_STATS_COST=$((M_A1 - a0))
  read -r M_C1 M_U1 <<<"$(cpu_ticks "${PID[$1]}")"
}

measure_end() { # mode: after the run, adds what the server spent on it to the mode's totals
  local s2 a2 r2 g2 j2 c2 u2
  read -r c2 u2 <<<"$(cpu_ticks "${PID[$1]}")"
  s2=$(stats "$1")
  read -r a2 r2 g2 j2 _ <<<"$s2"
  R[$1]=$(( R[$1] + r2 - M_R1 - 1 ))   # the second /stats request itself is counted in r2
  A[$1]=$(( A[$1] + a2 - M_A1 - M_STATS_COST ))
  G[$1]=$(( G[$1] + g2 - M_G1 ))
  J[$1]=$(( J[$1] + j2 - M_J1 ))
  C[$1]=$(( C[$1] + c2 - M_C1 ))
  U[$1]=$(( U[$1] + u2 - M_U1 ))
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

tier_up() { # port logprefix runs pipeline profile...: each profile in runs one-second wrk runs of 32 connections, a
  # pause after each, so that what a connection runs once is compiled before a measurement (compare.sh's --tier-up);
  # under WRK_CPU when set, as the measured runs
  local port=$1 prefix=$2 runs=$3 pipeline=$4 profile run log
  shift 4
  for profile in "$@"; do
    for run in $(seq "$runs"); do
      log="$prefix-$profile-$run.txt"
      ${WRK_CPU:-} timeout 30 wrk -t2 -c32 -d1s --timeout 10s -s "$HERE/profile.lua" "http://127.0.0.1:$port" \
        -- "$(profile_file "$profile")" "$pipeline" 0 >"$log" 2>&1 || { echo "wrk failed (tier-up $profile):" >&2; cat "$log" >&2; return 1; }
      sleep 0.3
    done
  done
}
