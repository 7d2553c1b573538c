#!/usr/bin/env bash
# The Linux soft-iWARP (siw) VM rig used by the kernel interop tests (ctest label siwvm):
# the project's rig in scripts/siwvm/ (README there); its image is cached in
# /var/tmp/siwvm (SIWVM_DIR).
#
#   scripts/siwvm.sh status      is the rig usable here? (QEMU and a built, current image)
#   scripts/siwvm.sh ensure      build or update the image if needed (root; ~4 min the first
#                                time, from Debian's archive), then as status
#   scripts/siwvm.sh boot        ensure, then boot the VM once and check siw0 is ACTIVE
#   scripts/siwvm.sh run CMD...  ensure, then boot the VM and run CMD in it (scripts/siwvm/run.sh)
#
# Exit status: 0 usable; 77 not available on this machine (it cannot build or run the VM:
# not root and no image, not a Debian host, or UIW_SIWVM=off), which the tests report as
# skipped; 1 broken (a build or boot FAILED, said on stderr). With UIW_SIWVM_REQUIRED=1
# (CI sets it) "not available" is a failure too: status 1.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rig=${UIW_SIWVM_RIG:-$root/scripts/siwvm}
state=${SIWVM_DIR:-/var/tmp/siwvm}
log=${UIW_SIWVM_BUILD_LOG:-/var/tmp/siwvm-build.log}
lock=/var/tmp/siwvm-build.lock

say() { echo "siwvm: $*" >&2; }

# Not available here: a skip for a user, a failure where the rig is required.
unavailable() {
  if [ "${UIW_SIWVM_REQUIRED:-0}" = 1 ]; then
    say "REQUIRED (UIW_SIWVM_REQUIRED=1) but not available: $*"
    return 1
  fi
  say "not available on this machine: $*"
  say "(the siwvm tests skip; as root, scripts/siwvm.sh ensure builds the rig)"
  return 77
}

# The rig's sources, hashed: an image made by other sources is checked again by build.sh.
rig_sum() {
  cat "$rig/build.sh" "$rig/run.sh" "$rig"/guest/* 2>/dev/null | sha256sum | cut -d' ' -f1
}

built() {
  command -v qemu-system-x86_64 >/dev/null 2>&1 &&
    [ -s "$state/rootfs.ext4" ] && [ -s "$state/vmlinuz" ] && [ -s "$state/initrd.img" ]
}

current() {
  built && [ "$(cat "$state/rig.sum" 2>/dev/null)" = "$(rig_sum)" ]
}

status() {
  if [ "${UIW_SIWVM:-}" = off ]; then
    unavailable "disabled (UIW_SIWVM=off)"
    return
  fi
  if [ ! -x "$rig/build.sh" ] || [ ! -x "$rig/run.sh" ]; then
    say "rig scripts missing or not executable in $rig"
    return 1
  fi
  if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] && { say "QEMU not installed (scripts/siwvm.sh ensure installs it)"; return 1; }
    unavailable "QEMU is not installed and installing it needs root"
    return
  fi
  if ! built; then
    [ "$(id -u)" = 0 ] && { say "image not built in $state (scripts/siwvm.sh ensure)"; return 1; }
    unavailable "no image in $state and building it needs root"
    return
  fi
  if ! current; then
    say "image in $state predates the rig's sources (scripts/siwvm.sh ensure brings it up to date)"
    # usable all the same: the guest protocol is unchanged between versions
  fi
  say "usable: image $state, accel $(cat "$state/accel" 2>/dev/null || echo tcg)"
  return 0
}

ensure() {
  if [ "${UIW_SIWVM:-}" = off ]; then
    unavailable "disabled (UIW_SIWVM=off)"
    return
  fi
  current && { status; return; }
  if [ "$(id -u)" != 0 ]; then
    built && { status; return; }
    unavailable "the image is not built and building it needs root"
    return
  fi
  if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    built && { status; return; }
    unavailable "building the image needs a Debian host (apt-get, debootstrap)"
    return
  fi
  # One build at a time (several tests or engineers may ask at once).
  exec 9>"$lock"
  if ! flock -w 900 9; then
    say "timed out waiting for another build of the rig"
    return 1
  fi
  if ! current; then
    local sum
    sum=$(rig_sum)
    if built; then
      say "checking the image against the rig's sources (log: $log) ..."
    else
      say "building the rig (log: $log; about 4 minutes) ..."
    fi
    if ! "$rig/build.sh" >"$log" 2>&1; then
      tail -n 30 "$log" >&2
      say "rig build FAILED (see $log)"
      flock -u 9
      return 1
    fi
    echo "$sum" >"$state/rig.sum"
  fi
  flock -u 9
  status
}

boot() {
  ensure || return
  local out console
  console=$(mktemp "${TMPDIR:-/tmp}/siwvm-boot.XXXXXX")
  out=$(SIWVM_TIMEOUT=${SIWVM_TIMEOUT:-180} SIWVM_LOG=${SIWVM_LOG:-$console} \
        "$rig/run.sh" rdma link show 2>&1)
  rm -f "$console"
  if grep -q "siw0/1 state ACTIVE" <<<"$out"; then
    say "boot check passed: siw0 ACTIVE"
    return 0
  fi
  tail -n 30 <<<"$out" >&2
  say "boot check FAILED"
  return 1
}

case "${1:-status}" in
  status) status ;;
  ensure) ensure ;;
  boot) boot ;;
  run)
    shift
    ensure || exit
    exec "$rig/run.sh" "$@"
    ;;
  *)
    sed -n '2,17p' "$0"
    exit 2
    ;;
esac
