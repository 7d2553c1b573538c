#!/bin/sh
# The build tree installed into a temporary prefix and used there as a user would:
#   install.sh layout    what `cmake --install --prefix` puts where: versioned shared
#                        libraries (SONAME) and static ones, the headers in include/uiw,
#                        pkg-config files that name the prefix, every tool with a man page,
#                        the examples;
#   install.sh shared    the installed examples built out of tree with pkg-config (their
#                        Makefile) against the shared libraries, and run on loopback
#                        (store, the rpcgen program, over libuiw-rpc when it is built);
#   install.sh static    the same linked with the static libraries (pkg-config --static).
# Environment (set by tests/CMakeLists.txt): UIW_BINARY_DIR, UIW_CC (the build's compiler),
# UIW_EXAMPLE_FLAGS (the build's sanitizer flags, which a program linking its libraries
# needs too).
set -eu
what=$1
bin=$UIW_BINARY_DIR
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uiw-install.XXXXXX")
servers=""
cleanup() {
    for p in $servers; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

prefix=$tmp/prefix
cmake --install "$bin" --prefix "$prefix" >"$tmp/install.log" || {
    cat "$tmp/install.log"
    fail "cmake --install"
}
pc=$(find "$prefix" -name uiw.pc)
[ -n "$pc" ] || fail "no uiw.pc installed"
export PKG_CONFIG_PATH="$(dirname "$pc")"
libdir=$(pkg-config --variable=libdir uiw)
# the RPC layer's library, in a build that has it (libtirpc and rpcgen present)
rpc=false
if [ -e "$bin/libuiw-rpc.so" ]; then rpc=true; fi

case $what in
layout)
    [ "$(pkg-config --variable=prefix uiw)" = "$prefix" ] || fail "uiw.pc names another prefix"
    [ -d "$libdir" ] && [ "$(dirname "$pc")" = "$libdir/pkgconfig" ] || fail "libdir $libdir"
    so=$(ls "$libdir"/libuiw.so.*.*.*)
    ver=$(pkg-config --modversion uiw)
    [ "$so" = "$libdir/libuiw.so.$ver" ] || fail "shared library $so, version $ver"
    soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    [ "$soname" = "libuiw.so.${ver%%.*}" ] || fail "SONAME $soname"
    [ "$(readlink "$libdir/$soname")" = "$(basename "$so")" ] || fail "$soname link"
    [ -e "$libdir/libuiw.so" ] && [ -f "$libdir/libuiw.a" ] || fail "libuiw.so / libuiw.a"
    for h in error.h export.h version.h wire.h verbs.h cm.h; do
        [ -f "$prefix/include/uiw/$h" ] || fail "include/uiw/$h missing"
    done
    [ "$(pkg-config --cflags uiw | sed 's/ *$//')" = "-I$prefix/include" ] || fail "cflags $(pkg-config --cflags uiw)"
    hcflags=$(pkg-config --cflags uiw)
    if $rpc; then
        pkg-config --exists uiw-rpc || fail "no uiw-rpc.pc installed"
        so=$(ls "$libdir"/libuiw-rpc.so.*.*.*)
        [ "$so" = "$libdir/libuiw-rpc.so.$(pkg-config --modversion uiw-rpc)" ] || fail "$so"
        soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
        [ "$soname" = "libuiw-rpc.so.$(pkg-config --modversion uiw | cut -d. -f1)" ] ||
            fail "SONAME $soname"
        [ "$(readlink "$libdir/$soname")" = "$(basename "$so")" ] || fail "$soname link"
        [ -e "$libdir/libuiw-rpc.so" ] && [ -f "$libdir/libuiw-rpc.a" ] ||
            fail "libuiw-rpc.so / libuiw-rpc.a"
        # it calls libuiw's API, not a copy of the stack of its own
        readelf -d "$so" | grep -q 'NEEDED.*\[libuiw.so.0\]' || fail "libuiw-rpc.so needs no libuiw.so.0"
        pkg-config --print-requires uiw-rpc | grep -qx uiw || fail "uiw-rpc.pc requires no uiw"
        pkg-config --print-requires uiw-rpc | grep -qx libtirpc || fail "uiw-rpc.pc requires no libtirpc"
        pkg-config --libs uiw-rpc | grep -q -- '-luiw-rpc' || fail "libs $(pkg-config --libs uiw-rpc)"
        for h in rpc.h rpcrdma.h; do
            [ -f "$prefix/include/uiw/$h" ] || fail "include/uiw/$h missing"
        done
        for p in uiw_rpc.3 uiw_rpc_clnt_create.3 uiw_rpc_svc_create.3 uiw_rpcrdma_decode.3; do
            [ -f "$prefix/share/man/man3/$p" ] || fail "man3/$p missing"
        done
        [ -x "$prefix/bin/rpcrdma-ping" ] || fail "bin/rpcrdma-ping missing"
        for f in store.x store.c; do
            [ -f "$prefix/share/doc/uiw/examples/$f" ] || fail "examples/$f missing"
        done
        hcflags=$(pkg-config --cflags uiw-rpc)
    fi
    # every installed header compiles on its own, in C and as C++ if there is a compiler
    for h in "$prefix"/include/uiw/*.h; do
        printf '#include <uiw/%s>\n' "$(basename "$h")" >"$tmp/h.c"
        $UIW_CC -std=c11 -Wall -Wextra -Werror -fsyntax-only $hcflags \
            "$tmp/h.c" || fail "$h does not compile alone"
    done
    # every tool, with its man page
    n=0
    for t in "$prefix"/bin/*; do
        name=$(basename "$t")
        [ -x "$t" ] || fail "bin/$name not executable"
        # section 1, or 8 for a daemon
        [ -f "$prefix/share/man/man1/$name.1" ] || [ -f "$prefix/share/man/man8/$name.8" ] ||
            fail "no man page for $name"
        n=$((n + 1))
    done
    for t in iwperf iwping rpcrdma-decode uiw-selfcheck; do
        [ -x "$prefix/bin/$t" ] || fail "bin/$t missing"
    done
    "$prefix/bin/uiw-selfcheck" >/dev/null || fail "installed uiw-selfcheck"
    for p in uiw_verbs.3 uiw_cm.3; do
        [ -f "$prefix/share/man/man3/$p" ] || fail "man3/$p missing"
    done
    for f in Makefile pingpong.c rdma_rw.c; do
        [ -f "$prefix/share/doc/uiw/examples/$f" ] || fail "examples/$f missing"
    done
    echo "layout ok: $n tools, $so ($soname)"
    ;;
shared | static)
    ex=$tmp/examples
    cp -r "$prefix/share/doc/uiw/examples" "$ex"
    flags="-O1 -g -Wall -Wextra -Werror ${UIW_EXAMPLE_FLAGS:-}"
    programs="pingpong rdma_rw"
    if $rpc; then programs="$programs store"; fi
    if [ "$what" = shared ]; then
        make -s -C "$ex" CC="$UIW_CC" CFLAGS="$flags" \
            LDFLAGS="${UIW_EXAMPLE_FLAGS:-} -Wl,-rpath,$libdir" $programs || fail "make"
        ldd "$ex/pingpong" | grep -q "libuiw.so.0 => $libdir/libuiw.so.0" ||
            fail "pingpong does not use the installed libuiw.so: $(ldd "$ex/pingpong")"
        if $rpc; then
            ldd "$ex/store" | grep -q "libuiw-rpc.so.0 => $libdir/libuiw-rpc.so.0" ||
                fail "store does not use the installed libuiw-rpc.so: $(ldd "$ex/store")"
        fi
    else
        make -s -C "$ex" CC="$UIW_CC" CFLAGS="$flags" LDFLAGS="${UIW_EXAMPLE_FLAGS:-}" \
            UIW_LIBS="$(pkg-config --static --libs uiw | sed "s/-luiw/-l:libuiw.a/")" \
            UIW_RPC_LIBS="$(pkg-config --static --libs uiw-rpc 2>/dev/null |
                sed "s/-luiw-rpc/-l:libuiw-rpc.a/; s/-luiw /-l:libuiw.a /")" \
            $programs || fail "make (static)"
        for p in $programs; do
            if ldd "$ex/$p" | grep -q libuiw; then fail "$p links a libuiw shared library"; fi
        done
    fi
    # run: each example as a server (it prints its port), then as its client
    run() { # name server-args -- client-args
        name=$1
        shift
        out=$tmp/$name.server
        "$ex/$name" "$@" >"$out" 2>&1 &
        pid=$!
        servers="$servers $pid"
        i=0
        while ! grep -q "listening on port" "$out"; do
            i=$((i + 1))
            [ $i -lt 200 ] && kill -0 $pid 2>/dev/null || {
                cat "$out"
                fail "$name server did not start"
            }
            sleep 0.05
        done
        port=$(sed -n 's/^listening on port //p' "$out")
        timeout 120 "$ex/$name" -p "$port" "$@" 127.0.0.1 || fail "$name client"
        wait $pid || {
            cat "$out"
            fail "$name server"
        }
        cat "$out"
    }
    run pingpong -n 200 -s 4096
    run rdma_rw -s 262144
    grep -q "wrote and read 262144 bytes" "$tmp/rdma_rw.server" || fail "rdma_rw server"
    if $rpc; then
        # store serves until SIGTERM; its client PUTs and GETs blobs through rpcgen's stubs
        out=$tmp/store.server
        "$ex/store" >"$out" 2>&1 &
        pid=$!
        servers="$servers $pid"
        i=0
        while ! grep -q "listening on port" "$out"; do
            i=$((i + 1))
            [ $i -lt 200 ] && kill -0 $pid 2>/dev/null || {
                cat "$out"
                fail "store server did not start"
            }
            sleep 0.05
        done
        port=$(sed -n 's/^listening on port //p' "$out")
        for size in 262144 100; do
            timeout 120 "$ex/store" -p "$port" -s $size 127.0.0.1 >"$tmp/store.client" ||
                fail "store client -s $size: $(cat "$tmp/store.client")"
            cat "$tmp/store.client"
            grep -q "put and got $size bytes over RPC-over-RDMA Version 2" "$tmp/store.client" ||
                fail "store client -s $size"
        done
        # the large blob went by RDMA: a Read chunk for PUT, a Reply chunk for GET
        grep -q "(1 Read chunks, 1 Reply chunks)" "$tmp/store.client" && fail "100 bytes by RDMA"
        kill -TERM $pid
        wait $pid || {
            cat "$out"
            fail "store server"
        }
        cat "$out"
        grep -q "stored 262144 bytes" "$out" && grep -q "stored 100 bytes" "$out" ||
            fail "store server"
        grep -q "served .* calls on 2 connections (1 Read chunks, 1 Reply chunks)" "$out" ||
            fail "store server: not one Read chunk and one Reply chunk"
    fi
    echo "$what examples ok"
    ;;
*)
    fail "usage: install.sh layout|shared|static"
    ;;
esac
