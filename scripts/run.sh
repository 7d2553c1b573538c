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

demo() { # iwperf client options...
  # the server picks a free port (-p 0) and says which on stderr
  local log port="" srv
  log=$(mktemp)
  $bin/tools/iwperf -q -p 0 >/dev/null 2>"$log" &
  srv=$!
  for _ in $(seq 200); do
    port=$(sed -n 's/^iwperf: listening on port \([0-9]*\)$/\1/p' "$log")
    [ -n "$port" ] && break
    sleep 0.05
  done
  if [ -z "$port" ]; then
    cat "$log" >&2
    rm -f "$log"
    echo "iwperf server did not start" >&2
    kill "$srv" 2>/dev/null
    return 1
  fi
  local rc=0
  $bin/tools/iwperf -p "$port" "$@" 127.0.0.1 || rc=$?
  wait "$srv" || { grep -v '^iwperf: listening on port' "$log" >&2; rc=1; }
  rm -f "$log"
  return "$rc"
}
echo
echo "== loopback RDMA Write, 1 MiB messages, CRC on, every message verified"
demo -t write -s 1M -n 200 --crc --verify
echo
echo "== loopback RDMA Read, 1 MiB messages, every message verified"
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
