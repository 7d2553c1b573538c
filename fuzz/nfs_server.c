/* libFuzzer target: the NFSv3, NFSv4.1/4.2 and MOUNT server (src/nfs) as uiw-nfsd serves
 * them over TCP: each input is one call, built as a record (an ONC RPC call header this target
 * builds, then the input's argument bytes), passed through the record-marking receiver
 * a connection reads with (rm.c; in pieces and fragments the input chooses), and run by
 * what runs each TCP call (uiw__nfs_call_run: decoded, authenticated, dispatched); its
 * reply record is checked.
 *
 * Input: byte 0 chooses the program (bit 0: MOUNT, else NFS) and, in bits 1-3, the version
 * (0 to 4: 3; 5: 2, served by nobody; 6: 4) or a program nobody serves (7), byte 1 the procedure
 * (modulo the program's count; 250 and up: taken as is, beyond the table), byte 2 the
 * credentials (AUTH_NONE; AUTH_SYS as uid 1000, as root, as nobody) and, in bits 2-7, how
 * the record is cut (fragments and reads), the rest are the
 * arguments' XDR. The export holds a file, a directory with a file, and symbolic links
 * that point out of it; beside it lies a directory the server must never touch. Where a
 * 32-byte handle can stand (after its XDR length, 32), the bytes 'U' 'F' 'H' k name one:
 * the export's root, its files, directories and links, or handles forged for the
 * directory beside it, its file and their parent (the device, inode number and
 * generation tag of each, under the export's id); this target writes the real handle
 * there. A string (after its XDR length) that begins with 'U' 'E' 'X' 'P' begins with the
 * export's path instead (what MOUNT is asked for: "UEXP/d", "UEXP/../out"). In a
 * version 4 call, "USEQ" where an operation's number stands becomes a SEQUENCE of the
 * target's own session (slot 0, the slot's next sequence ID), so that the operations
 * after it run; the session is made anew when an input destroyed it.
 *
 * Oracles: no crash, leak or over-read (ASan, LSan, UBSan), no pooled buffer kept after
 * a call; the receiver hands out
 * exactly the record, whatever the cuts; exactly one reply to every call, one record
 * whose mark gives its length, with the call's XID, accepted, and that decodes whole as
 * the procedure's results
 * (GARBAGE_ARGS for arguments that do not decode; PROC_UNAVAIL only beyond the table;
 * PROG_MISMATCH naming versions 3 to 4 (MOUNT: 3 alone) for another version; PROG_UNAVAIL
 * for a program nobody serves);
 * a status that RFC 1813 defines; a COMPOUND's results as RFC 8881 section 16.2.3 has
 * them (every one before the last succeeded, the COMPOUND's status the last one's, each a
 * status RFC 8881 or RFC 7862 defines); nothing beside the export changes (names, sizes,
 * modes and times checked after every call); no reply holds a handle of the directory
 * beside the export, its file or their parent, nor the name or the content of that file
 * (random, and looked for without coverage feedback, so that inputs cannot learn them and
 * write them into the export themselves).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "mount3.h"
#include "nfs3.h"
#include "nfs4.h"
#include "nfs/nfsd.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NFS_PROG    100003
#define MOUNT_PROG  100005
#define NO_PROG     100099 /* served by nobody */
#define MAX_IN      (48 * 1024)
#define RESET_EVERY 256
#define NFH         10

static void die(const char *what)
{
    fprintf(stderr, "fuzz-nfs_server: %s\n", what);
    abort();
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---------------------------------------------------------------- the export and beside */

static char top[64];        /* the scratch directory: exp/ and out/ */
static char secret[33];     /* the content of the file beside the export */
static char secret_nm[33];  /* and its name */
static char secret_rel[40]; /* "out/" and the name: its path under top */
static struct uiw__nfsd *srv;
static struct uiw__nfs_pool *pool;
static char fh[NFH][UIW__NFS_FH_MAX];
static uint32_t fhlen[NFH];
static unsigned calls;
static char exp_path[96];      /* the export's path */
static struct stat outside[3]; /* the directory beside the export, its file, their parent */

struct snap {
    struct stat top, out, secret;
    unsigned top_names, out_names;
};

static int trace; /* UIW_FUZZ_TRACE set: each call's procedure and status on stderr */

static void must(int ok, const char *what)
{
    if (!ok) {
        perror(what);
        die(what);
    }
}

static unsigned names(const char *dir)
{
    DIR *d = opendir(dir);
    must(d != NULL, "opendir");
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void path(char *b, size_t cap, const char *rel)
{
    snprintf(b, cap, "%s/%s", top, rel);
}

static void snap(struct snap *s)
{
    char p[128];
    must(stat(top, &s->top) == 0, "stat top");
    path(p, sizeof(p), "out");
    must(stat(p, &s->out) == 0, "stat out");
    s->out_names = names(p);
    path(p, sizeof(p), secret_rel);
    must(stat(p, &s->secret) == 0, "stat secret");
    s->top_names = names(top);
}

static int same_stat(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_mode == b->st_mode && a->st_uid == b->st_uid &&
           a->st_gid == b->st_gid && a->st_size == b->st_size && a->st_nlink == b->st_nlink &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static struct snap before;

static void rm_tree(int dfd)
{
    DIR *d = fdopendir(dfd);
    must(d != NULL, "fdopendir");
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            fchmodat(dirfd(d), e->d_name, 0755, 0);
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (sub >= 0)
                rm_tree(sub);
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        } else {
            unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

static void put_file(const char *rel, const char *text)
{
    char p[128];
    path(p, sizeof(p), rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    must(fd >= 0, "create");
    must(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
    close(fd);
    must(chmod(p, 0666) == 0, "chmod");
}

/* The handle of rel (relative to top) issued as the server issues it, or, forged, built
 * from the file's identity under the export's id. */
static void handle(int k, const char *rel, int forged)
{
    struct uiw__nfs_export *ex = &srv->exports[0];
    char p[128];
    path(p, sizeof(p), rel);
    int fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    must(fd >= 0, "open O_PATH");
    nfs_fh3 h;
    if (forged) {
        struct uiw__nfsd_fh f;
        must(uiw__nfs_fh_of(srv, ex, fd, &f) == 0, "fh_of");
        uiw__nfs_fh_encode(&f, &h, fh[k]);
        fhlen[k] = h.data.data_len;
        close(fd);
        return;
    }
    char dir[128];
    snprintf(dir, sizeof(dir), "%s", p);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    must(dfd >= 0, "open dir");
    must(uiw__nfs_fh_issue(srv, ex, dfd, slash + 1, fd, 1, &h, fh[k]) == 0, "fh_issue");
    fhlen[k] = h.data.data_len;
    close(dfd);
    /* the record keeps its own descriptor (or none): ours goes */
    close(fd);
}

/* The export's files anew (what calls made or took goes), and their handles. */
static void tree_reset(void)
{
    char p[128];
    path(p, sizeof(p), "exp");
    int dfd = open(p, O_RDONLY | O_DIRECTORY);
    must(dfd >= 0, "open exp");
    rm_tree(dfd);
    must(chmod(p, 0777) == 0, "chmod exp");
    put_file("exp/f", "hello, file\n");
    path(p, sizeof(p), "exp/d");
    must(mkdir(p, 0777) == 0 && chmod(p, 0777) == 0, "mkdir d");
    put_file("exp/d/g", "hello, g\n");
    path(p, sizeof(p), "exp/ln");
    must(symlink("../out", p) == 0, "symlink ln");
    char abs[128];
    path(abs, sizeof(abs), "out");
    path(p, sizeof(p), "exp/abs");
    must(symlink(abs, p) == 0, "symlink abs");
    path(p, sizeof(p), "exp/up");
    must(symlink("..", p) == 0, "symlink up");
    const char *rel[] = {"exp", "exp/f", "exp/d", "exp/d/g", "exp/ln", "exp/abs", "exp/up"};
    for (int k = 0; k < 7; k++)
        handle(k, rel[k], 0);
    handle(7, "out", 1);
    handle(8, secret_rel, 1);
    handle(9, ".", 1);
    snap(&before);
    outside[0] = before.out;
    outside[1] = before.secret;
    outside[2] = before.top;
}

static void cleanup(void)
{
    int fd = open(top, O_RDONLY | O_DIRECTORY);
    if (fd >= 0)
        rm_tree(fd);
    rmdir(top);
}

static void server(void)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.tcp_port = o.mount_port = o.rdma_port = -1;
    o.max_io = 65536;
    o.max_handles = 4096;
    o.nfs4 = 1;
    o.nfs4_cmdline_root = 1; /* PUTROOTFH reaches the export's files in one operation */
    srv = uiw__nfsd_create(&o);
    must(srv != NULL, "nfsd_create");
    char p[128];
    path(p, sizeof(p), "exp");
    must(uiw__nfsd_add_export(srv, p) == 0, "add_export");
    snprintf(exp_path, sizeof(exp_path), "%s", srv->exports[0].path);
}

static void establish(void);

static void setup(void)
{
    trace = getenv("UIW_FUZZ_TRACE") != NULL;
    uint8_t rnd[32];
    must(getrandom(rnd, sizeof(rnd), 0) == (ssize_t)sizeof(rnd), "getrandom");
    for (int i = 0; i < 16; i++) {
        snprintf(secret + 2 * i, 3, "%02x", rnd[i]);
        snprintf(secret_nm + 2 * i, 3, "%02x", rnd[16 + i]);
    }
    snprintf(top, sizeof(top), "/tmp/uiw-fuzz-nfs-XXXXXX");
    must(mkdtemp(top) != NULL, "mkdtemp");
    /* searchable by the callers the server acts as: a way out is not hidden by EACCES */
    must(chmod(top, 0755) == 0, "chmod top");
    atexit(cleanup);
    char p[128];
    path(p, sizeof(p), "exp");
    must(mkdir(p, 0777) == 0, "mkdir exp");
    path(p, sizeof(p), "out");
    must(mkdir(p, 0777) == 0 && chmod(p, 0777) == 0, "mkdir out");
    snprintf(secret_rel, sizeof(secret_rel), "out/%s", secret_nm);
    put_file(secret_rel, secret);
    server();
    pool = uiw__nfs_pool_create(srv->opts.max_io + 8192, 4);
    must(pool != NULL, "pool");
    tree_reset();
    establish();
}

/* ------------------------------------------------------------------------- a call */

static xdrproc_t nfs_res(uint32_t proc)
{
    static const xdrproc_t t[] = {
        (xdrproc_t)xdr_void,
        (xdrproc_t)xdr_GETATTR3res,
        (xdrproc_t)xdr_SETATTR3res,
        (xdrproc_t)xdr_LOOKUP3res,
        (xdrproc_t)xdr_ACCESS3res,
        (xdrproc_t)xdr_READLINK3res,
        (xdrproc_t)xdr_READ3res,
        (xdrproc_t)xdr_WRITE3res,
        (xdrproc_t)xdr_CREATE3res,
        (xdrproc_t)xdr_MKDIR3res,
        (xdrproc_t)xdr_SYMLINK3res,
        (xdrproc_t)xdr_MKNOD3res,
        (xdrproc_t)xdr_REMOVE3res,
        (xdrproc_t)xdr_RMDIR3res,
        (xdrproc_t)xdr_RENAME3res,
        (xdrproc_t)xdr_LINK3res,
        (xdrproc_t)uiw__xdr_READDIR3res,
        (xdrproc_t)uiw__xdr_READDIRPLUS3res,
        (xdrproc_t)xdr_FSSTAT3res,
        (xdrproc_t)xdr_FSINFO3res,
        (xdrproc_t)xdr_PATHCONF3res,
        (xdrproc_t)xdr_COMMIT3res,
    };
    return proc < sizeof(t) / sizeof(t[0]) ? t[proc] : NULL;
}

static xdrproc_t mount_res(uint32_t proc)
{
    static const xdrproc_t t[] = {
        (xdrproc_t)xdr_void, (xdrproc_t)xdr_mountres3, (xdrproc_t)uiw__xdr_mountlist,
        (xdrproc_t)xdr_void, (xdrproc_t)xdr_void,      (xdrproc_t)uiw__xdr_mntexports,
    };
    return proc < sizeof(t) / sizeof(t[0]) ? t[proc] : NULL;
}

static int nfsstat_ok(uint32_t s)
{
    static const uint32_t v[] = {0,  1,     2,     5,     6,     13,    17,    18,    19,   20,
                                 21, 22,    27,    28,    30,    31,    63,    66,    69,   70,
                                 71, 10001, 10002, 10003, 10004, 10005, 10006, 10007, 10008};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (v[i] == s)
            return 1;
    return 0;
}

/* The first result of the last COMPOUND (OP_ILLEGAL: none). */
static nfs_opnum4 first_op;
static nfsstat4 first_st;

static xdrproc_t nfs4_res(uint32_t proc)
{
    return proc == 0 ? (xdrproc_t)xdr_void : proc == 1 ? (xdrproc_t)xdr_COMPOUND4res : NULL;
}

/* A status RFC 8881 and RFC 7862 define. */
static int nfsstat4_ok(uint32_t s)
{
    static const uint32_t small[] = {0,  1,  2,  5,  6,  13, 17, 18, 20, 21,
                                     22, 27, 28, 30, 31, 63, 66, 69, 70};
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
        if (s == small[i])
            return 1;
    /* 10002 and 10073 are numbers no error of version 4 has */
    return s >= NFS4ERR_BADHANDLE && s <= NFS4ERR_OFFLOAD_NO_REQS && s != 10002 && s != 10073;
}

/* A COMPOUND's results (RFC 8881 section 16.2.3): every one before the last succeeded,
 * the COMPOUND's status is the last one's (or an error with no results), each a status
 * the RFCs define. */
static void check_compound(const COMPOUND4res *r)
{
    u_int n = r->resarray.resarray_len;
    if (n) {
        first_op = r->resarray.resarray_val[0].resop;
        memcpy(&first_st, &r->resarray.resarray_val[0].nfs_resop4_u, sizeof(first_st));
    }
    if (!nfsstat4_ok(r->status))
        die("a COMPOUND status RFC 8881 does not define");
    for (u_int i = 0; i < n; i++) {
        nfsstat4 st;
        memcpy(&st, &r->resarray.resarray_val[i].nfs_resop4_u, sizeof(st));
        if (trace)
            fprintf(stderr, "  op %u: status %u\n", (unsigned)r->resarray.resarray_val[i].resop,
                    (unsigned)st);
        if (!nfsstat4_ok(st))
            die("an operation's status RFC 8881 does not define");
        if (i + 1 < n && st != NFS4_OK)
            die("a COMPOUND went on after an operation failed");
        if (i + 1 == n && st != r->status)
            die("a COMPOUND's status is not its last operation's");
    }
}

static int mountstat_ok(uint32_t s)
{
    static const uint32_t v[] = {0, 1, 2, 5, 13, 20, 22, 63, 10004, 10006};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (v[i] == s)
            return 1;
    return 0;
}

/* Whether a handle of the server's in b (a version 2 handle: magic, version, kind, the
 * kernel handle's length, the export's id, the file system's id, the inode number) names
 * a file beside the export. */
static int names_outside(const uint8_t *b, size_t n)
{
    const uint8_t *h0 = (const uint8_t *)fh[0];
    for (size_t i = 0; i + 24 <= n; i++) {
        if (b[i] != h0[0] || b[i + 1] != h0[1] || memcmp(b + i + 4, h0 + 4, 12) != 0)
            continue; /* magic, version; export and file system */
        uint64_t ino = 0;
        for (int k = 0; k < 8; k++)
            ino = ino << 8 | b[i + 16 + k];
        for (int k = 0; k < 3; k++)
            if (ino == (uint64_t)outside[k].st_ino)
                return 1;
    }
    return 0;
}

/* Whether b holds s; no comparison of it reaches libFuzzer's feedback. */
__attribute__((no_sanitize("coverage"))) static int has(const uint8_t *b, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && b[i + j] == (uint8_t)s[j])
            j++;
        if (j == k)
            return 1;
    }
    return 0;
}

/* Build the call record into out: returns its length. */
static size_t build_call(uint8_t *out, size_t cap, uint32_t xid, uint32_t prog, uint32_t vers,
                         uint32_t proc, int cred, const uint8_t *args, size_t alen)
{
    XDR x;
    xdrmem_create(&x, (char *)out + 4, (u_int)(cap - 4), XDR_ENCODE);
    struct rpc_msg m = {
        .rm_xid = xid,
        .rm_direction = CALL,
        .rm_call = {.cb_rpcvers = 2, .cb_prog = prog, .cb_vers = vers, .cb_proc = proc}};
    char body[400];
    m.rm_call.cb_cred = m.rm_call.cb_verf = _null_auth;
    if (cred) {
        gid_t gids[2] = {1000, 27};
        struct authunix_parms p = {
            .aup_time = 1,
            .aup_machname = (char *)"fuzz",
            .aup_uid = cred == 1   ? 1000
                       : cred == 2 ? 0
                                   : 65534,
            .aup_gid = cred == 1   ? 1000
                       : cred == 2 ? 0
                                   : 65534,
            .aup_len = cred == 1 ? 2 : 0,
            .aup_gids = gids,
        };
        XDR b;
        xdrmem_create(&b, body, sizeof(body), XDR_ENCODE);
        if (!xdr_authunix_parms(&b, &p))
            die("encoding the credentials");
        m.rm_call.cb_cred.oa_flavor = AUTH_SYS;
        m.rm_call.cb_cred.oa_base = body;
        m.rm_call.cb_cred.oa_length = xdr_getpos(&b);
    }
    if (!xdr_callmsg(&x, &m))
        die("encoding the call");
    size_t hl = xdr_getpos(&x);
    memcpy(out + 4 + hl, args, alen);
    size_t rl = hl + alen;
    uint32_t mark = 0x80000000u | (uint32_t)rl;
    out[0] = (uint8_t)(mark >> 24);
    out[1] = (uint8_t)(mark >> 16);
    out[2] = (uint8_t)(mark >> 8);
    out[3] = (uint8_t)mark;
    return 4 + rl;
}

static void check_reply(const uint8_t *rep, size_t len, uint32_t xid, uint32_t prog, uint32_t vers,
                        uint32_t proc)
{
    xdrproc_t res = prog != NFS_PROG ? mount_res(proc) : vers == 4 ? nfs4_res(proc) : nfs_res(proc);
    union {
        uint32_t status; /* every NFS result, and mountres3, begin with their status */
        GETATTR3res a;
        READ3res rd;
        READDIRPLUS3res rdp;
        mountres3 mnt;
        COMPOUND4res c4;
        char pad[512];
    } out;
    memset(&out, 0, sizeof(out));
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.acpted_rply.ar_verf = _null_auth;
    m.acpted_rply.ar_results.where = (caddr_t)&out;
    m.acpted_rply.ar_results.proc = res ? res : (xdrproc_t)xdr_void;
    XDR x;
    xdrmem_create(&x, (char *)(uintptr_t)rep, (u_int)len, XDR_DECODE);
    if (!xdr_replymsg(&x, &m))
        die("a reply that does not decode");
    if (m.rm_xid != xid || m.rm_direction != REPLY || m.rm_reply.rp_stat != MSG_ACCEPTED)
        die("a reply not accepted, or to another call");
    enum accept_stat st = m.acpted_rply.ar_stat;
    if (trace)
        fprintf(stderr, "%s %u %u: accept %d status %u\n",
                prog == NFS_PROG     ? "NFS"
                : prog == MOUNT_PROG ? "MOUNT"
                                     : "other",
                vers, proc, (int)st, st == SUCCESS ? out.status : 0u);
    if (prog == NO_PROG) {
        if (st != PROG_UNAVAIL)
            die("a call of a program nobody serves not answered PROG_UNAVAIL");
    } else if (vers != 3 && (prog != NFS_PROG || vers != 4)) {
        uint32_t high = prog == NFS_PROG ? 4 : 3;
        if (st != PROG_MISMATCH || m.acpted_rply.ar_vers.low != 3 ||
            m.acpted_rply.ar_vers.high != high)
            die("a call of another version not answered PROG_MISMATCH 3 to 3 (NFS: 4)");
    } else if (st == SUCCESS) {
        if (!res)
            die("a result beyond the procedure table");
        if (xdr_getpos(&x) != len)
            die("bytes after the results");
        if (vers == 4 && proc == 1)
            check_compound(&out.c4);
        else if (proc != 0 && (prog == NFS_PROG || proc == 1) &&
                 !(prog == NFS_PROG ? nfsstat_ok(out.status) : mountstat_ok(out.status)))
            die("a status RFC 1813 does not define");
        xdr_free(res, (char *)&out);
    } else if (st == PROC_UNAVAIL) {
        if (res)
            die("PROC_UNAVAIL for a procedure of the table");
    } else if (st != GARBAGE_ARGS) {
        die("an accepted reply that is neither a result nor GARBAGE_ARGS");
    }
    if (names_outside(rep, len))
        die("a reply hands out a handle of a file beside the export");
    if (has(rep, len, secret) || has(rep, len, secret_nm))
        die("a reply shows what lies beside the export");
}

/* in[0..n) into out, where a string (after its XDR length) begins with "UEXP": the
 * export's path instead, the length and padding made to fit. Returns the bytes. */
static size_t with_export_path(uint8_t *out, size_t cap, const uint8_t *in, size_t n)
{
    size_t o = 0, i = 0, pl = strlen(exp_path);
    while (i < n) {
        if (i + 8 <= n && memcmp(in + i + 4, "UEXP", 4) == 0) {
            size_t sl = be32(in + i);
            if (sl >= 4 && sl <= 1024 && i + 4 + sl <= n) {
                size_t nl = sl - 4 + pl, pad = (4 - nl % 4) % 4;
                if (o + 4 + nl + pad > cap)
                    break;
                out[o++] = (uint8_t)(nl >> 24);
                out[o++] = (uint8_t)(nl >> 16);
                out[o++] = (uint8_t)(nl >> 8);
                out[o++] = (uint8_t)nl;
                memcpy(out + o, exp_path, pl);
                memcpy(out + o + pl, in + i + 8, sl - 4);
                memset(out + o + nl, 0, pad);
                o += nl + pad;
                i += 4 + sl;
                i += (4 - sl % 4) % 4 <= n - i ? (4 - sl % 4) % 4 : n - i;
                continue;
            }
        }
        if (o == cap)
            break;
        out[o++] = in[i++];
    }
    return o;
}

/* The call record rec (n bytes, one fragment) through a record-marking receiver, cut as
 * `how` says: into up to four fragments and reads of 1 to 64 bytes or whole. 1 with the
 * record it handed out, 0 if it handed out none. */
static int receive(const uint8_t *rec, size_t n, unsigned how, struct uiw__nfs_rec *out)
{
    static uint8_t stream[MAX_IN + 2048 + 16];
    size_t body = n - 4, nfrag = 1 + (how & 3), sl = 0;
    for (size_t f = 0, at = 4; f < nfrag; f++) {
        size_t fl = f + 1 == nfrag ? n - at : body / nfrag;
        uint32_t mark = (uint32_t)fl | (f + 1 == nfrag ? 0x80000000u : 0);
        stream[sl++] = (uint8_t)(mark >> 24);
        stream[sl++] = (uint8_t)(mark >> 16);
        stream[sl++] = (uint8_t)(mark >> 8);
        stream[sl++] = (uint8_t)mark;
        memcpy(stream + sl, rec + at, fl);
        sl += fl;
        at += fl;
    }
    size_t piece = (how >> 2) & 15 ? ((how >> 2) & 15) * 4 + 1 : sizeof(stream);
    struct uiw__nfs_rm r;
    uiw__nfs_rm_init(&r, pool, srv->opts.max_io + 8192);
    int taken = 0;
    for (size_t o = 0; o < sl;) {
        struct iovec iov;
        if (uiw__nfs_rm_want(&r, &iov) != 0)
            die("the receiver wants no bytes");
        size_t k = sl - o < iov.iov_len ? sl - o : iov.iov_len;
        if (k > piece)
            k = piece;
        memcpy(iov.iov_base, stream + o, k);
        o += k;
        if (uiw__nfs_rm_got(&r, k) != 0)
            die("the receiver refused a record within its limit");
        struct uiw__nfs_rec x;
        while (uiw__nfs_rm_take(&r, &x)) {
            if (taken++)
                die("the receiver handed out two records");
            *out = x;
        }
    }
    if (uiw__nfs_rm_partial(&r))
        die("the receiver waits for more after the whole record");
    uiw__nfs_rm_fini(&r);
    return taken;
}

/* The reply's record in one buffer, its mark checked and taken off. */
static uint8_t *flatten(const struct uiw__nfs_reply *r, size_t *len)
{
    uint8_t *b = malloc(r->len ? r->len : 1);
    if (!b)
        die("out of memory");
    size_t o = 0;
    for (int i = 0; i < r->niov; i++) {
        memcpy(b + o, r->iov[i].iov_base, r->iov[i].iov_len);
        o += r->iov[i].iov_len;
    }
    if (o != r->len || o < 4 || be32(b) != (0x80000000u | (uint32_t)(o - 4)))
        die("a reply record whose mark is not its length");
    memmove(b, b + 4, o - 4);
    *len = o - 4;
    return b;
}

/* Each 32-byte placeholder "UFH" k in the arguments (after its length word, 32) made the
 * server's handle fh[k % NFH], as long as that is (and padded): the new length. */
static size_t with_handles(uint8_t *args, size_t alen, size_t cap)
{
    static uint8_t out[MAX_IN + 1024 + 64 * 64];
    size_t o = 0, i = 0, made = 0;
    while (i < alen) {
        if (i >= 4 && i + 32 <= alen && args[i] == 'U' && args[i + 1] == 'F' &&
            args[i + 2] == 'H' && be32(args + i - 4) == 32 && made < 64) {
            unsigned k = args[i + 3] % NFH;
            uint32_t n = fhlen[k], padded = (n + 3) & ~3u;
            out[o - 4] = (uint8_t)(n >> 24);
            out[o - 3] = (uint8_t)(n >> 16);
            out[o - 2] = (uint8_t)(n >> 8);
            out[o - 1] = (uint8_t)n;
            memcpy(out + o, fh[k], n);
            memset(out + o + n, 0, padded - n);
            o += padded;
            i += 32;
            made++;
            continue;
        }
        out[o++] = args[i++];
    }
    if (o > cap)
        o = cap;
    memcpy(args, out, o);
    return o;
}

/* The record the receiver handed out, run as the TCP service runs it: its reply, flattened
 * and checked for a mark and for no pooled buffer kept. */
static uint8_t *run(struct uiw__nfs_rec *got, size_t *rlen)
{
    struct uiw__nfs_peer peer;
    memset(&peer, 0, sizeof(peer));
    struct sockaddr_in *sin = (struct sockaddr_in *)&peer.addr;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(700);
    sin->sin_addr.s_addr = htonl(0x7f000001u);
    peer.len = sizeof(*sin);
    struct uiw__nfs_reply reply;
    /* as the TCP service: a large buffer taken first for a call that will want one */
    struct uiw__nfs_buf *large = uiw__nfs_call_large(srv, got->buf->data + got->off, got->len)
                                     ? uiw__nfs_pool_large(pool)
                                     : NULL;
    if (!uiw__nfs_call_run(srv, pool, &peer, got->buf->data + got->off, got->len, large, &reply))
        die("a call got no reply");
    uiw__nfs_pool_put(pool, got->buf);
    uint8_t *rep = flatten(&reply, rlen);
    uiw__nfs_reply_free(pool, &reply);
    if (uiw__nfs_pool_large_taken(pool) != 0)
        die("a call kept a large buffer");
    return rep;
}

/* ------------------------------------------------------------------- NFSv4 sessions */

/* The session of this target's NFSv4 client: "USEQ" where an operation's number stands
 * in the input becomes a SEQUENCE of it (slot 0, its next sequence ID). */
static sessionid4 sid;
static uint32_t seqid;
static unsigned owners; /* the client's owner name: "fuzz-N" */

/* A COMPOUND (minor version 1) of the operations ops[0..n), run: its decoded results. */
static void compound4(nfs_argop4 *ops, u_int n, COMPOUND4res *res)
{
    static uint8_t args[4096], rec[8192];
    COMPOUND4args a = {.minorversion = 1, .argarray = {n, ops}};
    XDR x;
    xdrmem_create(&x, (char *)args, sizeof(args), XDR_ENCODE);
    if (!xdr_COMPOUND4args(&x, &a))
        die("encoding a COMPOUND");
    size_t rl, n2 = build_call(rec, sizeof(rec), ++calls, NFS_PROG, 4, 1, 1, args, xdr_getpos(&x));
    struct uiw__nfs_rec got;
    if (!receive(rec, n2, 0, &got))
        die("the receiver did not hand out a COMPOUND");
    uint8_t *rep = run(&got, &rl);
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    memset(res, 0, sizeof(*res));
    m.acpted_rply.ar_verf = _null_auth;
    m.acpted_rply.ar_results.where = (caddr_t)res;
    m.acpted_rply.ar_results.proc = (xdrproc_t)xdr_COMPOUND4res;
    XDR d;
    xdrmem_create(&d, (char *)rep, (u_int)rl, XDR_DECODE);
    if (!xdr_replymsg(&d, &m) || m.acpted_rply.ar_stat != SUCCESS)
        die("a COMPOUND of the target's own not answered");
    free(rep);
}

/* A client and a session anew (a new owner each time: the inputs may have destroyed or
 * exhausted the last one); the server anew when it has no room for one more client. */
static void establish(void)
{
    for (int tries = 0; tries < 2; tries++) {
        char owner[32];
        snprintf(owner, sizeof(owner), "fuzz-%u", owners++);
        nfs_argop4 op;
        memset(&op, 0, sizeof(op));
        op.argop = OP_EXCHANGE_ID;
        EXCHANGE_ID4args *ea = &op.nfs_argop4_u.opexchange_id;
        memcpy(ea->eia_clientowner.co_verifier, "fuzzverf", NFS4_VERIFIER_SIZE);
        ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(owner);
        ea->eia_clientowner.co_ownerid.co_ownerid_val = owner;
        COMPOUND4res res;
        compound4(&op, 1, &res);
        int ok = res.status == NFS4_OK;
        clientid4 cid = 0;
        uint32_t cs = 0;
        if (ok) {
            EXCHANGE_ID4resok *er = &res.resarray.resarray_val[0]
                                         .nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
            cid = er->eir_clientid;
            cs = er->eir_sequenceid;
        }
        xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&res);
        if (ok) {
            memset(&op, 0, sizeof(op));
            op.argop = OP_CREATE_SESSION;
            CREATE_SESSION4args *ca = &op.nfs_argop4_u.opcreate_session;
            ca->csa_clientid = cid;
            ca->csa_sequence = cs;
            channel_attrs4 ch = {0, 1u << 20, 1u << 20, 8192, 16, 8, {0, NULL}};
            ca->csa_fore_chan_attrs = ca->csa_back_chan_attrs = ch;
            compound4(&op, 1, &res);
            ok = res.status == NFS4_OK;
            if (ok)
                memcpy(sid,
                       res.resarray.resarray_val[0]
                           .nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4
                           .csr_sessionid,
                       sizeof(sid));
            xdr_free((xdrproc_t)xdr_COMPOUND4res, (char *)&res);
        }
        if (ok) {
            seqid = 0;
            return;
        }
        /* no room: a new server (the export's files stay) */
        uiw__nfsd_destroy(srv);
        srv = NULL;
        server();
        tree_reset();
    }
    die("no NFSv4 session could be made");
}

/* in[0..n) into out with each "USEQ" a SEQUENCE of the session (slot 0, sequence ID
 * seqid + 1): the new length; *used whether there was one. */
static size_t with_sequence(uint8_t *out, size_t cap, const uint8_t *in, size_t n, int *used)
{
    size_t o = 0;
    *used = 0;
    for (size_t i = 0; i < n;) {
        if (i + 4 <= n && memcmp(in + i, "USEQ", 4) == 0 && o + 36 <= cap) {
            uint32_t w[6] = {htonl(OP_SEQUENCE), 0, htonl(seqid + 1), 0, 0, 0};
            memcpy(out + o, w, 4);
            memcpy(out + o + 4, sid, sizeof(sid));
            memcpy(out + o + 20, w + 2, 16);
            o += 36;
            i += 4;
            *used = 1;
            continue;
        }
        if (o == cap)
            break;
        out[o++] = in[i++];
    }
    return o;
}

/* After a COMPOUND with the session's SEQUENCE first: the slot's sequence ID moves on when
 * SEQUENCE succeeded; a session gone (destroyed, its client's lease or record dropped) is
 * made anew. */
static void after_sequence(void)
{
    if (first_op == OP_SEQUENCE && first_st == NFS4_OK)
        seqid++;
    else if (first_op == OP_SEQUENCE && first_st != NFS4ERR_SEQ_MISORDERED &&
             first_st != NFS4ERR_DELAY)
        establish();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t args[MAX_IN + 1024], rec[MAX_IN + 2048];
    if (!srv)
        setup();
    if (size < 3 || size - 3 > MAX_IN)
        return 0;
    uint32_t prog = (data[0] & 1) ? MOUNT_PROG : NFS_PROG, vers = 3;
    unsigned which = (data[0] >> 1) & 7;
    if (which == 5 || which == 6)
        vers = which == 5 ? 2 : 4;
    else if (which == 7)
        prog = NO_PROG;
    uint32_t procs = prog != NFS_PROG ? 6u : vers == 4 ? 2u : 22u;
    uint32_t proc = data[1] >= 250 ? data[1] : data[1] % procs;
    int cred = data[2] % 4;
    size_t alen = size - 3;
    alen = with_export_path(args, sizeof(args), data + 3, alen);
    /* a COMPOUND's tag is echoed in its reply: no handle is written there */
    size_t skip = 0;
    if (prog == NFS_PROG && vers == 4 && alen >= 4) {
        skip = 4 + (((size_t)be32(args) + 3) & ~(size_t)3);
        if (skip > alen)
            skip = alen;
    }
    alen = skip + with_handles(args + skip, alen - skip, sizeof(args) - skip);
    int seq = 0;
    if (prog == NFS_PROG && vers == 4) {
        static uint8_t v4[MAX_IN + 1024];
        alen = with_sequence(v4, sizeof(v4), args, alen, &seq);
        memcpy(args, v4, alen);
    }
    uint32_t xid = ++calls;
    size_t n = build_call(rec, sizeof(rec), xid, prog, vers, proc, cred, args, alen);
    struct uiw__nfs_rec got;
    if (!receive(rec, n, data[2] >> 2, &got))
        die("the receiver did not hand out the call's record");
    if (got.len != n - 4 || memcmp(got.buf->data + got.off, rec + 4, got.len) != 0)
        die("the receiver handed out another record than the call's");
    size_t rlen = 0;
    uint8_t *rep = run(&got, &rlen);
    first_op = OP_ILLEGAL;
    check_reply(rep, rlen, xid, prog, vers, proc);
    free(rep);
    if (seq)
        after_sequence();
    struct snap now;
    snap(&now);
    if (!same_stat(&now.top, &before.top) || !same_stat(&now.out, &before.out) ||
        !same_stat(&now.secret, &before.secret) || now.top_names != before.top_names ||
        now.out_names != before.out_names)
        die("a call changed what lies beside the export");
    if (calls % RESET_EVERY == 0)
        tree_reset();
    return 0;
}
