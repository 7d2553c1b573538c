#!/usr/bin/env bash
# The main job: installs missing packages, builds an optimised tree, self-checks the wire
# layer against known answers, runs a loopback RDMA demo (iwperf server and client, RDMA
# Write and Read with CRC, data verified, zero-copy counters printed), decodes an
# RPC-over-RDMA Version Two header, and prints the CRC32c benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DUIW_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)"
bin=build/release

echo "== wire layer self-check"
$bin/tools/uiw-selfcheck

wait_listen() { # port
  for _ in $(seq 100); do
    if ss -ltnH "sport = :$1" 2>/dev/null | grep -q LISTEN; then return 0; fi
    sleep 0.05
  done
  echo "iwperf server did not start" >&2
  return 1
}
demo() { # iwperf client options...
  local port=$((20000 + RANDOM % 20000))
  $bin/tools/iwperf -q -p "$port" >/dev/null &
  local srv=$!
  wait_listen "$port"
  $bin/tools/iwperf -p "$port" "$@" 127.0.0.1
  wait "$srv"
}
echo
echo "== loopback RDMA Write, 1 MiB messages, CRC on, sink verified"
demo -t write -s 1M -n 200 --crc --verify
echo
echo "== loopback RDMA Read, 1 MiB messages, sink verified"
demo -t read -s 1M -n 200 --verify
echo
echo "== loopback Send ping-pong, 64 bytes"
demo -t send --lat -s 64 -n 2000

echo
echo "== rpcrdma-decode: an RPC-over-RDMA Version Two call with one Write chunk"
echo '{"rdma_xid":1,"rdma_vers":2,"rdma_credit":32,"rdma_body":{"rdma_proc":"RDMA2_MSG","rdma_chunks":{"rdma_direction":"CALL","rdma_inv_handle":0,"rdma_reads":[],"rdma_writes":[{"rdma_target":[{"rdma_handle":4660,"rdma_length":1048576,"rdma_offset":140737488355328}]}],"rdma_reply":null}}}' |
  $bin/tools/rpcrdma-decode --encode | tee /dev/stderr |
  $bin/tools/rpcrdma-decode --hex

echo
echo "== CRC32c benchmark"
$bin/bench/bench-crc32c
