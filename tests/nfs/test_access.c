/* Access control from an exports file, on MNT and on every NFS call, over TCP and over
 * RPC-over-RDMA: who is not a client gets MNT3ERR_ACCES / NFS3ERR_ACCES, a write to a
 * read-only export NFS3ERR_ROFS, a secure export refuses source ports of 1024 and above,
 * and each client is squashed as its options say. Calls come from the loopback addresses
 * 127.0.0.1 to 127.0.0.5 (all of 127/8 is this host). */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uiw/rpc.h>

#include "mount3.h"
#include "nfs/exports.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "nfs3.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

/* A server of a new temporary directory exported by an exports file's line:
 * "DIR <clients>" (RDMA on a free port). */
static void srv_exports(struct srv *v, const char *clients)
{
    memset(v, 0, sizeof(*v));
    snprintf(v->dir, sizeof(v->dir), "/tmp/uiw-nfs-access.XXXXXX");
    CHECK(mkdtemp(v->dir) != NULL);
    CHECK_EQ(chmod(v->dir, 0777), 0);
    char text[1024];
    snprintf(text, sizeof(text), "%s %s\n", v->dir, clients);
    struct uiw__nfs_xtable t;
    char err[512];
    if (uiw__nfs_exports_parse(text, "exports", &t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.addr = NULL; /* every address: calls come from 127.0.0.x */
    o.tcp_port = o.mount_port = o.rdma_port = 0;
    v->s = uiw__nfsd_create(&o);
    CHECK(v->s != NULL);
    CHECK_EQ(uiw__nfsd_add_exports(v->s, &t, err, sizeof(err)), 0);
    CHECK_EQ(uiw__nfsd_start(v->s), 0);
    v->tcp = uiw__nfsd_port(v->s, UIW__NFSD_TCP);
    v->mount = uiw__nfsd_port(v->s, UIW__NFSD_MOUNT);
}

/* A TCP connection from 127.0.0.<host> (a source port below 1024 when low) to port. */
static int tcp_from(int host, int low, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(0x7f000000u + (uint32_t)host);
    if (low) {
        int ok = -1;
        for (int p = 1023; p > 600 && ok != 0; p--) {
            a.sin_port = htons((uint16_t)p);
            ok = bind(fd, (struct sockaddr *)&a, sizeof(a));
        }
        CHECK_EQ(ok, 0);
    } else {
        CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    }
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    return fd;
}

/* MNT of the export from fd: the status, and the root handle into h. */
static uint32_t mnt_raw(int fd, const char *path, char h[NFS3_FHSIZE], uint32_t *hlen)
{
    char args[1100];
    XDR x;
    xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
    dirpath d = (char *)path;
    CHECK(xdr_dirpath(&x, &d));
    size_t alen = xdr_getpos(&x);
    xdr_destroy(&x);
    size_t n;
    static uint32_t xid = 500;
    char *r = call_raw(fd, ++xid, 100005, 3, MOUNTPROC3_MNT, AUTH_SYS, args, alen, &n);
    mountres3 res;
    memset(&res, 0, sizeof(res));
    struct rpc_msg m;
    decode_reply(r, n, xid, &m, UIW__XDRPROC(xdr_mountres3), &res);
    uint32_t st = res.fhs_status;
    if (st == MNT3_OK) {
        *hlen = res.mountres3_u.mountinfo.fhandle.fhandle3_len;
        memcpy(h, res.mountres3_u.mountinfo.fhandle.fhandle3_val, *hlen);
    }
    xdr_free(UIW__XDRPROC(xdr_mountres3), (caddr_t)&res);
    free(r);
    return st;
}

/* CREATE of name in the directory h from fd (AUTH_SYS as uid and gid 1000, or as root
 * when root): the NFS status. */
static uint32_t create_raw(int fd, const char *h, uint32_t hlen, const char *name)
{
    char args[512];
    XDR x;
    xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
    CREATE3args a;
    memset(&a, 0, sizeof(a));
    a.where.dir.data.data_len = hlen;
    a.where.dir.data.data_val = (char *)h;
    a.where.name = (char *)name;
    a.how.mode = GUARDED;
    CHECK(xdr_CREATE3args(&x, &a));
    size_t alen = xdr_getpos(&x);
    xdr_destroy(&x);
    size_t n;
    static uint32_t xid = 900;
    char *r = call_raw(fd, ++xid, 100003, 3, NFSPROC3_CREATE, AUTH_SYS, args, alen, &n);
    uint32_t st = nfs_status(r, n);
    free(r);
    return st;
}

TEST(access_from_exports_file_tcp)
{
    struct srv v;
    srv_exports(&v, "127.0.0.1(rw,insecure) 127.0.0.2(ro,insecure) 127.0.0.3(rw) "
                    "127.0.0.5(rw,insecure,all_squash,anonuid=4321,anongid=4322)");
    char h[NFS3_FHSIZE];
    uint32_t hl = 0;
    /* a client of it, read-write */
    int fd = tcp_from(1, 0, v.mount);
    CHECK_EQ(mnt_raw(fd, v.dir, h, &hl), MNT3_OK);
    close(fd);
    fd = tcp_from(1, 0, v.tcp);
    CHECK_EQ(getattr_raw(fd, 1, AUTH_SYS, h, hl), NFS3_OK);
    CHECK_EQ(create_raw(fd, h, hl, "by1"), NFS3_OK);
    close(fd);
    /* read-only: reads yes, writes NFS3ERR_ROFS, even with the handle got elsewhere */
    fd = tcp_from(2, 0, v.tcp);
    CHECK_EQ(getattr_raw(fd, 2, AUTH_SYS, h, hl), NFS3_OK);
    CHECK_EQ(create_raw(fd, h, hl, "by2"), NFS3ERR_ROFS);
    close(fd);
    struct stat st;
    CHECK(stat(path_in(&v, "by2"), &st) != 0);
    /* not a client: MNT3ERR_ACCES, and every call NFS3ERR_ACCES with a handle it got
     * from another client */
    fd = tcp_from(4, 0, v.mount);
    char h2[NFS3_FHSIZE];
    uint32_t hl2;
    CHECK_EQ(mnt_raw(fd, v.dir, h2, &hl2), MNT3ERR_ACCES);
    close(fd);
    fd = tcp_from(4, 0, v.tcp);
    CHECK_EQ(getattr_raw(fd, 3, AUTH_SYS, h, hl), NFS3ERR_ACCES);
    CHECK_EQ(create_raw(fd, h, hl, "by4"), NFS3ERR_ACCES);
    close(fd);
    /* secure (the default): a source port of 1024 or above is refused; below 1024 (root
     * only) it is served */
    fd = tcp_from(3, 0, v.tcp);
    CHECK_EQ(getattr_raw(fd, 4, AUTH_SYS, h, hl), NFS3ERR_ACCES);
    close(fd);
    fd = tcp_from(3, 0, v.mount);
    CHECK_EQ(mnt_raw(fd, v.dir, h2, &hl2), MNT3ERR_ACCES);
    close(fd);
    if (geteuid() == 0) {
        fd = tcp_from(3, 1, v.tcp);
        CHECK_EQ(getattr_raw(fd, 5, AUTH_SYS, h, hl), NFS3_OK);
        close(fd);
    }
    /* all_squash with its own anonymous identity: the file is made as 4321:4322 (a server
     * run as root acts as each caller) */
    if (geteuid() == 0) {
        fd = tcp_from(5, 0, v.tcp);
        CHECK_EQ(create_raw(fd, h, hl, "by5"), NFS3_OK);
        close(fd);
        CHECK_EQ(stat(path_in(&v, "by5"), &st), 0);
        CHECK_EQ(st.st_uid, 4321);
        CHECK_EQ(st.st_gid, 4322);
        CHECK_EQ(stat(path_in(&v, "by1"), &st), 0);
        CHECK_EQ(st.st_uid, 1000); /* root_squash leaves others alone */
    }
    /* MOUNT EXPORT lists the clients */
    fd = tcp_from(1, 0, v.mount);
    size_t n;
    char *r = call_raw(fd, 77, 100005, 3, MOUNTPROC3_EXPORT, AUTH_SYS, NULL, 0, &n);
    mntexports ex = NULL;
    struct rpc_msg m;
    decode_reply(r, n, 77, &m, UIW__XDRPROC(uiw__xdr_mntexports), &ex);
    CHECK(ex != NULL);
    CHECK_STR(ex->ex_dir, v.dir);
    const char *want[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.5"};
    groupnode *g = ex->ex_groups;
    for (int i = 0; i < 4; i++, g = g->gr_next) {
        CHECK(g != NULL);
        CHECK_STR(g->gr_name, want[i]);
    }
    CHECK(g == NULL);
    xdr_free(UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&ex);
    free(r);
    close(fd);
    srv_stop(&v);
}

/* The same over RPC-over-RDMA (from 127.0.0.1): a read-only client's writes get
 * NFS3ERR_ROFS, and a server whose export leaves 127.0.0.1 out answers NFS3ERR_ACCES. */
TEST(access_from_exports_file_rdma)
{
    for (int ro = 1; ro >= 0; ro--) {
        struct srv v;
        srv_exports(&v, ro ? "127.0.0.1(ro,insecure) 127.0.0.2(rw,insecure)"
                           : "127.0.0.2(rw,insecure)");
        int rdma = uiw__nfsd_port(v.s, UIW__NFSD_RDMA);
        CHECK(rdma > 0);
        /* the root handle, by MNT from a client that may have it */
        char h[NFS3_FHSIZE];
        uint32_t hl = 0;
        int fd = tcp_from(2, 0, v.mount);
        CHECK_EQ(mnt_raw(fd, v.dir, h, &hl), MNT3_OK);
        close(fd);
        char url[512];
        snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma", rdma, v.dir,
                 v.mount);
        struct uiw__nfs_url u;
        char err[512];
        CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
        u.uid = u.gid = 1000;
        struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
        if (!ro) {
            /* MNT refused: the client cannot even start; a GETATTR of the handle got by
             * another client, over RDMA, gets NFS3ERR_ACCES */
            CHECK(c == NULL);
            struct uiw_rpc_clnt_attr ca;
            memset(&ca, 0, sizeof(ca));
            ca.xprt.vers_min = 1;
            ca.xprt.vers_max = 2;
            CLIENT *cl = uiw_rpc_clnt_create("127.0.0.1", (uint16_t)rdma, 100003, 3, &ca);
            CHECK(cl != NULL);
            GETATTR3args ga = {{{hl, h}}};
            GETATTR3res gr;
            memset(&gr, 0, sizeof(gr));
            struct timeval tv = {10, 0};
            CHECK_EQ(clnt_call(cl, NFSPROC3_GETATTR, UIW__XDRPROC(xdr_GETATTR3args), (caddr_t)&ga,
                               UIW__XDRPROC(xdr_GETATTR3res), (caddr_t)&gr, tv),
                     RPC_SUCCESS);
            CHECK_EQ(gr.status, NFS3ERR_ACCES);
            clnt_destroy(cl);
        } else {
            CHECK(c != NULL);
            struct uiw__nfs_fh f;
            CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "x", 0644, 1, &f),
                     -(int)NFS3ERR_ROFS);
            fattr3 a;
            CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
            uiw__nfs_client_close(c);
        }
        srv_stop(&v);
    }
}

static void reload_text(struct srv *v, const char *text, int want)
{
    struct uiw__nfs_xtable t;
    char err[512];
    if (uiw__nfs_exports_parse(text, "exports", &t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    int rc = uiw__nfsd_reload_exports(v->s, &t, err, sizeof(err));
    if (rc != want)
        uiw_test_fail(__FILE__, __LINE__, "reload: %d (%s), not %d", rc, err, want);
    uiw__nfs_xtable_free(&t);
}

struct hammer {
    int port, stop, calls, fails;
    char h[NFS3_FHSIZE];
    uint32_t hl;
};

static void *hammer_getattr(void *arg)
{
    struct hammer *hm = arg;
    int fd = tcp_from(9, 0, hm->port);
    for (uint32_t x = 1; !__atomic_load_n(&hm->stop, __ATOMIC_RELAXED); x++) {
        uint32_t st = getattr_raw(fd, x, AUTH_SYS, hm->h, hm->hl);
        __atomic_fetch_add(&hm->calls, 1, __ATOMIC_RELAXED);
        hm->fails += st != NFS3_OK && st != NFS3ERR_ACCES;
    }
    close(fd);
    return NULL;
}

/* SIGHUP's reload: a client's options change for its next call on the same connection,
 * a client dropped gets NFS3ERR_ACCES, an export added is mounted, one removed is refused
 * (and hidden from MNT), a table with an error changes nothing; and calls that run all
 * through reloads are each answered as one table or the other says. */
TEST(access_exports_reload)
{
    struct srv v;
    srv_exports(&v, "127.0.0.1(rw,insecure) 127.0.0.9(ro,insecure)");
    char other[300];
    snprintf(other, sizeof(other), "%s.b", v.dir);
    CHECK_EQ(mkdir(other, 0777), 0);
    char h[NFS3_FHSIZE], hb[NFS3_FHSIZE];
    uint32_t hl = 0, hbl = 0;
    int m = tcp_from(1, 0, v.mount);
    CHECK_EQ(mnt_raw(m, v.dir, h, &hl), MNT3_OK);
    CHECK_EQ(mnt_raw(m, other, hb, &hbl), MNT3ERR_NOENT);
    int fd = tcp_from(1, 0, v.tcp);
    CHECK_EQ(create_raw(fd, h, hl, "a"), NFS3_OK);
    struct hammer hm = {v.tcp, 0, 0, 0, {0}, hl};
    memcpy(hm.h, h, hl);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, hammer_getattr, &hm), 0);
    /* the reloads begin once its calls are running */
    for (int i = 0; i < 10000 && !__atomic_load_n(&hm.calls, __ATOMIC_RELAXED); i++)
        usleep(1000);
    char text[1024];
    /* read-only now, for the same connection */
    snprintf(text, sizeof(text),
             "%s 127.0.0.1(ro,insecure) 127.0.0.9(insecure)\n%s *(rw,insecure)\n", v.dir, other);
    reload_text(&v, text, 0);
    CHECK_EQ(create_raw(fd, h, hl, "b"), NFS3ERR_ROFS);
    CHECK_EQ(mnt_raw(m, other, hb, &hbl), MNT3_OK); /* added */
    /* an error: nothing changes */
    snprintf(text, sizeof(text), "%s 127.0.0.1(rw,insecure)\n/no/such/dir *(rw)\n", v.dir);
    reload_text(&v, text, -ENOENT);
    CHECK_EQ(create_raw(fd, h, hl, "b"), NFS3ERR_ROFS);
    /* 127.0.0.1 dropped, the second export removed */
    for (int i = 0; i < 100; i++) {
        snprintf(text, sizeof(text), "%s 127.0.0.%d(rw,insecure) 127.0.0.9(insecure)\n", v.dir,
                 i % 2 ? 2 : 1);
        reload_text(&v, text, 0);
    }
    CHECK_EQ(getattr_raw(fd, 99, AUTH_SYS, h, hl), NFS3ERR_ACCES);
    CHECK_EQ(getattr_raw(fd, 98, AUTH_SYS, hb, hbl), NFS3ERR_ACCES);
    CHECK_EQ(mnt_raw(m, other, hb, &hbl), MNT3ERR_NOENT);
    __atomic_store_n(&hm.stop, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    CHECK(hm.calls > 0);
    CHECK_EQ(hm.fails, 0);
    close(fd);
    close(m);
    srv_stop(&v);
    rmdir(other);
}

/* `sync` (the default of an exports file): every change of metadata is made durable
 * before the reply (the object and its directory fsynced, as knfsd's commit_metadata);
 * `async` leaves them to the file system. */
TEST(access_sync_metadata)
{
    for (int async = 0; async < 2; async++) {
        struct srv v;
        srv_exports(&v, async ? "127.0.0.1(rw,insecure,async)" : "127.0.0.1(rw,insecure)");
        char h[NFS3_FHSIZE];
        uint32_t hl = 0;
        int m = tcp_from(1, 0, v.mount);
        CHECK_EQ(mnt_raw(m, v.dir, h, &hl), MNT3_OK);
        close(m);
        int fd = tcp_from(1, 0, v.tcp);
        unsigned long before = v.s->meta_syncs;
        CHECK_EQ(create_raw(fd, h, hl, "durable"), NFS3_OK);
        unsigned long made = v.s->meta_syncs - before;
        if (async)
            CHECK_EQ(made, 0);
        else
            CHECK_EQ(made, 2); /* the file and its directory */
        close(fd);
        srv_stop(&v);
    }
}
