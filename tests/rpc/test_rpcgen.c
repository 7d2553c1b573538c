/* A program compiled by rpcgen (tests/rpc/testprog.x), its generated client stubs, XDR
 * routines and server dispatch routine used unchanged over RPC-over-RDMA. */
#ifdef UIW_HAVE_RPCGEN
#include <stdlib.h>

#include "rpc_util.h"
#include "testprog.h"

/* the dispatch routine of testprog_svc.c (rpcgen -m declares it nowhere) */
void testprog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* the server procedures rpcgen's dispatch routine calls (its classic static results) */
void *tnull_1_svc(void *argp, struct svc_req *rq)
{
    (void)argp;
    (void)rq;
    static char dummy;
    return &dummy;
}

u_int *tadd_1_svc(addargs *a, struct svc_req *rq)
{
    (void)rq;
    static u_int r;
    r = a->a + a->b;
    return &r;
}

blob *techo_1_svc(blob *b, struct svc_req *rq)
{
    (void)rq;
    static blob r;
    r = *b;
    return &r;
}

char **thello_1_svc(char **s, struct svc_req *rq)
{
    (void)rq;
    static char buf[300];
    static char *r = buf;
    snprintf(buf, sizeof(buf), "hello, %s", *s);
    return &r;
}

stat3 *tstat_1_svc(u_int *n, struct svc_req *rq)
{
    (void)rq;
    static stat3 r;
    r.size = (u_quad_t)*n << 33;
    r.mode = 0644;
    r.nlink = *n;
    r.uid = 1000;
    r.gid = 100;
    for (int i = 0; i < 4; i++)
        r.flags[i] = *n + (u_int)i;
    return &r;
}

int testprog_1_freeresult(SVCXPRT *x, xdrproc_t xr, caddr_t res)
{
    (void)x;
    (void)xr;
    (void)res;
    return 1;
}

static void rpcgen_program(uint32_t vers)
{
    struct uiw_rpc_svc_attr sa = {0};
    struct uiw_rpc_svc *svc = uiw_rpc_svc_create(&sa);
    CHECK(svc != NULL);
    CHECK_EQ(uiw_rpc_svc_register(svc, TESTPROG, TESTVERS, testprog_1), 0);
    CHECK_EQ(uiw_rpc_svc_start(svc), 0);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = vers;
    ca.no_vers_memory = true;
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", uiw_rpc_svc_port(svc), TESTPROG, TESTVERS, &ca);
    CHECK(c != NULL);
    CHECK(tnull_1(NULL, c) != NULL);
    addargs a = {40, 2};
    u_int *sum = tadd_1(&a, c);
    CHECK(sum != NULL);
    CHECK_EQ(*sum, 42);
    char *who = "rdma";
    char **hello = thello_1(&who, c);
    CHECK(hello != NULL);
    CHECK_STR(*hello, "hello, rdma");
    clnt_freeres(c, (xdrproc_t)xdr_wrapstring, (char *)hello);
    stat3 *st = tstat_1(&a.a, c);
    CHECK(st != NULL);
    CHECK_EQ(st->size, (u_quad_t)40 << 33);
    CHECK_EQ(st->nlink, 40);
    CHECK_EQ(st->flags[3], 43);
    /* a small blob, then one above the inline size: an argument Read chunk; the result,
     * with no buffer set up by the stub, comes back in a Reply chunk (Version Two: after
     * REPLY_RESOURCE) */
    u_int sizes[] = {100, vers == 2 ? 70000u : 1000u};
    for (int k = 0; k < 2; k++) {
        u_int n = sizes[k];
        blob b = {n, malloc(n)};
        for (u_int i = 0; i < n; i++)
            b.blob_val[i] = (char)(i * 3);
        blob *r = techo_1(&b, c);
        CHECK(r != NULL);
        CHECK_EQ(r->blob_len, n);
        CHECK_MEM(r->blob_val, b.blob_val, n);
        clnt_freeres(c, (xdrproc_t)xdr_blob, (char *)r);
        free(b.blob_val);
    }
    clnt_destroy(c);
    CHECK_EQ(uiw_rpc_svc_destroy(svc), 0);
}

TEST(rpc_rpcgen_program_v2)
{
    rpcgen_program(2);
}

TEST(rpc_rpcgen_program_v1)
{
    rpcgen_program(1);
}
#endif
