#!/usr/bin/env bash
# run.sh CMD [ARG...]: boot the siw VM (image in SIWVM_DIR, made by build.sh), run CMD in
# the guest once eth0 and siw0 are up, copy the guest's console to standard output line by
# line as it arrives, power the VM off and exit with CMD's status: 124 when the host-side
# limit ended the VM, 125 when the guest never reported a status (it did not boot, or
# crashed).
#
# Environment (all optional):
#   SIWVM_TIMEOUT  seconds for the whole VM, boot included (default 300); the guest gives
#                  CMD ten seconds less
#   SIWVM_SIWOPTS  siw module parameters, comma separated: mpa_crc_required=1,
#                  mpa_version=1, peer_to_peer=1, ...
#   SIWVM_HOSTFWD  slirp forwards, space separated: "tcp:127.0.0.1:HOSTPORT-:GUESTPORT"
#   SIWVM_SHARE    a host directory the guest mounts at /mnt/host (9p)
#   SIWVM_LOG      the console log file (default SIWVM_DIR/console.log; give each
#                  concurrent VM its own)
#   SIWVM_ACCEL    kvm or tcg (default: what build.sh found to work)
#   SIWVM_MEM (MiB, 1024), SIWVM_SMP (2), SIWVM_APPEND (kernel arguments),
#   SIWVM_QEMU_ARGS (QEMU arguments)
#
# The guest (guest/init) reaches this host's 127.0.0.1:PORT as 10.0.2.2:PORT and is
# 10.0.2.15 itself. The disk is a snapshot: guest writes vanish, and any number of VMs can
# run from one image at once.
set -uo pipefail
dir=${SIWVM_DIR:-/var/tmp/siwvm}
if [ $# -eq 0 ]; then
  sed -n '2,24p' "$0" >&2
  exit 2
fi
for f in rootfs.ext4 vmlinuz initrd.img; do
  [ -s "$dir/$f" ] || { echo "siwvm: no $dir/$f: build the rig first (build.sh)" >&2; exit 2; }
done
limit=${SIWVM_TIMEOUT:-300}
console=${SIWVM_LOG:-$dir/console.log}
accel=${SIWVM_ACCEL:-$(cat "$dir/accel" 2>/dev/null || echo tcg)}

# The command reaches the guest as a file through QEMU's fw_cfg: no quoting limits.
cmdfile=$(mktemp "${TMPDIR:-/tmp}/siwvm-cmd.XXXXXX")
printf '%q ' "$@" >"$cmdfile"
echo >>"$cmdfile"

args=(-nodefaults -no-user-config -nographic -no-reboot -monitor none
      -serial "file:$console" -m "${SIWVM_MEM:-1024}" -smp "${SIWVM_SMP:-2}")
if [ "$accel" = kvm ]; then
  args+=(-enable-kvm -cpu host)
else
  args+=(-accel tcg,thread=multi -cpu max)
fi
# qboot boots a kernel directly, faster than SeaBIOS; the NIC's option ROM is left out
[ -e /usr/share/qemu/qboot.rom ] && args+=(-bios qboot.rom)
netdev=user,id=net0
for rule in ${SIWVM_HOSTFWD:-}; do netdev+=",hostfwd=$rule"; done
# no_timer_check: under TCG on a busy host the kernel's IO-APIC timer check can stall the
# boot for minutes (seen at a load of 16 on two cores)
kargs="console=ttyS0 root=/dev/vda rw quiet panic=-1 no_timer_check"
kargs+=" init=/usr/local/sbin/siwvm-init"
kargs+=" siwvm.timeout=$((limit - 10))"
[ -n "${SIWVM_SIWOPTS:-}" ] && kargs+=" siwvm.siwopts=$SIWVM_SIWOPTS"
if [ -n "${SIWVM_SHARE:-}" ]; then
  args+=(-virtfs "local,path=$SIWVM_SHARE,mount_tag=host,security_model=none")
  kargs+=" siwvm.share=1"
fi
args+=(-kernel "$dir/vmlinuz" -initrd "$dir/initrd.img" -append "$kargs ${SIWVM_APPEND:-}"
       -drive "file=$dir/rootfs.ext4,format=raw,if=virtio,snapshot=on"
       -netdev "$netdev" -device virtio-net-pci,netdev=net0,romfile=
       -fw_cfg "name=opt/siwvm/cmd,file=$cmdfile")

: >"$console"
# shellcheck disable=SC2086 # SIWVM_QEMU_ARGS is a list of words
timeout -k 5 "$limit" qemu-system-x86_64 "${args[@]}" ${SIWVM_QEMU_ARGS:-} </dev/null &
vm=$!
trap 'kill "$vm" 2>/dev/null; rm -f "$cmdfile"' EXIT
trap 'exit 130' INT TERM
tail -n +1 -F --pid="$vm" "$console" 2>/dev/null | sed -u 's/\r$//'
wait "$vm"
qemu_rc=$?

rc=$(tr -d '\r' <"$console" | sed -n 's/^=== SIWVM_EXIT_STATUS=\([0-9]*\) ===$/\1/p' | tail -n 1)
if [ -z "$rc" ]; then
  if [ "$qemu_rc" = 124 ]; then rc=124; else rc=125; fi
  echo "siwvm: the guest reported no exit status (QEMU status $qemu_rc): $rc" >&2
fi
exit "$rc"
