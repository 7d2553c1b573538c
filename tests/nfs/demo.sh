#!/usr/bin/env bash
# The test of the README's demo (nfs.demo): scripts/nfs-demo.sh --quick on this build's
# tools, then its products checked: the exit status, the line saying every SHA-256 was
# verified, the table (a row per size and run: NFSv3 over TCP and over RPC-over-RDMA,
# NFSv4.1 over RPC-over-RDMA; the version and transport named as uiw-nfs reports them,
# every figure a positive number, the median of its three rounds), the NFSv4.1/NFSv3 ratios
# below it (one a size, worked out from the rows), the data gnuplot drew from, and the SVG and PNG themselves (their
# formats, not only their presence).
#
#   tests/nfs/demo.sh BIN_DIR OUT_DIR
#
# Exit 0 when all holds, 77 when the demo skipped (no RPC layer in this build), 1 otherwise.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1
out=$2
rm -rf "$out"
fail() { echo "nfs.demo: FAILED: $*" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# As a user would keep it: both streams in one file, nothing on a terminal.
bash "$src/scripts/nfs-demo.sh" --quick --bin "$bin" --out "$out" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "nfs-demo.sh exited $rc"

grep -q '^every size in all three runs (NFSv3 over RDMA and TCP, NFSv4.1 over RDMA): each file.s SHA-256 verified' "$log" ||
  fail "no line saying every checksum was verified"
grep -q "^plot:  $out/nfs-demo.svg and $out/nfs-demo.png" "$log" || fail "the plot's place not said"

# The table: two header lines, then one row a size and run, then after a blank line the
# ratios.
table=$out/nfs-demo.txt
[ -s "$table" ] || fail "no table $table"
rows=$(tail -n +3 "$table" | sed '/^$/,$d')
[ "$(echo "$rows" | grep -c .)" = 9 ] || fail "not 9 rows in $table"
for size in "4 KiB" "64 KiB" "1 MiB"; do
  for run in "3    tcp" "3    rdma-v2" "4.1  rdma-v2"; do
    # a here-string, not a pipe: grep -q ends at its match, and under pipefail an echo
    # still writing then dies of SIGPIPE and fails the check
    grep -Eq "^ *$size  $run( +[0-9]+\.[0-9]+){10}\$" <<<"$rows" ||
      fail "no row for $size, NFS $run, with ten figures"
  done
done
echo "$rows" | awk '{ for (i = NF - 9; i <= NF - 4; i++) if ($i <= 0) exit 1 }' ||
  fail "a rate or latency in the table is not positive"
# uiw-nfs's CPU per GiB: what each put and get used in all, a process's CPU clock (its
# start, its connection and the transfers at the least): above 0 in every row
echo "$rows" | awk '{ if ($(NF - 1) <= 0 || $NF <= 0) exit 1 }' ||
  fail "the client's CPU time per GiB is 0 in a row"
# the server's CPU per GiB: from its threads' schedstat (nanoseconds), so above 0 in every
# row, however short its transfers; where the kernel keeps none, from clock ticks, which
# a small transfer may not reach: above 0 in some row
if [ -r /proc/self/schedstat ]; then
  echo "$rows" | awk '{ if ($(NF - 3) <= 0 || $(NF - 2) <= 0) exit 1 }' ||
    fail "the server's CPU time per GiB is 0 in a row"
else
  echo "$rows" | awk '{ s += $(NF - 3) + $(NF - 2) } END { exit !(s > 0) }' ||
    fail "the server's CPU time per GiB is 0 in every row"
fi
[ "$(grep -c "^ *[0-9]* [KM]iB  [34.1 ]*rdma-v2 " <<<"$rows")" = 6 ] ||
  fail "the RPC-over-RDMA rows are not Version Two"
# The ratios: per size, NFSv4.1's write and read MB/s over NFSv3's, both over RDMA, as
# the rows above give them (to the rounding of two decimals).
ratios=$(sed -n '/^NFSv4.1\/NFSv3 over RPC-over-RDMA v2 /,$p' "$table" | tail -n +3)
[ "$(echo "$ratios" | grep -c .)" = 3 ] || fail "not 3 ratio lines in $table"
for size in "4 KiB" "64 KiB" "1 MiB"; do
  line=$(grep -E "^ *$size  " <<<"$ratios") || fail "no ratio for $size"
  v3=$(grep -E "^ *$size  3    rdma-v2 " <<<"$rows")
  v41=$(grep -E "^ *$size  4.1  rdma-v2 " <<<"$rows")
  awk -v l="$line" -v a="$v3" -v b="$v41" 'BEGIN {
    nl = split(l, L); split(a, A); split(b, B)
    w = B[5] / A[5]; r = B[6] / A[6]
    exit !(L[nl - 1] > 0 && L[nl] > 0 && (L[nl - 1] - w) ^ 2 < 0.0001 && (L[nl] - r) ^ 2 < 0.0001)
  }' || fail "the ratio for $size is not NFSv4.1's MB/s over NFSv3's: $line"
done
grep -qxF "$(sed -n '/^NFSv4.1\/NFSv3 over/p' "$table")" "$log" || fail "the ratios not in the output"
# The log shows the same rows (printed as they were measured).
while IFS= read -r row; do
  grep -qxF "$row" "$log" || fail "row not in the output: $row"
done <<<"$rows"

# Every round's figures (nfs-demo.rounds: size, run, round, then what each row shows but
# its size): three rounds of each size and run, the runs in reversed order in the second;
# each figure of a row the median of its three rounds' (to the rounding of the table).
rounds=$out/nfs-demo.rounds
[ "$(awk 'NF == 18' "$rounds" | wc -l)" = 27 ] || fail "$rounds: not 27 rounds of 18 fields"
for size in 4096 65536 1048576; do
  order=$(awk -v s=$size '$1 == s { printf "%s%s", sep, $2 " " $3; sep = "," }' "$rounds")
  [ "$order" = "tcp 1,rdma 1,rdma4 1,rdma4 2,rdma 2,tcp 2,tcp 3,rdma 3,rdma4 3" ] ||
    fail "$rounds: the runs of $size in the order $order, not alternated"
done
while IFS= read -r row; do
  awk -v row="$row" '
    BEGIN {
      n = split(row, R)
      size = R[1] * (R[2] == "KiB" ? 1024 : 1048576)
      run = R[4] == "tcp" ? "tcp" : R[3] == "4.1" ? "rdma4" : "rdma"
    }
    $1 == size && $2 == run { k++; for (i = 9; i <= 18; i++) v[i, k] = $i }
    END {
      if (k != 3) exit 1
      for (i = 9; i <= 18; i++) {
        a = v[i, 1]; b = v[i, 2]; c = v[i, 3]
        m = a + b + c - (a < b ? (a < c ? a : c) : (b < c ? b : c)) - (a > b ? (a > c ? a : c) : (b > c ? b : c))
        d = R[n - 18 + i] - m
        if (d * d > 0.06 * 0.06) exit 1
      }
    }' "$rounds" || fail "a figure of this row is not the median of its rounds: $row"
done <<<"$rows"

# What gnuplot drew: per size and transport, positive write and read rates.
data=$out/nfs-demo.dat
[ "$(awk 'NF == 4 && $3 > 0 && $4 > 0' "$data" | wc -l)" = 9 ] || fail "$data: not 9 rows"

# The plot: an SVG document with its six curves' titles, and a PNG image.
svg=$out/nfs-demo.svg
png=$out/nfs-demo.png
grep -q '<svg' "$svg" || fail "$svg is not SVG"
for t in "NFSv4.1, RPC-over-RDMA v2, write" "NFSv4.1, RPC-over-RDMA v2, read" \
  "NFSv3, RPC-over-RDMA v2, write" "NFSv3, RPC-over-RDMA v2, read" "NFSv3, TCP, write" \
  "NFSv3, TCP, read"; do
  grep -qF "$t" "$svg" || fail "$svg has no curve \"$t\""
done
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not PNG"
[ "$(stat -c %s "$png")" -gt 4096 ] || fail "$png is too small to hold the plot"
echo "nfs.demo: table, checksums and plots checked"
