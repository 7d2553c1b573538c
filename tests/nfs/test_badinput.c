/* Bad input to uiw-nfsd over raw TCP records: every case gets the precise ONC RPC or NFS
 * answer, the connection goes on serving, and a client that vanishes mid-call holds up
 * no one. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "nfs/client.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "nfs3.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

TEST(rpc_errors)
{
    struct srv v;
    srv_start(&v, NULL);
    int fd = tcp_to(v.tcp);
    /* A handle longer than NFS3_FHSIZE: not XDR of GETATTR3args. */
    uint32_t longfh[] = {htonl(100), 0, 0, 0};
    expect_accept(fd, 100003, 3, 1, longfh, sizeof(longfh), GARBAGE_ARGS);
    /* Arguments cut short. */
    uint32_t cut[] = {htonl(32), 0};
    expect_accept(fd, 100003, 3, 1, cut, sizeof(cut), GARBAGE_ARGS);
    expect_accept(fd, 100003, 3, 3, cut, 0, GARBAGE_ARGS);
    /* A WRITE payload that claims more than wtmax (in a record of the largest size a
     * call may have). */
    size_t wl = 4 + 32 + 8 + 4 + 4 + 4 + (1u << 20);
    uint32_t *w = calloc(1, wl);
    CHECK(w != NULL);
    w[0] = htonl(32);
    w[11] = htonl(2u << 20); /* count */
    w[13] = htonl(2u << 20); /* payload length */
    expect_accept(fd, 100003, 3, 7, w, wl, GARBAGE_ARGS);
    free(w);
    /* Unknown procedure, version, program. */
    expect_accept(fd, 100003, 3, 22, NULL, 0, PROC_UNAVAIL);
    expect_accept(fd, 100003, 3, 1000, NULL, 0, PROC_UNAVAIL);
    expect_accept(fd, 100005, 3, 6, NULL, 0, PROC_UNAVAIL);
    expect_accept(fd, 100003, 2, 0, NULL, 0, PROG_MISMATCH);
    expect_accept(fd, 100003, 4, 0, NULL, 0, PROG_MISMATCH);
    expect_accept(fd, 100005, 1, 0, NULL, 0, PROG_MISMATCH);
    expect_accept(fd, 100227, 3, 0, NULL, 0, PROG_UNAVAIL);
    /* MOUNT with a path longer than MNTPATHLEN. */
    uint32_t lp[] = {htonl(5000), 0};
    expect_accept(fd, 100005, 3, 1, lp, sizeof(lp), GARBAGE_ARGS);
    /* An authentication flavor the server does not take (AUTH_DH). */
    size_t n;
    char *r = call_raw(fd, 7, 100003, 3, 0, 3, NULL, 0, &n);
    struct rpc_msg m;
    decode_reply(r, n, 7, &m, NULL, NULL);
    CHECK_EQ(m.rm_reply.rp_stat, MSG_DENIED);
    CHECK_EQ(m.rjcted_rply.rj_stat, AUTH_ERROR);
    free(r);
    /* The connection still serves. */
    expect_accept(fd, 100003, 3, 0, NULL, 0, SUCCESS);
    close(fd);
    srv_stop(&v);
}

/* Handles that do not decode: NFS3ERR_BADHANDLE in the NFS reply, on every procedure
 * that takes one. */
TEST(badhandle_every_proc)
{
    struct srv v;
    srv_start(&v, NULL);
    int fd = tcp_to(v.tcp);
    /* Arguments: a 12-byte handle of zeros, then zeros enough for any procedure's rest
     * (empty names fail later than the handle). */
    uint32_t a[64];
    memset(a, 0, sizeof(a));
    a[0] = htonl(12);
    for (uint32_t proc = 1; proc <= 21; proc++) {
        size_t alen = sizeof(a);
        /* MKNOD: a type whose arm is void (elsewhere that word is a name's length: a name
         * of one NUL byte would not decode) */
        a[5] = proc == 11 ? htonl(NF3REG) : 0;
        size_t n;
        char *r = call_raw(fd, 1000 + proc, 100003, 3, proc, AUTH_SYS, a, alen, &n);
        struct rpc_msg m;
        decode_reply(r, n, 1000 + proc, &m, NULL, NULL);
        CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
        if (m.acpted_rply.ar_stat != SUCCESS)
            uiw_test_fail(__FILE__, __LINE__, "proc %u: accept_stat %d", proc,
                          (int)m.acpted_rply.ar_stat);
        uint32_t st = nfs_status(r, n);
        if (st != NFS3ERR_BADHANDLE)
            uiw_test_fail(__FILE__, __LINE__, "proc %u: status %u", proc, st);
        free(r);
    }
    close(fd);
    srv_stop(&v);
}

/* A name (LOOKUP), and a symbolic link's path (SYMLINK), whose length claims 2 GiB:
 * bounded at decode (filename3, nfspath3), the server answers GARBAGE_ARGS at once, with
 * no such allocation (libtirpc's xdr_string allocates the claimed length before reading
 * it). A record that claims 2 GiB closes its connection at once, as knfsd closes one
 * whose record exceeds its largest message: nothing is allocated for it, nothing waits
 * for its bytes. Others are served meanwhile and afterwards. */
TEST(huge_name_claim)
{
    struct srv v;
    srv_start(&v, NULL);
    long before = uiw_test_vm_kib("VmSize");
    uint32_t lookup[] = {htonl(32), 0, 0, 0, 0, 0, 0, 0, 0, htonl(0x7ffffff0u)};
    /* SYMLINK: directory handle, name "a", sattr3 with nothing set, then the path. */
    uint32_t symlink[] = {
        htonl(32),         0, 0, 0, 0, 0, 0, 0, 0, htonl(1), htonl(0x61000000u), 0, 0, 0, 0, 0, 0,
        htonl(0x7ffffff0u)};
    struct {
        uint32_t proc;
        const void *args;
        size_t len;
    } calls[] = {{NFSPROC3_LOOKUP, lookup, sizeof(lookup)},
                 {NFSPROC3_SYMLINK, symlink, sizeof(symlink)}};
    for (unsigned i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        for (int whole = 0; whole < 2; whole++) {
            int fd = tcp_to(v.tcp);
            char rec[4 + 512 + 128];
            size_t hl = call_header(rec + 4, 50 + i, 100003, 3, calls[i].proc, AUTH_SYS);
            memcpy(rec + 4 + hl, calls[i].args, calls[i].len);
            /* the last fragment: as long as what is sent, or 2 GiB */
            uint32_t mark =
                htonl(whole ? 0xffffffffu : 0x80000000u | (uint32_t)(hl + calls[i].len));
            memcpy(rec, &mark, 4);
            send_all(fd, rec, 4 + hl + calls[i].len);
            if (whole) {
                struct pollfd pf = {fd, POLLIN, 0};
                CHECK_EQ(poll(&pf, 1, 20000), 1);
                char b;
                CHECK(recv(fd, &b, 1, 0) <= 0); /* closed, no reply */
            } else {
                size_t n;
                char *r = recv_record(fd, &n); /* fails after 20 s without an answer */
                struct rpc_msg m;
                decode_reply(r, n, 50 + i, &m, NULL, NULL);
                CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
                CHECK_EQ(m.acpted_rply.ar_stat, GARBAGE_ARGS);
                free(r);
            }
            close(fd);
        }
    }
    long after = uiw_test_vm_kib("VmSize");
    if (after - before > 512 * 1024)
        uiw_test_fail(__FILE__, __LINE__, "address space grew by %ld MiB", (after - before) >> 10);
    struct uiw__nfs_tcp_counts tc;
    uiw__nfs_tcp_counts(v.s->tcp, &tc);
    CHECK_EQ(tc.too_long, 2);
    /* Served meanwhile and afterwards. */
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* The local port of a connected socket. */
static unsigned local_port(int fd)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    return ntohs(a.sin_port);
}

/* The send and receive queues (bytes) of the socket from local port lport to remote port
 * rport, from /proc/net/tcp: false when there is no such socket. */
static bool tcp_queues(unsigned lport, unsigned rport, unsigned long *tx, unsigned long *rx)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    CHECK(f != NULL);
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned l, r;
        if (sscanf(line, " %*u: %*x:%x %*x:%x %*x %lx:%lx", &l, &r, tx, rx) == 4 && l == lport &&
            r == rport)
            found = true;
    }
    fclose(f);
    return found;
}

/* The server has read every byte we sent on our connection from port `ours` to its port:
 * both sockets are there, ours has nothing unsent or unacknowledged, its has nothing
 * unread. */
static bool server_read_all(int port, unsigned ours)
{
    unsigned long ctx, crx, stx, srx;
    return tcp_queues(ours, (unsigned)port, &ctx, &crx) && ctx == 0 &&
           tcp_queues((unsigned)port, ours, &stx, &srx) && srx == 0;
}

/* Wait until the server's NFS listener serves n connections. */
static void wait_conns(struct srv *v, unsigned n)
{
    for (int i = 0; i < 30000 && uiw__nfs_tcp_conns(v->s->tcp) != n; i++)
        usleep(1000);
    CHECK_EQ(uiw__nfs_tcp_conns(v->s->tcp), n);
}

/* A client that vanishes mid-WRITE: half a 1 MiB WRITE, read by the server (which then
 * waits for the rest inside the call's arguments), then the connection reset. Others are
 * served meanwhile and afterwards, the server drops the connection (answering the broken
 * call on a socket that is gone must not raise SIGPIPE in the process it runs in), and it
 * shuts down cleanly. Each step waits for the state it needs: no timing is assumed. */
TEST(client_vanishes_mid_write)
{
    struct srv v;
    srv_start(&v, NULL);
    put_file(&v, "f", "abc", 3);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "f", &f, NULL), 0);
    unsigned others = uiw__nfs_tcp_conns(v.s->tcp);
    int fd = tcp_to(v.tcp);
    wait_conns(&v, others + 1);
    /* Record mark for a WRITE of 1 MiB, then the header and half the payload. */
    char hdr[4 + 512];
    XDR x;
    size_t cl = call_header(hdr + 4, 1, 100003, 3, NFSPROC3_WRITE, AUTH_NONE);
    xdrmem_create(&x, hdr + 4 + cl, (u_int)(512 - cl), XDR_ENCODE);
    WRITE3args wa;
    memset(&wa, 0, sizeof(wa));
    wa.file.data.data_len = f.len;
    wa.file.data.data_val = f.data;
    wa.count = 1u << 20;
    CHECK(xdr_nfs_fh3(&x, &wa.file) && xdr_offset3(&x, &wa.offset) && xdr_count3(&x, &wa.count) &&
          xdr_stable_how(&x, &wa.stable));
    u_int len = 1u << 20;
    CHECK(xdr_u_int(&x, &len));
    u_int hl = (u_int)cl + xdr_getpos(&x);
    xdr_destroy(&x);
    uint32_t mark = htonl(0x80000000u | (hl + (1u << 20)));
    memcpy(hdr, &mark, 4);
    send_all(fd, hdr, 4 + hl);
    char *half = calloc(1, 1u << 19);
    CHECK(half != NULL);
    send_all(fd, half, 1u << 19);
    free(half);
    /* The server has read it all: it is inside the WRITE, waiting for the rest. */
    unsigned ours = local_port(fd);
    for (int i = 0; i < 30000 && !server_read_all(v.tcp, ours); i++)
        usleep(1000);
    CHECK(server_read_all(v.tcp, ours));
    /* Meanwhile another client is served. */
    char buf[8];
    int eof;
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(uiw__nfs_write(c, &f, 3, 1, "d", FILE_SYNC, NULL), 1);
        CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 4);
    }
    /* Gone at once: a reset, not an orderly end. */
    struct linger lg = {1, 0};
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(fd);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 4);
    CHECK_MEM(buf, "abcd", 4);
    /* The server saw it go and dropped the connection (after answering the broken call). */
    wait_conns(&v, others);
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 4);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

struct worker {
    struct srv *v;
    int id;
    int ok;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    struct uiw__nfs_client *c = srv_client(w->v, 1000 + (uint32_t)w->id, 1000);
    char name[32];
    snprintf(name, sizeof(name), "w%d", w->id);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), name, 0644, 0, &f), 0);
    size_t n = 3u << 20;
    char *buf = malloc(n), *back = malloc(n);
    CHECK(buf && back);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i * (size_t)(w->id + 3));
    for (size_t off = 0; off < n; off += 1u << 20)
        CHECK_EQ(uiw__nfs_write(c, &f, off, 1u << 20, buf + off, UNSTABLE, NULL), 1 << 20);
    CHECK_EQ(uiw__nfs_commit(c, &f, NULL), 0);
    int eof;
    for (size_t off = 0; off < n; off += 1u << 20)
        CHECK_EQ(uiw__nfs_read(c, &f, off, 1u << 20, back + off, &eof), 1 << 20);
    CHECK_MEM(back, buf, n);
    free(buf);
    free(back);
    uiw__nfs_client_close(c);
    w->ok = 1;
    return NULL;
}

/* Eight clients at once, each with its own file. */
TEST(many_clients)
{
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    srv_start(&v, &o);
    CHECK_EQ(chmod(v.dir, 0777), 0);
    pthread_t t[8];
    struct worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){&v, i, 0};
        CHECK_EQ(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].ok);
    }
    srv_stop(&v);
}

/* The reply to a READDIR or READDIRPLUS sent by hand: the record, decoded with the
 * project's list routines into res. */
static char *readdir_raw(int fd, uint32_t xid, uint32_t proc, const struct uiw__nfs_fh *dir,
                         cookie3 cookie, const cookieverf3 verf, uint32_t count1, uint32_t count2,
                         void *res, size_t *rlen)
{
    char args[128];
    XDR x;
    xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
    nfs_fh3 h = {{dir->len, (char *)dir->data}};
    char *v = (char *)(uintptr_t)verf; /* encoded, not changed */
    CHECK(xdr_nfs_fh3(&x, &h) && xdr_cookie3(&x, &cookie) && xdr_cookieverf3(&x, v) &&
          xdr_count3(&x, &count1));
    if (proc == NFSPROC3_READDIRPLUS)
        CHECK(xdr_count3(&x, &count2));
    size_t alen = xdr_getpos(&x);
    xdr_destroy(&x);
    char *r = call_raw(fd, xid, 100003, 3, proc, AUTH_NONE, args, alen, rlen);
    struct rpc_msg m;
    decode_reply(r, *rlen, xid, &m,
                 proc == NFSPROC3_READDIR ? UIW__XDRPROC(uiw__xdr_READDIR3res)
                                          : UIW__XDRPROC(uiw__xdr_READDIRPLUS3res),
                 res);
    CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
    CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
    return r;
}

/* One AUTH_NONE READDIR with count 0xffffffff, and a READDIRPLUS with maxcount 12 MB, of a
 * directory of 100,000 entries: each reply is clamped to the server's largest payload
 * (rpcgen's recursive list routines would overflow the serving thread's stack encoding
 * them all), the whole directory is listed through the cookies, and the server goes on
 * serving. */
TEST(readdir_huge_count)
{
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(mkdir(path_in(&v, "big"), 0755), 0);
    int bfd = open(path_in(&v, "big"), O_RDONLY | O_DIRECTORY);
    CHECK(bfd >= 0);
    char name[64];
    const unsigned nent = 100000;
    for (unsigned i = 0; i < nent; i++) {
        snprintf(name, sizeof(name), "entry-with-a-longish-name-%06u", i);
        if (mknodat(bfd, name, S_IFREG | 0644, 0) != 0)
            uiw_test_fail(__FILE__, __LINE__, "mknod %s: %s", name, strerror(errno));
    }
    close(bfd);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh dir;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "big", &dir, NULL), 0);
    uint32_t max_io = uiw__nfsd_max_io(v.s);
    for (uint32_t proc = NFSPROC3_READDIR; proc <= NFSPROC3_READDIRPLUS; proc++) {
        int fd = tcp_to(v.tcp);
        cookie3 cookie = 0;
        cookieverf3 verf = {0};
        unsigned seen = 0, calls = 0;
        for (int eof = 0; !eof; calls++) {
            union {
                READDIR3res rd;
                READDIRPLUS3res rp;
            } res;
            memset(&res, 0, sizeof(res));
            size_t n;
            char *r = readdir_raw(fd, 500 + calls, proc, &dir, cookie, verf, 0xffffffffu,
                                  proc == NFSPROC3_READDIR ? 0 : 12u << 20, &res, &n);
            if (n > max_io + 512)
                uiw_test_fail(__FILE__, __LINE__, "proc %u: reply of %zu bytes", proc, n);
            CHECK_EQ(res.rd.status, NFS3_OK);
            unsigned k = 0;
            if (proc == NFSPROC3_READDIR) {
                READDIR3resok *ok = &res.rd.READDIR3res_u.resok;
                for (entry3 *e = ok->reply.entries; e; e = e->nextentry, k++)
                    cookie = e->cookie;
                eof = ok->reply.eof;
                memcpy(verf, ok->cookieverf, sizeof(verf));
                xdr_free(UIW__XDRPROC(uiw__xdr_READDIR3res), (caddr_t)&res.rd);
            } else {
                READDIRPLUS3resok *ok = &res.rp.READDIRPLUS3res_u.resok;
                for (entryplus3 *e = ok->reply.entries; e; e = e->nextentry, k++) {
                    cookie = e->cookie;
                    CHECK(e->name_handle.handle_follows);
                }
                eof = ok->reply.eof;
                memcpy(verf, ok->cookieverf, sizeof(verf));
                xdr_free(UIW__XDRPROC(uiw__xdr_READDIRPLUS3res), (caddr_t)&res.rp);
            }
            free(r);
            CHECK(k > 0);
            seen += k;
            CHECK(calls < 1000);
        }
        /* every entry, "." and ".." once, in more than one reply */
        CHECK_EQ(seen, nent + 2);
        CHECK(calls > 1);
        expect_accept(fd, 100003, 3, 0, NULL, 0, SUCCESS);
        close(fd);
    }
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* The list routines code what rpcgen's code, byte for byte, and decode a list far longer
 * than rpcgen's recursion survives. */
TEST(xdr_lists_without_recursion)
{
    static char buf[1 << 16], ref[1 << 16];
    entryplus3 e[3];
    char fh[3][8];
    memset(e, 0, sizeof(e));
    for (int i = 0; i < 3; i++) {
        e[i].fileid = 100u + (unsigned)i;
        e[i].name = i == 0 ? "a" : i == 1 ? "bcdef" : "ghij";
        e[i].cookie = 7u * (unsigned)i + 1;
        e[i].name_attributes.attributes_follow = i == 1;
        e[i].name_attributes.post_op_attr_u.attributes.size = 4242;
        e[i].name_handle.handle_follows = i != 2;
        memset(fh[i], 'h' + i, sizeof(fh[i]));
        e[i].name_handle.post_op_fh3_u.handle.data.data_len = sizeof(fh[i]);
        e[i].name_handle.post_op_fh3_u.handle.data.data_val = fh[i];
        e[i].nextentry = i < 2 ? &e[i + 1] : NULL;
    }
    READDIRPLUS3res r;
    memset(&r, 0, sizeof(r));
    r.READDIRPLUS3res_u.resok.reply.entries = &e[0];
    r.READDIRPLUS3res_u.resok.reply.eof = 1;
    XDR x, y;
    xdrmem_create(&x, buf, sizeof(buf), XDR_ENCODE);
    xdrmem_create(&y, ref, sizeof(ref), XDR_ENCODE);
    CHECK(uiw__xdr_READDIRPLUS3res(&x, &r));
    CHECK(xdr_READDIRPLUS3res(&y, &r));
    CHECK_EQ(xdr_getpos(&x), xdr_getpos(&y));
    CHECK_MEM(buf, ref, xdr_getpos(&x));
    xdr_destroy(&x);
    xdr_destroy(&y);
    /* 300,000 entries: encoded by hand (TRUE, fileid, name "n", cookie), decoded, freed */
    const unsigned n = 300000;
    size_t len = 4 + 4 + 8 + (size_t)n * 28 + 8;
    uint32_t *w = calloc(len / 4, 4), *p = w;
    CHECK(w != NULL);
    *p++ = htonl(NFS3_OK);
    *p++ = 0; /* no dir attributes */
    p += 2;   /* verifier */
    for (unsigned i = 0; i < n; i++) {
        *p++ = htonl(1);
        p++;
        *p++ = htonl(i + 1);
        *p++ = htonl(1);
        *p++ = htonl(0x6e000000u);
        p++;
        *p++ = htonl(i + 1);
    }
    *p++ = 0;
    *p++ = htonl(1);
    CHECK_EQ((size_t)((char *)p - (char *)w), len);
    READDIR3res d;
    memset(&d, 0, sizeof(d));
    xdrmem_create(&x, (char *)w, (u_int)len, XDR_DECODE);
    CHECK(uiw__xdr_READDIR3res(&x, &d));
    xdr_destroy(&x);
    unsigned k = 0;
    for (entry3 *q = d.READDIR3res_u.resok.reply.entries; q; q = q->nextentry, k++)
        CHECK_EQ(q->cookie, k + 1);
    CHECK_EQ(k, n);
    CHECK(d.READDIR3res_u.resok.reply.eof);
    xdr_free(UIW__XDRPROC(uiw__xdr_READDIR3res), (caddr_t)&d);
    /* cut short: fails, and what was decoded is freed (LeakSanitizer) */
    memset(&d, 0, sizeof(d));
    xdrmem_create(&x, (char *)w, (u_int)(len / 2), XDR_DECODE);
    CHECK(!uiw__xdr_READDIR3res(&x, &d));
    xdr_destroy(&x);
    xdr_free(UIW__XDRPROC(uiw__xdr_READDIR3res), (caddr_t)&d);
    free(w);
}

/* A server (root not squashed, RDMA off, 16 handle records) whose export holds dirs
 * directories of 1,000 empty files each. */
static void srv_searching(struct srv *v, unsigned dirs)
{
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.rdma_port = -1;
    o.max_handles = 16;
    srv_start(v, &o);
    char name[64];
    for (unsigned d = 0; d < dirs; d++) {
        snprintf(name, sizeof(name), "d%02u", d);
        CHECK_EQ(mkdir(path_in(v, name), 0755), 0);
        int dfd = open(path_in(v, name), O_RDONLY | O_DIRECTORY);
        CHECK(dfd >= 0);
        for (unsigned i = 0; i < 1000; i++) {
            snprintf(name, sizeof(name), "f%04u", i);
            CHECK_EQ(mknodat(dfd, name, S_IFREG | 0644, 0), 0);
        }
        close(dfd);
    }
}

/* A handle of root's export for a file that does not exist: only a search could tell. Its
 * length. */
static uint32_t forge_handle(const struct uiw__nfs_fh *root, uint32_t i, char *forged)
{
    struct uiw__nfsd_fh f;
    nfs_fh3 rh;
    rh.data.data_len = root->len;
    rh.data.data_val = (char *)(uintptr_t)root->data;
    CHECK_EQ(uiw__nfs_fh_decode(&rh, &f), 0);
    f.klen = 0;
    f.ino = 0x5a5a000000000000ull + i;
    f.tag = 0x1234567890abcdefull * (i + 1);
    nfs_fh3 h;
    uiw__nfs_fh_encode(&f, &h, forged);
    return h.data.data_len;
}

/* Forged handles (the export's id and device, random inode numbers and tags) make the
 * server search its export for a file no record leads to: never for an AUTH_NONE caller
 * (NFS3ERR_STALE at once), and for others within the search's budget, past which they
 * get NFS3ERR_JUKEBOX. A real handle whose record was dropped is still found once the
 * budget allows. */
TEST(forged_handles_searched_within_budget)
{
    struct srv v;
    /* 60,000 entries in 60 directories: each search looks at all of them */
    srv_searching(&v, 60);
    char name[64];
    put_file(&v, "real", "abc", 3);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh real;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "real", &real, NULL), 0);
    /* push its record out: more lookups than the records kept */
    for (unsigned d = 0; d < 40; d++) {
        struct uiw__nfs_fh t;
        snprintf(name, sizeof(name), "d%02u", d);
        CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), name, &t, NULL), 0);
    }
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    int fd = tcp_to(v.tcp);
    char forged[UIW__NFS_FH_MAX];
    unsigned jukebox = 0;
    for (uint32_t i = 0; i < 400; i++) {
        uint32_t fl = forge_handle(root, i, forged);
        uint32_t st = getattr_raw(fd, 9000 + i, i < 200 ? AUTH_NONE : AUTH_SYS, forged, fl);
        if (i < 200)
            CHECK_EQ(st, NFS3ERR_STALE);
        else if (st == NFS3ERR_JUKEBOX)
            jukebox++;
        else
            CHECK_EQ(st, NFS3ERR_STALE);
    }
    struct uiw__nfs_fh_counts n;
    uiw__nfs_fhcache_counts(v.s->fhcache, &n);
    CHECK_EQ(n.search_refused, 200);
    CHECK_EQ(n.searches + n.search_deferred, 200);
    CHECK_EQ(n.search_deferred, jukebox);
    if (jukebox == 0 || n.searches >= 150)
        uiw_test_fail(__FILE__, __LINE__, "%llu searches, %u deferred",
                      (unsigned long long)n.searches, jukebox);
    /* the real handle: found by a search once the budget allows (JUKEBOX meanwhile) */
    uint32_t st = NFS3ERR_JUKEBOX;
    for (int i = 0; i < 300 && st == NFS3ERR_JUKEBOX; i++) {
        st = getattr_raw(fd, 20000 + (uint32_t)i, AUTH_SYS, real.data, real.len);
        if (st == NFS3ERR_JUKEBOX)
            usleep(50000);
    }
    CHECK_EQ(st, NFS3_OK);
    close(fd);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A server whose TCP limits are the test's, RDMA off. */
static void srv_limits(struct srv *v, unsigned max_conns, unsigned idle, unsigned io, unsigned bufs)
{
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.rdma_port = -1;
    o.max_conns = max_conns;
    o.idle_timeout = idle;
    o.io_timeout = io;
    o.io_buffers = bufs;
    srv_start(v, &o);
}

/* Whether the server closed fd within ms (end of stream or reset). */
static int closed_within(int fd, int ms)
{
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, ms) != 1)
        return 0;
    char b[256];
    ssize_t n;
    while ((n = recv(fd, b, sizeof(b), MSG_DONTWAIT)) > 0)
        ;
    return n == 0 || (n < 0 && errno != EAGAIN);
}

static struct uiw__nfs_tcp_counts tcp_counts(struct srv *v)
{
    struct uiw__nfs_tcp_counts c;
    uiw__nfs_tcp_counts(v->s->tcp, &c);
    return c;
}

/* One call that runs long (a forged handle searched for through 40,000 entries) holds up
 * neither the reading of the other connections nor their calls: the standby takes the
 * event thread's role from the thread in that call, and another client's GETATTRs are
 * answered while it runs. */
TEST(tcp_slow_call_holds_up_nobody)
{
    struct srv v;
    srv_searching(&v, 40);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    int slow = tcp_to(v.tcp), other = tcp_to(v.tcp);
    CHECK_EQ(getattr_raw(other, 1, AUTH_SYS, (const char *)root->data, root->len), NFS3_OK);
    uint64_t taken = tcp_counts(&v).role_taken;
    /* the slow call, its reply not read yet */
    static char rec[4 + 512 + 4 + UIW__NFS_FH_MAX];
    char forged[UIW__NFS_FH_MAX];
    uint32_t fl = forge_handle(root, 0, forged);
    size_t hl = call_header(rec + 4, 77, 100003, 3, NFSPROC3_GETATTR, AUTH_SYS);
    uint32_t be = htonl(fl);
    memcpy(rec + 4 + hl, &be, 4);
    memcpy(rec + 8 + hl, forged, fl);
    uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + 4 + fl));
    memcpy(rec, &mark, 4);
    send_all(slow, rec, 8 + hl + fl);
    for (int i = 0; i < 100000 && tcp_counts(&v).role_taken == taken; i++)
        usleep(100);
    CHECK(tcp_counts(&v).role_taken > taken);
    unsigned served = 0;
    struct pollfd pf = {slow, POLLIN, 0};
    /* counted when answered before the slow call is */
    while (served < 100000 && poll(&pf, 1, 0) == 0) {
        CHECK_EQ(getattr_raw(other, 100 + served, AUTH_SYS, (const char *)root->data, root->len),
                 NFS3_OK);
        if (poll(&pf, 1, 0) != 0)
            break;
        served++;
    }
    printf("another client's GETATTRs answered while one call searched: %u\n", served);
    CHECK(served > 0);
    size_t n;
    char *r = recv_record(slow, &n);
    struct rpc_msg m;
    decode_reply(r, n, 77, &m, NULL, NULL);
    CHECK_EQ(nfs_status(r, n), NFS3ERR_STALE);
    free(r);
    close(slow);
    close(other);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* Connections up to the limit are served; one more is closed at once (and counted), and
 * room made by a client that leaves is taken by the next. */
TEST(tcp_connection_limit)
{
    struct srv v;
    srv_limits(&v, 40, 0, 0, 0);
    int fd[40];
    for (int i = 0; i < 40; i++) {
        fd[i] = tcp_to(v.tcp);
        expect_accept(fd[i], 100003, 3, 0, NULL, 0, SUCCESS);
    }
    CHECK_EQ(tcp_counts(&v).conns, 40);
    int over = tcp_to(v.tcp);
    CHECK(closed_within(over, 10000));
    close(over);
    CHECK_EQ(tcp_counts(&v).refused, 1);
    for (int i = 0; i < 40; i++) /* all still served */
        expect_accept(fd[i], 100003, 3, 0, NULL, 0, SUCCESS);
    close(fd[0]);
    for (int i = 0; i < 10000 && tcp_counts(&v).conns != 39; i++)
        usleep(1000);
    int again = tcp_to(v.tcp);
    expect_accept(again, 100003, 3, 0, NULL, 0, SUCCESS);
    CHECK_EQ(tcp_counts(&v).refused, 1);
    close(again);
    for (int i = 1; i < 40; i++)
        close(fd[i]);
    srv_stop(&v);
}

/* A connection without a call for idle_timeout is closed; one that calls is not. */
TEST(tcp_idle_closed)
{
    struct srv v;
    srv_limits(&v, 0, 2, 0, 0);
    int idle = tcp_to(v.tcp), busy = tcp_to(v.tcp);
    expect_accept(idle, 100003, 3, 0, NULL, 0, SUCCESS);
    for (int i = 0; i < 12; i++) {
        expect_accept(busy, 100003, 3, 0, NULL, 0, SUCCESS);
        usleep(250000);
    }
    CHECK(closed_within(idle, 3000));
    expect_accept(busy, 100003, 3, 0, NULL, 0, SUCCESS);
    CHECK_EQ(tcp_counts(&v).idle, 1);
    close(idle);
    close(busy);
    srv_stop(&v);
}

/* A record whose bytes stop coming holds its buffer for io_timeout at most: the
 * connection is closed, the buffer comes back, others are served meanwhile. */
TEST(tcp_stalled_record_closed)
{
    struct srv v;
    srv_limits(&v, 0, 0, 2, 0);
    int fd = tcp_to(v.tcp), other = tcp_to(v.tcp);
    /* the mark and header of a 1 MiB WRITE, then half its bytes */
    char *rec = calloc(1, 600 * 1024);
    CHECK(rec != NULL);
    size_t hl = call_header(rec + 4, 1, 100003, 3, NFSPROC3_WRITE, AUTH_NONE);
    uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + (1u << 20)));
    memcpy(rec, &mark, 4);
    send_all(fd, rec, 4 + hl + 512 * 1024);
    free(rec);
    for (int i = 0; i < 10000 && tcp_counts(&v).large_taken != 1; i++)
        usleep(1000);
    CHECK_EQ(tcp_counts(&v).large_taken, 1);
    expect_accept(other, 100003, 3, 0, NULL, 0, SUCCESS);
    CHECK(closed_within(fd, 6000));
    CHECK_EQ(tcp_counts(&v).stalled, 1);
    for (int i = 0; i < 5000 && tcp_counts(&v).large_taken; i++)
        usleep(1000);
    CHECK_EQ(tcp_counts(&v).large_taken, 0);
    expect_accept(other, 100003, 3, 0, NULL, 0, SUCCESS);
    close(fd);
    close(other);
    srv_stop(&v);
}

/* A client that sends 1 MiB READs and never reads the replies: the replies wait in its
 * connection's queue (holding at most the connection's share of the large buffers), it
 * is closed after io_timeout, and another client's calls are answered meanwhile as
 * quickly as without it. */
TEST(tcp_slow_reader_closed_others_served)
{
    struct srv v;
    srv_limits(&v, 0, 0, 3, 16);
    char *data = malloc(1u << 20);
    CHECK(data != NULL);
    memset(data, 'r', 1u << 20);
    put_file(&v, "big", data, 1u << 20);
    free(data);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "big", &f, NULL), 0);
    int slow = tcp_to(v.tcp);
    int small = 4096;
    CHECK_EQ(setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    /* 64 READs of 1 MiB, pipelined, never read */
    char args[128];
    XDR x;
    xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
    READ3args ra = {{{f.len, f.data}}, 0, 1u << 20};
    CHECK(xdr_READ3args(&x, &ra));
    size_t alen = xdr_getpos(&x);
    xdr_destroy(&x);
    for (uint32_t i = 0; i < 64; i++) {
        char rec[4 + 512 + 128];
        size_t hl = call_header(rec + 4, 7000 + i, 100003, 3, NFSPROC3_READ, AUTH_SYS);
        memcpy(rec + 4 + hl, args, alen);
        uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + alen));
        memcpy(rec, &mark, 4);
        send_all(slow, rec, 4 + hl + alen);
    }
    /* the others: GETATTR round trips while the slow reader is there */
    int64_t worst = 0;
    int closed = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 100000 && !closed; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        fattr3 at;
        CHECK_EQ(uiw__nfs_getattr(c, &f, &at), 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t ns = (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
        if (ns > worst)
            worst = ns;
        CHECK(tcp_counts(&v).large_taken <= 4);
        closed = tcp_counts(&v).conns == 1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        CHECK(t1.tv_sec - t0.tv_sec < 20);
        usleep(2000);
    }
    CHECK(closed);
    CHECK_EQ(tcp_counts(&v).stalled, 1); /* by the server's timer or the kernel's */
    /* a GETATTR never waited for the slow reader (generous: sanitizer builds) */
    if (worst > 500000000ll)
        uiw_test_fail(__FILE__, __LINE__, "a GETATTR took %lld ms", (long long)(worst / 1000000));
    for (int i = 0; i < 10000 && tcp_counts(&v).large_taken; i++)
        usleep(1000);
    CHECK_EQ(tcp_counts(&v).large_taken, 0);
    close(slow);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* 100 GETATTRs and NULLs sent back to back in one write: each answered once, with its
 * XID, on the one connection (several at once: in whatever order they finish). */
TEST(tcp_pipelined_calls)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    int fd = tcp_to(v.tcp);
    static char buf[100 * 700];
    size_t len = 0;
    for (uint32_t i = 0; i < 100; i++) {
        uint32_t args[1 + NFS3_FHSIZE / 4];
        args[0] = htonl(root->len);
        memcpy(args + 1, root->data, root->len);
        size_t hl =
            call_header(buf + len + 4, 3000 + i, 100003, 3, i % 2 ? NFSPROC3_GETATTR : 0, AUTH_SYS);
        size_t al = i % 2 ? 4 + root->len : 0;
        memcpy(buf + len + 4 + hl, args, al);
        uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + al));
        memcpy(buf + len, &mark, 4);
        len += 4 + hl + al;
    }
    send_all(fd, buf, len);
    char seen[100] = {0};
    for (int i = 0; i < 100; i++) {
        size_t n;
        char *r = recv_record(fd, &n);
        CHECK(n >= 4);
        uint32_t xid;
        memcpy(&xid, r, 4);
        xid = ntohl(xid);
        CHECK(xid >= 3000 && xid < 3100);
        CHECK(!seen[xid - 3000]);
        seen[xid - 3000] = 1;
        struct rpc_msg m;
        decode_reply(r, n, xid, &m, NULL, NULL);
        CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
        if (xid % 2)
            CHECK_EQ(nfs_status(r, n), NFS3_OK);
        free(r);
    }
    close(fd);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* 200 connections each send one 1 MiB WRITE at once: the large buffers in use never pass
 * the pool's bound, every WRITE is done, and the pool gives its memory back once idle. */
TEST(tcp_writes_share_bounded_buffers)
{
    struct srv v;
    srv_limits(&v, 0, 0, 0, 8);
    put_file(&v, "w", "", 0);
    CHECK_EQ(chmod(path_in(&v, "w"), 0666), 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "w", &f, NULL), 0);
    enum { N = 200 };
    static int fd[N];
    char *rec = malloc(4 + 512 + 128 + (1u << 20));
    CHECK(rec != NULL);
    size_t size_max = 0;
    for (uint32_t i = 0; i < N; i++) {
        fd[i] = tcp_to(v.tcp);
        size_t hl = call_header(rec + 4, 100 + i, 100003, 3, NFSPROC3_WRITE, AUTH_SYS);
        XDR x;
        xdrmem_create(&x, rec + 4 + hl, 128, XDR_ENCODE);
        WRITE3args wa;
        memset(&wa, 0, sizeof(wa));
        wa.file.data.data_len = f.len;
        wa.file.data.data_val = f.data;
        wa.offset = (uint64_t)(i % 4) << 20;
        wa.count = 1u << 20;
        wa.stable = UNSTABLE;
        u_int dl = 1u << 20;
        CHECK(xdr_nfs_fh3(&x, &wa.file) && xdr_offset3(&x, &wa.offset) &&
              xdr_count3(&x, &wa.count) && xdr_stable_how(&x, &wa.stable) && xdr_u_int(&x, &dl));
        size_t al = xdr_getpos(&x);
        xdr_destroy(&x);
        memset(rec + 4 + hl + al, (int)('a' + i % 4), 1u << 20);
        uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + al + (1u << 20)));
        memcpy(rec, &mark, 4);
        send_all(fd[i], rec, 4 + hl + al + (1u << 20));
        struct uiw__nfs_tcp_counts tc = tcp_counts(&v);
        CHECK(tc.large_taken <= 8);
        if (tc.pool_bytes > size_max)
            size_max = tc.pool_bytes;
    }
    free(rec);
    for (uint32_t i = 0; i < N; i++) {
        size_t n;
        char *r = recv_record(fd[i], &n);
        struct rpc_msg m;
        decode_reply(r, n, 100 + i, &m, NULL, NULL);
        CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
        CHECK_EQ(nfs_status(r, n), NFS3_OK);
        free(r);
        close(fd[i]);
    }
    /* the bound: 8 large buffers, and small ones for the rest */
    if (size_max > 8 * ((1u << 20) + 8192 + 64) + N * 2 * (8192 + 64))
        uiw_test_fail(__FILE__, __LINE__, "the pool held %zu bytes", size_max);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "w"), &st), 0);
    CHECK_EQ(st.st_size, 4 << 20);
    /* idle: the buffers go back (the pool is trimmed every 5 s), but for one large one
     * (the next large call's, its pages in place) */
    const size_t idle_max = 64 * 1024 + (1u << 20) + 8192 + 64;
    size_t now = tcp_counts(&v).pool_bytes;
    for (int i = 0; i < 150 && now > idle_max; i++) {
        usleep(100000);
        now = tcp_counts(&v).pool_bytes;
    }
    if (now > idle_max)
        uiw_test_fail(__FILE__, __LINE__, "the idle pool holds %zu bytes", now);
    if (now < (1u << 20))
        uiw_test_fail(__FILE__, __LINE__, "the idle pool kept no large buffer: %zu bytes", now);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A REMOVE sent again with its XID on a new connection (a client that lost its connection
 * before the reply, and made its credential again: another stamp) gets the first one's
 * reply, byte for byte, instead of running twice (NFS3ERR_NOENT); another XID runs; a
 * GETATTR sent again runs again (not kept). */
TEST(tcp_retransmission_answered_from_cache)
{
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(chmod(v.dir, 0777), 0);
    put_file(&v, "victim", "x", 1);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    char args[128];
    XDR x;
    xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
    REMOVE3args ra = {{{{root->len, (char *)root->data}}, "victim"}};
    CHECK(xdr_REMOVE3args(&x, &ra));
    size_t alen = xdr_getpos(&x);
    xdr_destroy(&x);
    unsigned long hits = v.s->drc_hits;
    size_t n1, n2, n3;
    int fd = tcp_to(v.tcp);
    char *r1 = call_raw(fd, 77, 100003, 3, NFSPROC3_REMOVE, AUTH_SYS, args, alen, &n1);
    close(fd);
    CHECK_EQ(nfs_status(r1, n1), NFS3_OK);
    struct stat st;
    CHECK(stat(path_in(&v, "victim"), &st) != 0);
    fd = tcp_to(v.tcp);
    rawrpc_stamp = 2; /* a client that made its credential again: a new stamp, the same call */
    char *r2 = call_raw(fd, 77, 100003, 3, NFSPROC3_REMOVE, AUTH_SYS, args, alen, &n2);
    rawrpc_stamp = 1;
    CHECK_EQ(n2, n1);
    CHECK_MEM(r2, r1, n1);
    CHECK_EQ(v.s->drc_hits, hits + 1);
    char *r3 = call_raw(fd, 78, 100003, 3, NFSPROC3_REMOVE, AUTH_SYS, args, alen, &n3);
    CHECK_EQ(nfs_status(r3, n3), NFS3ERR_NOENT);
    uint32_t ga[1 + NFS3_FHSIZE / 4];
    ga[0] = htonl(root->len);
    memcpy(ga + 1, root->data, root->len);
    for (int i = 0; i < 2; i++) {
        size_t n;
        free(call_raw(fd, 79, 100003, 3, NFSPROC3_GETATTR, AUTH_SYS, ga, 4 + root->len, &n));
    }
    CHECK_EQ(v.s->drc_hits, hits + 1);
    free(r1);
    free(r2);
    free(r3);
    close(fd);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A name or a link's path holding a NUL byte is refused (GARBAGE_ARGS, as knfsd answers),
 * never cut short at the NUL: CREATE "a\0b" makes no "a", SYMLINK to "t\0u" no link. */
TEST(names_with_nul_refused)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    int fd = tcp_to(v.tcp);
    uint32_t a[64];
    memset(a, 0, sizeof(a));
    size_t w = 0;
    a[w++] = htonl(root->len);
    memcpy(&a[w], root->data, root->len);
    w += root->len / 4;
    a[w++] = htonl(3);
    memcpy(&a[w++], "a\0b", 3); /* the name */
    size_t cut = w;
    a[w++] = htonl(UNCHECKED); /* createhow3: sattr3 with nothing set */
    w += 6;
    expect_accept(fd, 100003, 3, NFSPROC3_CREATE, a, w * 4, GARBAGE_ARGS);
    /* SYMLINK "l" -> "t\0u" */
    w = cut - 2;
    a[w++] = htonl(1);
    memcpy(&a[w++], "l\0\0\0", 4);
    w += 6; /* sattr3: nothing set */
    a[w++] = htonl(3);
    memcpy(&a[w++], "t\0u", 3);
    expect_accept(fd, 100003, 3, NFSPROC3_SYMLINK, a, w * 4, GARBAGE_ARGS);
    struct stat st;
    CHECK(lstat(path_in(&v, "a"), &st) != 0);
    CHECK(lstat(path_in(&v, "l"), &st) != 0);
    expect_accept(fd, 100003, 3, 0, NULL, 0, SUCCESS);
    close(fd);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}
