#!/usr/bin/env bash
# Side-by-side h2load comparison of the sample server over HTTP/2, the twin of benchmarks/wrk/compare.sh (HTTP/1.1):
#   headercache   HeaderCache on (the sample's default)
#   kestrel       Sample__KestrelOnly=true: HeaderCache not registered at all (stock Kestrel, the baseline)
# The same server binary in both modes (built and started by benchmarks/wrk/modes.sh, so both tools measure the same
# servers), answering every request with "Hello, World!" (Sample__Echo=false): the figures are the server's own cost.
#
# Transport: h2c with prior knowledge by default. Kestrel's default Http1AndHttp2 does not take the h2c preface on a
# cleartext endpoint (it warns that HTTP/2 needs TLS and answers HTTP/1.1 only), so the servers run with
# Kestrel__EndpointDefaults__Protocols=Http2, the endpoint gRPC services inside a cluster use; /stats is then read over
# h2c too. With --tls the servers listen on https (Kestrel__Endpoints__Tls__*, a self-signed certificate made with
# openssl in the run's folder, Http1AndHttp2 as the sample leaves it) and h2load negotiates h2 with ALPN as browsers do.
#
# Traffic: for every profile traffic/P.http, the header lines of its first request (minus Host, which becomes
# :authority, and the connection-specific lines HTTP/2 forbids: Connection, Keep-Alive, Proxy-Connection,
# Transfer-Encoding, Upgrade, TE) are passed to h2load with -H, names in lower case, the cookie split into crumbs of one
# -H each as Chrome sends it; the paths of all its requests are h2load's URIs, taken in turn. h2load's HPACK encoder
# (nghttp2) indexes every field it may (not :path; cookie crumbs under 20 bytes it never indexes, so the cookie has
# none), so from the second request on a connection sends indexed fields: Chrome's policy. h2load sends one header
# set for every request, so placeholders are filled once (${cookie} with one fixed cookie of four crumbs): churn
# repeats its headers here, and proxy-pool's ids do not change. The h2load arguments of each profile are written into
# the run's folder (traffic/P.args).
#
# Every round starts a fresh server per mode (both start together; one is idle while the other is measured), replays
# every profile into each in --tier-up N one-second h2load runs of 32 connections (so that what a connection runs once
# is compiled before the measurement, as in compare.sh), then for every profile runs the modes one after the other, each
# a warm-up h2load run and a measured one. With two modes the order alternates per round (odd rounds HeaderCache first):
# compare.sh's rotation plus reversal would give two modes the same order every round. With --slices N the measured time
# is cut into N h2load runs that the modes take in turn. Around each measured run the script reads /stats (allocated
# bytes, requests, gen0 collections, JIT time: the /stats request's own allocation is measured by two back-to-back calls
# and subtracted) and /proc for the server's CPU time.
#
# With --bare every profile P is followed by P-bare: P's paths with no header from the profile, only the pseudo
# headers and h2load's own user-agent (it sends one always, and refuses an empty one). Kestrel alone on P-bare against
# P is what the headers cost: the summary's HEADER_BYTES line gives the share of those bytes HeaderCache removed (issue
# 48's "header-driven bytes per request removed"), its CEILING line the same for CPU.
#
# Results: runs.csv (compare.sh's columns, then streams and transport), summary.csv / summary.md / summary.txt
# (benchmarks/wrk/summarize.py's columns) in benchmarks/h2/results/<run>/ (results/latest points to the last run); the
# last lines of the output are one RESULT line per profile, as compare.sh's.
#
# Usage: benchmarks/h2/compare.sh [--rounds N] [--duration S] [--warmup S] [--connections N] [--streams N]
#                                 [--profiles "chrome proxy-pool ..."] [--slices N] [--tls] [--bare] [--tier-up N]
#                                 [--gc workstation|server] [--no-spin] [--no-build] [--results DIR]
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/benchmarks/h2"

ROUNDS=4            # even, so that each mode is measured first in half the rounds
DURATION=10
WARMUP=10
CONNECTIONS=4
STREAMS=1
PROFILES="chrome firefox safari proxy-pool plaintext"
SLICES=1
TLS=0
BARE=0
TIER_UP=3
GC=workstation
SPIN_ENV=""
BUILD=1
RESULTS_ROOT="$HERE/results"
APP_ENV="Sample__Echo=false"   # read by modes.sh's mode_env

usage() { sed -n '2,44p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --duration) DURATION="${2%s}"; shift ;;
    --warmup) WARMUP="${2%s}"; shift ;;
    --connections) CONNECTIONS="$2"; shift ;;
    --streams) STREAMS="$2"; shift ;;
    --profiles) PROFILES="${2//,/ }"; shift ;;
    --slices) SLICES="$2"; shift ;;
    --tls) TLS=1 ;;
    --bare) BARE=1 ;;
    --tier-up) TIER_UP="$2"; shift ;;
    --gc) GC="$2"; shift ;;
    --no-spin) SPIN_ENV="DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0" ;;
    --no-build) BUILD=0 ;;
    --results) RESULTS_ROOT="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

for v in ROUNDS DURATION WARMUP CONNECTIONS STREAMS SLICES; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || { echo "--${v,,} must be a whole number >= 1" >&2; exit 2; }
done
[[ "$TIER_UP" =~ ^[0-9]+$ ]] || { echo "--tier-up must be a whole number of runs >= 0" >&2; exit 2; }
(( DURATION % SLICES == 0 )) || { echo "--duration must be a multiple of --slices" >&2; exit 2; }
case "$GC" in workstation) GC_SERVER=0 ;; server) GC_SERVER=1 ;; *) echo "--gc workstation|server" >&2; exit 2 ;; esac
for p in $PROFILES; do [[ -f "$REPO/traffic/$p.http" ]] || { echo "no profile traffic/$p.http" >&2; exit 2; }; done

command -v h2load >/dev/null || (apt-get update && apt-get install -y nghttp2-client)
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is needed to read /stats" >&2; exit 1; }
[[ $TLS == 0 ]] || command -v openssl >/dev/null || { echo "openssl is needed for --tls's certificate" >&2; exit 1; }

START_TIME=$(date +%s)
# shellcheck source=benchmarks/wrk/modes.sh
source "$REPO/benchmarks/wrk/modes.sh"
MODES=(headercache kestrel)
if [[ $BUILD == 1 ]]; then
  echo "== build (Release, $REPO/artifacts/wrk, shared with benchmarks/wrk)"
  build_sample "$REPO"
fi
[[ -f "$(sample_dll "$REPO")" ]] || { echo "build output $(sample_dll "$REPO") missing" >&2; exit 1; }

TRANSPORT=$([[ $TLS == 1 ]] && echo h2-tls || echo h2c)
RUN_NAME="$(date +%Y%m%d-%H%M%S)-$TRANSPORT-m$STREAMS"
OUT="$RESULTS_ROOT/$RUN_NAME"
mkdir -p "$OUT/logs" "$OUT/traffic"
ln -sfn "$RUN_NAME" "$RESULTS_ROOT/latest"

# How each server listens, and how a client reaches it: SCHEME for h2load's URIs, CURL_H2 for /stats.
if [[ $TLS == 1 ]]; then
  # A throwaway certificate per run: Kestrel reads PEM files from configuration, so the sample needs no code for TLS.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$OUT/tls-key.pem" -out "$OUT/tls-cert.pem" 2>/dev/null
  # Endpoints from configuration replace the --urls that start_sample passes (Kestrel logs that it overrides them).
  LISTEN_ENV="Kestrel__Endpoints__Tls__Url=https://127.0.0.1:0 Kestrel__Endpoints__Tls__Certificate__Path=$OUT/tls-cert.pem Kestrel__Endpoints__Tls__Certificate__KeyPath=$OUT/tls-key.pem"
  SCHEME=https
  CURL_H2=(--http2 --insecure)
else
  LISTEN_ENV="Kestrel__EndpointDefaults__Protocols=Http2"
  SCHEME=http
  CURL_H2=(--http2-prior-knowledge)
fi

# A fixed session cookie of four crumbs (137 bytes, within the profiles' 60-180), each of 20 bytes or more: nghttp2
# sends a shorter crumb as a never-indexed literal (RFC 7541 6.2.3), which Chrome's encoder does not, and which issue
# 48's design leaves to Kestrel.
COOKIE="session=Zk3q8VtW0pN2xY7rB4mC9sD1fG6hJ5kL; _ga=GA1.1.1234567890.1732700000; consent=analytics:1,marketing:0,v:2; prefs=theme:light,lang:en"

write_args() { # profile -> traffic/<profile>.args: one h2load argument a line, -H lines then the paths
  local profile=$1 file
  file="$REPO/traffic/${profile%-bare}.http"
  awk -v bare="$([[ $profile == *-bare ]] && echo 1 || echo 0)" -v cookie="$COOKIE" '
    function fill(s) {
      gsub(/\$\{cookie\}/, cookie, s); gsub(/\$\{uuid\}/, "3f2a8c1e-7b4d-4e6a-9c2f-1d8e5b7a4c30", s)
      gsub(/\$\{hex32\}/, "4bf92f3577b34da6a3ce929d0e0e4736", s); gsub(/\$\{hex16\}/, "00f067aa0ba902b7", s)
      gsub(/\$\{ip\}/, "203.0.113.7", s); gsub(/\$\{n\}/, "0", s)
      return s
    }
    BEGIN { first = 1; head = 0 }
    /^$/ { first = 1; next }
    first { split($0, w, " "); paths[++np] = fill(w[2]); first = 0; head++; next }
    head == 1 && !bare {
      name = tolower($0); sub(/:.*/, "", name)
      value = $0; sub(/^[^:]*:[ \t]*/, "", value); value = fill(value)
      if (name ~ /^(host|connection|keep-alive|proxy-connection|transfer-encoding|upgrade|te|content-length)$/) next
      if (name == "cookie") { n = split(value, crumbs, /; */); for (i = 1; i <= n; i++) print "-H\ncookie: " crumbs[i]; next }
      print "-H\n" name ": " value
    }
    END {
      for (i = 1; i <= np; i++) if (!(paths[i] in seen)) { seen[paths[i]] = 1; print "PATH " paths[i] }
    }' "$file" >"$OUT/traffic/$profile.args"
}

if [[ $BARE == 1 ]]; then
  PROFILES=$(for p in $PROFILES; do printf '%s %s-bare ' "$p" "$p"; done)
  PROFILES=${PROFILES% }
fi
for p in $PROFILES; do write_args "$p"; done

RUNS_CSV="$OUT/runs.csv"
echo "round,profile,mode,connections,pipeline,duration_s,wrk_requests,wrk_rps,p50_us,p90_us,p99_us,max_us,server_requests,allocated_bytes,gen0,cpu_ticks,clk_tck,errors,jit_us,user_ticks,streams,transport" > "$RUNS_CSV"

on_exit cleanup

start_server() { # mode round
  # shellcheck disable=SC2086
  start_sample "$REPO" "$1" "$OUT/logs/server-$1-r$2.log" $LISTEN_ENV $SPIN_ENV DOTNET_gcServer=$GC_SERVER
  PID[$1]=$SAMPLE_PID
}

wait_server() { # mode round
  PORT[$1]=$(listening_port "$OUT/logs/server-$1-r$2.log" "${PID[$1]}") || exit 1
  stats "$1" >/dev/null   # JIT the /stats path now, so later /stats calls cost the same every time
}

stats() { # mode -> "allocated requests gen0 jit_us", read over HTTP/2 like the measured traffic
  local json
  json=$(curl -fsS "${CURL_H2[@]}" --max-time 10 "$SCHEME://127.0.0.1:${PORT[$1]}/stats") || return 1
  sed -nE 's/.*"allocatedBytes":([0-9]+).*"requests":([0-9]+).*"gen0":([0-9]+).*"jitMicroseconds":([0-9]+).*/\1 \2 \3 \4/p' <<<"$json" | grep .
}

h2load_args() { # profile port -> h2load's arguments for the profile: its -H lines, then its paths as URIs
  local line
  while IFS= read -r line; do
    if [[ $line == "PATH "* ]]; then echo "$SCHEME://127.0.0.1:$2${line#PATH }"; else echo "$line"; fi
  done <"$OUT/traffic/$1.args"
}

run_h2load() { # port profile seconds clients outfile [logfile]: h2load -D seconds, one thread (2 cores, shared with the server)
  local port=$1 profile=$2 secs=$3 clients=$4 out=$5 log=${6:-} args
  mapfile -t args < <(h2load_args "$profile" "$port")
  timeout $((secs + 30)) h2load -t1 -c"$clients" -m"$STREAMS" -D"$secs" ${log:+--log-file="$log"} "${args[@]}" >"$out" 2>&1 \
    || { echo "h2load failed ($profile):" >&2; cat "$out" >&2; exit 1; }
  grep -qE '^requests: .* [1-9][0-9]* succeeded' "$out" || { echo "h2load got no response ($profile):" >&2; cat "$out" >&2; exit 1; }
}

tier_up() { # mode round: every profile in TIER_UP one-second runs of 32 connections, a pause after each (compare.sh's)
  local profile run
  for profile in $PROFILES; do
    for run in $(seq "$TIER_UP"); do
      run_h2load "${PORT[$1]}" "$profile" 1 32 "$OUT/logs/h2load-tierup-$1-r$2-$profile-$run.txt"
      sleep 0.3
    done
  done
}

h2_field() { # h2load output, regex with one group -> the number (0 when absent)
  local v
  v=$(sed -nE "s/$2/\\1/p" "$1" | head -1)
  echo "${v:-0}"
}

percentiles() { # h2load log file -> "p50 p90 p99 max" of the requests' durations in microseconds (third column)
  cut -f3 "$1" | sort -n | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "0 0 0 0"; exit }
    printf "%d %d %d %d\n", v[int((NR - 1) * 0.5) + 1], v[int((NR - 1) * 0.9) + 1], v[int((NR - 1) * 0.99) + 1], v[NR] }'
}

SLICE_SECONDS=$(( DURATION / SLICES ))
CLK_TCK=$(getconf CLK_TCK)
echo "== $ROUNDS round(s) x profiles [$PROFILES] x modes [${MODES[*]}]"
echo "   h2load -t1 -c$CONNECTIONS -m$STREAMS over $TRANSPORT, warm-up ${WARMUP}s, measured ${DURATION}s in $SLICES slice(s) per mode"
echo "   tier-up: every profile in $TIER_UP run(s) of 1 s with 32 connections per fresh server"
echo "   server: dotnet, DOTNET_gcServer=$GC_SERVER ($GC GC), one fresh process per mode per round; results: $OUT"

for round in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do start_server "$mode" "$round"; done
  for mode in "${MODES[@]}"; do wait_server "$mode" "$round"; done
  for mode in "${MODES[@]}"; do tier_up "$mode" "$round"; done
  ORDER=("${MODES[@]}")
  (( round % 2 == 0 )) && ORDER=("${MODES[1]}" "${MODES[0]}")
  for profile in $PROFILES; do
    declare -A C=() U=() R=() A=() G=() N=() E=() J=() P50=() P90=() P99=() MAX=()
    for mode in "${ORDER[@]}"; do
      run_h2load "${PORT[$mode]}" "$profile" "$WARMUP" "$CONNECTIONS" "$OUT/logs/h2load-warmup-$profile-$mode-r$round.txt"
      measure_reset "$mode"
    done
    for slice in $(seq "$SLICES"); do
      for mode in "${ORDER[@]}"; do
        measure_start "$mode"
        out="$OUT/logs/h2load-$profile-$mode-r$round-s$slice.txt"
        run_h2load "${PORT[$mode]}" "$profile" "$SLICE_SECONDS" "$CONNECTIONS" "$out" "$out.log"
        measure_end "$mode"
        # Errors: requests h2load counted failed or timed out, and answers other than 2xx/3xx.
        E[$mode]=$(( E[$mode] + $(h2_field "$out" '^requests: .* ([0-9]+) failed.*') + $(h2_field "$out" '^requests: .* ([0-9]+) timeout.*') \
          + $(h2_field "$out" '^status codes: .* ([0-9]+) 4xx.*') + $(h2_field "$out" '^status codes: .* ([0-9]+) 5xx.*') ))
        N[$mode]=$(( N[$mode] + $(h2_field "$out" '^requests: .* ([0-9]+) succeeded.*') ))
        read -r p50 p90 p99 max <<<"$(percentiles "$out.log")"
        rm -f "$out.log"   # a line per request: the percentiles are all that is kept
        P50[$mode]+="$p50 "; P90[$mode]+="$p90 "; P99[$mode]+="$p99 "
        MAX[$mode]=$(( MAX[$mode] > max ? MAX[$mode] : max ))
      done
    done
    for mode in "${ORDER[@]}"; do
      rps=$(awk -v n="${N[$mode]}" -v d="$DURATION" 'BEGIN { printf "%.2f", n / d }')
      echo "$round,$profile,$mode,$CONNECTIONS,1,$DURATION,${N[$mode]},$rps,$(med "${P50[$mode]}"),$(med "${P90[$mode]}"),$(med "${P99[$mode]}"),${MAX[$mode]},${R[$mode]},${A[$mode]},${G[$mode]},${C[$mode]},$CLK_TCK,${E[$mode]},${J[$mode]},${U[$mode]},$STREAMS,$TRANSPORT" >> "$RUNS_CSV"
      printf '   round %d %-16s %-11s %9.0f req/s  %7.1f us CPU/req  %7d B/req  errors %d\n' "$round" "$profile" "$mode" \
        "$rps" "$(awk -v c="${C[$mode]}" -v t="$CLK_TCK" -v r="${R[$mode]}" 'BEGIN { print c * 1e6 / t / (r > 0 ? r : 1) }')" \
        "$(( A[$mode] / (R[$mode] > 0 ? R[$mode] : 1) ))" "${E[$mode]}"
    done
  done
  cleanup
done

echo "== finished in $(( $(date +%s) - START_TIME ))s$([[ $BUILD == 1 ]] && echo ", build included"); results in $OUT"
python3 "$HERE/summarize.py" "$RUNS_CSV" --out "$OUT"
