#!/usr/bin/env bash
# The soak test of issue 29, which scripts/test.sh leaves out (label soak): uiw-nfsd serves
# 16 clients (TCP and RPC-over-RDMA) with their connections reset every 30 s, and prints
# its RSS, descriptors and threads each minute; they must stay flat after the first (the
# RSS net of the RPC-over-RDMA receive buffers, which fill as messages land in them).
#   scripts/soak.sh [--minutes N] [--build DIR]     (defaults: 10 minutes, build/soak)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
dir=build/soak
while [ $# -gt 0 ]; do
  case $1 in
  --minutes) minutes=${2:?}; shift 2 ;;
  --build) dir=${2:?}; shift 2 ;;
  -h | --help) sed -n '2,6p' "$0"; exit 0 ;;
  *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $minutes in
'' | *[!0-9]* | 0) echo "soak.sh: --minutes takes a whole number above 0" >&2; exit 2 ;;
esac
scripts/deps.sh
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DUIW_TESTS=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target test-nfs uiw-nfsd
cd "$dir"
UIW_SOAK_MINUTES=$minutes ctest -L soak --output-on-failure --timeout $((minutes * 60 + 600)) -V |
  grep -E "soak:|Test *#|tests passed|FAILED|test_soak"
