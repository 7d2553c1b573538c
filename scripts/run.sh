#!/usr/bin/env bash
# The main job: installs missing packages, builds an optimised tree, self-checks the wire
# layer against known answers and prints the CRC32c benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DUIW_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)"
build/release/tools/uiw-selfcheck
build/release/bench/bench-crc32c
