#!/usr/bin/env bash
# A longer fuzzing campaign: scripts/fuzz.sh TARGET [SECONDS] (default 600 s).
# New inputs go to build/fuzz-corpus/TARGET; the seed corpus is fuzz/corpus/TARGET.
# Without a target it lists them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DUIW_SANITIZE=ON -DUIW_FUZZ=ON >/dev/null
cmake --build build/fuzz -j"$(nproc)"
if [ $# -eq 0 ]; then ls build/fuzz/fuzz | grep '^fuzz-' ; exit 0; fi
t=$1; secs=${2:-600}
mkdir -p "build/fuzz-corpus/$t"
exec "build/fuzz/fuzz/fuzz-$t" -max_total_time="$secs" "build/fuzz-corpus/$t" "fuzz/corpus/$t"
