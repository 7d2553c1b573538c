#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. installs missing Debian packages (scripts/deps.sh);
#   2. builds everything with gcc -O2 (Release, link-time optimised: the build users run),
#      warnings as errors, and runs its unit, conformance, io, interop, perf and tools tests;
#   3. builds everything with clang and ThreadSanitizer and runs the tests of the layers
#      with threads (io, rnic, rpcrdma, rpc, nfs), conformance, tools and interop;
#   4. builds everything with clang, warnings as errors, ASan + UBSan and the libFuzzer
#      targets, then runs the whole ctest suite: unit, conformance, interop, the Linux siw
#      VM tests, lint, and each fuzz target for UIW_FUZZ_SECONDS (default 20) seconds.
# Extra arguments go to every ctest run (e.g. -L wire, -R crc); a run they leave empty is
# skipped, but the last one must find tests. Every run happens; the status is a failure if
# any failed. The tests that skipped (the siw VM tests without the rig, the root_* tests
# when not run as root) are counted and listed at the end, with the command that runs them.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
scripts/deps.sh || exit 1
jobs=$(nproc)
failed=()
skipped=() # "phase: test" for every test a run skipped
log=$(mktemp "${TMPDIR:-/tmp}/uiw-test.XXXXXX")
trap 'rm -f "$log"' EXIT

build() { # dir cmake-options... ; builds all targets, or those in $targets
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >/dev/null || return 1
  cmake --build "$dir" -j"$jobs" ${targets:+--target $targets}
}

phase() { # name dir ctest-options...
  local name=$1 dir=$2
  shift 2
  echo "== $name"
  (cd "$dir" && ctest -j"$jobs" --output-on-failure "$@") | tee "$log"
  [ "${PIPESTATUS[0]}" = 0 ] || failed+=("$name")
  # ctest's closing list: "<tab> 12 - interop.siwvm_rig (Skipped)"
  local t
  while read -r t; do
    skipped+=("$name: $t")
  done < <(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (Skipped)$/\1/p' "$log")
}

# What the skipped tests need, and the one command that runs them.
report_skips() {
  [ ${#skipped[@]} -gt 0 ] || return 0
  echo "test.sh: SKIPPED, so proving nothing here: ${#skipped[@]} (phase: test)"
  printf '  %s\n' "${skipped[@]}"
  local s rig=0 root=0 other=0
  for s in "${skipped[@]}"; do
    case "${s#*: }" in
      *.siwvm_* | *.root_siwvm_*) rig=$((rig + 1)) ;;
      *.root_*) root=$((root + 1)) ;;
      *) other=$((other + 1)) ;;
    esac
  done
  [ "$rig" = 0 ] ||
    echo "  $rig need the Linux siw VM rig; to run them: sudo scripts/siwvm.sh ensure (then scripts/test.sh again)"
  [ "$root" = 0 ] || echo "  $root need root; to run them: sudo scripts/test.sh"
  [ "$other" = 0 ] || echo "  $other skipped for the reason each printed above"
}

# 2. gcc, optimised
if build build/gcc -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release -DUIW_TESTS=ON; then
  phase "gcc -O2 tests" build/gcc -LE '^(siwvm|fuzz|lint|soak)$' --no-tests=ignore "$@"
else
  failed+=("gcc build")
fi

# 3. clang, ThreadSanitizer: the layers with threads of their own (io, rnic, rpcrdma, rpc,
#    nfs), the hostile peers, the tools and interop (tests/tsan.supp: what is unordered by
#    design); not perf, whose busy-polling processes starve each other at TSan's speed
if build build/tsan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DUIW_TSAN=ON \
  -DUIW_BENCH=OFF; then
  phase "ThreadSanitizer" build/tsan -L '^(io|rnic|rpcrdma|rpc|nfs|conformance|tools|interop)$' \
    -LE '^(siwvm|slow|fault|soak)$' --no-tests=ignore "$@"
else
  failed+=("ThreadSanitizer build")
fi

# 4. clang, ASan + UBSan, fuzzers: the whole suite
if build build/test -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DUIW_SANITIZE=ON -DUIW_FUZZ=ON -DUIW_FUZZ_SECONDS="${UIW_FUZZ_SECONDS:-20}"; then
  phase "ASan + UBSan, the whole suite" build/test -LE '^soak$' --no-tests=error "$@"
else
  failed+=("ASan + UBSan build")
fi

report_skips
if [ ${#failed[@]} -gt 0 ]; then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
if [ ${#skipped[@]} -gt 0 ]; then
  echo "test.sh: every build and test run passed, but ${#skipped[@]} skipped (listed above)"
else
  echo "test.sh: every build and test run passed, none skipped"
fi
