#!/usr/bin/env bash
# Bursts of parallel streams after idle pauses longer than Kestrel's stream-pool expiry (bursts.js), HeaderCache against
# Kestrel alone, each with a profile's headers and bare (pseudo headers only): the share of the header-driven bytes
# per request HeaderCache removes. Uses a compare.sh run's traffic/*.args (benchmarks/h2/results/latest by default).
# Usage: benchmarks/h2/bursts.sh [profile] [bursts] [streams] [idle_ms]
set -euo pipefail
# shellcheck source=benchmarks/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROFILE="${1:-chrome}" BURSTS="${2:-8}" STREAMS="${3:-6}" IDLE="${4:-6000}"
TRAFFIC="${TRAFFIC:-$REPO/benchmarks/h2/results/latest/traffic}"
declare -A B
for mode in headercache kestrel; do
  for p in "$PROFILE" "$PROFILE-bare"; do
    log=$(mktemp)
    start_sample "$REPO" "$mode" "$log" Kestrel__EndpointDefaults__Protocols=Http2
    port=$(listening_port "$log" "$SAMPLE_PID") || exit 1
    B[$mode,$p]=$(node "$REPO/benchmarks/h2/bursts.js" "$port" "$TRAFFIC/$p.args" "$BURSTS" "$STREAMS" "$IDLE" | sed -nE 's/RESULT bytes_per_request=([0-9-]+).*/\1/p')
    kill "$SAMPLE_PID"; wait "$SAMPLE_PID" 2>/dev/null || true
    echo "$mode $p: ${B[$mode,$p]} B/request"
  done
done
awk -v k="${B[kestrel,$PROFILE]}" -v kb="${B[kestrel,$PROFILE-bare]}" -v h="${B[headercache,$PROFILE]}" -v p="$PROFILE" \
  'BEGIN { printf "HEADER_BYTES %s bursts: kestrel=%d kestrel_bare=%d headercache=%d removed=%.3f\n", p, k, kb, h, (k - h) / (k - kb) }'
