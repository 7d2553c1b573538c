#!/usr/bin/env bash
# The main job: installs the Debian packages that are missing (scripts/deps.sh), builds an
# optimised tree (build/release: the NFS server and client and the self-check), checks the
# wire layer against known answers, then runs the NFS demo (scripts/nfs-demo.sh): uiw-nfsd
# on a temporary export on loopback, uiw-nfs putting and getting files of 4 KiB to 64 MiB
# in NFSv3 over RPC-over-RDMA Version Two and over TCP and in NFSv4.1 over RPC-over-RDMA
# Version Two, every SHA-256 checked; a table of MB/s and call latencies with the
# NFSv4.1/NFSv3 ratios, and a plot of bandwidth against file size in build/demo (SVG, PNG).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
echo "== packages (scripts/deps.sh)"
scripts/deps.sh
echo "== optimised build (build/release)"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DUIW_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target uiw-selfcheck uiw-nfsd uiw-nfs
bin=build/release/tools

echo
echo "== wire layer self-check (CRC32c, FPDUs, MPA, DDP, Terminate known answers)"
if ! check=$($bin/uiw-selfcheck); then
  echo "$check"
  exit 1
fi
echo "$check" | tail -n 1

echo
echo "== NFSv3 over RPC-over-RDMA Version Two and over TCP, NFSv4.1 over RPC-over-RDMA Version Two"
scripts/nfs-demo.sh --bin "$bin" --out build/demo
echo
echo "run.sh: done in $(($(date +%s) - start)) s"
