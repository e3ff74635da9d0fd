#!/usr/bin/env bash
# Long differential fuzz run: HeaderCache vs Kestrel alone, in process over in-memory transports, many seeds.
# Usage: tests/fuzz/run.sh [minutes-per-seed] [cases-per-seed] [first-seed] [seeds]
set -euo pipefail
cd "$(dirname "$0")/../.."
MINUTES="${1:-10}"
CASES="${2:-250000}"
FIRST="${3:-1}"
SEEDS="${4:-4}"
dotnet build tests/HeaderCache.Tests -c Release -nologo -v q
for ((seed = FIRST; seed < FIRST + SEEDS; seed++)); do
  HEADERCACHE_FUZZ_SEED=$seed HEADERCACHE_FUZZ_CASES=$CASES HEADERCACHE_FUZZ_MINUTES=$MINUTES \
    dotnet test tests/HeaderCache.Tests -c Release --no-build \
      --filter "FullyQualifiedName~InProcessFuzzTests" \
      --logger "console;verbosity=detailed" | grep -E "^ seed [0-9]+:|^ case |^ -- (on|alone) --|Passed!|Failed!" || true
done
