#!/usr/bin/env bash
# Side-by-side h2load comparison of the sample server over HTTP/2, the twin of benchmarks/wrk/compare.sh (HTTP/1.1):
#   headercache   HeaderCache on (the sample's default)
#   kestrel       Sample__KestrelOnly=true: HeaderCache not registered at all (stock Kestrel, the baseline)
# The same server binary in both modes (built and started by benchmarks/lib.sh, so both tools measure the same
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
# shellcheck source=benchmarks/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

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
RESULTS_ROOT="$REPO/benchmarks/h2/results"
PIPELINE=1          # runs.csv's column: h2load sends one request at a time on a stream
OPTIONS="rounds duration warmup connections profiles slices bare tier-up gc no-spin no-build results"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --streams) STREAMS="${2:?--streams needs a value}"; shift 2 ;;
    --tls) TLS=1; shift ;;
    *) shared_option "$@"; shift "$SHIFT" ;;
  esac
done

whole 1 ROUNDS DURATION WARMUP CONNECTIONS STREAMS SLICES
whole 0 TIER_UP
check_slices
check_gc
check_profiles
need h2load nghttp2-client
need python3
need curl
[[ $TLS == 0 ]] || need openssl

START_TIME=$(date +%s)
MODES=(headercache kestrel)
if [[ $BUILD == 1 ]]; then
  echo "== build (Release, $REPO/artifacts/wrk, shared with benchmarks/wrk)"
  build_sample "$REPO"
fi
built "$(sample_dll "$REPO")"

TRANSPORT=$([[ $TLS == 1 ]] && echo h2-tls || echo h2c)
new_run "$TRANSPORT-m$STREAMS"
mkdir -p "$OUT/traffic"

# How each server listens, and how a client reaches it: SCHEME for h2load's URIs and /stats, STATS_CURL for /stats.
if [[ $TLS == 1 ]]; then
  # A throwaway certificate per run: Kestrel reads PEM files from configuration, so the sample needs no code for TLS.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$OUT/tls-key.pem" -out "$OUT/tls-cert.pem" 2>/dev/null
  # Endpoints from configuration replace the --urls that start_sample passes (Kestrel logs that it overrides them).
  LISTEN_ENV="Kestrel__Endpoints__Tls__Url=https://127.0.0.1:0 Kestrel__Endpoints__Tls__Certificate__Path=$OUT/tls-cert.pem Kestrel__Endpoints__Tls__Certificate__KeyPath=$OUT/tls-key.pem"
  SCHEME=https
  STATS_CURL=(--http2 --insecure)
else
  LISTEN_ENV="Kestrel__EndpointDefaults__Protocols=Http2"
  SCHEME=http
  STATS_CURL=(--http2-prior-knowledge)
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
echo "$RUN_COLUMNS,streams,transport" > "$RUNS_CSV"
ROW_EXTRA=",$STREAMS,$TRANSPORT"

on_exit cleanup
SERVER_ENV="$LISTEN_ENV $SPIN_ENV DOTNET_gcServer=$GC_SERVER"
LOAD=h2load

h2load_args() { # profile port -> h2load's arguments for the profile: its -H lines, then its paths as URIs
  local line
  while IFS= read -r line; do
    if [[ $line == "PATH "* ]]; then echo "$SCHEME://127.0.0.1:$2${line#PATH }"; else echo "$line"; fi
  done <"$OUT/traffic/$1.args"
}

load() { # mode profile seconds out kind: h2load -D seconds, one thread (2 cores, shared with the server), CONNECTIONS
  # clients (32 for kind tierup); a measured run logs every request into out.log, for its percentiles
  local mode=$1 profile=$2 secs=$3 out=$4 clients=$CONNECTIONS log="" args
  [[ $5 == tierup ]] && clients=32
  [[ $5 == measured ]] && log="$out.log"
  mapfile -t args < <(h2load_args "$profile" "${PORT[$mode]}")
  timeout $((secs + 30)) h2load -t1 -c"$clients" -m"$STREAMS" -D"$secs" ${log:+--log-file="$log"} "${args[@]}" >"$out" 2>&1 \
    || { echo "h2load failed ($profile):" >&2; cat "$out" >&2; exit 1; }
  grep -qE '^requests: .* [1-9][0-9]* succeeded' "$out" || { echo "h2load got no response ($profile):" >&2; cat "$out" >&2; exit 1; }
}

h2_field() { # h2load output, regex with one group -> the number (0 when absent)
  local v
  v=$(sed -nE "s/$2/\\1/p" "$1" | head -1)
  echo "${v:-0}"
}

load_result() { # a measured run's output -> "requests errors p50_us p90_us p99_us max_us"; errors are the requests
  # h2load counted failed or timed out, and answers other than 2xx/3xx; the percentiles are those of the requests'
  # durations (third column of out.log, deleted after: a line per request)
  local errors
  errors=$(( $(h2_field "$1" '^requests: .* ([0-9]+) failed.*') + $(h2_field "$1" '^requests: .* ([0-9]+) timeout.*') \
    + $(h2_field "$1" '^status codes: .* ([0-9]+) 4xx.*') + $(h2_field "$1" '^status codes: .* ([0-9]+) 5xx.*') ))
  echo "$(h2_field "$1" '^requests: .* ([0-9]+) succeeded.*') $errors $(cut -f3 "$1.log" | sort -n | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "0 0 0 0"; exit }
    printf "%d %d %d %d\n", v[int((NR - 1) * 0.5) + 1], v[int((NR - 1) * 0.9) + 1], v[int((NR - 1) * 0.99) + 1], v[NR] }')"
  rm -f "$1.log"
}

echo "== $ROUNDS round(s) x profiles [$PROFILES] x modes [${MODES[*]}]"
echo "   h2load -t1 -c$CONNECTIONS -m$STREAMS over $TRANSPORT, warm-up ${WARMUP}s, measured ${DURATION}s in $SLICES slice(s) per mode"
echo "   tier-up: every profile in $TIER_UP run(s) of 1 s with 32 connections per fresh server"
echo "   server: dotnet, DOTNET_gcServer=$GC_SERVER ($GC GC), one fresh process per mode per round; results: $OUT"

measure_rounds

echo "== finished in $(( $(date +%s) - START_TIME ))s$([[ $BUILD == 1 ]] && echo ", build included"); results in $OUT"
summarize h2 "$RUNS_CSV" --out "$OUT"
