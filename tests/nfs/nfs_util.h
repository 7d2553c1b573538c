/* NFS tests: a server on a temporary export on loopback, and a client of it. */
#ifndef UIW_TESTS_NFS_UTIL_H
#define UIW_TESTS_NFS_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "nfs/client.h"
#include "nfs/nfsd.h"

struct srv {
    char dir[256]; /* the export (a new temporary directory) */
    struct uiw__nfsd *s;
    int tcp, mount;
    char url[512]; /* nfs://127.0.0.1:TCP/DIR?mountport=MOUNT */
};

/* Start a server exporting a new temporary directory; o may be NULL (defaults with free
 * ports, RDMA off). */
/* uiw-nfsd's default options with NFSv4 off: the NFSv3 tests' server, whose clients asking
 * for version 4 (uiw-nfs's default) get PROG_MISMATCH and fall back to version 3. */
void srv_opts_v3(struct uiw__nfsd_opts *o);
void srv_start(struct srv *v, const struct uiw__nfsd_opts *o);
void srv_stop(struct srv *v); /* also removes the export */
/* Start a server (TCP only, max_handles records: 0 for the default) of v->dir (a new
 * temporary directory when v->dir[0] is 0) exported by the exports file's lines `text`,
 * in which each %s is v->dir. */
void srv_exports_text(struct srv *v, const char *text, unsigned max_handles);
/* The same with the server's options o (its address and ports set as above). */
void srv_exports_opts(struct srv *v, const char *text, const struct uiw__nfsd_opts *o);
/* The same on o's own address and ports, as they are (a restart on the last one's). */
void srv_exports_at(struct srv *v, const char *text, const struct uiw__nfsd_opts *o);

/* A client of the export's root, as uid/gid (AUTH_SYS). */
struct uiw__nfs_client *srv_client(const struct srv *v, uint32_t uid, uint32_t gid);

/* A URL for a path below the export ("" for the export). */
void srv_url(const struct srv *v, const char *sub, char *out, size_t n);

/* Files in the export, through the local file system. */
void put_file(const struct srv *v, const char *rel, const void *data, size_t n);
char *path_in(const struct srv *v, const char *rel); /* static buffer */

/* A connected TCP socket to 127.0.0.1:port. */
int tcp_to(int port);

/* uiw-nfsd run with argv (argv[0] included); its standard output is *out, read up to and
 * including the ready line (into line[0..cap)). It dies with the test: a failed check
 * (exit 1), a crash or ctest's kill leaves no server holding ctest's output pipe. */
pid_t nfsd_spawn_argv(const char *const *argv, FILE **out, char *line, size_t cap);
/* The same with its standard error into the file errpath (NULL: the test's). */
pid_t nfsd_spawn_log(const char *const *argv, const char *errpath, FILE **out, char *line,
                     size_t cap);

/* The attributes a reply gave (a) against the file system's own (st, from lstat of the
 * export on disk), field by field: type, mode, nlink, uid, gid, size, used, rdev, fileid
 * (st_ino), atime, mtime and ctime to the nanosecond, and fsid consistent (every file of
 * one st_dev has one fsid, files of different devices differ). The test fails naming
 * what: a description of the object, e.g. "GETATTR of f". */
void check_fattr(const char *file, int line, const char *what, const fattr3 *a,
                 const struct stat *st);
#define CHECK_FATTR(what, a, st) check_fattr(__FILE__, __LINE__, (what), (a), (st))
/* The same against lstat of path, taken now (after the reply). */
void check_fattr_path(const char *file, int line, const char *what, const fattr3 *a,
                      const char *path);
#define CHECK_FATTR_PATH(what, a, path) check_fattr_path(__FILE__, __LINE__, (what), (a), (path))
/* A post_op_attr: present, and as check_fattr_path. */
void check_postop_path(const char *file, int line, const char *what, const post_op_attr *p,
                       const char *path);
#define CHECK_POSTOP_PATH(what, p, path) check_postop_path(__FILE__, __LINE__, (what), (p), (path))
/* wcc_data: the pre-operation attributes (size, mtime, ctime) are those of before (lstat
 * before the call), the post-operation ones those of lstat of path now. */
void check_wcc(const char *file, int line, const char *what, const wcc_data *w,
               const struct stat *before, const char *path);
#define CHECK_WCC(what, w, before, path)                                                           \
    check_wcc(__FILE__, __LINE__, (what), (w), (before), (path))
/* The two files hold the same bytes, as many of them: read(2) of both, byte for byte
 * (the test fails saying where they first differ). */
void check_same_file(const char *file, int line, const char *a, const char *b);
#define CHECK_SAME_FILE(a, b) check_same_file(__FILE__, __LINE__, (a), (b))
/* lstat that must succeed. */
struct stat lstat_ok(const char *path);

/* Move this process (root only) into a network and mount namespace of its own, with a fresh
 * tmpfs on /run, and start the real rpcbind there (/usr/sbin/rpcbind -f -w, its output
 * thrown away), waiting for its socket: fixed ports (111, 2049, 20048, 20049) collide with
 * nothing. It is killed at exit, a failed check's too (it changes its user, which clears a
 * parent-death signal). Returns its pid. */
pid_t private_rpcbind(void);

/* End that rpcbind (SIGTERM, reaped) and remove its socket. */
void private_rpcbind_stop(void);

/* The SHA-256 of a file, as 64 hex digits (sha256sum's). */
void sha256_of(const char *path, char out[65]);

/* rm -rf */
void rm_tree(const char *dir);

/* The resident memory of a process, in KiB (VmRSS). */
long rss_kib(pid_t pid);

/* Whether memory figures are judged: not under AddressSanitizer or ThreadSanitizer, whose
 * shadow memory (and redzones) a process's RSS includes (they are printed all the same). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(UIW__ASAN) ||         \
    defined(UIW__TSAN)
#define RSS_JUDGED 0
#else
#define RSS_JUDGED 1
#endif

/* An OFD lock (type F_RDLCK or F_WRLCK) of [off, off + len) of path (len 0: to its end)
 * on a new open file description, as a local process other than the server would take
 * it: the descriptor holding it, or -1 when another's lock conflicts. */
int ofd_lock(const char *path, short type, off_t off, off_t len);

/* LOOKUP of name below c's path (an NFSv4 client's: below the pseudo root): as
 * uiw__nfs_lookup_path. */
int lookup_below(struct uiw__nfs_client *c, const char *name, struct uiw__nfs_fh *fh, fattr3 *a);
/* The conflicting change of a delegation test, for a thread: another client (NFSv4.1 over
 * TCP to v's port) writes data (8 bytes, FILE_SYNC) at the start of v's file "f"; rc is
 * the WRITE's result. */
struct v4_writer {
    const struct srv *v;
    const char *data;
    int rc;
};
void *v4_rewrite(void *arg);
/* c (NFSv4) asks for delegations, LOOKUPs "f" (its handle in fh) and READs its 8 bytes:
 * it holds a read delegation of it afterwards. */
void v4_take_deleg(struct uiw__nfs_client *c, struct uiw__nfs_fh *fh);
/* Drive c with poll(c, 20) until v's server has its back channel up (the CB_NULL probe
 * answered); the test fails after 10 s. */
void v4_wait_cb_up(const struct srv *v, struct uiw__nfs_client *c,
                   int (*poll)(struct uiw__nfs_client *c, int timeout_ms));
/* c reads "f" and takes a read delegation of it; another client's WRITE of data (8
 * bytes) recalls it while c only polls (uiw__nfs_poll, nothing in flight), c answers and
 * returns it, the WRITE completes, and c reads the new bytes. The server counts one more
 * delegation granted, recalled and returned, none revoked; c ran one CB_RECALL. */
void v4_recalled(const struct srv *v, struct uiw__nfs_client *c, const char *data);

/* uiw-nfs bench --json --inflight N of a file of size bytes (4 KiB calls, 1 s of GETATTRs)
 * at url: the WRITE, READ and GETATTR lines name transport and N, the WRITE and READ moved
 * every byte. */
void bench_inflight(const char *url, const char *transport, unsigned inflight, unsigned size);

/* Skip the test (77) on a machine without tshark; fail it where the tools are required
 * (UIW_ROOT_REQUIRED=1 or CI). */
void need_tshark(void);

#endif
