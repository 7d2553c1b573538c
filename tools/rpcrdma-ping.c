/*
 * rpcrdma-ping: call procedure 0 (NULL) of an ONC RPC program over RPC-over-RDMA, as
 * `rpcinfo -T tcp HOST PROG VERS` does over TCP, and tell what the connection settled:
 * the RPC-over-RDMA version (and how: a Version Two first message answered with ERR_VERS,
 * or a Version One answer remembered from an earlier connection), the credits granted,
 * the server's inline sizes (RFC 8797 private data) or properties (Version Two), and the
 * round trip.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/rpc.h>
#include <uiw/version.h>

#include "rpcstats.h"

static const char usage[] =
    "usage: rpcrdma-ping [-p PORT] [--vers 1|2] [--crc] [-c COUNT] [--connections N]\n"
    "                    [--timeout SECS] [--pcap DIR] [--json] [--stats] HOST PROG [VERS]\n"
    "\n"
    "Call procedure 0 of program PROG, version VERS (every version the server reports when\n"
    "VERS is left out) over RPC-over-RDMA, and print the RPC-over-RDMA version the\n"
    "connection settled on, the credits granted, the server's inline sizes (RFC 8797\n"
    "private data) or transport properties (Version Two) and the round trip.\n"
    "\n"
    "  -p, --port PORT     the server's port (default 20049, NFS-RDMA)\n"
    "      --vers 1|2      the highest RPC-over-RDMA version to speak (default 2: the first\n"
    "                      message is Version Two, and a Version One server's ERR_VERS\n"
    "                      moves the connection to Version One)\n"
    "      --crc           ask for MPA CRC32c\n"
    "  -c, --count COUNT   calls per version (default 1)\n"
    "      --connections N connect N times in a row (default 1): after an ERR_VERS the\n"
    "                      next connections start in Version One at once\n"
    "      --timeout SECS  bound on connecting and on each call (default 10)\n"
    "      --pcap DIR      capture the connections into DIR (pcap, for Wireshark)\n"
    "      --json          one JSON object per connection instead of text\n"
    "      --stats         each connection's counters after its calls: calls, replies,\n"
    "                      retransmissions, credits, chunks, bytes by RDMA and inline,\n"
    "                      RPC-over-RDMA errors, the memory its buffers hold, and the\n"
    "                      RNIC's (bytes, FPDUs, CRC errors, Terminates, copies)\n"
    "  -h, --help          this help\n"
    "      --version       the version\n"
    "\n"
    "Exit status: 0 when every call succeeded, 1 when one failed (or the connection\n"
    "did), 2 on a usage error.\n";

struct opts {
    unsigned port, vers_max, count, conns, timeout_s;
    bool crc, json, stats;
    const char *pcap, *host;
    unsigned long prog;
    long vers; /* -1: every version the server has */
};

static bool_t xvoid(XDR *x, void *p)
{
    (void)x;
    (void)p;
    return TRUE;
}

/* Strict unsigned parsing: the whole string, decimal, within [lo, hi]. */
static bool number(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char *brs_name(uint32_t b)
{
    switch (b) {
    case UIW_RDMA2_BKREQSUP_NONE:
        return "NONE";
    case UIW_RDMA2_BKREQSUP_INLINE:
        return "INLINE";
    case UIW_RDMA2_BKREQSUP_GENL:
        return "GENL";
    default:
        return "?";
    }
}

/* How the version was settled (after the calls: an answer to the first message may come
 * behind the first call, see uiw_rpc_conn_info). */
static void describe_head(const struct uiw_rpc_conn_info *ci, const struct opts *o)
{
    if (o->json)
        return;
    if (ci->vers_remembered)
        printf("  first message: RPC-over-RDMA Version One (the server answered ERR_VERS to "
               "an earlier connection)\n");
    else if (ci->vers_no_answer && ci->errvers_high)
        printf("  first message: RPC-over-RDMA Version Two, not answered in time: going on "
               "in Version %u on this connection; the server's ERR_VERS (versions %u to %u) "
               "came later\n",
               ci->vers, ci->errvers_low, ci->errvers_high);
    else if (ci->vers_no_answer)
        printf("  first message: RPC-over-RDMA Version Two, not answered: going on in "
               "Version One on this connection\n");
    else if (ci->vers_fallback && ci->errvers_high)
        printf("  first message: RPC-over-RDMA Version Two; the server answered ERR_VERS "
               "(versions %u to %u): going on in Version %u on this connection\n",
               ci->errvers_low, ci->errvers_high, ci->vers);
    else
        printf("  first message: RPC-over-RDMA Version %s\n", o->vers_max == 2 ? "Two" : "One");
}

/* What the connection settled, after the calls (the credits granted by their replies). */
/* The JSON of a connection's calls. */
struct calls {
    char buf[8192];
    size_t len;
    unsigned long dropped; /* calls left out of buf (no room) */
};

static void describe_tail(const struct uiw_rpc_conn_info *ci, const struct opts *o, unsigned n,
                          const struct calls *calls, const struct uiw_rpc_xprt_stats *st)
{
    if (o->json) {
        printf("{\"connection\":%u,\"vers\":%u,\"first_vers\":%u,\"err_vers\":", n, ci->vers,
               ci->vers_remembered ? 1u : o->vers_max);
        if (ci->vers_fallback && !ci->vers_remembered && ci->errvers_high)
            printf("{\"low\":%u,\"high\":%u,\"late\":%s}", ci->errvers_low, ci->errvers_high,
                   ci->vers_no_answer ? "true" : "false");
        else
            printf("null");
        printf(",\"remembered\":%s,\"credits\":%u,\"inline_send\":%u,\"inline_recv\":%u,"
               "\"crc\":%s,\"peer_private\":",
               ci->vers_remembered ? "true" : "false", ci->credits, ci->inline_send,
               ci->inline_recv, ci->crc ? "true" : "false");
        if (ci->peer_cm_private)
            printf("{\"send_size\":%u,\"receive_size\":%u,\"remote_invalidation\":%s}",
                   ci->peer_cm.send_size, ci->peer_cm.recv_size,
                   ci->peer_cm.remote_invalidation ? "true" : "false");
        else
            printf("null");
        printf(",\"peer_properties\":");
        if (ci->peer_connprop)
            printf("{\"rbsiz\":%u,\"brs\":\"%s\"}", ci->peer_rbsiz, brs_name(ci->peer_brs));
        else
            printf("null");
        printf(",\"calls\":[%s],\"calls_not_listed\":%lu", calls->buf, calls->dropped);
        if (st) {
            printf(",\"stats\":");
            rpcstats_json(stdout, st);
        }
        printf("}\n");
        return;
    }
    printf("  RPC-over-RDMA version %u, credits %u, inline send %u receive %u\n", ci->vers,
           ci->credits, ci->inline_send, ci->inline_recv);
    if (ci->peer_cm_private)
        printf("  server's private data (RFC 8797): send size %u, receive size %u, remote "
               "invalidation %s\n",
               ci->peer_cm.send_size, ci->peer_cm.recv_size,
               ci->peer_cm.remote_invalidation ? "yes" : "no");
    else
        printf("  server's private data: none (RFC 8166 defaults)\n");
    if (ci->peer_connprop)
        printf("  server's properties (Version Two): receive buffer size %u, backward "
               "requests %s\n",
               ci->peer_rbsiz, brs_name(ci->peer_brs));
    if (st)
        rpcstats_text(stdout, "client", st);
}

/* count NULL calls of version v: 0 when all succeeded. */
static int ping(CLIENT *c, const struct opts *o, unsigned long v, struct calls *js,
                struct rpc_err *e)
{
    struct timeval tmo = {(time_t)o->timeout_s, 0};
    int fails = 0;
    for (unsigned i = 0; i < o->count; i++) {
        uint32_t vv = (uint32_t)v;
        clnt_control(c, CLSET_VERS, (char *)&vv);
        double t0 = now_us();
        enum clnt_stat st = clnt_call(c, 0, (xdrproc_t)xvoid, NULL, (xdrproc_t)xvoid, NULL, tmo);
        double rtt = now_us() - t0;
        clnt_geterr(c, e);
        if (st != RPC_SUCCESS)
            fails++;
        if (o->json) {
            /* each call whole or not at all: the JSON stays well formed */
            char one[256];
            int l = snprintf(one, sizeof(one), "%s{\"vers\":%lu,\"status\":\"%s\",\"rtt_us\":%.1f}",
                             js->len ? "," : "", v,
                             st == RPC_SUCCESS ? "success" : clnt_sperrno(st), rtt);
            if (l > 0 && (size_t)l < sizeof(js->buf) - js->len) {
                memcpy(js->buf + js->len, one, (size_t)l + 1);
                js->len += (size_t)l;
            } else {
                js->dropped++;
            }
        } else if (st == RPC_SUCCESS) {
            printf("  program %lu version %lu procedure 0: success, round trip %.1f us\n", o->prog,
                   v, rtt);
        } else {
            printf("  program %lu version %lu procedure 0: %s\n", o->prog, v, clnt_sperrno(st));
        }
        if (st == RPC_PROGVERSMISMATCH)
            break;
    }
    return fails;
}

static int connection(const struct opts *o, unsigned n)
{
    struct uiw_rpc_clnt_attr a;
    memset(&a, 0, sizeof(a));
    a.xprt.vers_max = o->vers_max;
    a.xprt.crc = o->crc;
    a.xprt.pcap_dir = o->pcap;
    a.xprt.connect_timeout_ms = o->timeout_s * 1000u;
    a.no_reconnect = true;
    unsigned long v0 = o->vers < 0 ? 0 : (unsigned long)o->vers;
    CLIENT *c =
        uiw_rpc_clnt_create(o->host, (uint16_t)o->port, (rpcprog_t)o->prog, (rpcvers_t)v0, &a);
    if (!c) {
        if (o->json)
            printf("{\"connection\":%u,\"error\":\"%s\"}\n", n, strerror(errno));
        else
            fprintf(stderr, "rpcrdma-ping: connection %u to %s port %u: %s\n", n, o->host, o->port,
                    strerror(errno));
        return 1;
    }
    struct uiw_rpc_conn_info ci;
    if (uiw_rpc_clnt_info(c, &ci) == 0 && !o->json)
        printf("connection %u: MPA CRC %s\n", n, ci.crc ? "on" : "off");
    int fails = 0;
    static struct calls js;
    js.len = 0;
    js.buf[0] = 0;
    js.dropped = 0;
    struct rpc_err e;
    if (o->vers >= 0) {
        fails = ping(c, o, v0, &js, &e);
    } else {
        /* version 0 first: a server without it reports the versions it has */
        int f = ping(c, o, 0, &js, &e);
        if (f && e.re_status == RPC_PROGVERSMISMATCH) {
            /* the range is copied: each ping() overwrites e */
            unsigned long lo = e.re_vers.low, hi = e.re_vers.high;
            for (unsigned long v = lo; v <= hi && v - lo < 64; v++)
                fails += ping(c, o, v, &js, &e);
        } else {
            fails = f;
        }
    }
    struct uiw_rpc_xprt_stats st;
    bool have_st = o->stats && uiw_rpc_clnt_xprt_stats(c, &st) == 0;
    if (uiw_rpc_clnt_info(c, &ci) == 0) {
        describe_head(&ci, o);
        describe_tail(&ci, o, n, &js, have_st ? &st : NULL);
    }
    fflush(stdout);
    clnt_destroy(c);
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    enum { O_VERS = 256, O_CRC, O_CONNS, O_TIMEOUT, O_PCAP, O_JSON, O_VERSION, O_STATS };
    static const struct option lo[] = {
        {"port", required_argument, NULL, 'p'},
        {"count", required_argument, NULL, 'c'},
        {"vers", required_argument, NULL, O_VERS},
        {"crc", no_argument, NULL, O_CRC},
        {"connections", required_argument, NULL, O_CONNS},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"pcap", required_argument, NULL, O_PCAP},
        {"json", no_argument, NULL, O_JSON},
        {"stats", no_argument, NULL, O_STATS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {.port = UIW_RPCRDMA_PORT,
                     .vers_max = 2,
                     .count = 1,
                     .conns = 1,
                     .timeout_s = 10,
                     .vers = -1};
    int ch;
    unsigned long v;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+p:c:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            if (!number(optarg, 1, 65535, &v))
                goto bad;
            o.port = (unsigned)v;
            break;
        case 'c':
            if (!number(optarg, 1, 1000000, &v))
                goto bad;
            o.count = (unsigned)v;
            break;
        case O_VERS:
            if (!number(optarg, 1, 2, &v))
                goto bad;
            o.vers_max = (unsigned)v;
            break;
        case O_CRC:
            o.crc = true;
            break;
        case O_CONNS:
            if (!number(optarg, 1, 1000, &v))
                goto bad;
            o.conns = (unsigned)v;
            break;
        case O_TIMEOUT:
            if (!number(optarg, 1, 3600, &v))
                goto bad;
            o.timeout_s = (unsigned)v;
            break;
        case O_PCAP:
            o.pcap = optarg;
            break;
        case O_JSON:
            o.json = true;
            break;
        case O_STATS:
            o.stats = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return fflush(stdout) == 0 ? 0 : 2;
        case O_VERSION:
            printf("rpcrdma-ping (uiw) %s\n", uiw_version_string());
            return fflush(stdout) == 0 ? 0 : 2;
        default:
            goto bad;
        }
    }
    if (argc - optind < 2 || argc - optind > 3)
        goto bad;
    o.host = argv[optind];
    if (!number(argv[optind + 1], 1, 0xFFFFFFFFul, &o.prog))
        goto bad;
    if (argc - optind == 3) {
        if (!number(argv[optind + 2], 0, 0xFFFFFFFFul, &v))
            goto bad;
        o.vers = (long)v;
    }
    if (!o.json)
        printf("rpcrdma-ping %s port %u: program %lu\n", o.host, o.port, o.prog);
    int status = 0;
    for (unsigned i = 1; i <= o.conns; i++)
        status |= connection(&o, i);
    return fflush(stdout) == 0 ? status : 2;
bad:
    fprintf(stderr, "rpcrdma-ping: bad arguments\n%s", usage);
    return 2;
}
