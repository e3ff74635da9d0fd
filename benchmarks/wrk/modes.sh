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

tier_up() { # port logprefix runs pipeline profile...: each profile in runs one-second wrk runs of 32 connections, a
  # pause after each, so that what a connection runs once is compiled before a measurement (compare.sh's --tier-up)
  local port=$1 prefix=$2 runs=$3 pipeline=$4 profile run log
  shift 4
  for profile in "$@"; do
    for run in $(seq "$runs"); do
      log="$prefix-$profile-$run.txt"
      timeout 30 wrk -t2 -c32 -d1s --timeout 10s -s "$HERE/profile.lua" "http://127.0.0.1:$port" \
        -- "$REPO/traffic/$profile.http" "$pipeline" 0 >"$log" 2>&1 || { echo "wrk failed (tier-up $profile):" >&2; cat "$log" >&2; return 1; }
      sleep 0.3
    done
  done
}
