/*
 * NFS against the Linux kernel in the siw VM rig (scripts/siwvm.sh), one VM boot for all
 * of it:
 *  - the kernel's NFS client mounts uiw-nfsd running on this host (vers=3,
 *    mountproto=tcp, nolock; the guest reaches this host's loopback as 10.0.2.2), writes
 *    files from 0 bytes to 16 MiB with dd and cp, mounts again and reads them back (the
 *    guest compares SHA-256), and this host checks the same SHA-256 in the export; then
 *    `ls -l` of a directory of 1,000 entries made through the mount, mkdir, rename, rm,
 *    ln -s, truncate, chmod, each checked in the export, and a clean umount;
 *  - meanwhile uiw-nfs on this host puts and gets files (--verify: SHA-256 of both ends)
 *    to and from the guest kernel's NFS server (siwvm-nfsd), lists a directory of 1,000
 *    entries, and removes what it put.
 * The transport is TCP (RPC-over-RDMA joins when the project's transport serves NFS).
 * Exits 77 (skipped) where the rig is not available; a rig that fails fails the test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interop.h"
#include "nfs_util.h"
#include "test.h"

static const long sizes[] = {0, 1, 4096, 1048576, 16777216};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* The sha256sum of a file, as hex. */
static void sha256_of(const char *path, char out[65])
{
    char cmd[1200], *o = NULL;
    snprintf(cmd, sizeof(cmd), "sha256sum < '%s'", path);
    CHECK_EQ(it_run(cmd, 0, 60, &o), 0);
    CHECK(strlen(o) >= 64);
    memcpy(out, o, 64);
    out[64] = 0;
    free(o);
}

/* uiw-nfs with options and a command (words), then one or two quoted arguments. */
static int uiw_nfs(const char *words, const char *a, const char *b, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' %s '%s' %s%s%s", UIW_NFS, words, a, b ? "'" : "", b ? b : "",
             b ? "'" : "");
    return it_run(cmd, 1, 300, out);
}

TEST(siwvm_kernel_tcp)
{
    it_siwvm_ensure();
    struct srv v;
    srv_start(&v, NULL); /* --no-root-squash: the guest writes as root */
    CHECK_EQ(chmod(v.dir, 0777), 0);
    char vmdir[512], console[600], runlog[600], script[600], done[600];
    it_tmpdir(vmdir, sizeof(vmdir), "nfsvm");
    snprintf(console, sizeof(console), "%s/console.log", vmdir);
    snprintf(runlog, sizeof(runlog), "%s/run.txt", vmdir);
    snprintf(script, sizeof(script), "%s/guest.sh", vmdir);
    snprintf(done, sizeof(done), "%s/done", vmdir);
    int kt = it_free_port(), km = it_free_port();
    while (km == kt)
        km = it_free_port();
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    fprintf(f,
            "set -e\n"
            "siwvm-nfsd /export >/dev/null\n"
            "mkdir -p /export/big && chmod 777 /export\n"
            "for i in $(seq 1 1000); do : > /export/big/k$i; done\n"
            "echo KNFSD-READY\n"
            "mkdir -p /mnt/x\n"
            "o=vers=3,proto=tcp,port=%d,mountport=%d,mountproto=tcp,nolock\n"
            "mount -t nfs -o $o 10.0.2.2:%s /mnt/x\n"
            "for s in",
            v.tcp, v.mount, v.dir);
    for (int i = 0; i < NSIZES; i++)
        fprintf(f, " %ld", sizes[i]);
    fprintf(f,
            "; do\n"
            "  head -c $s /dev/urandom > /tmp/f$s\n"
            "  if [ $s -ge 1048576 ]; then dd if=/tmp/f$s of=/mnt/x/f$s bs=1M 2>/dev/null;\n"
            "  else cp /tmp/f$s /mnt/x/f$s; fi\n"
            "done\n"
            "umount /mnt/x\n"
            "mount -t nfs -o $o 10.0.2.2:%s /mnt/x\n"
            "for s in",
            v.dir);
    for (int i = 0; i < NSIZES; i++)
        fprintf(f, " %ld", sizes[i]);
    fprintf(f,
            "; do\n"
            "  a=$(sha256sum < /mnt/x/f$s | cut -c1-64); b=$(sha256sum < /tmp/f$s | cut -c1-64)\n"
            "  echo \"SUM f$s $a $b\"\n"
            "done\n"
            "mkdir /mnt/x/many\n"
            "for i in $(seq 1 1000); do : > /mnt/x/many/e$i; done\n"
            "echo \"COUNT $(ls -l /mnt/x/many | grep -c ' e[0-9]*$')\"\n"
            "mkdir /mnt/x/d\n"
            "mv /mnt/x/f1 /mnt/x/d/g1\n"
            "ln -s some/where /mnt/x/sl\n"
            "truncate -s 12345 /mnt/x/f4096\n"
            "chmod 0600 /mnt/x/f1048576\n"
            "rm /mnt/x/f0\n"
            "echo \"LSD $(ls /mnt/x/d)\"\n"
            "umount /mnt/x && echo UMOUNT-OK\n"
            "n=0; while [ ! -e /mnt/host/done ] && [ $n -lt 400 ]; do sleep 1; n=$((n+1)); done\n"
            "echo GUEST-END\n");
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "SIWVM_SHARE='%s' SIWVM_LOG='%s' SIWVM_TIMEOUT=560 "
             "SIWVM_HOSTFWD='tcp:127.0.0.1:%d-:2049 tcp:127.0.0.1:%d-:20048' "
             "exec '%s/scripts/siwvm.sh' run sh /mnt/host/guest.sh",
             vmdir, console, kt, km, UIW_SOURCE_DIR);
    int pid = it_spawn(cmd, runlog);

    /* uiw-nfs against the guest's kernel server. */
    if (!it_wait_for(console, "KNFSD-READY", pid, 300)) {
        char *s = it_slurp(runlog);
        uiw_test_fail(__FILE__, __LINE__, "the guest's NFS server did not start:\n%s", s);
    }
    char local[600], back[600], url[600], base[300];
    snprintf(base, sizeof(base), "nfs://127.0.0.1:%d/export", kt);
    long hsizes[] = {0, 4096, 1048576 + 3, 4194304};
    for (int i = 0; i < 4; i++) {
        snprintf(local, sizeof(local), "%s/h%d", vmdir, i);
        snprintf(back, sizeof(back), "%s/h%d.back", vmdir, i);
        snprintf(cmd, sizeof(cmd), "head -c %ld /dev/urandom > '%s'", hsizes[i], local);
        char *o = NULL;
        CHECK_EQ(it_run(cmd, 1, 60, &o), 0);
        free(o);
        snprintf(url, sizeof(url), "%s/h%d?mountport=%d", base, i, km);
        char *out = NULL;
        int rc = uiw_nfs("--verify -v put", local, url, &out);
        if (rc != 0 || !strstr(out, "verified"))
            uiw_test_fail(__FILE__, __LINE__, "put to knfsd:\n%s", out);
        free(out);
        rc = uiw_nfs("--verify get", url, back, &out);
        if (rc != 0 || !strstr(out, "verified"))
            uiw_test_fail(__FILE__, __LINE__, "get from knfsd:\n%s", out);
        free(out);
        char h1[65], h2[65];
        sha256_of(local, h1);
        sha256_of(back, h2);
        CHECK_STR(h1, h2);
    }
    snprintf(url, sizeof(url), "%s/big?mountport=%d", base, km);
    char *out = NULL;
    CHECK_EQ(uiw_nfs("ls", url, NULL, &out), 0);
    CHECK_EQ(it_count(out, " k"), 1000);
    free(out);
    for (int i = 0; i < 4; i++) {
        snprintf(url, sizeof(url), "%s/h%d?mountport=%d", base, i, km);
        CHECK_EQ(uiw_nfs("rm", url, NULL, &out), 0);
        free(out);
    }
    snprintf(url, sizeof(url), "%s/h0?mountport=%d", base, km);
    CHECK_EQ(uiw_nfs("stat", url, NULL, &out), 1);
    CHECK(strstr(out, "NFS3ERR_NOENT") != NULL);
    free(out);

    /* The kernel client's work on our server. */
    if (!it_wait_for(console, "UMOUNT-OK", pid, 400)) {
        char *s = it_slurp(runlog);
        uiw_test_fail(__FILE__, __LINE__, "the guest's client did not finish:\n%s", s);
    }
    FILE *d = fopen(done, "w");
    CHECK(d != NULL);
    fclose(d);
    CHECK_EQ(it_wait(pid, 120), 0);
    char *log = it_slurp(runlog);
    for (int i = 0; i < NSIZES; i++) {
        char want[128], h[65], *p;
        snprintf(want, sizeof(want), "SUM f%ld ", sizes[i]);
        p = strstr(log, want);
        if (!p)
            uiw_test_fail(__FILE__, __LINE__, "no %s in:\n%s", want, log);
        p += strlen(want);
        CHECK(strncmp(p, p + 65, 64) == 0); /* read back as written, in the guest */
        if (sizes[i] == 0 || sizes[i] == 1)
            continue; /* removed / renamed below */
        char name[32];
        snprintf(name, sizeof(name), "f%ld", sizes[i]);
        if (sizes[i] == 4096)
            continue; /* truncated below */
        sha256_of(path_in(&v, name), h);
        CHECK(strncmp(p, h, 64) == 0); /* the same bytes in the export */
    }
    CHECK(strstr(log, "COUNT 1000") != NULL);
    CHECK(strstr(log, "LSD g1") != NULL);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "d/g1"), &st), 0);
    CHECK_EQ(st.st_size, 1);
    CHECK_EQ(stat(path_in(&v, "f4096"), &st), 0);
    CHECK_EQ(st.st_size, 12345);
    CHECK_EQ(stat(path_in(&v, "f1048576"), &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0600);
    CHECK_EQ(access(path_in(&v, "f0"), F_OK), -1);
    char target[64] = "";
    CHECK_EQ(readlink(path_in(&v, "sl"), target, sizeof(target) - 1), 10);
    CHECK_STR(target, "some/where");
    int n = 0;
    for (int i = 1; i <= 1000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "many/e%d", i);
        n += access(path_in(&v, name), F_OK) == 0;
    }
    CHECK_EQ(n, 1000);
    free(log);
    srv_stop(&v);
    it_rmtree(vmdir);
}
