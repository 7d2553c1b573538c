#!/usr/bin/env bash
# Runs the unit tests under valgrind memcheck (no sanitizers: they do not mix).
# Extra arguments go to ctest (default: every label but fuzz, siwvm and lint).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/valgrind -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build/valgrind -j"$(nproc)"
cd build/valgrind
if [ $# -eq 0 ]; then set -- -LE 'fuzz|siwvm|lint|slow'; fi
ctest -j"$(nproc)" --output-on-failure -T memcheck "$@"
