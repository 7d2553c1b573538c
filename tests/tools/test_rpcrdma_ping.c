/* rpcrdma-ping against a server of the RPC layer on loopback: what each connection
 * settled, Version One fallback and its memory across connections, the exit statuses. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
/* --stats: the connection's counters, exactly the calls made, the server's grant. */
TEST(rpcrdma_ping_stats)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(2, &port);
    struct tool_run r;
    ping(&r, port, (const char *[]){"-c", "5", "--stats", "--json", NULL});
    CHECK_EQ(r.status, 0);
    const char *st = strstr(r.out, "\"stats\":{");
    CHECK(st != NULL);
    CHECK(strstr(st, "\"connections\":1,\"calls_sent\":5,\"calls_received\":0,"
                     "\"replies_received\":5,\"replies_sent\":0,\"retransmits\":0,"
                     "\"drc_hits\":0,\"credits_granted_by_peer\":32,") == st + 9);
    CHECK(strstr(st, "\"errors_sent\":[0,0,0,0,0,0],\"errors_received\":[0,0,0,0,0,0]") != NULL);
    CHECK(strstr(st, "\"crc_errors\":0,") != NULL);
    /* the memory held then: the receives posted for the credits, a few of them written */
    const char *ib = strstr(st, "\"inline_buffer_bytes\":"),
               *ir = strstr(st, "\"inline_buffer_resident\":");
    CHECK(ib != NULL && ir != NULL);
    unsigned long long mapped = strtoull(ib + 22, NULL, 10), res = strtoull(ir + 25, NULL, 10);
    CHECK(mapped >= 32ull * 1024);
    CHECK(res > 0 && res <= mapped);
    tool_run_free(&r);
    struct uiw_rpc_xprt_stats ss;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(s, &ss), 0);
    CHECK_EQ(ss.calls_received, 5);
    CHECK_EQ(ss.replies_sent, 5);
    CHECK_EQ(ss.credits_granted_to_peer, 32);
    CHECK(ss.rnic.tx_fpdus >= 5);
    ping(&r, port, (const char *[]){"-c", "2", "--stats", NULL});
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "   calls      : 2 sent, 0 received\n") != NULL);
    CHECK(strstr(r.out, "   credits    : 32 granted by the peer,") != NULL);
    CHECK(strstr(r.out, " KiB resident), ") != NULL);
    tool_run_free(&r);
    CHECK_EQ(uiw_rpc_svc_destroy(s), 0);
}

/* Against a Version One server: the ERR_VERS counted by code on both sides, and the RPC
 * layer's UIW_LOG lines, each naming its connection and QP. */
TEST(rpcrdma_ping_errors_and_log)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(1, &port);
    struct tool_run r;
    setenv("UIW_LOG", "info", 1);
    ping(&r, port, (const char *[]){"--stats", "--json", NULL});
    unsetenv("UIW_LOG");
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "\"errors_sent\":[0,0,0,0,0,0],\"errors_received\":[1,0,0,0,0,0]") != NULL);
    CHECK(strstr(r.err, " qp ") != NULL);
    CHECK(strstr(r.err, ": RPC-over-RDMA ERR_VERS received (xid 0x") != NULL);
    CHECK(strstr(r.err, ": the peer speaks 1..1\n") != NULL);
    CHECK(strstr(r.err, ": Version 1 (fallback: the server answered ERR_VERS), 128 credits "
                        "asked") != NULL);
    CHECK(strstr(r.err, " closed\n") != NULL);
    /* every RPC-over-RDMA line names the connection and its QP */
    for (const char *l = r.err; (l = strstr(l, "RPC-over-RDMA")) != NULL; l++) {
        const char *bol = l;
        while (bol > r.err && bol[-1] != '\n')
            bol--;
        const char *c = strstr(bol, " conn "), *q = strstr(bol, " qp ");
        CHECK(c != NULL && c < l && q != NULL && q < l);
    }
    tool_run_free(&r);
    struct uiw_rpc_xprt_stats ss;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(s, &ss), 0);
    CHECK_EQ(ss.errors_sent[UIW_RDMA_ERR_VERS], 1);
    CHECK_EQ(uiw_rpc_svc_destroy(s), 0);
}

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

/* The default port is the NFS-RDMA port, 20049 (RFC 5666 section 11.1), wherever none is
 * given: rpcrdma-bench's server listens there, rpcrdma-ping without -p and the library's
 * client with port 0 connect there. In a network namespace of this test's own, where the
 * fixed port collides with nothing. */
TEST(rpcrdma_default_port)
{
    int ns = uiw_test_private_net();
    if (ns == -EPERM)
        SKIP("cannot create a network namespace (needs CAP_SYS_ADMIN)");
    CHECK_EQ(ns, 0);
    int out[2];
    CHECK_EQ(pipe(out), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test, even when a check fails */
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execl(UIW_BINARY_DIR "/tools/rpcrdma-bench", "rpcrdma-bench", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char line[256];
    size_t n = 0;
    while (n < sizeof(line) - 1 && (n == 0 || line[n - 1] != '\n')) {
        ssize_t k = read(out[0], line + n, 1); /* the server's first line: where it listens */
        if (k < 0 && errno == EINTR)
            continue;
        CHECK(k == 1);
        n++;
    }
    line[n] = 0;
    CHECK(strstr(line, "rpcrdma-bench: listening on port 20049 (RPC-over-RDMA)") == line);
    char prog[16];
    snprintf(prog, sizeof(prog), "%u", 0x20000b0eu); /* rbench.x's RBENCH_PROG */
    struct tool_run r;
    tool_run(PING, (const char *[]){"rpcrdma-ping", "127.0.0.1", prog, "1", NULL}, "", 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "procedure 0: success, round trip ") != NULL);
    tool_run_free(&r);
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", 0, 0x20000b0eu, 1, NULL);
    CHECK(c != NULL);
    struct timeval tmo = {10, 0};
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xvoid, NULL, (xdrproc_t)xvoid, NULL, tmo), RPC_SUCCESS);
    clnt_destroy(c);
    CHECK_EQ(kill(pid, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    close(out[0]);
}
