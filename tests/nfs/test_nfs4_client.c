/*
 * uiw-nfs's NFSv4.1 / 4.2 client (src/nfs/client4.c) against uiw-nfsd's NFSv4 (on with
 * uiw__nfsd_opts.nfs4): ?version= in URLs; the session made, used and ended; attributes
 * by GETATTR after a path walked from PUTROOTFH, checked against lstat; the fallback to
 * NFSv3 when the server does not speak version 4, and none when the URL asks for 4; a
 * server that lost the session and the client record (restarted, or the lease ran out)
 * served again through a new session and client; the back channel's CB_COMPOUNDs fed to
 * the client as the RPC layer would (CB_SEQUENCE's slots and their replayed replies,
 * and each error the RFC names).
 *
 * The server exports "/" read-only here: until it has a pseudo file system its root is
 * its one export's, and a path from "/" is the same whichever way it is walked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/client_int.h"
#include "nfs/exports.h"
#include "nfs4.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "run.h"
#include "test.h"

/* A server exporting "/" read-only with NFSv4 on (lease seconds; 0: the default), on
 * tcp_port (0: any free one), and a file "f" of 1234 bytes in v->dir. */
static void start4(struct srv *v, unsigned lease, int tcp_port)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1;
    o.nfs4 = 1;
    o.lease_time = lease;
    if (!v->dir[0]) {
        snprintf(v->dir, sizeof(v->dir), "/tmp/uiw-nfs4-client.XXXXXX");
        CHECK(mkdtemp(v->dir) != NULL);
        char data[1234];
        memset(data, 'x', sizeof(data));
        put_file(v, "f", data, sizeof(data));
    }
    struct uiw__nfs_xtable t;
    char err[512];
    if (uiw__nfs_exports_parse("/ 127.0.0.1(ro,no_root_squash,insecure)\n", "exports", &t, err,
                               sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    o.addr = "127.0.0.1";
    o.tcp_port = tcp_port;
    o.mount_port = 0;
    o.rdma_port = -1;
    /* a port just given up may take the kernel a moment to hand out again */
    for (int i = 0; i < 50 && !(v->s = uiw__nfsd_create(&o)); i++)
        usleep(100000);
    CHECK(v->s != NULL);
    if (uiw__nfsd_add_exports(v->s, &t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    int rc = -1;
    for (int i = 0; i < 50 && (rc = uiw__nfsd_start(v->s)) != 0; i++)
        usleep(100000);
    CHECK_EQ(rc, 0);
    v->tcp = uiw__nfsd_port(v->s, UIW__NFSD_TCP);
    CHECK(v->tcp > 0);
}

/* nfs://127.0.0.1:PORT/DIR/SUB?QUERY */
static void url4(const struct srv *v, const char *sub, const char *query, char *out, size_t n)
{
    snprintf(out, n, "nfs://127.0.0.1:%d%s/%s%s%s", v->tcp, v->dir, sub, *query ? "?" : "", query);
}

static struct tool_run nfs(const char *a1, const char *a2, const char *a3)
{
    const char *argv[] = {"uiw-nfs", a1, a2, a3, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
    return r;
}

TEST(nfs4cli_url_version)
{
    struct uiw__nfs_url u;
    char err[256];
    static const struct {
        const char *q;
        int v;
    } ok[] = {{"", 0},
              {"?version=3", 3},
              {"?version=4", 4},
              {"?version=4.1", 41},
              {"?version=4.2", 42},
              {"?transport=tcp&version=4.1&uid=7", 41}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char s[128];
        snprintf(s, sizeof(s), "nfs://h/e/f%s", ok[i].q);
        CHECK_EQ(uiw__nfs_url_parse(s, &u, err, sizeof(err)), 0);
        CHECK_EQ(u.version, ok[i].v);
        CHECK_STR(u.path, "/e/f");
    }
    CHECK_EQ(u.uid, 7);
    static const char *bad[] = {"nfs://h/e?version=2", "nfs://h/e?version=4.3",
                                "nfs://h/e?version=", "nfs://h/e?version=41", "nfs://h/e?owner="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ(uiw__nfs_url_parse(bad[i], &u, err, sizeof(err)), -1);
        CHECK(err[0] != 0);
    }
    CHECK_EQ(uiw__nfs_url_parse("nfs://h/e?owner=me%2Fthere&version=4.2", &u, err, sizeof(err)), 0);
    CHECK_STR(u.owner, "me/there");
    CHECK_EQ(u.version, 42);
}

/* stat's lines against lstat of the file. */
static void check_stat_out(const char *out, const char *path)
{
    struct stat st = lstat_ok(path);
    char want[128];
    snprintf(want, sizeof(want), "Size: %lld\t", (long long)st.st_size);
    CHECK(strstr(out, want) != NULL);
    snprintf(want, sizeof(want), "Fileid: %llu\t", (unsigned long long)st.st_ino);
    CHECK(strstr(out, want) != NULL);
    snprintf(want, sizeof(want), "Mode: (%04o/", (unsigned)st.st_mode & 07777);
    CHECK(strstr(out, want) != NULL);
    snprintf(want, sizeof(want), "Links: %u\tUid: %u\tGid: %u", (unsigned)st.st_nlink,
             (unsigned)st.st_uid, (unsigned)st.st_gid);
    CHECK(strstr(out, want) != NULL);
    snprintf(want, sizeof(want), "Modify: %lld.%09ld", (long long)st.st_mtim.tv_sec,
             st.st_mtim.tv_nsec);
    CHECK(strstr(out, want) != NULL);
    CHECK(strstr(out, "Type: regular file") != NULL);
}

TEST(nfs4cli_stat_tcp)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    start4(&v, 0, 0);
    char u[600], path[400];
    snprintf(path, sizeof(path), "%s/f", v.dir);
    /* ?version=4.1, 4.2, and the default (4.2): each says its version with -v, and the
     * session's making and ending */
    static const struct {
        const char *q, *says;
    } cases[] = {{"version=4.1", "NFS v4.1 at"},
                 {"version=4.2", "NFS v4.2 at"},
                 {"", "NFS v4.2 at"},
                 {"version=4", "NFS v4.2 at"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        url4(&v, "f", cases[i].q, u, sizeof(u));
        struct tool_run r = nfs("-v", "stat", u);
        CHECK_EQ(r.status, 0);
        check_stat_out(r.out, path);
        CHECK(strstr(r.err, cases[i].says) != NULL);
        CHECK(strstr(r.err, "EXCHANGE_ID: client") != NULL);
        CHECK(strstr(r.err, "CREATE_SESSION:") != NULL);
        CHECK(strstr(r.err, "DESTROY_SESSION, DESTROY_CLIENTID: done") != NULL);
        CHECK(strstr(r.err, "MOUNT") == NULL); /* no MOUNT protocol over v4 */
        tool_run_free(&r);
    }
    /* the directory itself, and a missing name: NFSv4's error */
    url4(&v, "", "version=4.1", u, sizeof(u));
    struct tool_run r = nfs("stat", u, NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "Type: directory") != NULL);
    tool_run_free(&r);
    url4(&v, "nope", "version=4.1", u, sizeof(u));
    r = nfs("stat", u, NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "NFS4ERR_NOENT") != NULL);
    tool_run_free(&r);
    /* a file where the path wants a directory */
    url4(&v, "f/g", "version=4.2", u, sizeof(u));
    r = nfs("stat", u, NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "NFS4ERR_NOTDIR") != NULL);
    tool_run_free(&r);
    uiw__nfsd_destroy(v.s);
    rm_tree(v.dir);
}

/* A path deeper than one COMPOUND's operations: walked in several. */
TEST(nfs4cli_deep_path)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    start4(&v, 0, 0);
    char rel[256] = "", path[600];
    for (int i = 0; i < 20; i++) {
        size_t n = strlen(rel);
        snprintf(rel + n, sizeof(rel) - n, "%sd%d", i ? "/" : "", i);
        snprintf(path, sizeof(path), "%s/%s", v.dir, rel);
        CHECK_EQ(mkdir(path, 0755), 0);
    }
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/leaf", rel);
    put_file(&v, sub, "leaf\n", 5);
    char u[900];
    url4(&v, sub, "version=4.1", u, sizeof(u));
    struct tool_run r = nfs("stat", u, NULL);
    CHECK_EQ(r.status, 0);
    check_stat_out(r.out, path_in(&v, sub));
    tool_run_free(&r);
    uiw__nfsd_destroy(v.s);
    rm_tree(v.dir);
}

TEST(nfs4cli_falls_back_to_v3)
{
    struct srv v;
    srv_start(&v, NULL); /* NFSv3 alone: version 4 gets PROG_MISMATCH */
    put_file(&v, "f", "hello\n", 6);
    char u[700], path[400];
    snprintf(path, sizeof(path), "%s/f", v.dir);
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/f?mountport=%d", v.tcp, v.dir, v.mount);
    struct tool_run r = nfs("-v", "stat", u);
    CHECK_EQ(r.status, 0);
    check_stat_out(r.out, path);
    CHECK(strstr(r.err, "Program/version mismatch") != NULL);
    CHECK(strstr(r.err, "falling back to NFS v3") != NULL);
    CHECK(strstr(r.err, "NFS v3 at") != NULL);
    tool_run_free(&r);
    /* version=3: no version 4 tried */
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/f?mountport=%d&version=3", v.tcp, v.dir, v.mount);
    r = nfs("-v", "stat", u);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.err, "v4") == NULL);
    CHECK(strstr(r.err, "NFS v3 at") != NULL);
    tool_run_free(&r);
    /* version 4 asked for: no fallback */
    static const char *v4[] = {"4", "4.1", "4.2"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/f?version=%s", v.tcp, v.dir, v4[i]);
        r = nfs("-v", "stat", u);
        CHECK_EQ(r.status, 1);
        CHECK(strstr(r.err, "Program/version mismatch") != NULL);
        CHECK(strstr(r.err, "NFS v3 at") == NULL);
        tool_run_free(&r);
    }
    srv_stop(&v);
}

/* The client API over NFSv4.1: a client of 127.0.0.1:port. */
static struct uiw__nfs_client *client4(const struct srv *v, const char *query)
{
    char u[600], err[512];
    url4(v, "", query, u, sizeof(u));
    struct uiw__nfs_url url;
    CHECK_EQ(uiw__nfs_url_parse(u, &url, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&url, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    return c;
}

/* GETATTR of "f" below the client's path: its size. */
static uint64_t size_of_f(struct uiw__nfs_client *c, const struct srv *v)
{
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/f", uiw__nfs_client_subpath(c));
    struct uiw__nfs_fh fh;
    fattr3 a;
    int rc = uiw__nfs_lookup_path(c, sub, &fh, &a);
    if (rc != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", uiw__nfs_errtext(c, rc));
    CHECK_FATTR_PATH("GETATTR of f", &a, path_in(v, "f"));
    return a.size;
}

/* A client of version vers answered, then again after `between` made the server lose
 * what it held of it. */
static void served_again(unsigned lease, const char *vers, void (*between)(struct srv *v))
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    start4(&v, lease, 0);
    char q[32];
    snprintf(q, sizeof(q), "version=%s", vers);
    struct uiw__nfs_client *c = client4(&v, q);
    CHECK_STR(uiw__nfs_client_version(c), vers);
    CHECK_EQ(size_of_f(c, &v), 1234);
    between(&v);
    CHECK_EQ(size_of_f(c, &v), 1234);
    CHECK_EQ(size_of_f(c, &v), 1234);
    uiw__nfs_client_close(c);
    uiw__nfsd_destroy(v.s);
    rm_tree(v.dir);
}

static void restart(struct srv *v)
{
    int port = v->tcp;
    uiw__nfsd_destroy(v->s);
    start4(v, 0, port);
}

static void idle(struct srv *v)
{
    (void)v;
    sleep(3); /* three leases: the server has dropped us */
}

/* The server restarted (on its port, its state gone): the client's next call finds its
 * session unknown (NFS4ERR_BADSESSION), makes a new one, finds its client record unknown
 * too (NFS4ERR_STALE_CLIENTID), makes a new record and session, and is answered. */
TEST(nfs4cli_server_restart)
{
    served_again(0, "4.1", restart);
}

/* The lease ran out while the client was idle (the server dropped it and its session):
 * the next call makes a new client record and session. */
TEST(nfs4cli_lease_expired)
{
    served_again(1, "4.2", idle);
}

/* The v3 calls the client offers for bench are refused over v4 rather than sent. */
TEST(nfs4cli_v3_calls_refused)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    start4(&v, 0, 0);
    struct uiw__nfs_client *c = client4(&v, "");
    CHECK_STR(uiw__nfs_client_version(c), "4.2");
    struct uiw__nfs_async a;
    memset(&a, 0, sizeof(a));
    CHECK_EQ(
        uiw__nfs_call_async(c, 0, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void), NULL, &a),
        -EPROTONOSUPPORT);
    uiw__nfs_client_close(c);
    uiw__nfsd_destroy(v.s);
    rm_tree(v.dir);
}

/* A CB_COMPOUND of ops: its status and each result's (st[], *n of them). */
static nfsstat4 cb_run(struct uiw__nfs_client *c, uint32_t minor, nfs_cb_argop4 *ops, u_int nops,
                       nfs_cb_opnum4 *resop, nfsstat4 *st, u_int *n)
{
    CB_COMPOUND4args a;
    memset(&a, 0, sizeof(a));
    a.minorversion = minor;
    a.argarray.argarray_len = nops;
    a.argarray.argarray_val = ops;
    CB_COMPOUND4res r;
    CHECK_EQ(uiw__nfs4c_cb_compound(c, &a, &r), 0);
    *n = r.resarray.resarray_len;
    CHECK(*n <= nops);
    for (u_int i = 0; i < *n; i++) {
        resop[i] = r.resarray.resarray_val[i].resop;
        memcpy(&st[i], &r.resarray.resarray_val[i].nfs_cb_resop4_u, sizeof(st[i]));
    }
    if (*n) /* the status is the last result's */
        CHECK_EQ(r.status, st[*n - 1]);
    nfsstat4 status = r.status;
    free(r.resarray.resarray_val);
    return status;
}

static void cb_seq(nfs_cb_argop4 *o, const char sid[16], uint32_t slot, uint32_t seq)
{
    memset(o, 0, sizeof(*o));
    o->argop = OP_CB_SEQUENCE;
    memcpy(o->nfs_cb_argop4_u.opcbsequence.csa_sessionid, sid, 16);
    o->nfs_cb_argop4_u.opcbsequence.csa_slotid = slot;
    o->nfs_cb_argop4_u.opcbsequence.csa_sequenceid = seq;
}

static void cb_recall(nfs_cb_argop4 *o, struct uiw__nfs_fh *fh)
{
    memset(o, 0, sizeof(*o));
    o->argop = OP_CB_RECALL;
    memset(o->nfs_cb_argop4_u.opcbrecall.stateid.other, 7, NFS4_OTHER_SIZE);
    o->nfs_cb_argop4_u.opcbrecall.fh.nfs_fh4_len = fh->len;
    o->nfs_cb_argop4_u.opcbrecall.fh.nfs_fh4_val = fh->data;
}

TEST(nfs4cli_callbacks)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    start4(&v, 0, 0);
    struct uiw__nfs_client *c = client4(&v, "version=4.1");
    char sid[16], other[16];
    CHECK_EQ(uiw__nfs4c_session(c, sid), 0);
    memcpy(other, sid, 16);
    other[15] ^= 1;
    struct uiw__nfs_fh fh = *uiw__nfs_client_root(c);
    nfs_cb_argop4 ops[6];
    nfs_cb_opnum4 ro[6];
    nfsstat4 st[6];
    u_int n;
    /* CB_RECALL of a delegation this client does not hold: NFS4ERR_BADHANDLE (RFC 8881
     * section 20.2.3), run once */
    cb_seq(&ops[0], sid, 0, 1);
    cb_recall(&ops[1], &fh);
    CHECK_EQ(cb_run(c, 1, ops, 2, ro, st, &n), NFS4ERR_BADHANDLE);
    CHECK_EQ(n, 2);
    CHECK_EQ(ro[0], OP_CB_SEQUENCE);
    CHECK_EQ(st[0], NFS4_OK);
    CHECK_EQ(ro[1], OP_CB_RECALL);
    CHECK_EQ(uiw__nfs4c_cb_runs(c), 1);
    /* the same sequenceid again (a retry): the same reply, nothing run */
    CHECK_EQ(cb_run(c, 1, ops, 2, ro, st, &n), NFS4ERR_BADHANDLE);
    CHECK_EQ(n, 2);
    CHECK_EQ(uiw__nfs4c_cb_runs(c), 1);
    /* a sequenceid skipped: NFS4ERR_SEQ_MISORDERED */
    cb_seq(&ops[0], sid, 0, 3);
    CHECK_EQ(cb_run(c, 1, ops, 2, ro, st, &n), NFS4ERR_SEQ_MISORDERED);
    CHECK_EQ(n, 1);
    /* the next one: CB_SEQUENCE alone */
    cb_seq(&ops[0], sid, 0, 2);
    CHECK_EQ(cb_run(c, 1, ops, 1, ro, st, &n), NFS4_OK);
    CHECK_EQ(n, 1);
    /* slot 1 has its own sequence; a slot beyond the table: NFS4ERR_BADSLOT */
    cb_seq(&ops[0], sid, 1, 1);
    CHECK_EQ(cb_run(c, 1, ops, 1, ro, st, &n), NFS4_OK);
    cb_seq(&ops[0], sid, 9, 1);
    CHECK_EQ(cb_run(c, 1, ops, 1, ro, st, &n), NFS4ERR_BADSLOT);
    /* another session's: NFS4ERR_BADSESSION */
    cb_seq(&ops[0], other, 0, 3);
    CHECK_EQ(cb_run(c, 1, ops, 1, ro, st, &n), NFS4ERR_BADSESSION);
    /* not CB_SEQUENCE first: NFS4ERR_OP_NOT_IN_SESSION; CB_SEQUENCE later:
     * NFS4ERR_SEQUENCE_POS; an operation number that is none: NFS4ERR_OP_ILLEGAL with
     * the CB_ILLEGAL result */
    cb_recall(&ops[0], &fh);
    CHECK_EQ(cb_run(c, 1, ops, 1, ro, st, &n), NFS4ERR_OP_NOT_IN_SESSION);
    cb_seq(&ops[0], sid, 0, 3);
    cb_seq(&ops[1], sid, 0, 3);
    CHECK_EQ(cb_run(c, 1, ops, 2, ro, st, &n), NFS4ERR_SEQUENCE_POS);
    CHECK_EQ(n, 2);
    memset(&ops[0], 0, sizeof(ops[0]));
    ops[0].argop = (nfs_cb_opnum4)9999;
    CHECK_EQ(cb_run(c, 1, ops, 1, ro, st, &n), NFS4ERR_OP_ILLEGAL);
    CHECK_EQ(ro[0], OP_CB_ILLEGAL);
    cb_seq(&ops[0], sid, 0, 4);
    memset(&ops[1], 0, sizeof(ops[1]));
    ops[1].argop = (nfs_cb_opnum4)9999;
    CHECK_EQ(cb_run(c, 1, ops, 2, ro, st, &n), NFS4ERR_OP_ILLEGAL);
    CHECK_EQ(ro[1], OP_CB_ILLEGAL);
    /* a callback this client does not serve: NFS4ERR_NOTSUPP */
    cb_seq(&ops[0], sid, 0, 5);
    memset(&ops[1], 0, sizeof(ops[1]));
    ops[1].argop = OP_CB_GETATTR;
    CHECK_EQ(cb_run(c, 1, ops, 2, ro, st, &n), NFS4ERR_NOTSUPP);
    /* more operations than the back channel allows: NFS4ERR_TOO_MANY_OPS */
    cb_seq(&ops[0], sid, 0, 6);
    for (int i = 1; i < 6; i++)
        cb_recall(&ops[i], &fh);
    CHECK_EQ(cb_run(c, 1, ops, 6, ro, st, &n), NFS4ERR_TOO_MANY_OPS);
    CHECK_EQ(n, 1);
    /* another minor version than the session's: no results */
    cb_seq(&ops[0], sid, 0, 6);
    CHECK_EQ(cb_run(c, 2, ops, 1, ro, st, &n), NFS4ERR_MINOR_VERS_MISMATCH);
    CHECK_EQ(n, 0);
    /* the client goes on with its own calls */
    CHECK_EQ(size_of_f(c, &v), 1234);
    uiw__nfs_client_close(c);
    uiw__nfsd_destroy(v.s);
    rm_tree(v.dir);
}

/* A server that answers each NULL call with nothing and each COMPOUND with
 * NFS4ERR_SERVERFAULT under a tag whose length says tag_len bytes (a server's own, not the
 * call's echoed; at most SENT_MAX of them follow), on every connection until its socket
 * is shut. */
struct tagsrv {
    int lfd;
    uint32_t tag_len;
    pthread_t th;
};

#define SENT_MAX 65536u

static bool read_full(int fd, void *p, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t k = read(fd, (char *)p + got, n - got);
        if (k <= 0)
            return false;
        got += (size_t)k;
    }
    return true;
}

static void tagsrv_serve(struct tagsrv *t, int fd)
{
    for (;;) {
        uint32_t rm, w[6];
        if (!read_full(fd, &rm, 4))
            return;
        size_t n = ntohl(rm) & 0x7fffffffu;
        char *call = malloc(n);
        CHECK(call != NULL);
        bool whole = n >= sizeof(w) && read_full(fd, call, n);
        if (whole)
            memcpy(w, call, sizeof(w)); /* xid, CALL, 2, program, version, procedure */
        free(call);
        if (!whole)
            return;
        /* the tag's bytes: at most SENT_MAX of them (a client refuses a longer tag at its
         * length, before its bytes) */
        size_t sent = t->tag_len < SENT_MAX ? t->tag_len : SENT_MAX;
        size_t pad = (4 - sent % 4) % 4, len = 24 + (ntohl(w[5]) ? 12 + sent + pad : 0);
        uint8_t *r = calloc(1, 4 + len);
        CHECK(r != NULL);
        uint32_t hdr[7] = {htonl(0x80000000u | (uint32_t)len), w[0], htonl(REPLY), 0, 0, 0, 0};
        memcpy(r, hdr, sizeof(hdr)); /* accepted, AUTH_NONE verifier, SUCCESS */
        if (ntohl(w[5])) {
            uint32_t st = htonl(NFS4ERR_SERVERFAULT), tl = htonl(t->tag_len);
            memcpy(r + 28, &st, 4);
            memcpy(r + 32, &tl, 4);
            memset(r + 36, 'a', sent); /* then the pad's zeros, and no results */
        }
        send_all(fd, r, 4 + len);
        free(r);
    }
}

static void *tagsrv_main(void *arg)
{
    struct tagsrv *t = arg;
    int fd;
    while ((fd = accept(t->lfd, NULL, NULL)) >= 0) {
        tagsrv_serve(t, fd);
        close(fd);
    }
    return NULL;
}

/* The client takes a reply's tag as long as the XDR's utf8str_cs allows (NFS4_NAME_DECODE
 * bytes) and refuses a longer one, up to the largest length a word can say, as a reply it
 * cannot decode. */
TEST(nfs4cli_reply_tag_bounded)
{
    static const uint32_t lens[] = {NFS4_NAME_DECODE - 1, NFS4_NAME_DECODE, NFS4_NAME_DECODE + 1,
                                    NFS4_BODY_DECODE, UINT32_MAX};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct tagsrv t = {.tag_len = lens[i]};
        t.lfd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(t.lfd >= 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof(a);
        CHECK_EQ(bind(t.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
        CHECK_EQ(listen(t.lfd, 8), 0);
        CHECK_EQ(getsockname(t.lfd, (struct sockaddr *)&a, &al), 0);
        CHECK_EQ(pthread_create(&t.th, NULL, tagsrv_main, &t), 0);
        char u[128], err[512];
        snprintf(u, sizeof(u), "nfs://127.0.0.1:%d/?version=4.1", ntohs(a.sin_port));
        struct uiw__nfs_url url;
        CHECK_EQ(uiw__nfs_url_parse(u, &url, err, sizeof(err)), 0);
        err[0] = 0;
        struct uiw__nfs_client *c = uiw__nfs_client_open(&url, 0, err, sizeof(err));
        CHECK(c == NULL);
        fprintf(stderr, "tag of %u bytes: %s\n", lens[i], err);
        if (lens[i] <= NFS4_NAME_DECODE)
            CHECK(strstr(err, "NFS4ERR_SERVERFAULT") != NULL);
        else
            CHECK(strstr(err, "decode") != NULL);
        shutdown(t.lfd, SHUT_RDWR);
        CHECK_EQ(pthread_join(t.th, NULL), 0);
        close(t.lfd);
    }
}
