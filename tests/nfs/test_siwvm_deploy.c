/*
 * uiw-nfsd deployed as an administrator deploys knfsd, and the Linux kernel's NFS client in
 * the siw VM rig using it as it would use knfsd (one VM boot, tests/nfs/siwvm_deploy.sh in
 * the guest):
 *  - on this host, in a network and mount namespace of the test's own with a real rpcbind
 *    (private_rpcbind), uiw-nfsd runs as a service does: its standard ports (NFS on TCP
 *    2049, MOUNT on 20048, RPC-over-RDMA on 20049), its exports from a file (-e: one export
 *    read-write to 127.0.0.1, one read-only to everyone), registered with rpcbind. QEMU
 *    runs in the same namespace, so the guest's 10.0.2.2 (slirp's name for this host's
 *    loopback) is that namespace's loopback, rpcbind's port 111 included. slirp connects
 *    from ordinary ports, hence `insecure`;
 *  - the guest lists the exports and the mounts (showmount -e, -a); mounts the read-write
 *    export naming neither version nor port (Linux's defaults: NFSv4.2 on port 2049,
 *    /proc/mounts says vers=4.2), writes a file there, reads it under a lock; mounts it
 *    with vers=3 and no port (NFS and MOUNT through rpcbind); mounts "/" over NFSv4 and
 *    finds the export nested in the read-write one (read-only to everyone) at its path,
 *    a mount of its own there, readable and read-only; mounts the read-only export
 *    with no version, reads it and is refused a write; mounts with proto=rdma, vers=3 and
 *    no port (20049, and MOUNT through rpcbind) and copies a file both ways;
 *  - knfsd's file semantics, as user 1000 and as root, the same commands on the guest's
 *    own tmpfs and on the mount, whose outputs must match line for line: install -m 0444,
 *    a descriptor kept writable after chmod 0444, tar x of read-only files, directories
 *    and hard and symbolic links, git init, add of 100 files, commit and fsck (this host's
 *    git binary, through the share), chown and chgrp of setuid and setgid files;
 *  - a directory moved out of the export on this host while the guest is in it and holds
 *    one of its files open: the client's calls on it get ESTALE, and make nothing there;
 *  - umount, and showmount -a no longer lists the mount.
 * Exits 77 (skipped) without root or where the rig is not available.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interop.h"
#include "nfs_util.h"
#include "test.h"

/* The guest's console, shown with every failed check. */
static char *guest;

#define GUEST_CHECK(cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char what_[1024];                                                                      \
            snprintf(what_, sizeof(what_), __VA_ARGS__);                                           \
            uiw_test_fail(__FILE__, __LINE__, "%s (%s); the guest said:\n%s", what_, #cond,        \
                          guest);                                                                  \
        }                                                                                          \
    } while (0)

/* The lines of the guest's output that begin with `key` ("KEY: "), the key cut off, each
 * ended by a newline (malloc'd; "" when there is none). */
static char *lines_of(const char *key)
{
    size_t kl = strlen(key), n = 0;
    char *out = malloc(strlen(guest) + 1);
    CHECK(out != NULL);
    for (const char *p = guest; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= kl && strncmp(p, key, kl) == 0) {
            memcpy(out + n, p + kl, len - kl);
            n += len - kl;
            out[n++] = '\n';
        }
        p += len + (e != NULL);
    }
    out[n] = 0;
    return out;
}

/* The guest's output of the command it printed as KEY holds `needle`. */
static void said(const char *key, const char *needle)
{
    char k[64];
    snprintf(k, sizeof(k), "%s: ", key);
    char *l = lines_of(k);
    GUEST_CHECK(strstr(l, needle) != NULL, "%s does not say '%s'", key, needle);
    free(l);
}

/* showmount -e lists path with client (after the spaces that align the column). */
static void exported(const char *path, const char *client)
{
    char *l = lines_of("EXPORTS: ");
    size_t pl = strlen(path);
    int found = 0;
    for (const char *q = l; *q && !found; q = strchr(q, '\n') + 1) {
        if (strncmp(q, path, pl) != 0 || q[pl] != ' ')
            continue;
        const char *c = q + pl + strspn(q + pl, " ");
        found = strncmp(c, client, strlen(client)) == 0 && c[strlen(client)] == '\n';
    }
    GUEST_CHECK(found, "showmount -e does not list %s for %s", path, client);
    free(l);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(fputs(text, f) >= 0);
    CHECK_EQ(fclose(f), 0);
}

TEST(root_siwvm_deploy)
{
    uiw_test_require_root();
    it_siwvm_ensure(); /* before the namespace: building the rig reaches Debian's archive */
    const char *tools[] = {"/usr/sbin/rpcbind", "/usr/sbin/rpcinfo"};
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (access(tools[i], X_OK) != 0)
            uiw_test_fail(__FILE__, __LINE__, "%s: %s (scripts/deps.sh installs it)", tools[i],
                          strerror(errno));
    char *git = NULL, *o = NULL;
    if (it_run("command -v git", 0, 10, &git) != 0)
        uiw_test_fail(__FILE__, __LINE__,
                      "no git on this host for the guest to run (scripts/deps.sh installs it)");
    git[strcspn(git, "\n")] = 0;
    private_rpcbind();
    /* The guest's calls reach this loopback through slirp, but name this host 10.0.2.2:
     * rpcbind answers a GETADDR with an address of this host's that the caller named, and
     * finds none without it (RPC: Program not registered). */
    CHECK_EQ(it_run("ip addr add 10.0.2.2/32 dev lo", 1, 10, &o), 0);
    free(o);

    char base[512], vmdir[512], rw[600], ro[600], out[600], p[900];
    it_tmpdir(base, sizeof(base), "deploy");
    CHECK_EQ(chmod(base, 0755), 0);
    snprintf(rw, sizeof(rw), "%s/rw", base);
    snprintf(ro, sizeof(ro), "%s/ro", base);
    snprintf(out, sizeof(out), "%s/out", base); /* beside the exports, on their file system */
    CHECK_EQ(mkdir(rw, 0755), 0);
    CHECK_EQ(mkdir(ro, 0755), 0);
    CHECK_EQ(mkdir(out, 0755), 0);
    snprintf(p, sizeof(p), "%s/hello", ro);
    write_text(p, "hello from the read-only export\n");
    snprintf(p, sizeof(p), "%s/pub", rw);
    CHECK_EQ(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/pub/hello", rw);
    write_text(p, "hello from the nested export\n");
    snprintf(p, sizeof(p), "%s/exports", base);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    fprintf(f,
            "# the guest's calls come through slirp, from 127.0.0.1 and ordinary ports\n"
            "%s 127.0.0.1(rw,insecure,no_root_squash)\n"
            "%s/pub *(ro,insecure)\n"
            "%s *(ro,insecure)\n",
            rw, rw, ro);
    CHECK_EQ(fclose(f), 0);

    const char *argv[] = {"uiw-nfsd", "-e", p, NULL};
    FILE *nfsd_out;
    char line[256];
    pid_t nfsd = nfsd_spawn_argv(argv, &nfsd_out, line, sizeof(line));
    int tcp, mount, rdma;
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    CHECK_EQ(tcp, 2049);
    CHECK_EQ(mount, 20048);
    CHECK(rdma == 20049 || rdma == -1); /* -1: a tree without the RPC layer */

    it_tmpdir(vmdir, sizeof(vmdir), "deployvm");
    CHECK_EQ(chmod(vmdir, 0755), 0); /* user 1000 in the guest runs git from there */
    char console[600], runlog[600], cmd[4096];
    snprintf(console, sizeof(console), "%s/console.log", vmdir);
    snprintf(runlog, sizeof(runlog), "%s/run.txt", vmdir);
    snprintf(cmd, sizeof(cmd), "cp '%s/tests/nfs/siwvm_deploy.sh' '%s' '%s/'", UIW_SOURCE_DIR, git,
             vmdir);
    CHECK_EQ(it_run(cmd, 1, 30, &o), 0);
    free(o);
    snprintf(cmd, sizeof(cmd),
             "SIWVM_SHARE='%s' SIWVM_LOG='%s' SIWVM_TIMEOUT=360 exec '%s/scripts/siwvm.sh' run "
             "bash /mnt/host/siwvm_deploy.sh '%s' '%s' %d",
             vmdir, console, UIW_SOURCE_DIR, rw, ro, rdma > 0);
    int vm = it_spawn(cmd, runlog);

    /* the guest is in directory moving of the export and holds its file open: move it out
     * (the server checks that a file is still inside its export at most once a second) */
    it_wait_marker(console, runlog, "MOVE-NOW", vm, 360);
    char from[700], to[700];
    snprintf(from, sizeof(from), "%s/moving", rw);
    snprintf(to, sizeof(to), "%s/moving", out);
    CHECK_EQ(rename(from, to), 0);
    sleep(2);
    it_touch(vmdir, "moved");
    int rc = it_wait(vm, 120);
    guest = it_slurp(runlog);
    GUEST_CHECK(rc == 0, "the VM ended with status %d", rc);
    GUEST_CHECK(strstr(guest, "GUEST-END") != NULL, "the guest script did not finish");

    /* showmount -e: both exports, with their clients */
    said("EXPORTS", "rc=0");
    exported(rw, "127.0.0.1");
    snprintf(p, sizeof(p), "%s/pub", rw);
    exported(p, "*");
    exported(ro, "*");
    /* the plain mount: NFSv4.2 on the standard port */
    said("MOUNT-4", "rc=0");
    said("PROC-4", " nfs4 ");
    said("PROC-4", "vers=4.2,");
    said("PROC-4", "proto=tcp,");
    said("V4-FLOCK", "written over NFSv4");
    said("V4-FLOCK", "rc=0");
    said("UMOUNT-4", "rc=0");
    snprintf(p, sizeof(p), "%s/v4file", rw);
    char *v4 = it_slurp(p);
    GUEST_CHECK(v4 && strcmp(v4, "written over NFSv4\n") == 0, "%s on this host", p);
    free(v4);
    /* "/" over NFSv4: the nested export at its path, a mount of its own, read-only inside
     * the read-write one */
    said("MOUNT-ROOT", "rc=0");
    said("NEST-READ", "hello from the nested export");
    said("NEST-WRITE", "Read-only file system");
    said("NEST-WRITE", "rc=1");
    said("NEST-OUTER", "rc=0");
    said("NEST-PROC", " nfs4 ");
    said("NEST-PROC", "rc=0");
    said("UMOUNT-ROOT", "rc=0");
    snprintf(p, sizeof(p), "%s/pub/new", rw);
    GUEST_CHECK(access(p, F_OK) == -1, "%s made in the read-only export", p);
    snprintf(p, sizeof(p), "%s/outer", rw);
    GUEST_CHECK(access(p, F_OK) == 0, "%s not made in the read-write export", p);
    /* version 3, found through rpcbind */
    said("MOUNT-X", "rc=0");
    said("PROC-X", " nfs ");
    said("PROC-X", "vers=3,");
    said("PROC-X", "proto=tcp,");
    said("PROC-X", "addr=10.0.2.2 "); /* port 2049: the default, not shown */
    said("PROC-X", "mountport=20048,");
    /* showmount -a: the mount */
    said("DUMP", "rc=0");
    snprintf(p, sizeof(p), "\n127.0.0.1:%s\n", rw); /* slirp's address for the guest */
    said("DUMP", p);
    /* the read-only export */
    said("MOUNT-R", "rc=0");
    said("RO-READ", "hello from the read-only export");
    said("RO-WRITE", "Read-only file system");
    said("RO-WRITE", "rc=1");
    said("UMOUNT-R", "rc=0");
    /* RPC-over-RDMA with no port: 20049 */
    if (rdma > 0) {
        said("MOUNT-Y", "rc=0");
        said("PROC-Y", "vers=3,");
        said("PROC-Y", "proto=rdma,");
        said("PROC-Y", ",port=20049,");
        said("RDMA-CP", "rc=0");
        said("MOUNT-Y2", "rc=0");
        char *sum = lines_of("RDMA-SUM: "), *back = lines_of("RDMA-BACK: "), h[65];
        GUEST_CHECK(strlen(sum) == 65 && strcmp(sum, back) == 0, "RDMA: read back otherwise");
        snprintf(p, sizeof(p), "%s/rdma.bin", rw);
        sha256_of(p, h);
        GUEST_CHECK(strncmp(sum, h, 64) == 0, "RDMA: the export holds other bytes");
        free(sum);
        free(back);
    }
    /* the file semantics: the export as the guest's tmpfs, line for line */
    char *local = lines_of("SEM local: "), *nfs = lines_of("SEM nfs: ");
    GUEST_CHECK(strcmp(local, nfs) == 0, "the export's semantics are not the local ones");
    const char *sem[] = {"install rc=0 mode=444 data\n",
                         "owner-write rc=0 mode=444 hello\n",
                         "tar-x rc=0\n",
                         "tar-d rc=0\n",
                         "git-init rc=0\n",
                         "git-commit rc=0\n",
                         " files 100 changed 0\n",
                         "git-fsck rc=0\n",
                         "chown 4755 -> 755\n",
                         "./h -r--r--r-- 2\n",
                         "./s lrwxrwxrwx 1 a\n",
                         "./ro dr-xr-xr-x\n"};
    for (size_t i = 0; i < sizeof(sem) / sizeof(sem[0]); i++)
        GUEST_CHECK(strstr(nfs, sem[i]) != NULL, "the semantics lack '%s'", sem[i]);
    free(local);
    free(nfs);
    /* and on this host's disk, as user 1000 made them */
    struct stat st;
    snprintf(p, sizeof(p), "%s/u/inst", rw);
    GUEST_CHECK(stat(p, &st) == 0 && st.st_uid == 1000 && (st.st_mode & 07777) == 0444,
                "%s on this host", p);
    snprintf(p, sizeof(p), "%s/u/repo/.git/HEAD", rw);
    GUEST_CHECK(stat(p, &st) == 0 && st.st_uid == 1000, "%s on this host", p);
    /* moved out of the export: stale, and nothing made there */
    said("STALE-CREATE", "Stale file handle");
    said("STALE-READ", "Stale file handle");
    snprintf(p, sizeof(p), "%s/new", to);
    GUEST_CHECK(access(p, F_OK) == -1, "%s made outside the export", p);
    /* umount: the mount is no longer listed */
    said("UMOUNT-X", "rc=0");
    if (rdma > 0)
        said("UMOUNT-Y", "rc=0");
    said("DUMP-AFTER", "rc=0");
    char *after = lines_of("DUMP-AFTER: ");
    GUEST_CHECK(strstr(after, rw) == NULL, "showmount -a still lists the mount");
    free(after);

    CHECK_EQ(kill(nfsd, SIGTERM), 0);
    int status;
    CHECK_EQ(waitpid(nfsd, &status, 0), nfsd);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fclose(nfsd_out);
    free(guest);
    free(git);
    it_rmtree(vmdir);
    rm_tree(base);
}
