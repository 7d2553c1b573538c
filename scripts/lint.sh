#!/usr/bin/env bash
# The lint tests (ctest label lint), run from the source tree:
#   scripts/lint.sh format TOOL     every C file formatted as .clang-format says (TOOL: clang-format)
#   scripts/lint.sh cppcheck TOOL   cppcheck over src/, tools/, tests/, fuzz/, bench/, examples/
#   scripts/lint.sh man TOOL        every man page in man/ rendered by groff without a warning
# A missing tool or an empty file list is a failure, never a pass. The files are git's
# (tracked and untracked, not ignored) in a git tree, else every *.c and *.h outside build
# trees (directories holding a CMakeCache.txt) and generated code (xdr/gen).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
what=${1:-}
tool=${2:-}

fail() { echo "lint $what: FAILED: $*" >&2; exit 1; }

if [ -z "$tool" ] || [ ! -x "$(command -v "$tool" 2>/dev/null)" ]; then
  fail "the tool is not installed (${tool:-none found}; scripts/deps.sh installs it)"
fi

# files DIR...: the C sources under the given top-level directories, one per line.
files() {
  if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
    git ls-files -co --exclude-standard -- "${@/%//*.c}" "${@/%//*.h}" ||
      fail "git ls-files failed"
  else
    local prune=()
    while IFS= read -r cache; do
      prune+=(-path "./${cache%/CMakeCache.txt}" -prune -o)
    done < <(find . -name CMakeCache.txt -printf '%P\n')
    find "${@/#/./}" "${prune[@]}" -path ./xdr/gen -prune -o \
      -type f \( -name '*.c' -o -name '*.h' \) -print 2>/dev/null | sed 's|^\./||'
  fi | grep -v '^xdr/gen/' | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done | sort -u
}

dirs=()
for d in include src tools tests fuzz bench examples xdr; do [ -d "$d" ] && dirs+=("$d"); done

case $what in
  format)
    mapfile -t list < <(files "${dirs[@]}")
    [ ${#list[@]} -gt 0 ] || fail "no C files found under ${dirs[*]}"
    echo "lint format: ${#list[@]} files, $("$tool" --version | head -n 1)"
    "$tool" --dry-run -Werror "${list[@]}" || fail "files not formatted as .clang-format says"
    ;;
  cppcheck)
    mapfile -t list < <(files "${dirs[@]}" | grep '\.c$')
    [ ${#list[@]} -gt 0 ] || fail "no C files found under ${dirs[*]}"
    echo "lint cppcheck: ${#list[@]} files, $("$tool" --version)"
    "$tool" --quiet --error-exitcode=1 --enable=warning,portability,performance --inline-suppr \
      --std=c11 -D__GNUC__ -Iinclude -Isrc -Itests/harness --suppress=missingIncludeSystem \
      -j "$(nproc)" "${list[@]}" || fail "cppcheck found the problems above"
    ;;
  man)
    mapfile -t list < <(find man -maxdepth 1 -type f -name '*.[1-8]' 2>/dev/null | sort)
    [ ${#list[@]} -gt 0 ] || fail "no man pages found in man/"
    echo "lint man: ${#list[@]} pages"
    for page in "${list[@]}"; do
      out=$("$tool" -man -ww -z "$page" 2>&1)
      [ -z "$out" ] || fail "$page: $out"
    done
    ;;
  *)
    sed -n '2,8p' "$0" >&2
    exit 2
    ;;
esac
echo "lint $what: passed"
