#!/bin/bash
# The guest's side of nfs.root_siwvm_deploy (test_siwvm_deploy.c): the Linux kernel's NFS
# client and nfs-common against uiw-nfsd deployed as knfsd is (its standard ports,
# registered with rpcbind, an exports file), reached as 10.0.2.2.
#
#   siwvm_deploy.sh RW_EXPORT RO_EXPORT RDMA(0|1)
#
# Every check prints a line the host reads ("KEY: ..."), and the script goes on after a
# failure so that the host sees every result; the host's share is /mnt/host, where the
# host's git binary (git) and the host's handshake files appear. The semantic checks run
# as user 1000, and as root, the same way in a directory of the guest's local tmpfs and in
# one of the export ("SEM local: ..." and "SEM nfs: ..." must match line for line).
set -u
rw=$1 ro=$2 rdma=$3
srv=10.0.2.2
H=/mnt/host
export LC_ALL=C TZ=UTC

# prefix KEY CMD...: CMD's output and errors, each line as "KEY: line", then "KEY: rc=N".
prefix() {
  local key=$1 rc
  shift
  "$@" >/tmp/out 2>&1
  rc=$?
  sed "s|^|$key: |" /tmp/out
  echo "$key: rc=$rc"
}

# wait_host FILE: until the host makes FILE in the share (two minutes at most)
wait_host() {
  local n=0
  while [ ! -e "$H/$1" ] && [ $n -lt 240 ]; do
    sleep 0.5
    n=$((n + 1))
  done
}

# at PHASE: the guest's uptime, for the log (where the time goes)
at() { echo "AT $1 $(cut -d' ' -f1 /proc/uptime)"; }

mkdir -p /mnt/x /mnt/y /mnt/r /mnt/v4
at start

prefix EXPORTS showmount -e $srv

# No version, no port: NFSv4.2 on port 2049, the export by its path, as with knfsd.
prefix MOUNT-4 mount -v -t nfs $srv:"$rw" /mnt/v4
prefix PROC-4 grep " /mnt/v4 " /proc/mounts
echo "written over NFSv4" >/mnt/v4/v4file
prefix V4-FLOCK flock -n /mnt/v4/v4file cat /mnt/v4/v4file
prefix UMOUNT-4 umount /mnt/v4

# The pseudo root: every export at its path; the one nested in the read-write export
# ($rw/pub, read-only) is a file system of its own there, and read-only.
prefix MOUNT-ROOT mount -t nfs $srv:/ /mnt/v4
prefix NEST-READ cat /mnt/v4"$rw"/pub/hello
prefix NEST-WRITE touch /mnt/v4"$rw"/pub/new
prefix NEST-OUTER touch /mnt/v4"$rw"/outer
prefix NEST-PROC grep " /mnt/v4$rw/pub " /proc/mounts
prefix UMOUNT-ROOT umount -R /mnt/v4

# Version 3 with no port: MOUNT and NFS through rpcbind.
prefix MOUNT-X mount -v -t nfs -o vers=3,nolock $srv:"$rw" /mnt/x
prefix PROC-X grep " /mnt/x " /proc/mounts
prefix DUMP showmount -a $srv

at mounted
# The read-only export: read, and a write refused.
prefix MOUNT-R mount -t nfs -o nolock $srv:"$ro" /mnt/r
prefix RO-READ cat /mnt/r/hello
prefix RO-WRITE touch /mnt/r/new
prefix UMOUNT-R umount /mnt/r

# RPC-over-RDMA with no port: 20049, RDMA's own; MOUNT through rpcbind.
if [ "$rdma" = 1 ]; then
  prefix MOUNT-Y mount -t nfs -o vers=3,proto=rdma,nolock $srv:"$rw" /mnt/y
  prefix PROC-Y grep " /mnt/y " /proc/mounts
  head -c 1048579 /dev/urandom >/tmp/rdma.bin
  echo "RDMA-SUM: $(sha256sum </tmp/rdma.bin | cut -c1-64)"
  prefix RDMA-CP cp /tmp/rdma.bin /mnt/y/rdma.bin
  umount /mnt/y
  prefix MOUNT-Y2 mount -t nfs -o vers=3,proto=rdma,nolock $srv:"$rw" /mnt/y
  echo "RDMA-BACK: $(sha256sum </mnt/y/rdma.bin | cut -c1-64)"
fi

at rdma-done
as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups env HOME=/tmp/home "$@"; }

# knfsd's file semantics as user 1000 in directory $1, printed as "SEM $2: ...".
cat >/tmp/sem.sh <<'EOF'
d=$1 tag=$2
umask 022
say() { echo "SEM $tag: $*"; }
# install -m 0444: the owner creates a file it may not write, then writes it
echo data >"$d/src"
install -m 0444 "$d/src" "$d/inst"
say "install rc=$? mode=$(stat -c %a "$d/inst") $(cat "$d/inst")"
# the owner writes through a descriptor after making the file 0444
(exec 4>"$d/own" && chmod 0444 "$d/own" && echo hello >&4)
say "owner-write rc=$? mode=$(stat -c %a "$d/own") $(cat "$d/own")"
# tar: read-only files, a hard link, symbolic links, a read-only directory
mkdir "$d/x"
tar -xpf /tmp/t.tar -C "$d/x"
say "tar-x rc=$?"
tar -df /tmp/t.tar -C "$d/x" >/tmp/tar-d.$tag 2>&1
rc=$?
while read -r l; do say "tar-d: $l"; done </tmp/tar-d.$tag
say "tar-d rc=$rc"
(cd "$d/x" && find . ! -type d -printf '%p %M %n %l\n' | sort) | while read -r l; do say "$l"; done
(cd "$d/x" && find . -type d -printf '%p %M\n' | sort) | while read -r l; do say "$l"; done
# git: a repository of 100 files and a commit (objects are written 0444, then linked)
if [ -x /mnt/host/git ]; then
  git() { GIT_EXEC_PATH=/mnt/host /mnt/host/git "$@"; }
  export GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.org GIT_COMMITTER_NAME=u
  export GIT_COMMITTER_EMAIL=u@example.org
  export GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'
  git init -q --template= -b main "$d/repo"
  say "git-init rc=$?"
  for i in $(seq 1 100); do echo "file $i" >"$d/repo/f$i"; done
  (cd "$d/repo" && git add . && git commit -q -m 'one hundred files')
  say "git-commit rc=$?"
  say "git HEAD $(git -C "$d/repo" rev-parse HEAD) files $(git -C "$d/repo" ls-files | wc -l)" \
    "changed $(git -C "$d/repo" status --porcelain | wc -l)"
  git -C "$d/repo" fsck --no-progress --strict >/tmp/fsck.$tag 2>&1
  rc=$?
  while read -r l; do say "git-fsck: $l"; done </tmp/fsck.$tag
  say "git-fsck rc=$rc"
fi
EOF
semantics() {
  local d=$1 tag=$2 m
  mkdir "$d/u" && chown 1000:1000 "$d/u"
  as_user bash /tmp/sem.sh "$d/u" "$tag" </dev/null
  # chown by root of setuid and setgid files
  for m in 4755 6755 2755 2745; do
    : >"$d/s$m"
    chmod $m "$d/s$m"
    chown 1000 "$d/s$m"
    echo "SEM $tag: chown $m -> $(stat -c %a "$d/s$m")"
    chmod $m "$d/s$m"
    chgrp 1000 "$d/s$m"
    echo "SEM $tag: chgrp $m -> $(stat -c %a "$d/s$m")"
  done
}

# the tarball, made by user 1000 on the guest's tmpfs
mkdir -p /tmp/home /tmp/t && chown 1000:1000 /tmp/home /tmp/t
as_user bash -c 'cd /tmp/t && umask 022 && echo a >a && echo b >b && mkdir d ro &&
  echo c >d/c && echo e >ro/e && chmod 0444 a d/c ro/e && chmod 0555 ro && ln a h &&
  ln -s a s && ln -s ../a d/up && tar -cf /tmp/t.tar a b d h s ro'
# both at once (they share nothing but the tarball), each one's lines together
mkdir /tmp/local
semantics /tmp/local local >/tmp/sem.local 2>&1 &
semantics /mnt/x nfs >/tmp/sem.nfs 2>&1
wait
cat /tmp/sem.local /tmp/sem.nfs
at semantics-done
echo "SEM-DONE"

# A directory moved out of the export (by the host) while this shell is in it and holds
# one of its files open: its handles must be stale now.
mkdir /mnt/x/moving && echo inside >/mnt/x/moving/f
cd /mnt/x/moving || exit 1
exec 3<f
echo "MOVE-NOW"
wait_host moved
prefix STALE-CREATE touch new
prefix STALE-LS ls .
prefix STALE-READ cat f
prefix STALE-STAT stat -c %i .
exec 3<&-
cd /
at stale-done

prefix UMOUNT-X umount /mnt/x
[ "$rdma" = 1 ] && prefix UMOUNT-Y umount /mnt/y
prefix DUMP-AFTER showmount -a $srv
echo "GUEST-END"
