#!/usr/bin/env bash
# The lint tests (ctest label lint), run from the source tree:
#   scripts/lint.sh format TOOL     every C file formatted as .clang-format says (TOOL: clang-format)
#   scripts/lint.sh cppcheck TOOL   cppcheck over src/, tools/, tests/, fuzz/, bench/, examples/
#   scripts/lint.sh man TOOL        every man page in man/ rendered by groff without a warning
#   scripts/lint.sh rnic-api TOOL   the transport reaches the RNIC only through src/rpcrdma/nic.h
#                                   (TOOL: gcc, whose preprocessor drops the comments)
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
  rnic-api)
    # The RPC-over-RDMA transport (src/rpcrdma) and the RPC layer on it (src/rpc) reach the
    # RNIC only through the transport's own narrow interface, src/rpcrdma/nic.h, which
    # src/rpcrdma/nic_uiw.c alone implements over uiw (so that a backend over rdma-core can
    # replace that one file). Every other file of the two directories:
    #   - includes none of the RNIC's headers: <uiw/verbs.h>, <uiw/cm.h>, and the internal
    #     ones of src/rnic, src/io, src/wire ("rnic/...", "io/...", "wire/...");
    #   - names, outside comments and string literals, only these public identifiers
    #     (uiw_ or UIW_ then a letter or digit): those the transport's own public headers
    #     name (include/uiw/rpc.h and rpcrdma.h: the uiw_rpc*, uiw_rpcrdma*, uiw_svc_*,
    #     uiw_xdr_* API and its types and constants, with struct uiw_context_stats, the RNIC
    #     counters uiw_rpc_xprt_stats carries), those of the project-wide headers (error.h
    #     with the UIW_E_* codes of every err_*.def, export.h, version.h), the CRC32c routine
    #     of wire.h (uiw_crc32c, uiw_crc32c_impl: a checksum, no part of the RNIC), and the
    #     macros the files themselves #define (include guards). Everything else public is
    #     the RNIC's verbs, connection manager or wire API (verbs.h, cm.h, wire.h), and fails.
    # Internal (uiw__) names are the transport's own or src/common's: with no RNIC header
    # included, the compiler refuses any other.
    strip() { # FILE...: their C tokens without comments, string and character literals
      local f
      for f in "$@"; do "$tool" -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null || return 1; done |
        sed -E "s/\"([^\"\\\\]|\\\\.)*\"|'([^'\\\\]|\\\\.)*'//g"
    }
    pub='\b(uiw|UIW)_[A-Za-z0-9][A-Za-z0-9_]*'
    mapfile -t list < <(files src/rpcrdma src/rpc | grep -v '^src/rpcrdma/nic_uiw\.c$')
    [ ${#list[@]} -gt 0 ] || fail "no files found in src/rpcrdma and src/rpc"
    own=$(strip include/uiw/rpc.h include/uiw/rpcrdma.h include/uiw/error.h include/uiw/export.h \
      include/uiw/version.h include/uiw/err_*.def) || fail "$tool could not read the headers"
    defined=$(strip "${list[@]}") || fail "$tool could not read the sources"
    allowed=$( (
      grep -oE "$pub" <<<"$own"
      grep -oE "^#define[[:space:]]+$pub" <<<"$defined" | grep -oE "$pub"
      printf '%s\n' uiw_crc32c uiw_crc32c_impl
    ) | sort -u)
    [ "$(wc -l <<<"$allowed")" -gt 100 ] || fail "too few names in the transport's headers"
    echo "lint rnic-api: ${#list[@]} files, $(wc -l <<<"$allowed") names allowed"
    bad=0
    for f in "${list[@]}"; do
      while IFS= read -r l; do
        echo "$f: includes the RNIC's API: $l" >&2
        bad=1
      done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](uiw/(verbs|cm)\.h|(rnic|io|wire)/)' "$f")
      while IFS= read -r n; do
        echo "$f: names $n, of the RNIC's API (only nic_uiw.c may)" >&2
        bad=1
      done < <(strip "$f" | grep -oE "$pub" | sort -u | grep -vxF "$allowed")
    done
    [ $bad = 0 ] || fail "the transport names the RNIC's API outside src/rpcrdma/nic_uiw.c"
    ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
echo "lint $what: passed"
