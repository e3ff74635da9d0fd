#!/usr/bin/env bash
# Server bytes per request under real .NET clients over h2c (prior knowledge), one connection, sequential requests:
#   headercache   HeaderCache on (the sample's default)
#   kestrel       Sample__KestrelOnly=true: HeaderCache not registered at all (stock Kestrel, the baseline)
# The same sample server as benchmarks/h2 and benchmarks/wrk (built and started by benchmarks/lib.sh), with
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
#   grpc-jwt                 grpc with traffic/api.http's 1.2 KB bearer JWT as the per-call token (its HEADER_BYTES
#                            line takes grpc-bare)
#   grpc-bare                HttpClient POSTing the same bytes to the same path, pseudo headers only
#   grpc-kept                the same plus te: trailers, the one field of the call HeaderCache never takes
# Each profile P with a P-bare row gets a HEADER_BYTES line: Kestrel alone on P minus Kestrel alone on P-bare is what
# P's headers cost; removed = (kestrel - headercache) / that (issue 48's "header-driven bytes per request removed").
#
# Every round starts a fresh server per mode (both start together; one is idle while the other is measured), then for
# every profile runs one client process per mode, the order of the modes alternating by round (odd rounds HeaderCache
# first). A client opens one connection, sends --warmup requests (in two halves, a pause after each, so that the JIT has
# tiered up), then the script reads /stats twice (what one /stats read allocates, as benchmarks/lib.sh's measure_start does),
# the client sends --requests requests, the script reads /stats again, and the client reads /headercache on its own
# connection (HeaderCache's hits and misses there: that it was engaged).
#
# Results in benchmarks/clients/results/<run>/ (results/latest points to the last): runs.csv, summary.txt, logs/.
#
# Usage: benchmarks/clients/compare.sh [--rounds N] [--requests N] [--warmup N] [--profiles "grpc grpc-bare ..."]
#                                      [--no-build] [--results DIR]
set -euo pipefail
# shellcheck source=benchmarks/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

ROUNDS=3
REQUESTS=20000
WARMUP=4000
PROFILES="httpclient-chrome httpclient-chrome-bare grpc grpc-static grpc-bare grpc-kept"
BUILD=1
RESULTS_ROOT="$REPO/benchmarks/clients/results"
OPTIONS="rounds warmup profiles no-build results"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --requests) REQUESTS="${2:?--requests needs a value}"; shift 2 ;;
    *) shared_option "$@"; shift "$SHIFT" ;;
  esac
done
whole 1 ROUNDS REQUESTS WARMUP
need curl
need python3

START_TIME=$(date +%s)
MODES=(headercache kestrel)
CLIENT_DLL="$REPO/artifacts/clients/bin/HeaderCache.Clients/release/HeaderCache.Clients.dll"
if [[ $BUILD == 1 ]]; then
  echo "== build (Release: the sample into $REPO/artifacts/wrk, shared with benchmarks/wrk and h2; the clients into artifacts/clients)"
  build_sample "$REPO"
  build "$REPO/benchmarks/clients" "$REPO/artifacts/clients"
fi
built "$(sample_dll "$REPO")" "$CLIENT_DLL"

new_run h2c-clients
SERVER_ENV="Kestrel__EndpointDefaults__Protocols=Http2"
STATS_CURL=(--http2-prior-knowledge)   # /stats over h2c like the measured traffic

on_exit cleanup

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
  start_servers "$round"
  round_order "$round" "${MODES[@]}"
  for profile in $PROFILES; do
    declare -A C=() U=() R=() A=() G=() J=() X=() N=() E=() P50=() P90=() P99=() MAX=()
    for mode in "${ORDER[@]}"; do run_client "$mode" "$profile" "$round"; done
  done
  cleanup
done

echo "== finished in $(( $(date +%s) - START_TIME ))s$([[ $BUILD == 1 ]] && echo ", build included"); results in $OUT"
summarize clients "$RUNS_CSV" | tee "$OUT/summary.txt"
