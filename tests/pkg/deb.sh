#!/bin/sh
# The Debian packages: `dpkg-buildpackage -us -uc -b` on a copy of the source tree (the
# tree itself stays clean), then the packages' contents and, unpacked together into an
# empty root (dpkg -x), that they work: the installed tools run, and an example builds
# against the -dev package's headers, pkg-config file and library and runs with the
# library package's shared object.
# Built with DEB_BUILD_OPTIONS="nocheck noopt nostrip" (quicker; the packaging is the
# same). Exits 77 (skipped) where dpkg-buildpackage or debhelper is missing.
# Environment: UIW_SOURCE_DIR.
set -eu
src=$UIW_SOURCE_DIR
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
    echo "dpkg-buildpackage or debhelper missing: not a Debian build machine (scripts/deps.sh)"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uiw-deb.XXXXXX")
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

# the tree as git sees it (tracked and new files, not ignored ones such as build/)
mkdir "$tmp/uiw"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$src" && git ls-files -co --exclude-standard | while read -r f; do
        if [ -e "$f" ]; then echo "$f"; fi
    done | xargs -d '\n' cp --parents -t "$tmp/uiw")
else
    (cd "$src" && tar cf - --exclude=./build .) | (cd "$tmp/uiw" && tar xf -)
fi
[ -f "$tmp/uiw/debian/control" ] || fail "no debian/ in the source tree"

(cd "$tmp/uiw" &&
    DEB_BUILD_OPTIONS="nocheck noopt nostrip parallel=$(nproc)" dpkg-buildpackage -us -uc -b \
        >"$tmp/build.log" 2>&1) || {
    tail -40 "$tmp/build.log"
    fail "dpkg-buildpackage"
}

ver=$(sed -n 's/^#define UIW_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' \
    "$src/include/uiw/version.h" | paste -sd.)
arch=$(dpkg --print-architecture)
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for p in libuiw0 libuiw-rpc0 libuiw-dev uiw-tools; do
    deb=$tmp/${p}_${ver}_$arch.deb
    [ -f "$deb" ] || fail "no $p package of version $ver: $(ls "$tmp")"
    dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/$p.files"
done
has() { # package path...
    p=$1
    shift
    for f in "$@"; do
        grep -qx "$f" "$tmp/$p.files" || fail "$p lacks $f"
    done
}
has libuiw0 "/usr/lib/$multi/libuiw.so.$ver" "/usr/lib/$multi/libuiw.so.${ver%%.*}"
has libuiw-dev /usr/include/uiw/verbs.h /usr/include/uiw/cm.h /usr/include/uiw/version.h \
    "/usr/lib/$multi/libuiw.so" "/usr/lib/$multi/libuiw.a" "/usr/lib/$multi/pkgconfig/uiw.pc" \
    /usr/share/man/man3/uiw_verbs.3.gz /usr/share/man/man3/uiw_post_send.3.gz \
    /usr/share/doc/libuiw-dev/examples/pingpong.c
has libuiw-rpc0 "/usr/lib/$multi/libuiw-rpc.so.$ver" "/usr/lib/$multi/libuiw-rpc.so.${ver%%.*}"
has libuiw-dev /usr/include/uiw/rpc.h /usr/include/uiw/rpcrdma.h \
    "/usr/lib/$multi/libuiw-rpc.so" "/usr/lib/$multi/libuiw-rpc.a" \
    "/usr/lib/$multi/pkgconfig/uiw-rpc.pc" /usr/share/man/man3/uiw_rpc.3.gz \
    /usr/share/man/man3/uiw_rpc_clnt_create.3.gz /usr/share/doc/libuiw-dev/examples/store.x
has uiw-tools /usr/bin/iwperf /usr/bin/iwping /usr/bin/rpcrdma-decode /usr/bin/uiw-selfcheck \
    /usr/share/man/man1/iwperf.1.gz /lib/systemd/system/uiw-nfsd.service /etc/uiw/exports
# the exports file is a conffile (the administrator's changes survive an upgrade), and the
# server checks it as installed: nothing exported, no error
dpkg-deb -I "$tmp/uiw-tools_${ver}_$arch.deb" conffiles | grep -qx /etc/uiw/exports ||
    fail "/etc/uiw/exports is not a conffile"
# each file in one package only, and the library package holds no development file
if sort "$tmp"/*.files | grep -v '/$' | uniq -d | grep .; then fail "files in two packages"; fi
for p in libuiw0 libuiw-rpc0; do
    if grep -q '\.so$\|\.a$\|/include/' "$tmp/$p.files"; then fail "dev files in $p"; fi
    dpkg-deb -f "$tmp/libuiw-dev_${ver}_$arch.deb" Depends | grep -q "$p (= $ver)" ||
        fail "libuiw-dev does not depend on this $p"
done
dpkg-deb -f "$tmp/libuiw-rpc0_${ver}_$arch.deb" Depends | grep -q "libuiw0 (>= $ver)" ||
    fail "libuiw-rpc0 does not depend on libuiw0: $(dpkg-deb -f "$tmp/libuiw-rpc0_${ver}_$arch.deb" Depends)"
for t in $(grep '^/usr/bin/.' "$tmp/uiw-tools.files"); do
    name=$(basename "$t")
    grep -q "/man[18]/$name\.[18]\.gz$" "$tmp/uiw-tools.files" || fail "no man page for $name"
done

# a clean root holding the three packages
root=$tmp/root
for p in libuiw0 libuiw-rpc0 libuiw-dev uiw-tools; do
    dpkg -x "$tmp/${p}_${ver}_$arch.deb" "$root"
done
"$root/usr/bin/uiw-selfcheck" >/dev/null || fail "the packaged uiw-selfcheck"
"$root/usr/bin/iwperf" --help >/dev/null || fail "the packaged iwperf --help"
# the default exports file exports nothing, and reads without an error
[ -z "$("$root/usr/bin/uiw-nfsd" --check-exports "$root/etc/uiw/exports")" ] ||
    fail "the packaged /etc/uiw/exports exports something"
grep -q '^ExecStart=/usr/bin/uiw-nfsd -e /etc/uiw/exports --state-dir /var/lib/uiw/nfsv4$' \
    "$root/lib/systemd/system/uiw-nfsd.service" || fail "the unit does not run uiw-nfsd"
libdir=$root/usr/lib/$multi
ex=$tmp/examples
cp -r "$root/usr/share/doc/libuiw-dev/examples" "$ex"
# libtirpc's pkg-config file and headers are the system's (libuiw-dev depends on
# libtirpc-dev): seen through the root, as pkg-config prefixes every path with it
mkdir -p "$root/usr/include"
ln -s /usr/include/tirpc "$root/usr/include/tirpc"
PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$libdir/pkgconfig:/usr/lib/$multi/pkgconfig \
    make -s -C "$ex" CFLAGS="-O1 -Wall -Wextra -Werror" || fail "the examples against the packages"
ldd_out=$(LD_LIBRARY_PATH=$libdir ldd "$ex/store")
echo "$ldd_out" | grep -q "libuiw-rpc.so.0 => $libdir/libuiw-rpc.so.0" || fail "store: $ldd_out"
ldd_out=$(LD_LIBRARY_PATH=$libdir ldd "$ex/pingpong")
echo "$ldd_out" | grep -q "libuiw.so.0 => $libdir/libuiw.so.0" || fail "pingpong: $ldd_out"
LD_LIBRARY_PATH=$libdir "$ex/pingpong" -n 100 >"$tmp/server.out" 2>&1 &
servers=$!
i=0
while ! grep -q "listening on port" "$tmp/server.out"; do
    i=$((i + 1))
    [ $i -lt 200 ] && kill -0 "$servers" 2>/dev/null || fail "pingpong server: $(cat "$tmp/server.out")"
    sleep 0.05
done
port=$(sed -n 's/^listening on port //p' "$tmp/server.out")
LD_LIBRARY_PATH=$libdir timeout 60 "$ex/pingpong" -n 100 -p "$port" 127.0.0.1 ||
    fail "pingpong client"
wait "$servers" || fail "pingpong server"
LD_LIBRARY_PATH=$libdir "$ex/store" >"$tmp/store.out" 2>&1 &
servers=$!
i=0
while ! grep -q "listening on port" "$tmp/store.out"; do
    i=$((i + 1))
    [ $i -lt 200 ] && kill -0 "$servers" 2>/dev/null || fail "store server: $(cat "$tmp/store.out")"
    sleep 0.05
done
port=$(sed -n 's/^listening on port //p' "$tmp/store.out")
LD_LIBRARY_PATH=$libdir timeout 60 "$ex/store" -p "$port" 127.0.0.1 || fail "store client"
kill -TERM "$servers"
wait "$servers" || fail "store server: $(cat "$tmp/store.out")"
echo "packages ok: $(cd "$tmp" && ls ./*.deb | tr '\n' ' ')"
