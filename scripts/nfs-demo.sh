#!/usr/bin/env bash
# NFS over RPC-over-RDMA against NFS over TCP, on loopback: uiw-nfsd serves a temporary
# export, and uiw-nfs puts files of each size into it and gets them back, in NFSv3 over
# RPC-over-RDMA Version Two and over TCP (libtirpc), and in NFSv4.1 over RPC-over-RDMA
# Version Two, from the same server; every file's SHA-256 checked by uiw-nfs --verify
# (source against destination read back) and again end to end (the file got back against
# the one put, by sha256sum). Prints a table (per size, NFS version and transport: write
# and read MB/s, the median and 99th percentile latency of the WRITE and READ calls, the
# server's and the client's CPU time per GiB), each figure the median of several rounds
# (the runs in alternated order), then per size the NFSv4.1/NFSv3 ratio of the MB/s over
# RPC-over-RDMA, and draws bandwidth against file size with gnuplot (SVG and PNG).
#
#   scripts/nfs-demo.sh [--quick] [--rounds N] [--bin DIR] [--out DIR]
#
# --bin: where uiw-nfsd and uiw-nfs are (default build/release/tools); --out: where the
# table, the data and the plots go (default build/demo; every round's figures in
# nfs-demo.rounds); --rounds: rounds a size (default 3); --quick: three small sizes,
# three files each but one of 1 MiB (the test of this script, nfs.demo). Exit 0 when
# every transfer and checksum passed and the server stopped cleanly, 77 when uiw-nfsd was
# built without RPC-over-RDMA, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/tools
out=build/demo
quick=0
rounds=3
while [ $# -gt 0 ]; do
  case $1 in
  --quick) quick=1 ;;
  --rounds) rounds=${2:-}; shift ;;
  --bin) bin=$2; shift ;;
  --out) out=$2; shift ;;
  *) echo "usage: scripts/nfs-demo.sh [--quick] [--rounds N] [--bin DIR] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "nfs-demo: --rounds takes a count of 1 or more" >&2; exit 2; }
for t in uiw-nfsd uiw-nfs; do
  [ -x "$bin/$t" ] || { echo "nfs-demo: no $bin/$t (build first)" >&2; exit 1; }
done
command -v gnuplot >/dev/null || { echo "nfs-demo: gnuplot is missing (scripts/deps.sh)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Files per size: enough calls for a 99th percentile and enough bytes for a rate.
if [ $quick = 1 ]; then
  sizes=(4096 65536 1048576)
  files_for() { # three files a size, one of the largest (a single file has no total)
    if [ "$1" -ge 1048576 ]; then echo 1; else echo 3; fi
  }
else
  sizes=(4096 16384 65536 262144 1048576 4194304 16777216 67108864)
  files_for() { # size: 64 MiB a size, at most 200 files
    local n=$(((64 << 20) / $1))
    [ $n -gt 200 ] && n=200
    echo $n
  }
fi

# The export, the files put and the files got back live in memory when there is room
# (a disk's fsync would be measured, not the transport).
work=""
avail=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ "${avail:-0}" -gt $((1 << 20)) ]; then
  work=$(mktemp -d /dev/shm/uiw-nfs-demo.XXXXXX)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/uiw-nfs-demo.XXXXXX")
fi
srv=""
cleanup() {
  if [ -n "$srv" ]; then
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/export" "$work/src" "$work/back"

# The server: free ports on loopback; its first line names them.
"$bin/uiw-nfsd" -a 127.0.0.1 -p 0 --tcp-port 0 --mount-port 0 --rdma-threads 2 --no-root-squash \
  "$work/export" >"$work/nfsd.out" 2>"$work/nfsd.err" &
srv=$!
ready=""
for _ in $(seq 400); do
  ready=$(sed -n 's/^uiw-nfsd: ready \(tcp=.*\)$/\1/p' "$work/nfsd.out")
  [ -n "$ready" ] && break
  kill -0 "$srv" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$ready" ]; then
  cat "$work/nfsd.err" >&2
  echo "nfs-demo: uiw-nfsd did not start" >&2
  exit 1
fi
tcp=$(echo "$ready" | sed 's/.*tcp=\([0-9-]*\).*/\1/')
mnt=$(echo "$ready" | sed 's/.*mount=\([0-9-]*\).*/\1/')
rdma=$(echo "$ready" | sed 's/.*rdma=\([0-9-]*\).*/\1/')
if [ "$rdma" -le 0 ]; then
  echo "nfs-demo: uiw-nfsd serves no RPC-over-RDMA (built without the RPC layer)" >&2
  exit 77
fi
# What each run uses: NFSv3 over TCP (tcp) and over RPC-over-RDMA (rdma), NFSv4.1 over
# RPC-over-RDMA (rdma4; no MOUNT protocol in NFSv4).
runs=(tcp rdma rdma4)
url() { # run path -> the URL of that path in the export
  case $1 in
  rdma) echo "nfs://127.0.0.1:$rdma$work/export/$2?mountport=$mnt&transport=rdma&rpcrdma=2&version=3" ;;
  rdma4) echo "nfs://127.0.0.1:$rdma$work/export/$2?transport=rdma&rpcrdma=2&version=4.1" ;;
  *) echo "nfs://127.0.0.1:$tcp$work/export/$2?mountport=$mnt&transport=tcp&version=3" ;;
  esac
}
version_of() { # run -> the NFS version it asks for (uiw-nfs's JSON must say the same)
  if [ "$1" = rdma4 ]; then echo 4.1; else echo 3; fi
}
human() { # bytes -> 4 KiB, 64 MiB
  if [ "$1" -ge $((1 << 20)) ]; then echo "$(($1 >> 20)) MiB"; else echo "$(($1 >> 10)) KiB"; fi
}
# One file at a time (--parallel 1): each row's MB/s and call latencies are those of one
# file's calls with nothing beside them (bench-nfs compares many files in flight).
nfs() { "$bin/uiw-nfs" --no-progress --parallel 1 "$@"; }
hz=$(getconf CLK_TCK)
# Few processes a row (each one's start is what a loaded machine makes slow): the shell
# reads the server's CPU time itself, and one awk reads a put's and a get's JSON.
srv_ns() { # -> ns: the server's CPU time so far in nanoseconds, every thread: the sum of
  # their schedstat (its threads are a pool made at its start), or where the kernel keeps
  # none, /proc/PID/stat's user and system time (in clock ticks: a short run may read 0)
  local t v st sum=0
  if [ -r "/proc/$srv/schedstat" ]; then
    for t in /proc/"$srv"/task/*/schedstat; do
      read -r v _ 2>/dev/null <"$t" && sum=$((sum + v))
    done
    ns=$sum
    return
  fi
  read -r st <"/proc/$srv/stat"
  read -ra st <<<"${st##*) }"
  ns=$(((st[11] + st[12]) * 1000000000 / hz))
}
figures() { # put.json get.json put-ns get-ns bytes -> one line: the files each
  # reported (objects with a "file"), transport, put's and get's NFS version, write and
  # read MB/s, WRITE p50 and p99, READ p50 and p99 (their totals: each output's last
  # object), the server's CPU seconds per GiB put and got, then uiw-nfs's (what each
  # process used in all, as its last object says)
  awk -v tw="$3" -v tr="$4" -v b="$5" '
    function f(o, k) {
      if (!match(o, "\"" k "\":\"?[^\",}]*")) return "-"
      o = substr(o, RSTART + length(k) + 3, RLENGTH - length(k) - 3)
      sub(/^"/, "", o)
      return o
    }
    { i = FILENAME == ARGV[1] ? 1 : 2; last[i] = $0 }
    /^\{"op":"(put|get)","file":/ { files[i]++ }
    END {
      w = last[1]; r = last[2]
      printf "%d %d %s %s %s %s %s %s %s %s %s %.2f %.2f %.2f %.2f\n", files[1], files[2],
        f(w, "transport"), f(w, "version"), f(r, "version"), f(w, "mbytes_per_sec"),
        f(r, "mbytes_per_sec"), f(w, "p50_us"), f(w, "p99_us"), f(r, "p50_us"),
        f(r, "p99_us"), tw / 1e9 / (b / 1073741824), tr / 1e9 / (b / 1073741824),
        f(w, "process_cpu_s") / (b / 1073741824), f(r, "process_cpu_s") / (b / 1073741824)
    }' "$1" "$2"
}
# Progress: each row is printed once measured; on a terminal a status line on stderr
# also says what runs now (nothing of it reaches a log: scripts/run.sh >log 2>&1).
step=0
steps=$((${#sizes[@]} * ${#runs[@]} * rounds))
status() { # text
  [ -t 2 ] && printf '\r\033[K[%d/%d] %s' "$step" "$steps" "$1" >&2
  return 0
}
status_end() { [ -t 2 ] && printf '\r\033[K' >&2; return 0; }

echo "uiw-nfsd on 127.0.0.1 (RPC-over-RDMA port $rdma, TCP $tcp, MOUNT $mnt), export $work/export"
echo "put then get each file with uiw-nfs, one at a time (up to 4 of its calls in flight)," \
  "SHA-256 verified; sizes $(human "${sizes[0]}") to" \
  "$(human "${sizes[-1]}"); NFSv3 over RPC-over-RDMA Version Two and over TCP, NFSv4.1 over" \
  "RPC-over-RDMA Version Two"
echo "latency: per WRITE (put) and READ (get) call of at most 1 MiB, median and 99th percentile"
echo "  (from 2 MiB up, a file's calls overlap: each waits behind the others in flight);"
echo "server CPU: uiw-nfsd's CPU seconds (user and system) per GiB put and got; client CPU:"
echo "  uiw-nfs's, each put and get command in all (its start, connection and --verify too)"
echo "each figure: the median of $rounds rounds, the runs in alternated order"
echo
fmt="%9s  %-4s %-8s %10s %10s %11s %11s %11s %11s %9s %9s %9s %9s\n"
header() {
  printf "$fmt" size NFS transport "write MB/s" "read MB/s" "write p50" "write p99" "read p50" \
    "read p99" "srv CPU w" "srv CPU r" "cli CPU w" "cli CPU r"
  printf "$fmt" "" "" "" "" "" "us" "us" "us" "us" "s/GiB" "s/GiB" "s/GiB" "s/GiB"
}
header
data="$out/nfs-demo.dat"
table="$out/nfs-demo.txt"
: >"$data"
header >"$table"

# Warm up every run (first connections, first buffers): one file each way.
head -c 1048576 /dev/urandom >"$work/src/warm"
for tr in "${runs[@]}"; do
  nfs put "$work/src/warm" "$(url $tr warm)" >/dev/null
  nfs get "$(url $tr warm)" "$work/back/warm" >/dev/null
done
rm -f "$work/src/warm" "$work/back/warm" "$work/export/warm"

# One put and get of a size's files over one run: its figures (those of figures, below the
# run's name) appended to $work/rounds; 1 when a transfer or a check failed (said).
measure() { # size files run round
  local size=$1 n=$2 tr=$3 d="$3-$1-$4" trname="NFSv3 over TCP" c0 c1 c2 line nw nr ver rver
  [ $tr = rdma ] && trname="NFSv3 over RPC-over-RDMA v2"
  [ $tr = rdma4 ] && trname="NFSv4.1 over RPC-over-RDMA v2"
  status "$(human "$size") over $trname, round $4 of $rounds: putting $n files"
  nfs mkdir "$(url $tr "$d")" >/dev/null
  srv_ns
  c0=$ns
  nfs --json --verify put "$work/src"/f* "$(url $tr "$d")" >"$work/w.json" 2>"$work/err" || {
    status_end
    cat "$work/err" >&2
    return 1
  }
  local urls=()
  for f in "$work/src"/f*; do urls+=("$(url $tr "$d/${f##*/}")"); done
  rm -rf "$work/back" && mkdir "$work/back"
  srv_ns
  c1=$ns
  status "$(human "$size") over $trname, round $4 of $rounds: getting $n files back"
  nfs --json --verify get "${urls[@]}" "$work/back" >"$work/r.json" 2>"$work/err" || {
    status_end
    cat "$work/err" >&2
    return 1
  }
  srv_ns
  c2=$ns
  status_end
  if ! (cd "$work/back" && sha256sum --quiet -c "$work/sums"); then
    echo "nfs-demo: $tr $(human "$size"): the files got back differ from those put" >&2
    return 1
  fi
  rm -rf "${work:?}/export/$d"
  # One object a file, then for several files one for them all: the figures are the last.
  line=$(figures "$work/w.json" "$work/r.json" $((c1 - c0)) $((c2 - c1)) $((size * n)))
  read -r nw nr _ ver rver _ <<<"$line"
  if [ "$nw" != "$n" ] || [ "$nr" != "$n" ]; then
    echo "nfs-demo: $trname $(human "$size"): not every file was moved" >&2
    return 1
  fi
  if [ "$ver" != "$(version_of $tr)" ] || [ "$rver" != "$ver" ]; then
    echo "nfs-demo: $trname $(human "$size"): uiw-nfs spoke NFS version $ver and $rver," \
      "not $(version_of $tr)" >&2
    return 1
  fi
  echo "$size $tr $4 $line" >>"$work/rounds"
}

# Per size, the rounds: each run once a round, the order of the runs reversed from one
# round to the next (what the machine does meanwhile falls on each in turn); each figure
# of a row the median of the rounds' (the middle one, or the mean of the middle two).
failed=0
: >"$work/rounds"
for size in "${sizes[@]}"; do
  n=$(files_for "$size")
  rm -rf "$work/src" && mkdir "$work/src"
  head -c $((size * n)) /dev/urandom | (cd "$work/src" && split -a 3 -d -b "$size" - f)
  (cd "$work/src" && sha256sum f* >"$work/sums")
  for round in $(seq "$rounds"); do
    order=()
    for k in "${!runs[@]}"; do
      if [ $((round % 2)) = 1 ]; then order+=("${runs[k]}"); else order=("${runs[k]}" "${order[@]}"); fi
    done
    for tr in "${order[@]}"; do
      step=$((step + 1))
      measure "$size" "$n" "$tr" "$round" || failed=1
    done
  done
  for tr in "${runs[@]}"; do
    # size run round | files files transport version version wMB/s rMB/s wp50 wp99 rp50
    # rp99 cpuw cpur clientw clientr: the medians of fields 9 to 18 over the run's rounds
    row=$(awk -v s="$size" -v t="$tr" -v want="$rounds" '
      $1 == s && $2 == t { n++; tr = $6; ver = $7; for (i = 9; i <= 18; i++) v[i, n] = $i }
      END {
        if (n != want) exit 1
        printf "%s %s", tr, ver
        for (i = 9; i <= 18; i++) {
          for (a = 1; a <= n; a++) x[a] = v[i, a]
          for (a = 2; a <= n; a++)
            for (b = a; b > 1 && x[b - 1] > x[b]; b--) { y = x[b]; x[b] = x[b - 1]; x[b - 1] = y }
          m = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
          printf (i >= 11 && i <= 14 ? " %.1f" : " %.2f"), m
        }
        printf "\n"
      }' "$work/rounds") || {
      echo "nfs-demo: $tr $(human "$size"): not every round measured" >&2
      failed=1
      continue
    }
    read -r trn ver wmb rmb wp50 wp99 rp50 rp99 cpuw cpur cliw clir <<<"$row"
    printf -v row "$fmt" "$(human "$size")" "$ver" "$trn" "$wmb" "$rmb" "$wp50" "$wp99" \
      "$rp50" "$rp99" "$cpuw" "$cpur" "$cliw" "$clir"
    row=${row%$'\n'}
    echo "$row"
    echo "$row" >>"$table"
    echo "$size $tr $wmb $rmb" >>"$data"
  done
done
cp "$work/rounds" "$out/nfs-demo.rounds"
# The server stops cleanly (SIGTERM: it closes every connection and exits 0).
kill "$srv"
if ! wait "$srv"; then
  cat "$work/nfsd.err" >&2
  echo "nfs-demo: uiw-nfsd did not stop cleanly" >&2
  failed=1
fi
srv=""
rows=$(grep -c . "$data" || true)
# NFSv4.1 against NFSv3, both over RPC-over-RDMA: the MB/s of the one over the other's.
ratios=$(awk '$2 == "rdma" { w[$1] = $3; r[$1] = $4 }
  $2 == "rdma4" && ($1 in w) && w[$1] > 0 && r[$1] > 0 {
    printf "%9s  %10.2f %10.2f\n", $1, $3 / w[$1], $4 / r[$1] }' "$data")
{
  echo
  echo "NFSv4.1/NFSv3 over RPC-over-RDMA v2 (MB/s of NFSv4.1 over those of NFSv3; 1.00: as fast)"
  printf "%9s  %10s %10s\n" size write read
  while read -r sz wr rd; do
    printf "%9s  %10s %10s\n" "$(human "$sz")" "$wr" "$rd"
  done <<<"$ratios"
} | tee -a "$table"
echo
[ "$(grep -c . <<<"$ratios")" = ${#sizes[@]} ] || failed=1
if [ "$rows" = $((${#sizes[@]} * ${#runs[@]})) ] && [ $failed = 0 ]; then
  echo "every size in all three runs (NFSv3 over RDMA and TCP, NFSv4.1 over RDMA): each" \
    "file's SHA-256 verified by uiw-nfs (source against destination) and again end to end" \
    "(sha256sum)"
else
  echo "nfs-demo: $rows of $((${#sizes[@]} * ${#runs[@]})) sizes and runs measured" >&2
  failed=1
fi

# The plot: bandwidth against file size, both axes logarithmic; one data block a run.
blocks="$work/plot.dat"
{
  awk '$2 == "rdma4"' "$data"
  printf '\n\n'
  awk '$2 == "rdma"' "$data"
  printf '\n\n'
  awk '$2 == "tcp"' "$data"
} >"$blocks"
plot() { # terminal output
  gnuplot <<EOF
set terminal $1
set output "$2"
set title "NFSv4.1 and NFSv3 on loopback: uiw-nfs against uiw-nfsd, one file at a time, up to 4 of its calls in flight"
set xlabel "file size"
set ylabel "bandwidth (MB/s, 10^6 bytes per second)"
set logscale x 2
set logscale y 10
set xtics ("4 KiB" 4096, "16 KiB" 16384, "64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576, \
  "4 MiB" 4194304, "16 MiB" 16777216, "64 MiB" 67108864)
set xrange [3000:90000000]
set grid xtics ytics mytics
set key top left box opaque
set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 0.8
set style line 2 lc rgb "#1f77b4" lw 2 pt 5 ps 0.8 dt 2
set style line 3 lc rgb "#d62728" lw 2 pt 7 ps 0.8
set style line 4 lc rgb "#d62728" lw 2 pt 5 ps 0.8 dt 2
set style line 5 lc rgb "#2ca02c" lw 2 pt 9 ps 0.9
set style line 6 lc rgb "#2ca02c" lw 2 pt 11 ps 0.9 dt 2
plot "$blocks" index 0 using 1:3 with linespoints ls 5 title "NFSv4.1, RPC-over-RDMA v2, write (put)", \
     "$blocks" index 0 using 1:4 with linespoints ls 6 title "NFSv4.1, RPC-over-RDMA v2, read (get)", \
     "$blocks" index 1 using 1:3 with linespoints ls 1 title "NFSv3, RPC-over-RDMA v2, write (put)", \
     "$blocks" index 1 using 1:4 with linespoints ls 2 title "NFSv3, RPC-over-RDMA v2, read (get)", \
     "$blocks" index 2 using 1:3 with linespoints ls 3 title "NFSv3, TCP, write (put)", \
     "$blocks" index 2 using 1:4 with linespoints ls 4 title "NFSv3, TCP, read (get)"
EOF
}
plot "svg size 900,560 dynamic font 'sans,13'" "$out/nfs-demo.svg"
plot "pngcairo size 900,560 font 'sans,11'" "$out/nfs-demo.png"
for f in "$out/nfs-demo.svg" "$out/nfs-demo.png"; do
  [ -s "$f" ] || { echo "nfs-demo: gnuplot wrote no $f" >&2; failed=1; }
done
echo "table: $table"
echo "plot:  $out/nfs-demo.svg and $out/nfs-demo.png (data: $data)"
if [ $failed != 0 ]; then
  echo "nfs-demo: FAILED (above)" >&2
  exit 1
fi
