#!/usr/bin/env bash
# Builds the siw VM rig (see README.md here) into SIWVM_DIR (default /var/tmp/siwvm).
# Idempotent: each step runs only when its product is missing or out of date, so a second
# run costs a boot test only, and an image built by an earlier rig of the same layout is
# reused (its guest scripts are replaced when they differ from ours). Root; reaches
# Debian's archive through the mirror apt on this host is configured with.
#
#   SIWVM_REBUILD=1   start again from an empty tree
#   SIWVM_NO_BOOT=1   skip the final boot test
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${SIWVM_DIR:-/var/tmp/siwvm}
tree=$dir/rootfs
suite=bookworm
# What the guest carries: the kernel, rdma-core's siw provider and tools (rping, perftest),
# the kernel NFS server and client, and a few tools for debugging a run.
guest_pkgs=(linux-image-amd64 rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
            iproute2 kmod procps tcpdump iputils-ping netcat-openbsd
            nfs-kernel-server nfs-common rpcbind)
host_pkgs=(qemu-system-x86 debootstrap e2fsprogs)
# siw's compile-time switches (const globals in siw_main.c) that the build makes module
# parameters, so a test picks them per boot (SIWVM_SIWOPTS).
siw_bool_params=(mpa_crc_required mpa_crc_strict peer_to_peer zcopy_tx try_gso
                 loopback_enabled siw_tcp_nagle)

start=$SECONDS
step() { echo "siwvm-build: [$((SECONDS - start)) s] $*"; }
die() { echo "siwvm-build: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, apt-get)"
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  die "needs a Debian host (apt-get, dpkg)"
fi
mkdir -p "$dir"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

# The archive this host's apt uses for $suite (nothing hard-coded here).
archive() {
  local uri
  uri=$(apt-get indextargets --format '$(REPO_URI)' "Release: $suite" 'Created-By: Packages' |
        head -n 1)
  [ -n "$uri" ] || die "apt on this host has no $suite archive configured"
  echo "${uri%/}"
}

# in_tree CMD...: run CMD chrooted in the tree with /proc and /sys mounted in a private
# mount namespace (the mounts vanish with it).
in_tree() {
  unshare -m --propagation private sh -ec 'root=$1; shift
    mount -t proc proc "$root/proc"; mount -t sysfs sys "$root/sys"
    exec chroot "$root" "$@"' in_tree "$tree" "$@"
}

# guest_apt PKG...: install into the tree from the host's archive, then leave no apt
# source, index or cache behind (the guest never reaches a network).
guest_apt() {
  local uri; uri=$(archive)
  echo "deb $uri $suite main" >"$tree/etc/apt/sources.list"
  cp -L /etc/resolv.conf "$tree/etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$tree/usr/sbin/policy-rc.d"   # no daemons at install
  chmod 755 "$tree/usr/sbin/policy-rc.d"
  step "guest packages: $*"
  if ! { in_tree apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive in_tree apt-get install -y -qq --no-install-recommends \
           -o Dpkg::Options::=--force-confold "$@" &&
         in_tree apt-get clean; } >>"$dir/apt.log" 2>&1; then
    tail -n 30 "$dir/apt.log" >&2
    die "installing guest packages failed (log: $dir/apt.log)"
  fi
  rm -rf "$tree/etc/apt/sources.list" "$tree/var/lib/apt/lists/"* "$tree/usr/sbin/policy-rc.d" \
    "$tree/etc/resolv.conf" "$tree/usr/share/doc/"* "$tree/usr/share/man/"*
}

# 1. Host tools.
need=()
for p in "${host_pkgs[@]}"; do installed "$p" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  step "host packages: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
    >/dev/null
fi

# 2. The guest tree: debootstrap's minimal base, an initrd that can mount a virtio disk,
#    then the guest packages. .rootfs-ok marks a finished tree.
if [ "${SIWVM_REBUILD:-0}" = 1 ] || [ ! -e "$dir/.rootfs-ok" ]; then
  findmnt -rn -o TARGET | grep -q "^$tree/" && die "something is mounted under $tree"
  rm -rf "$tree" "$dir/.rootfs-ok" "$dir/rootfs.ext4" "$dir/apt.log"
  step "debootstrap $suite (minbase)"
  debootstrap --variant=minbase "$suite" "$tree" "$(archive)" >"$dir/debootstrap.log" 2>&1 ||
    { tail -n 20 "$dir/debootstrap.log" >&2; die "debootstrap failed"; }
  mkdir -p "$tree/etc/initramfs-tools/conf.d"
  echo 'MODULES=list' >"$tree/etc/initramfs-tools/conf.d/siwvm"
  printf '%s\n' virtio_pci virtio_blk ext4 >>"$tree/etc/initramfs-tools/modules"
  # initramfs-tools first, so the kernel's initrd is made with the list above
  guest_apt initramfs-tools
  guest_apt "${guest_pkgs[@]}"
  echo siwvm >"$tree/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 siwvm\n' >"$tree/etc/hosts"
  touch "$dir/.rootfs-ok"
fi
# Packages added to guest_pkgs after the tree was made.
need=()
for p in "${guest_pkgs[@]}"; do
  chroot "$tree" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  guest_apt "${need[@]}"
  touch "$dir/.rootfs-ok"
fi

# 3. siw.ko. Debian builds its kernels without CONFIG_RDMA_SIW, so the module is built out of
#    tree from Debian's linux-source of exactly the guest kernel's version, against the
#    matching headers, with siw's switches turned into module parameters. Rebuilt when the
#    module lacks one of the parameters the tests use.
kver=$(ls "$tree/lib/modules" | sort -V | tail -n 1)
echo "$kver" >"$dir/kver"
siwko=$tree/lib/modules/$kver/updates/siw.ko
siw_ok() {
  local info
  info=$(chroot "$tree" modinfo -k "$kver" siw 2>/dev/null) || return 1
  for p in "${siw_bool_params[@]}" mpa_version; do
    grep -q "^parm: *$p:" <<<"$info" || return 1
  done
}
if ! siw_ok; then
  kpkg=$(chroot "$tree" dpkg-query -W -f='${Version}' "linux-image-$kver")
  src=linux-source-${kver%%.0-*}   # 6.1.0-50-amd64 -> linux-source-6.1
  step "siw.ko from $src $kpkg"
  if ! { [ "$(dpkg-query -W -f='${Version}' "$src" 2>/dev/null)" = "$kpkg" ] &&
         installed "linux-headers-$kver"; }; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "linux-headers-$kver=$kpkg" "$src=$kpkg" make xz-utils >/dev/null
  fi
  work=$dir/siw-src
  rm -rf "$work"
  mkdir -p "$work"
  tar -xJf "/usr/src/$src.tar.xz" -C "$work" "$src/drivers/infiniband/sw/siw"
  work=$work/$src/drivers/infiniband/sw/siw
  sed -i 's/^extern const bool /extern bool /' "$work/siw.h"
  sed -i -E 's/^const bool ([a-z_]+)/bool \1/' "$work/siw_main.c"
  {
    for p in "${siw_bool_params[@]}"; do echo "module_param($p, bool, 0644);"; done
    echo "module_param(mpa_version, byte, 0644);"
  } >>"$work/siw_main.c"
  make -C "/usr/src/linux-headers-$kver" M="$work" CONFIG_RDMA_SIW=m modules \
    >"$dir/siw-build.log" 2>&1 || { tail -n 30 "$dir/siw-build.log" >&2; die "siw.ko failed"; }
  install -D -m 644 "$work/siw.ko" "$siwko"
  chroot "$tree" depmod "$kver"
  siw_ok || die "siw.ko lacks the module parameters"
fi

# 4. Kernel and initrd for QEMU's direct boot; every module the guest loads must exist.
cp -u "$tree/boot/vmlinuz-$kver" "$dir/vmlinuz"
cp -u "$tree/boot/initrd.img-$kver" "$dir/initrd.img"
for m in siw ib_core iw_cm rdma_cm ib_uverbs rdma_ucm qemu_fw_cfg virtio_net 9p 9pnet_virtio \
         rpcrdma nfsd nfs nfsv3 nfsv4; do
  chroot "$tree" modinfo -k "$kver" -F filename "$m" >/dev/null 2>&1 || die "guest module $m missing"
done
chroot "$tree" modinfo -k "$kver" siw >"$dir/modinfo-siw.txt"

# 5. The disk image. Made again when the tree or siw.ko is newer than it, or when the guest
#    scripts baked into it differ from ours (read straight from the image with debugfs).
#    Written beside and renamed, so a VM running from the old image keeps it.
install -m 755 "$here/guest/init" "$tree/usr/local/sbin/siwvm-init"
install -m 755 "$here/guest/nfsd" "$tree/usr/local/sbin/siwvm-nfsd"
img=$dir/rootfs.ext4
baked_same() {
  local f
  for f in init nfsd; do
    debugfs -R "cat /usr/local/sbin/siwvm-$f" "$img" 2>/dev/null | cmp -s - "$here/guest/$f" ||
      return 1
  done
}
if [ ! -s "$img" ] || [ "$dir/.rootfs-ok" -nt "$img" ] || [ "$siwko" -nt "$img" ] ||
   ! baked_same; then
  size=$(($(du -sm "$tree" | cut -f1) + 256))
  step "disk image (${size} MiB)"
  rm -f "$img.new"
  mkfs.ext4 -q -F -L siwroot -d "$tree" "$img.new" "${size}M"
  mv -f "$img.new" "$img"
fi

# 6. The accelerator, probed once: KVM only if a guest really boots with it (a nested or
#    paravirtual KVM may hang the guest), else TCG.
if [ ! -s "$dir/accel" ]; then
  accel=tcg
  if [ -w /dev/kvm ] &&
     SIWVM_ACCEL=kvm SIWVM_TIMEOUT=45 "$here/run.sh" true >"$dir/kvm-probe.log" 2>&1; then
    accel=kvm
  fi
  echo "$accel" >"$dir/accel"
  step "accelerator: $accel"
fi

# 7. Boot test.
if [ "${SIWVM_NO_BOOT:-0}" != 1 ]; then
  step "boot test ($(cat "$dir/accel"))"
  out=$("$here/run.sh" sh -c 'uname -r; rdma link show' 2>&1) ||
    { echo "$out" | tail -n 30 >&2; die "boot test failed"; }
  grep -q 'siw0/1 state ACTIVE' <<<"$out" || { echo "$out" | tail -n 30 >&2; die "no siw0"; }
fi
step "ready: $dir"
