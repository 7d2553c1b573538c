/* rpcrdma-ping against a server of the RPC layer on loopback: what each connection
 * settled, Version One fallback and its memory across connections, the exit statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/rpc.h>

#include "run.h"
#include "test.h"

#define PING UIW_BINARY_DIR "/tools/rpcrdma-ping"
#define PROG 0x20000bb0u

static bool_t xvoid(XDR *x, void *p)
{
    (void)x;
    (void)p;
    return TRUE;
}

static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
    if (rq->rq_proc == 0)
        svc_sendreply(x, (xdrproc_t)xvoid, NULL);
    else
        svcerr_noproc(x);
}

static struct uiw_rpc_svc *server(uint32_t vers_max, uint16_t *port)
{
    struct uiw_rpc_svc_attr a = {0};
    a.xprt.vers_max = vers_max;
    a.xprt.credits = 32;
    struct uiw_rpc_svc *s = uiw_rpc_svc_create(&a);
    CHECK(s != NULL);
    CHECK_EQ(uiw_rpc_svc_register(s, PROG, 2, dispatch), 0);
    CHECK_EQ(uiw_rpc_svc_register(s, PROG, 3, dispatch), 0);
    CHECK_EQ(uiw_rpc_svc_start(s), 0);
    *port = uiw_rpc_svc_port(s);
    return s;
}

static void ping(struct tool_run *r, uint16_t port, const char *const *extra)
{
    char p[16], prog[16];
    snprintf(p, sizeof(p), "%u", port);
    snprintf(prog, sizeof(prog), "%u", PROG);
    const char *argv[24] = {"rpcrdma-ping", "-p", p};
    int n = 3;
    while (extra && *extra)
        argv[n++] = *extra++;
    argv[n++] = "127.0.0.1";
    argv[n++] = prog;
    argv[n++] = "3";
    argv[n] = NULL;
    tool_run(PING, argv, "", 0, 60, r);
}

TEST(rpcrdma_ping_v2)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(2, &port);
    struct tool_run r;
    ping(&r, port, (const char *[]){"-c", "3", NULL});
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "first message: RPC-over-RDMA Version Two\n") != NULL);
    CHECK(strstr(r.out, "RPC-over-RDMA version 2, credits 32, inline send 4096 receive 4096") !=
          NULL);
    CHECK(strstr(r.out, "server's properties (Version Two): receive buffer size 4096, backward "
                        "requests INLINE") != NULL);
    CHECK(strstr(r.out, "server's private data (RFC 8797): send size 4096, receive size 4096, "
                        "remote invalidation yes") != NULL);
    const char *p = r.out;
    int ok = 0;
    while ((p = strstr(p, "procedure 0: success, round trip ")) != NULL)
        ok++, p++;
    CHECK_EQ(ok, 3);
    tool_run_free(&r);
    ping(&r, port, (const char *[]){"--json", NULL});
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "{\"connection\":1,\"vers\":2,\"first_vers\":2,\"err_vers\":null,"
                        "\"remembered\":false,\"credits\":32,") == r.out);
    CHECK(strstr(r.out, "\"peer_properties\":{\"rbsiz\":4096,\"brs\":\"INLINE\"},\"calls\":[{"
                        "\"vers\":3,\"status\":\"success\",\"rtt_us\":") != NULL);
    CHECK(strstr(r.out, "}],\"calls_not_listed\":0}\n") != NULL);
    tool_run_free(&r);
    /* more calls than the JSON list holds: whole entries, the rest counted */
    ping(&r, port, (const char *[]){"--json", "-c", "400", NULL});
    CHECK_EQ(r.status, 0);
    const char *tail = strstr(r.out, "}],\"calls_not_listed\":");
    CHECK(tail != NULL);
    unsigned long dropped = strtoul(tail + strlen("}],\"calls_not_listed\":"), NULL, 10);
    int listed = 0;
    for (p = r.out; (p = strstr(p, "{\"vers\":3,\"status\":\"success\",\"rtt_us\":")); p++)
        listed++;
    CHECK(dropped > 0);
    CHECK_EQ((unsigned long)listed + dropped, 400ul);
    tool_run_free(&r);
    uiw_rpc_svc_destroy(s);
}

/* A Version One only server: ERR_VERS, then Version One on the same connection; the next
 * connection of the same process starts in Version One. */
TEST(rpcrdma_ping_fallback)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(1, &port);
    struct tool_run r;
    ping(&r, port, (const char *[]){"--connections", "2", NULL});
    CHECK_EQ(r.status, 0);
    const char *c1 = strstr(r.out, "connection 1:");
    const char *c2 = strstr(r.out, "connection 2:");
    CHECK(c1 && c2 && c1 < c2);
    CHECK(strstr(c1, "first message: RPC-over-RDMA Version Two; the server answered ERR_VERS "
                     "(versions 1 to 1): going on in Version 1 on this connection") < c2);
    CHECK(strstr(c2, "first message: RPC-over-RDMA Version One (the server answered ERR_VERS "
                     "to an earlier connection)") != NULL);
    CHECK(strstr(c2, "RPC-over-RDMA version 1, credits 32") != NULL);
    CHECK(strstr(c2, "procedure 0: success") != NULL);
    tool_run_free(&r);
    ping(&r, port, (const char *[]){"--json", NULL});
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "\"vers\":1,\"first_vers\":2,\"err_vers\":{\"low\":1,\"high\":1,"
                        "\"late\":false},\"remembered\":false") != NULL);
    tool_run_free(&r);
    /* --vers 1: Version One from the start */
    ping(&r, port, (const char *[]){"--vers", "1", "--json", NULL});
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "\"vers\":1,\"first_vers\":1,\"err_vers\":null") != NULL);
    tool_run_free(&r);
    uiw_rpc_svc_destroy(s);
}

TEST(rpcrdma_ping_failures)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(2, &port);
    struct tool_run r;
    char p[16];
    snprintf(p, sizeof(p), "%u", port);
    /* no such program, no such version: exit 1 */
    tool_run(PING, (const char *[]){"rpcrdma-ping", "-p", p, "127.0.0.1", "99", "1", NULL}, "", 0,
             60, &r);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.out, "Program unavailable") != NULL);
    tool_run_free(&r);
    char prog[16];
    snprintf(prog, sizeof(prog), "%u", PROG);
    tool_run(PING, (const char *[]){"rpcrdma-ping", "-p", p, "127.0.0.1", prog, "9", NULL}, "", 0,
             60, &r);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.out, "Program/version mismatch") != NULL);
    tool_run_free(&r);
    /* no version given: every version the server has (2 and 3) */
    tool_run(PING, (const char *[]){"rpcrdma-ping", "-p", p, "127.0.0.1", prog, NULL}, "", 0, 60,
             &r);
    CHECK_EQ(r.status, 0); /* version 0 answered PROG_MISMATCH, as rpcinfo does */
    CHECK(strstr(r.out, "version 2 procedure 0: success") != NULL);
    CHECK(strstr(r.out, "version 3 procedure 0: success") != NULL);
    tool_run_free(&r);
    uiw_rpc_svc_destroy(s);
    /* nobody listening: exit 1 */
    tool_run(
        PING,
        (const char *[]){"rpcrdma-ping", "-p", p, "--timeout", "2", "127.0.0.1", prog, "3", NULL},
        "", 0, 60, &r);
    CHECK_EQ(r.status, 1);
    tool_run_free(&r);
}

TEST(rpcrdma_ping_usage)
{
    static const char *const bad[][8] = {
        {"rpcrdma-ping", NULL},
        {"rpcrdma-ping", "host", NULL},
        {"rpcrdma-ping", "-p", "0", "h", "1", NULL},
        {"rpcrdma-ping", "-p", "65536", "h", "1", NULL},
        {"rpcrdma-ping", "-p", "12x", "h", "1", NULL},
        {"rpcrdma-ping", "--vers", "3", "h", "1", NULL},
        {"rpcrdma-ping", "-c", "-1", "h", "1", NULL},
        {"rpcrdma-ping", "h", "prog", NULL},
        {"rpcrdma-ping", "h", "1", "2", "3", NULL},
        {"rpcrdma-ping", "--bogus", "h", "1", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tool_run r;
        tool_run(PING, bad[i], "", 0, 30, &r);
        CHECK_EQ(r.status, 2);
        CHECK(strstr(r.err, "usage: rpcrdma-ping") != NULL);
        tool_run_free(&r);
    }
    struct tool_run r;
    tool_run(PING, (const char *[]){"rpcrdma-ping", "--help", NULL}, "", 0, 30, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "usage: rpcrdma-ping") == r.out);
    tool_run_free(&r);
    tool_run(PING, (const char *[]){"rpcrdma-ping", "--version", NULL}, "", 0, 30, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "rpcrdma-ping (uiw) ") == r.out);
    tool_run_free(&r);
}
