#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. installs missing Debian packages (scripts/deps.sh);
#   2. builds everything with gcc -O2 (Release: more warnings), warnings as errors;
#   3. builds everything with clang, warnings as errors, ASan + UBSan and the libFuzzer
#      targets, then runs ctest: unit, conformance, interop, lint, and each fuzz target
#      for UIW_FUZZ_SECONDS (default 20) seconds.
# Extra arguments go to ctest (e.g. -L wire, -R crc).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

cmake -S . -B build/gcc -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release -DUIW_TESTS=ON >/dev/null
cmake --build build/gcc -j"$jobs"

cmake -S . -B build/test -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DUIW_SANITIZE=ON -DUIW_FUZZ=ON -DUIW_FUZZ_SECONDS="${UIW_FUZZ_SECONDS:-20}" >/dev/null
cmake --build build/test -j"$jobs"

cd build/test
ctest -j"$jobs" --output-on-failure "$@"
