#!/usr/bin/env bash
# Server bytes per request under real .NET clients over h2c (prior knowledge), one connection, sequential requests:
#   headercache   HeaderCache on (the sample's default)
#   kestrel       Sample__KestrelOnly=true: HeaderCache not registered at all (stock Kestrel, the baseline)
# The same sample server as benchmarks/h2 and benchmarks/wrk (built and started by benchmarks/wrk/modes.sh), with
# Kestrel__EndpointDefaults__Protocols=Http2 so that the cleartext endpoint takes the h2c preface, answering
# "Hello, World!" (Sample__Echo=false) and POSTs to /bench.Echo/* as a unary gRPC service (SampleGrpc.cs).
#
# Unlike h2load (nghttp2 indexes every field it may, Chrome's policy), .NET's HttpClient sends every header as an HPACK
# literal WITHOUT indexing, and so does grpc-dotnet, which sends through it: the client profiles (HeaderCache.Clients):
#   httpclient-chrome        HttpClient (SocketsHttpHandler) sending traffic/chrome.http's requests in turn (method,
#                            path, header lines minus Host and the connection-specific ones; the cookie one header)
#   httpclient-chrome-bare   the same methods and paths with no header: pseudo headers only (HttpClient adds none)
#   grpc                     grpc-dotnet unary calls of bench.Echo/Call on one channel, a 32-byte message, metadata
#                            authorization (a fixed bearer token), x-request-id (new each call), x-tenant, a 30 s
#                            deadline (grpc-timeout); grpc-dotnet adds user-agent, content-type, grpc-accept-encoding, te
#   grpc-static              the same with one fixed x-request-id, so that every field repeats (a fresh value is a
#                            string Kestrel and HeaderCache alike must make; its HEADER_BYTES line takes grpc-bare)
#   grpc-bare                HttpClient POSTing the same bytes to the same path, pseudo headers only
#   grpc-kept                the same plus te: trailers, the one field of the call HeaderCache never takes
# Each profile P with a P-bare row gets a HEADER_BYTES line: Kestrel alone on P minus Kestrel alone on P-bare is what
# P's headers cost; removed = (kestrel - headercache) / that (issue 48's "header-driven bytes per request removed").
#
# Every round starts a fresh server per mode (both start together; one is idle while the other is measured), then for
# every profile runs one client process per mode, the order of the modes alternating by round (odd rounds HeaderCache
# first). A client opens one connection, sends --warmup requests (in two halves, a pause after each, so that the JIT has
# tiered up), then the script reads /stats twice (what one /stats read allocates, as modes.sh's measure_start does),
# the client sends --requests requests, the script reads /stats again, and the client reads /headercache on its own
# connection (HeaderCache's hits and misses there: that it was engaged).
#
# Results in benchmarks/clients/results/<run>/ (results/latest points to the last): runs.csv, summary.txt, logs/.
#
# Usage: benchmarks/clients/compare.sh [--rounds N] [--requests N] [--warmup N] [--profiles "grpc grpc-bare ..."]
#                                      [--no-build] [--results DIR]
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/benchmarks/clients"

ROUNDS=3
REQUESTS=20000
WARMUP=4000
PROFILES="httpclient-chrome httpclient-chrome-bare grpc grpc-static grpc-bare grpc-kept"
BUILD=1
RESULTS_ROOT="$HERE/results"
APP_ENV="Sample__Echo=false"   # read by modes.sh's mode_env

usage() { sed -n '2,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --requests) REQUESTS="$2"; shift ;;
    --warmup) WARMUP="$2"; shift ;;
    --profiles) PROFILES="${2//,/ }"; shift ;;
    --no-build) BUILD=0 ;;
    --results) RESULTS_ROOT="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for v in ROUNDS REQUESTS WARMUP; do
  [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -ge 1 ]] || { echo "--${v,,} must be a whole number >= 1" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "curl is needed to read /stats" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 1; }

START_TIME=$(date +%s)
# shellcheck source=benchmarks/wrk/modes.sh
source "$REPO/benchmarks/wrk/modes.sh"
MODES=(headercache kestrel)
CLIENT_DLL="$REPO/artifacts/clients/bin/HeaderCache.Clients/release/HeaderCache.Clients.dll"
if [[ $BUILD == 1 ]]; then
  echo "== build (Release: the sample into $REPO/artifacts/wrk, shared with benchmarks/wrk and h2; the clients into artifacts/clients)"
  build_sample "$REPO"
  dotnet build "$HERE" -c Release --artifacts-path "$REPO/artifacts/clients" -nologo -v q | grep -E "error|Warn|Elapsed" || true
fi
[[ -f "$(sample_dll "$REPO")" ]] || { echo "build output $(sample_dll "$REPO") missing" >&2; exit 1; }
[[ -f "$CLIENT_DLL" ]] || { echo "build output $CLIENT_DLL missing" >&2; exit 1; }

RUN_NAME="$(date +%Y%m%d-%H%M%S)-h2c-clients"
OUT="$RESULTS_ROOT/$RUN_NAME"
mkdir -p "$OUT/logs"
ln -sfn "$RUN_NAME" "$RESULTS_ROOT/latest"
LISTEN_ENV="Kestrel__EndpointDefaults__Protocols=Http2"

on_exit cleanup

start_server() { # mode round
  # shellcheck disable=SC2086
  start_sample "$REPO" "$1" "$OUT/logs/server-$1-r$2.log" $LISTEN_ENV
  PID[$1]=$SAMPLE_PID
}

wait_server() { # mode round
  PORT[$1]=$(listening_port "$OUT/logs/server-$1-r$2.log" "${PID[$1]}") || exit 1
  stats "$1" >/dev/null   # JIT the /stats path now, so later /stats calls cost the same every time
}

stats() { # mode -> "allocated requests gen0 jit_us", read over h2c like the measured traffic (benchmarks/h2's)
  local json
  json=$(curl -fsS --http2-prior-knowledge --max-time 10 "http://127.0.0.1:${PORT[$1]}/stats") || return 1
  sed -nE 's/.*"allocatedBytes":([0-9]+).*"requests":([0-9]+).*"gen0":([0-9]+).*"jitMicroseconds":([0-9]+).*/\1 \2 \3 \4/p' <<<"$json" | grep .
}

expect() { # fd word log -> the client's next line, which must start with word (else the log, and exit)
  local line=""
  if ! IFS= read -r -t 600 -u "$1" line || [[ $line != "$2"* ]]; then
    echo "client: expected '$2', got '$line'; log $3:" >&2; cat "$3" >&2; exit 1
  fi
  echo "$line"
}

run_client() { # mode profile round -> appends the run to runs.csv; the client talks to the script through two FIFOs
  local mode=$1 profile=$2 round=$3 dir log to from pid warm finished state
  dir=$(mktemp -d "$OUT/logs/fifo.XXXX")
  log="$OUT/logs/client-$profile-$mode-r$round.log"
  mkfifo "$dir/in" "$dir/out"
  dotnet "$CLIENT_DLL" run "$profile" "http://127.0.0.1:${PORT[$mode]}" --requests "$REQUESTS" --warmup "$WARMUP" \
    <"$dir/in" >"$dir/out" 2>"$log" &
  pid=$!
  exec {to}>"$dir/in" {from}<"$dir/out"
  warm=$(expect "$from" warm "$log")
  measure_reset "$mode"
  measure_start "$mode"
  echo go >&"$to"
  finished=$(expect "$from" done "$log")
  measure_end "$mode"
  echo state >&"$to"
  state=$(expect "$from" headercache "$log")
  exec {to}>&- {from}<&-
  wait "$pid" || { echo "client failed ($profile, $mode): $finished; log $log:" >&2; cat "$log" >&2; exit 1; }
  rm -rf "$dir"
  read -r _ n errors ms <<<"$finished"
  echo "$warm / $finished / $state" >>"$log"
  # /headercache: {"present":..,"active":..,"reason":..,"hits":N,"misses":N}
  local active hits misses
  active=$(sed -nE 's/.*"active":(true|false).*/\1/p' <<<"$state")
  hits=$(sed -nE 's/.*"hits":([0-9]+).*/\1/p' <<<"$state")
  misses=$(sed -nE 's/.*"misses":([0-9]+).*/\1/p' <<<"$state")
  echo "$round,$profile,$mode,$n,${R[$mode]},${A[$mode]},$errors,$ms,${active:-?},${hits:-0},${misses:-0},${G[$mode]},${C[$mode]}" >>"$RUNS_CSV"
  printf '   round %d %-24s %-11s %6d req %8.1f ms/req(client)  %7d B/req  headercache active=%s hits=%s misses=%s\n' \
    "$round" "$profile" "$mode" "${R[$mode]}" "$(awk -v m="$ms" -v n="$n" 'BEGIN { print m / n }')" \
    "$(( A[$mode] / (R[$mode] > 0 ? R[$mode] : 1) ))" "${active:-?}" "${hits:-0}" "${misses:-0}"
  (( R[$mode] == n )) || echo "   warning: the server counted ${R[$mode]} requests, the client sent $n" >&2
}

RUNS_CSV="$OUT/runs.csv"
echo "round,profile,mode,client_requests,server_requests,allocated_bytes,errors,client_ms,hc_active,hc_hits,hc_misses,gen0,cpu_ticks" >"$RUNS_CSV"
echo "== $ROUNDS round(s) x profiles [$PROFILES] x modes [${MODES[*]}]"
echo "   one h2c connection per client run, sequential requests: $WARMUP warm-up + $REQUESTS measured; results: $OUT"

for round in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do start_server "$mode" "$round"; done
  for mode in "${MODES[@]}"; do wait_server "$mode" "$round"; done
  ORDER=("${MODES[@]}")
  (( round % 2 == 0 )) && ORDER=("${MODES[1]}" "${MODES[0]}")
  for profile in $PROFILES; do
    declare -A C=() U=() R=() A=() G=() N=() E=() J=() P50=() P90=() P99=() MAX=()
    for mode in "${ORDER[@]}"; do run_client "$mode" "$profile" "$round"; done
  done
  cleanup
done

echo "== finished in $(( $(date +%s) - START_TIME ))s$([[ $BUILD == 1 ]] && echo ", build included"); results in $OUT"
python3 "$HERE/summarize.py" "$RUNS_CSV" | tee "$OUT/summary.txt"
