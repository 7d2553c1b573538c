/*
 * NFS against the Linux kernel in the siw VM rig (scripts/siwvm.sh), one VM boot for all
 * of it:
 *  - the kernel's NFS client mounts uiw-nfsd running on this host (vers=3,
 *    mountproto=tcp, nolock; the guest reaches this host's loopback as 10.0.2.2) with
 *    proto=tcp and, in a tree with the RPC layer, proto=rdma (siw's defaults), then
 *    proto=rdma again with siw's mpa_crc_required=1; each time it writes files from 0
 *    bytes to 16 MiB with dd and cp, mounts again and reads them back (the guest compares
 *    SHA-256), and this host checks the same SHA-256 in the export; `ls -l` of a
 *    directory of 1,000 entries made through the mount, mkdir, rename, rm, ln -s,
 *    truncate and chmod, each checked in the export; a clean umount;
 *  - the same with NFSv4 (uiw-nfsd with version 4 on, its export mounted by its path,
 *    which NFSv4 finds under the pseudo root), with no version asked for, so that 4.2 is
 *    negotiated (/proc/mounts says vers=4.2): over TCP, and over RDMA with siw's defaults
 *    (files up to 1 MiB); then over RDMA with vers=4.1 and siw's mpa_crc_required=1,
 *    whose sessions' back channel is the connection's backward direction: the server's
 *    CB_NULL probes go over RDMA and are answered;
 *  - a read delegation recalled: the guest's 4.1 mount over RDMA reads a 64 MiB file,
 *    which uiw-nfs on this host then rewrites; the server recalls the guest's delegation
 *    with one CB_RECALL over RDMA and gets one DELEGRETURN, and the guest's next read
 *    shows the new bytes;
 *  - NFSv4 locks, after each NFSv4 mount's changes: while the guest holds a flock of a
 *    file, `uiw-nfs lock` of it on this host waits, and holds it once the guest lets go;
 *    on the 4.2 mount over TCP, the same with an fcntl (POSIX) lock of bytes 100 to 199
 *    (perl in the guest; the client sends a LOCK of that range), beside which this host's
 *    lock of bytes 0 to 99 is granted at once;
 *  - a restart of uiw-nfsd (same ports, same state directory, a 15 s lease) while the
 *    guest's 4.1 mount over RDMA holds a flock: the guest's client reclaims its open and
 *    its lock in the grace period (the server's counters show both), its flock holder
 *    still holds it, and `uiw-nfs lock` on this host waits until it lets go;
 *  - meanwhile uiw-nfs on this host puts and gets files (--verify: SHA-256 of both ends)
 *    to and from the guest kernel's NFS server (siwvm-nfsd), lists a directory of 1,000
 *    entries and removes what it put: over TCP and, with the RPC layer, over RDMA, where
 *    its first message is Version Two, the kernel answers ERR_VERS and it goes on in
 *    Version One (its verbose output says so); RDMA again with CRC required by siw.
 *    The same in NFSv3 (?version=3, the export by its path through MOUNT) and in
 *    NFSv4.1 (?version=4.1: a session, the export being knfsd's pseudo root, fsid=0),
 *    over TCP and over RDMA.
 * Exits 77 (skipped) where the rig is not available; a rig that fails fails the test.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interop.h"
#include "nfs_util.h"
#include "test.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>
#endif

/* uiw-nfsd's exports file: v->dir at its path (NFSv4: under the pseudo root) */
#define EXPORTS "%s *(rw,no_root_squash,insecure)\n"

/* uiw-nfs with options and a command (words), then one or two quoted arguments. */
static int uiw_nfs(const char *words, const char *a, const char *b, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' %s '%s' %s%s%s", UIW_NFS, words, a, b ? "'" : "", b ? b : "",
             b ? "'" : "");
    return it_run(cmd, 1, 300, out);
}

static void wait_marker(const char *console, const char *runlog, const char *m, int pid, int s)
{
    if (!it_wait_for(console, m, pid, s)) {
        char *log = it_slurp(runlog);
        uiw_test_fail(__FILE__, __LINE__, "no %s from the guest:\n%s", m, log);
    }
}

static void touch(const char *dir, const char *name)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    fclose(f);
}

/* uiw-nfs against the guest's knfsd: put and get with --verify, ls of 1,000 entries, rm.
 * `query` selects the transport and version; `expect` is text its verbose output must
 * hold; `noent` the error a stat of what was removed gets. */
static void against_knfsd(const char *vmdir, const char *base, const char *query, const char *tag,
                          const char *expect, const char *noent)
{
    long sizes[] = {0, 4096, 1048576 + 3, 4194304};
    char local[700], back[700], url[900], cmd[1200], *out = NULL;
    for (int i = 0; i < 4; i++) {
        snprintf(local, sizeof(local), "%s/%s%d", vmdir, tag, i);
        snprintf(back, sizeof(back), "%s/%s%d.back", vmdir, tag, i);
        snprintf(cmd, sizeof(cmd), "head -c %ld /dev/urandom > '%s'", sizes[i], local);
        CHECK_EQ(it_run(cmd, 1, 60, &out), 0);
        free(out);
        snprintf(url, sizeof(url), "%s/%s%d?%s", base, tag, i, query);
        int rc = uiw_nfs("--verify -v put", local, url, &out);
        if (rc != 0 || !strstr(out, "verified") || (expect && !strstr(out, expect)))
            uiw_test_fail(__FILE__, __LINE__, "put to knfsd (%s):\n%s", tag, out);
        free(out);
        rc = uiw_nfs("--verify get", url, back, &out);
        if (rc != 0 || !strstr(out, "verified"))
            uiw_test_fail(__FILE__, __LINE__, "get from knfsd (%s):\n%s", tag, out);
        free(out);
        char h1[65], h2[65];
        sha256_of(local, h1);
        sha256_of(back, h2);
        CHECK_STR(h1, h2);
    }
    snprintf(url, sizeof(url), "%s/big?%s", base, query);
    CHECK_EQ(uiw_nfs("ls", url, NULL, &out), 0);
    CHECK_EQ(it_count(out, " k"), 1000);
    free(out);
    for (int i = 0; i < 4; i++) {
        snprintf(url, sizeof(url), "%s/%s%d?%s", base, tag, i, query);
        CHECK_EQ(uiw_nfs("rm", url, NULL, &out), 0);
        free(out);
    }
    snprintf(url, sizeof(url), "%s/%s0?%s", base, tag, query);
    CHECK_EQ(uiw_nfs("stat", url, NULL, &out), 1);
    CHECK(strstr(out, noent) != NULL);
    free(out);
}

/* What the kernel client did in directory `tag` of our export (see the guest script): the
 * first n of the files' sizes written and read back, and ops' changes when `ops`. */
static void check_client(const struct srv *v, const char *log, const char *tag, int n, int ops)
{
    static const long sizes[] = {0, 1, 4096, 1048576, 16777216};
    for (int i = 0; i < n; i++) {
        char want[128], h[65], name[64];
        snprintf(want, sizeof(want), "SUM %s f%ld ", tag, sizes[i]);
        const char *p = strstr(log, want);
        if (!p)
            uiw_test_fail(__FILE__, __LINE__, "no '%s' in:\n%s", want, log);
        p += strlen(want);
        CHECK(strncmp(p, p + 65, 64) == 0); /* read back as written, in the guest */
        if (ops && sizes[i] <= 4096)
            continue; /* removed, renamed or truncated below */
        snprintf(name, sizeof(name), "%s/f%ld", tag, sizes[i]);
        sha256_of(path_in(v, name), h);
        CHECK(strncmp(p, h, 64) == 0); /* the same bytes in the export */
    }
    char want[64], name[64];
    snprintf(want, sizeof(want), "UMOUNT-OK %s", tag);
    CHECK(strstr(log, want) != NULL);
    if (!ops)
        return;
    snprintf(want, sizeof(want), "COUNT %s 1000", tag);
    CHECK(strstr(log, want) != NULL);
    struct stat st;
    snprintf(name, sizeof(name), "%s/d/g1", tag);
    CHECK_EQ(stat(path_in(v, name), &st), 0);
    CHECK_EQ(st.st_size, 1);
    snprintf(name, sizeof(name), "%s/f4096", tag);
    CHECK_EQ(stat(path_in(v, name), &st), 0);
    CHECK_EQ(st.st_size, 12345);
    snprintf(name, sizeof(name), "%s/f1048576", tag);
    CHECK_EQ(stat(path_in(v, name), &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0600);
    snprintf(name, sizeof(name), "%s/f0", tag);
    CHECK_EQ(access(path_in(v, name), F_OK), -1);
    char target[64] = "";
    snprintf(name, sizeof(name), "%s/sl", tag);
    CHECK_EQ(readlink(path_in(v, name), target, sizeof(target) - 1), 10);
    CHECK_STR(target, "some/where");
    int found = 0;
    for (int i = 1; i <= 1000; i++) {
        snprintf(name, sizeof(name), "%s/many/e%d", tag, i);
        found += access(path_in(v, name), F_OK) == 0;
    }
    CHECK_EQ(found, 1000);
}

/* uiw-nfs lock of file (under v's export) with range ("OFF LEN", NULL: the whole file)
 * on this host, its output to out. */
static int lock_spawn(const struct srv *v, const char *file, const char *range, const char *out)
{
    char u[700], cmd[1600];
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/%s?version=4.1", v->tcp, v->dir, file);
    snprintf(cmd, sizeof(cmd), "exec '%s' lock '%s' %s", UIW_NFS, u, range ? range : "");
    return it_spawn(cmd, out);
}

/* NFSv4 locks between the guest's kernel and this host: while the guest holds a lock of
 * file (a flock, which Linux's client sends as a LOCK of the whole file, or an fcntl lock
 * of a byte range, sent as a LOCK of that range), uiw-nfs lock of the whole file on this
 * host waits; once the guest lets go, uiw-nfs holds it, and releases it on SIGTERM.
 * free: a range ("OFF LEN") apart from the guest's, which this host locks at once
 * meanwhile; NULL for none. tag names the guest's markers and this host's files. */
static void lock_waits(const struct srv *v, const char *vmdir, const char *console,
                       const char *runlog, int pid, const char *tag, const char *file,
                       const char *free_range)
{
    char m[64], out[700];
    snprintf(m, sizeof(m), "GUEST-LOCKED-%s", tag);
    wait_marker(console, runlog, m, pid, 400);
    if (free_range) {
        snprintf(out, sizeof(out), "%s/lockfree-%s.txt", vmdir, tag);
        int fp = lock_spawn(v, file, free_range, out);
        if (!it_wait_for(out, "holding the lock", fp, 30)) {
            char *o = it_slurp(out);
            uiw_test_fail(__FILE__, __LINE__, "%s: no lock of %s beside the guest's:\n%s", tag,
                          free_range, o);
        }
        CHECK_EQ(kill(fp, SIGTERM), 0);
        CHECK_EQ(it_wait(fp, 30), 0);
    }
    snprintf(out, sizeof(out), "%s/lock-%s.txt", vmdir, tag);
    int lp = lock_spawn(v, file, NULL, out);
    sleep(4);
    char *o = it_slurp(out);
    if (strstr(o, "holding the lock"))
        uiw_test_fail(__FILE__, __LINE__, "%s: uiw-nfs took a lock the guest holds:\n%s", tag, o);
    free(o);
    char name[32];
    snprintf(name, sizeof(name), "unlock-%s", tag);
    touch(vmdir, name);
    snprintf(m, sizeof(m), "GUEST-UNLOCKED-%s", tag);
    wait_marker(console, runlog, m, pid, 120);
    if (!it_wait_for(out, "holding the lock", lp, 60)) {
        o = it_slurp(out);
        uiw_test_fail(__FILE__, __LINE__, "%s: no lock after the guest's went:\n%s", tag, o);
    }
    CHECK_EQ(kill(lp, SIGTERM), 0);
    CHECK_EQ(it_wait(lp, 30), 0);
}

/* A read delegation of the guest's NFSv4.1 mount over RDMA recalled: once the guest has
 * read dg64 (a 64 MiB file of this host's), uiw-nfs on this host rewrites it over NFSv4.1;
 * its OPEN for writing waits while the server recalls the guest's delegation with one
 * CB_RECALL on the RPC-over-RDMA backward direction and the guest gives it back
 * (DELEGRETURN). new: the SHA-256 of the bytes written (the guest's next read must show
 * them). */
static void deleg_recall(const struct srv *v, const char *vmdir, const char *console,
                         const char *runlog, int pid, char nsum[65])
{
    wait_marker(console, runlog, "GUEST-DREAD", pid, 400);
    struct uiw__nfsd_deleg_counts d0, d1;
    struct uiw__nfsd_cb_counts c0, c1;
    CHECK_EQ(uiw__nfsd_deleg_counts(v->s, &d0), 0);
    CHECK_EQ(uiw__nfsd_cb_counts(v->s, &c0), 0);
    CHECK(d0.granted >= 1); /* the guest's OPEN for reading got one */
    char local[700], u[700], cmd[800], *out = NULL;
    snprintf(local, sizeof(local), "%s/dg64.new", vmdir);
    snprintf(cmd, sizeof(cmd), "head -c 67108864 /dev/urandom > '%s'", local);
    CHECK_EQ(it_run(cmd, 1, 60, &out), 0);
    free(out);
    sha256_of(local, nsum);
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/dg64?version=4.1", v->tcp, v->dir);
    int rc = uiw_nfs("--verify put", local, u, &out);
    if (rc != 0)
        uiw_test_fail(__FILE__, __LINE__, "put over the delegated file: %d\n%s", rc, out);
    free(out);
    CHECK_EQ(uiw__nfsd_deleg_counts(v->s, &d1), 0);
    CHECK_EQ(uiw__nfsd_cb_counts(v->s, &c1), 0);
    if (d1.recalled != d0.recalled + 1 || d1.returned != d0.returned + 1 ||
        c1.recalls != c0.recalls + 1 || d1.revoked != d0.revoked)
        uiw_test_fail(__FILE__, __LINE__,
                      "delegations recalled %llu, returned %llu, revoked %llu; CB_RECALLs %llu "
                      "(before: %llu, %llu, %llu; %llu)",
                      (unsigned long long)d1.recalled, (unsigned long long)d1.returned,
                      (unsigned long long)d1.revoked, (unsigned long long)c1.recalls,
                      (unsigned long long)d0.recalled, (unsigned long long)d0.returned,
                      (unsigned long long)d0.revoked, (unsigned long long)c0.recalls);
    touch(vmdir, "dwritten");
    unlink(local);
}

/* uiw-nfsd restarted under the guest's NFSv4.1 mount over RDMA while the guest holds a
 * flock of file rs/lk (an open and a LOCK of the whole file): a new server on the same
 * ports (the guest's mount and QEMU's forwarding use them) and the same state directory,
 * whose client records make its grace period; the guest's client finds its session gone,
 * reclaims its open (CLAIM_PREVIOUS) and its lock (LOCK with reclaim) and ends the grace
 * period (RECLAIM_COMPLETE), after which its next OPEN, of a new file, is served; its lock
 * then keeps uiw-nfs's waiting (the server's own OFD locks went with the old instance, so
 * only the reclaim can hold it), and the counters show the reclaims. The lease, and so
 * the grace period, is short (15 s) to keep the rig fast. */
static void restart_reclaim(struct srv *v, const struct uiw__nfsd_opts *o, int rdma,
                            const char *vmdir, const char *console, const char *runlog, int pid)
{
    wait_marker(console, runlog, "GUEST-HOLDS-rs", pid, 400);
    uiw__nfsd_destroy(v->s);
    struct uiw__nfsd_opts r = *o;
    r.addr = "127.0.0.1";
    r.tcp_port = v->tcp;
    r.mount_port = v->mount;
    r.rdma_port = rdma;
    r.lease_time = 15;
    srv_exports_at(v, EXPORTS, &r);
    CHECK_EQ(uiw__nfsd_port(v->s, UIW__NFSD_RDMA), rdma);
    touch(vmdir, "restarted");
    lock_waits(v, vmdir, console, runlog, pid, "rs", "rs/lk", NULL);
    struct uiw__nfsd_reclaim_counts rc;
    CHECK_EQ(uiw__nfsd_reclaim_counts(v->s, &rc), 0);
    printf("siwvm: after the restart the guest reclaimed %llu open(s), %llu lock(s)\n",
           (unsigned long long)rc.opens, (unsigned long long)rc.locks);
    if (rc.opens < 1 || rc.locks < 1)
        uiw_test_fail(__FILE__, __LINE__, "reclaimed after the restart: %llu opens, %llu locks",
                      (unsigned long long)rc.opens, (unsigned long long)rc.locks);
}

TEST(siwvm_kernel)
{
    it_siwvm_ensure();
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1; /* the guest writes as root */
    o.nfs4 = 1;
    o.rdma_port = 0;
    char sdir[] = "/tmp/uiw-siwvm-state.XXXXXX"; /* NFSv4 client records, for the restart */
    CHECK(mkdtemp(sdir) != NULL);
    o.state_dir = sdir;
    struct srv v;
    memset(&v, 0, sizeof(v));
    srv_exports_opts(&v, EXPORTS, &o);
    int rdma = uiw__nfsd_port(v.s, UIW__NFSD_RDMA);
    /* the file of the delegation's recall: its SHA-256 before and after the host's put */
    char dsum[2][65] = {"", ""}, *dout = NULL, dcmd[700];
    snprintf(dcmd, sizeof(dcmd), "head -c 67108864 /dev/urandom > '%s'", path_in(&v, "dg64"));
    CHECK_EQ(it_run(dcmd, 1, 60, &dout), 0);
    free(dout);
    sha256_of(path_in(&v, "dg64"), dsum[0]);
    char vmdir[512], console[600], runlog[600], script[600];
    it_tmpdir(vmdir, sizeof(vmdir), "nfsvm");
    snprintf(console, sizeof(console), "%s/console.log", vmdir);
    snprintf(runlog, sizeof(runlog), "%s/run.txt", vmdir);
    snprintf(script, sizeof(script), "%s/guest.sh", vmdir);
    int kt = it_free_port(), km = it_free_port(), kr = it_free_port();
    while (km == kt)
        km = it_free_port();
    while (kr == kt || kr == km)
        kr = it_free_port();
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    fprintf(f,
            "set -e\n"
            "siwvm-nfsd /export >/dev/null\n"
            "mkdir -p /export/big && chmod 777 /export\n"
            "for i in $(seq 1 1000); do : > /export/big/k$i; done\n"
            "echo KNFSD-READY\n"
            "mkdir -p /mnt/x\n"
            "wait_host() { n=0; while [ ! -e /mnt/host/$1 ] && [ $n -lt 400 ]; do sleep 1; "
            "n=$((n+1)); done; }\n"
            "files() {\n"
            "  tag=$1; o=$2; shift 2\n"
            "  mount -t nfs -o $o 10.0.2.2:%s /mnt/x\n"
            "  mkdir /mnt/x/$tag\n"
            "  for s in \"$@\"; do\n"
            "    head -c $s /dev/urandom > /tmp/f$s\n"
            "    if [ $s -ge 1048576 ]; then dd if=/tmp/f$s of=/mnt/x/$tag/f$s bs=1M 2>/dev/null;\n"
            "    else cp /tmp/f$s /mnt/x/$tag/f$s; fi\n"
            "  done\n"
            "  umount /mnt/x\n"
            "  mount -t nfs -o $o 10.0.2.2:%s /mnt/x\n"
            "  for s in \"$@\"; do\n"
            "    a=$(sha256sum < /mnt/x/$tag/f$s | cut -c1-64); b=$(sha256sum < /tmp/f$s | cut "
            "-c1-64)\n"
            "    echo \"SUM $tag f$s $a $b\"\n"
            "  done\n"
            "}\n"
            "ops() {\n"
            "  t=/mnt/x/$1\n"
            "  mkdir $t/many\n"
            "  for i in $(seq 1 1000); do : > $t/many/e$i; done\n"
            "  echo \"COUNT $1 $(ls -l $t/many | grep -c ' e[0-9]*$')\"\n"
            "  mkdir $t/d; mv $t/f1 $t/d/g1; ln -s some/where $t/sl\n"
            "  truncate -s 12345 $t/f4096; chmod 0600 $t/f1048576; rm $t/f0\n"
            "}\n"
            "lockt() {\n"
            "  : > /mnt/x/$1/lk\n"
            "  flock /mnt/x/$1/lk sh -c \"echo GUEST-LOCKED-$1; n=0; while [ ! -e "
            "/mnt/host/unlock-$1 ] && [ \\$n -lt 300 ]; do sleep 1; n=\\$((n+1)); done; sleep 2\"\n"
            "  echo GUEST-UNLOCKED-$1\n"
            "}\n"
            /* as lockt with an fcntl lock of bytes 100..199 (struct flock of x86_64:
             * short l_type, l_whence; off_t l_start, l_len; pid_t l_pid; 32 bytes) */
            "lockp() {\n"
            "  : > /mnt/x/$1/lp\n"
            "  perl -e 'use Fcntl; $|=1; open(F,\"+<\",$ARGV[0]) or die \"open: $!\"; "
            "$l=pack(\"s s x4 q q i x4\",F_WRLCK,0,100,100,0); "
            "fcntl(F,F_SETLKW,$l) or die \"lock: $!\"; "
            "open(P,\"/proc/locks\") or die; print \"PLOCKP $_\" for grep /POSIX/, <P>; "
            "print \"GUEST-LOCKED-$ARGV[1]\\n\"; $n=0; "
            "while (! -e \"/mnt/host/unlock-$ARGV[1]\" && $n<300) { sleep 1; $n++ }' "
            "/mnt/x/$1/lp $2\n"
            "  echo GUEST-UNLOCKED-$2\n"
            "}\n"
            /* as lockt, the server restarted meanwhile (see restart_reclaim) */
            "lockr() {\n"
            "  mkdir /mnt/x/$1; : > /mnt/x/$1/lk\n"
            "  flock /mnt/x/$1/lk sh -c \"echo GUEST-HOLDS-$1; n=0; while [ ! -e "
            "/mnt/host/restarted ] && [ \\$n -lt 300 ]; do sleep 1; n=\\$((n+1)); done; "
            "echo after > /mnt/x/$1/after; grep FLOCK /proc/locks | sed 's/^/PLOCK /'; "
            "echo GUEST-LOCKED-$1; n=0; while [ ! -e /mnt/host/unlock-$1 ] && [ \\$n -lt 300 ]; "
            "do sleep 1; n=\\$((n+1)); done; sleep 2\"\n"
            "  echo GUEST-UNLOCKED-$1\n"
            "}\n"
            "all='0 1 4096 1048576 16777216'\n"
            "files tcp vers=3,proto=tcp,port=%d,mountport=%d,mountproto=tcp,nolock $all\n"
            "ops tcp\n"
            "umount /mnt/x && echo 'UMOUNT-OK tcp'\n"
            "files v4t proto=tcp,port=%d $all\n"
            "grep ' /mnt/x ' /proc/mounts | sed 's/^/PROC v4t /'\n"
            "ops v4t\n"
            "lockt v4t\n"
            "lockp v4t v4tp\n"
            "umount /mnt/x && echo 'UMOUNT-OK v4t'\n",
            v.dir, v.dir, v.tcp, v.mount, v.tcp);
    if (rdma > 0)
        fprintf(f,
                "r=vers=3,proto=rdma,port=%d,mountport=%d,mountproto=tcp,nolock\n"
                "files rdma $r $all\n"
                "ops rdma\n"
                "umount /mnt/x && echo 'UMOUNT-OK rdma'\n"
                "files v4rd proto=rdma,port=%d 0 1 4096 1048576\n"
                "grep ' /mnt/x ' /proc/mounts | sed 's/^/PROC v4rd /'\n"
                "ops v4rd\n"
                "umount /mnt/x && echo 'UMOUNT-OK v4rd'\n"
                "echo PHASE1-DONE\n"
                "wait_host host1\n"
                "echo 1 > /sys/module/siw/parameters/mpa_crc_required\n"
                "echo CRC-ON\n"
                "files crc $r $all\n"
                "umount /mnt/x && echo 'UMOUNT-OK crc'\n"
                "files v4r vers=4.1,proto=rdma,port=%d $all\n"
                "grep ' /mnt/x ' /proc/mounts | sed 's/^/PROC v4r /'\n"
                "ops v4r\n"
                "lockt v4r\n"
                "echo \"DSUM1 $(sha256sum < /mnt/x/dg64 | cut -c1-64)\"\n"
                "echo GUEST-DREAD\n"
                "wait_host dwritten\n"
                "echo \"DSUM2 $(sha256sum < /mnt/x/dg64 | cut -c1-64)\"\n"
                "lockr rs\n"
                "umount /mnt/x && echo 'UMOUNT-OK v4r'\n",
                rdma, v.mount, rdma, rdma);
    else
        fprintf(f, "echo PHASE1-DONE\nwait_host host1\n");
    fprintf(f, "echo GUEST-CLIENT-DONE\nwait_host host2\necho GUEST-END\n");
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "SIWVM_SHARE='%s' SIWVM_LOG='%s' SIWVM_TIMEOUT=580 "
             "SIWVM_HOSTFWD='tcp:127.0.0.1:%d-:2049 tcp:127.0.0.1:%d-:20048 "
             "tcp:127.0.0.1:%d-:20049' exec '%s/scripts/siwvm.sh' run sh /mnt/host/guest.sh",
             vmdir, console, kt, km, kr, UIW_SOURCE_DIR);
    int pid = it_spawn(cmd, runlog);

    /* uiw-nfs against the guest's kernel server, while the guest's client works. */
    wait_marker(console, runlog, "KNFSD-READY", pid, 300);
    char base[200], q[200];
    snprintf(base, sizeof(base), "nfs://127.0.0.1:%d/export", kt);
    snprintf(q, sizeof(q), "mountport=%d&version=3", km);
    against_knfsd(vmdir, base, q, "t", NULL, "NFS3ERR_NOENT");
    snprintf(base, sizeof(base), "nfs://127.0.0.1:%d", kt);
    against_knfsd(vmdir, base, "version=4.1", "t4", "NFS v4.1 at", "NFS4ERR_NOENT");
    if (rdma > 0) {
        snprintf(base, sizeof(base), "nfs://127.0.0.1:%d/export", kr);
        snprintf(q, sizeof(q), "mountport=%d&transport=rdma&version=3", km);
        against_knfsd(vmdir, base, q, "r",
                      "sent Version 2, the server answered ERR_VERS (versions 1 to 1): "
                      "going on in Version 1",
                      "NFS3ERR_NOENT");
        /* NFSv4.1 over RDMA: the pseudo root (fsid=0), Version One after ERR_VERS */
        snprintf(base, sizeof(base), "nfs://127.0.0.1:%d", kr);
        against_knfsd(vmdir, base, "transport=rdma&version=4.1", "r4",
                      "the server answered ERR_VERS (versions 1 to 1): going on in Version 1",
                      "NFS4ERR_NOENT");
        snprintf(base, sizeof(base), "nfs://127.0.0.1:%d/export", kr);
    }
    lock_waits(&v, vmdir, console, runlog, pid, "v4t", "v4t/lk", NULL);
    lock_waits(&v, vmdir, console, runlog, pid, "v4tp", "v4t/lp", "0 100");
    wait_marker(console, runlog, "PHASE1-DONE", pid, 400);
    touch(vmdir, "host1");
    if (rdma > 0) {
        wait_marker(console, runlog, "CRC-ON", pid, 120);
        against_knfsd(vmdir, base, q, "c", "going on in Version 1", "NFS3ERR_NOENT");
        lock_waits(&v, vmdir, console, runlog, pid, "v4r", "v4r/lk", NULL);
        deleg_recall(&v, vmdir, console, runlog, pid, dsum[1]);
        restart_reclaim(&v, &o, rdma, vmdir, console, runlog, pid);
    }
    wait_marker(console, runlog, "GUEST-CLIENT-DONE", pid, 400);
    touch(vmdir, "host2");
    CHECK_EQ(it_wait(pid, 120), 0);

    char *log = it_slurp(runlog);
    check_client(&v, log, "tcp", 5, 1);
    /* NFSv4: 4.2 negotiated with no version asked for (TCP, RDMA); 4.1 over RDMA */
    check_client(&v, log, "v4t", 5, 1);
    CHECK(strstr(log, "PROC v4t ") && strstr(strstr(log, "PROC v4t "), "vers=4.2"));
    /* the guest's fcntl lock: its kernel's own record, POSIX, of bytes 100 to 199 */
    int posix = 0;
    for (const char *pl = strstr(log, "PLOCKP "); pl && !posix; pl = strstr(pl + 1, "PLOCKP ")) {
        const char *e = strchr(pl, '\n');
        char line[200];
        snprintf(line, sizeof(line), "%.*s", e ? (int)(e - pl) : (int)strlen(pl), pl);
        posix = strstr(line, " POSIX ") && strstr(line, " WRITE ") && strstr(line, " 100 199");
    }
    if (!posix)
        uiw_test_fail(__FILE__, __LINE__, "no POSIX lock of bytes 100-199 in the guest's:\n%s",
                      log);
    if (rdma > 0) {
        check_client(&v, log, "rdma", 5, 1);
        check_client(&v, log, "crc", 5, 0);
        check_client(&v, log, "v4rd", 4, 1);
        CHECK(strstr(log, "PROC v4rd ") && strstr(strstr(log, "PROC v4rd "), "vers=4.2"));
        CHECK(strstr(log, "PROC v4rd ") && strstr(strstr(log, "PROC v4rd "), "proto=rdma"));
        check_client(&v, log, "v4r", 5, 1);
        CHECK(strstr(log, "PROC v4r ") && strstr(strstr(log, "PROC v4r "), "vers=4.1"));
        /* the guest's flock, still its own after the restart, and the file it made then */
        CHECK(strstr(log, "PLOCK ") && strstr(strstr(log, "PLOCK "), "FLOCK"));
        CHECK_EQ(access(path_in(&v, "rs/after"), F_OK), 0);
        /* the guest read the file, and after the recall the bytes the host put */
        for (int i = 0; i < 2; i++) {
            char want[80];
            snprintf(want, sizeof(want), "DSUM%d %s", i + 1, dsum[i]);
            if (!strstr(log, want))
                uiw_test_fail(__FILE__, __LINE__, "no '%s' in the guest's output", want);
        }
#if UIW_NFS_HAVE_RDMA
        /* the 4.1 mounts' back channel over RDMA (RFC 8167): the CB_NULL probe of each
         * session went on the backward direction and the kernel answered it */
        struct uiw_rpc_xprt_stats xs;
        CHECK_EQ(uiw__nfsd_xprt_stats(v.s, &xs), 0);
        if (xs.calls_sent < 1 || xs.replies_received != xs.calls_sent)
            uiw_test_fail(__FILE__, __LINE__, "backward calls over RDMA: %llu sent, %llu answered",
                          (unsigned long long)xs.calls_sent,
                          (unsigned long long)xs.replies_received);
        struct uiw__nfsd_cb_counts cn;
        CHECK_EQ(uiw__nfsd_cb_counts(v.s, &cn), 0);
        CHECK(cn.replies >= xs.replies_received);
        CHECK_EQ(cn.dropped, 0);
#endif
    }
    free(log);
    srv_stop(&v);
    rm_tree(sdir);
    it_rmtree(vmdir);
}
