#!/usr/bin/env bash
# The Linux soft-iWARP (siw) VM rig used by the interop tests (ctest label siwvm).
# The rig lives next to the clone, in ../shared/rigs/siwvm (override: UIW_SIWVM_RIG);
# its image is cached in /var/tmp/siwvm (SIWVM_DIR).
#
#   scripts/siwvm.sh status      is the rig usable? (QEMU, rig scripts, built image)
#   scripts/siwvm.sh ensure      build the rig if needed (root, network; ~4 min once),
#                                then as status
#   scripts/siwvm.sh boot        ensure, then boot the VM once and check siw0 is ACTIVE
#   scripts/siwvm.sh run CMD...  boot the VM and run CMD in it (the rig's run.sh)
#
# Exit status: 0 usable; 77 not available on this machine (no rig directory, not built
# and not root, or UIW_SIWVM=off); 1 broken: the build or the boot FAILED (said so on stderr, never a pass).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rig=${UIW_SIWVM_RIG:-$root/../shared/rigs/siwvm}
state=${SIWVM_DIR:-/var/tmp/siwvm}
log=${UIW_SIWVM_BUILD_LOG:-/var/tmp/siwvm-build.log}

say() { echo "siwvm: $*" >&2; }

available() {
  if [ "${UIW_SIWVM:-}" = off ]; then
    say "disabled (UIW_SIWVM=off)"
    return 77
  fi
  if [ ! -x "$rig/run.sh" ] || [ ! -x "$rig/build.sh" ]; then
    say "rig not found at $rig: not available on this machine"
    return 77
  fi
  return 0
}

built() {
  command -v qemu-system-x86_64 >/dev/null 2>&1 &&
    [ -s "$state/rootfs.ext4" ] && [ -s "$state/vmlinuz" ] && [ -s "$state/initrd.img" ]
}

status() {
  available || return $?
  if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
    say "QEMU not installed (scripts/siwvm.sh ensure installs it and builds the rig)"
    return 1
  fi
  if ! built; then
    say "rig image not built in $state (run scripts/siwvm.sh ensure)"
    return 1
  fi
  say "usable: rig $rig, image $state, accel $(cat "$state/accel" 2>/dev/null || echo tcg)"
  return 0
}

ensure() {
  available || return $?
  built && { status; return $?; }
  if [ "$(id -u)" != 0 ]; then
    say "the rig is not built and building it needs root: not available to this user"
    return 77
  fi
  # One build at a time (tests may ask concurrently).
  exec 9>"/var/tmp/siwvm-build.lock"
  flock -w 900 9 || { say "timed out waiting for another build"; return 1; }
  if ! built; then
    say "building the rig (log: $log) ..."
    if ! "$rig/build.sh" >"$log" 2>&1; then
      tail -n 30 "$log" >&2
      say "rig build FAILED (see $log)"
      return 1
    fi
  fi
  flock -u 9
  status
}

boot() {
  ensure || return $?
  local out tmplog
  tmplog=$(mktemp /tmp/siwvm-boot.XXXXXX)
  out=$(SIWVM_TIMEOUT=${SIWVM_TIMEOUT:-180} SIWVM_LOG=${SIWVM_LOG:-$tmplog} \
        "$rig/run.sh" rdma link show 2>&1)
  rm -f "$tmplog"
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
    ensure || exit $?
    exec "$rig/run.sh" "$@"
    ;;
  *)
    sed -n '2,14p' "$0"
    exit 2
    ;;
esac
