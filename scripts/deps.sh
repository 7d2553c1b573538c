#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the tests and the tools need (only the
# missing ones; apt-get update runs once, and only if something is missing).
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang clang-tidy clang-format cppcheck
      libclang-rt-14-dev valgrind libisal-dev libtirpc-dev rpcsvc-proto libssl-dev tshark
      tcpdump iproute2 iptables rpcbind nfs-common python3 libibverbs-dev groff-base debhelper gnuplot-nox
      libnfs-dev git)
if [ "${UIW_DEPS_EXTRA:-}" != "" ]; then
  read -r -a extra <<<"$UIW_DEPS_EXTRA"
  pkgs+=("${extra[@]}")
fi
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
