#!/usr/bin/env bash
# Long differential fuzz run: HeaderCache vs Kestrel alone, in process over in-memory transports, many seeds.
# Usage: tests/fuzz/run.sh [h2] [minutes-per-seed] [cases-per-seed] [first-seed] [seeds]
#   HTTP/1.1 by default (InProcessFuzzTests); with "h2" first, the HTTP/2 fuzzer (Http2InProcessFuzzTests).
set -euo pipefail
cd "$(dirname "$0")/../.."
PREFIX=HEADERCACHE_FUZZ
FILTER=Fuzzing.InProcessFuzzTests.Generated
if [[ "${1:-}" == "h2" ]]; then
  shift
  PREFIX=HEADERCACHE_H2FUZZ
  FILTER=Http2InProcessFuzzTests.Generated_and_mutated
fi
MINUTES="${1:-10}"
CASES="${2:-250000}"
FIRST="${3:-1}"
SEEDS="${4:-4}"
# The whole output of each seed (a divergence's bytes, cut and both transcripts) goes to a log of its own; the
# terminal gets the counts, and for the first divergences where the transcripts first differ.
LOGS="${FUZZ_LOGS:-${TMPDIR:-/tmp}}"
dotnet build tests/HeaderCache.Tests -c Release -nologo -v q
for ((seed = FIRST; seed < FIRST + SEEDS; seed++)); do
  env "${PREFIX}_SEED=$seed" "${PREFIX}_CASES=$CASES" "${PREFIX}_MINUTES=$MINUTES" \
    dotnet test tests/HeaderCache.Tests -c Release --no-build \
      --filter "FullyQualifiedName~$FILTER" \
      --logger "console;verbosity=detailed" | tee "$LOGS/fuzz-${PREFIX}-seed$seed.log" \
      | grep -E "^ seed [0-9]+[:,]|^ first differences by point|^ -- first difference|^   (on|alone): |Passed!|Failed!" || true
done
