/* iwperf: command line. */
#include "iwperf.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli.h"

static const char *const test_names[] = {"write", "read", "send"};

const char *iwp_test_name(enum iwp_test t)
{
    return (unsigned)t < 3 ? test_names[t] : "?";
}

int iwp_test_from_name(const char *s, enum iwp_test *t)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, test_names[i]) == 0) {
            *t = (enum iwp_test)i;
            return 0;
        }
    return -1;
}

int iwp_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    if (*end != '\0' || (shift && v > (~0ull >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* ---------------------------------------------------------------- usage */

static void usage_native(FILE *f)
{
    fprintf(f,
            "usage: iwperf [options]            server (waits for one client)\n"
            "       iwperf [options] ADDRESS    client\n"
            "  -t, --test write|read|send   operation (default write)\n"
            "  -s, --size BYTES             message size (K, M, G suffixes; default 65536,\n"
            "                               2 with --lat)\n"
            "  -n, --iters N                iterations per size (default 5000, 1000 with --lat)\n"
            "  -a, --all                    every power of two from 2 B to 8 MiB\n"
            "  -D, --duration SECS          run each size for SECS seconds instead of -n\n"
            "      --lat                    ping-pong latency (half round trip; Read: the\n"
            "                               whole Read)\n"
            "  -p, --port PORT              TCP port (default %d; a server given 0 picks a\n"
            "                               free one and prints it on stderr)\n"
            "      --qps N                  bandwidth over N connections at once (default 1)\n"
            "      --inline BYTES           Sends and Writes up to BYTES copied at post time\n"
            "                               (UIW_SEND_INLINE, at most %d; default 0)\n"
            "      --crc                    ask for MPA CRC32c\n"
            "      --mpa-rev 1|2            MPA revision to offer (default 2)\n"
            "      --markers                ask the peer for MPA markers\n"
            "      --tx-depth N             outstanding work requests (default 128)\n"
            "      --rx-depth N             receives the server keeps posted (default 256)\n"
            "  -Q, --cq-mod N               latency Sends and Writes: one in N is signalled\n"
            "                               (a completion), as perftest's CQ moderation\n"
            "                               (default 100, at most --tx-depth; 1: every one)\n"
            "      --verify                 check every message (its own pattern) and the\n"
            "                               count (fewer in flight: not for bandwidth)\n"
            "      --report_gbits           bandwidth in Gb/sec instead of MiB/sec\n"
            "      --json                   one JSON document instead of tables\n"
            "      --stats                  the stack's counters at the end (bytes, FPDUs,\n"
            "                               CRC errors, Terminates, copies)\n"
            "      --tcp                    raw TCP baseline (same layout, no RDMA)\n"
            "      --no-thread              no progress thread: progress from post/poll (and a\n"
            "                               single-threaded context: no atomic locks); the\n"
            "                               default on a machine with fewer than 4 CPUs\n"
            "      --thread                 a progress thread beside the polling application;\n"
            "                               the default with 4 CPUs or more, and with -e\n"
            "      --busy-poll              with --tcp: spin on non-blocking sends and receives\n"
            "                               instead of sleeping in the kernel (a like-for-like\n"
            "                               baseline for a busy-polling RDMA application)\n"
            "      --tcp-write BYTES        with --tcp: at most BYTES per send() (default: a\n"
            "                               whole message per call)\n"
            "  -e, --events                 wait for completions on the completion channel\n"
            "                               instead of busy polling\n"
            "  -6                           server: listen on :: instead of 0.0.0.0\n"
            "  -q                           no banner\n"
            "  -h, --help                   this help\n"
            "      --version                the version\n"
            "The client chooses the test; the server learns it when the client connects.\n"
            "Also installed as iw_write_bw, iw_read_bw, iw_send_bw, iw_write_lat, iw_read_lat\n"
            "and iw_send_lat, which take perftest's options (see their --help).\n",
            IWP_DEFAULT_PORT, IWP_MAX_INLINE);
}

static void usage_perftest(FILE *f, const char *prog, const struct iwp_opts *o)
{
    fprintf(f,
            "usage: %s [options]          server (waits for the client)\n"
            "       %s [options] HOST     client\n"
            "perftest's %s over uiw (iWARP over TCP), with perftest's options:\n"
            "  -p, --port=<port>          listen on / connect to <port> (default %d; a server\n"
            "                             given 0 picks a free one and prints it on stderr)\n"
            "  -s, --size=<size>          message size (default %d)\n"
            "  -a, --all                  every size from 2 B to 8 MiB\n"
            "  -n, --iters=<iters>        exchanges per size (default %d)\n"
            "  -D, --duration=<secs>      run each size for <secs> seconds instead\n",
            prog, prog, o->lat ? "latency test" : "bandwidth test", IWP_DEFAULT_PORT,
            o->lat ? 2 : 65536, o->test == IWP_WRITE && !o->lat ? 5000 : 1000);
    if (!o->lat)
        fprintf(f, "  -t, --tx-depth=<dep>       outstanding work requests (default 128)\n"
                   "  -q, --qp=<num>             QPs (connections) at once (default 1)\n"
                   "  -Q, --cq-mod=<n>           a completion for one work request in <n>\n");
    if (o->test != IWP_READ)
        fprintf(f, "  -I, --inline_size=<size>   messages up to <size> sent inline (max %d)\n",
                IWP_MAX_INLINE);
    if (o->test == IWP_READ)
        fprintf(f, "  -o, --outs=<num>           outstanding Reads (ORD; default 16)\n");
    if (o->test == IWP_SEND)
        fprintf(f, "  -r, --rx-depth=<dep>       receives the server keeps posted (default 256)\n");
    fprintf(f, "  -e, --events               sleep on the completion channel (default: poll)\n"
               "      --report_gbits         bandwidth in Gb/s instead of MiB/s\n"
               "      --out_json             also write the report as JSON into perftest_out.json\n"
               "      --out_json_file=<file> the JSON report's file\n"
               "  -R, --rdma_cm              accepted: connections always use the connection\n"
               "                             manager (MPA over TCP)\n"
               "  -d, --ib-dev=<dev>, -i, --ib-port=<port>, -x, --gid-index=<index>,\n"
               "  -m, --mtu=<mtu>, -F, --CPU-freq, -c, --connection=RC\n"
               "                             accepted and ignored: uiw has one device, its FPDUs\n"
               "                             follow the TCP MSS, and its QPs are RC\n"
               "  -h, --help                 this help\n"
               "  -V, --version              the version\n"
               "uiw's own: --crc, --mpa-rev 1|2, --markers, --verify, --stats, --json, --tcp,\n"
               "--no-thread, --busy-poll, --tcp-write, -6 (see iwperf --help).\n");
}

/* ---------------------------------------------------------------- parsing */

enum {
    OPT_LAT = 256,
    OPT_CRC,
    OPT_REV,
    OPT_MARKERS,
    OPT_TXD,
    OPT_RXD,
    OPT_VERIFY,
    OPT_GBITS,
    OPT_JSON,
    OPT_TCP,
    OPT_NOTHREAD,
    OPT_THREAD,
    OPT_BUSY,
    OPT_TCPW,
    OPT_VERSION,
    OPT_STATS,
    OPT_QPS,
    OPT_INLINE,
    OPT_OUT_JSON,
    OPT_OUT_JSON_FILE,
    OPT_IGNORED, /* a perftest option with no meaning here (its value, if any, is checked) */
};

enum { IWP_DEFAULT_CQ_MOD = 100 };

/* The long options both dialects share (uiw's own). */
#define IWP_COMMON_LONGOPTS                                                                        \
    {"crc", no_argument, NULL, OPT_CRC}, {"mpa-rev", required_argument, NULL, OPT_REV},            \
        {"markers", no_argument, NULL, OPT_MARKERS}, {"verify", no_argument, NULL, OPT_VERIFY},    \
        {"report_gbits", no_argument, NULL, OPT_GBITS},                                            \
        {"report-gbits", no_argument, NULL, OPT_GBITS}, {"json", no_argument, NULL, OPT_JSON},     \
        {"tcp", no_argument, NULL, OPT_TCP}, {"no-thread", no_argument, NULL, OPT_NOTHREAD},       \
        {"thread", no_argument, NULL, OPT_THREAD}, {"busy-poll", no_argument, NULL, OPT_BUSY},     \
        {"stats", no_argument, NULL, OPT_STATS}, {"events", no_argument, NULL, 'e'},               \
        {"all", no_argument, NULL, 'a'}, {"size", required_argument, NULL, 's'},                   \
        {"iters", required_argument, NULL, 'n'}, {"duration", required_argument, NULL, 'D'},       \
        {"port", required_argument, NULL, 'p'}, {"cq-mod", required_argument, NULL, 'Q'},          \
        {"help", no_argument, NULL, 'h'}, {"out_json", no_argument, NULL, OPT_OUT_JSON},           \
    {                                                                                              \
        "out_json_file", required_argument, NULL, OPT_OUT_JSON_FILE                                \
    }

static const struct option native_longopts[] = {
    IWP_COMMON_LONGOPTS,
    {"test", required_argument, NULL, 't'},
    {"lat", no_argument, NULL, OPT_LAT},
    {"tx-depth", required_argument, NULL, OPT_TXD},
    {"rx-depth", required_argument, NULL, OPT_RXD},
    {"qps", required_argument, NULL, OPT_QPS},
    {"inline", required_argument, NULL, OPT_INLINE},
    {"tcp-write", required_argument, NULL, OPT_TCPW},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static const struct option perftest_longopts[] = {
    IWP_COMMON_LONGOPTS,
    {"tx-depth", required_argument, NULL, 't'},
    {"rx-depth", required_argument, NULL, 'r'},
    {"qp", required_argument, NULL, 'q'},
    {"inline_size", required_argument, NULL, 'I'},
    {"outs", required_argument, NULL, 'o'},
    {"version", no_argument, NULL, 'V'},
    {"rdma_cm", no_argument, NULL, 'R'},
    {"CPU-freq", no_argument, NULL, 'F'},
    {"ib-dev", required_argument, NULL, 'd'},
    {"ib-port", required_argument, NULL, 'i'},
    {"gid-index", required_argument, NULL, 'x'},
    {"mtu", required_argument, NULL, 'm'},
    {"connection", required_argument, NULL, 'c'},
    {"tcp-write", required_argument, NULL, OPT_TCPW},
    {NULL, 0, NULL, 0},
};

/* perftest's entry points: iw_<verb>_<bw|lat> (as ib_write_bw ...). 0 and the test, or -1. */
static int perftest_name(const char *argv0, enum iwp_test *t, bool *lat)
{
    const char *b = strrchr(argv0, '/');
    b = b ? b + 1 : argv0;
    static const char *const names[] = {"iw_write_bw",  "iw_read_bw",  "iw_send_bw",
                                        "iw_write_lat", "iw_read_lat", "iw_send_lat"};
    for (int i = 0; i < 6; i++)
        if (strcmp(b, names[i]) == 0) {
            *t = (enum iwp_test)(i % 3);
            *lat = i >= 3;
            return 0;
        }
    return -1;
}

__attribute__((format(printf, 2, 3))) static int bad(const struct iwp_opts *o, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", o->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see --help)\n");
    return -1;
}

static int u32_opt(const struct iwp_opts *o, const char *what, const char *s, uint32_t lo,
                   uint32_t hi, uint32_t *out)
{
    uint64_t v;
    if (cli_u64(s, lo, hi, &v) < 0) {
        fprintf(stderr, "%s: bad %s '%s' (%u .. %u; see --help)\n", o->prog, what, s ? s : "", lo,
                hi);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int iwp_parse_args(struct iwp_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->test = IWP_WRITE;
    o->port = IWP_DEFAULT_PORT;
    o->mpa_rev = 2;
    o->tx_depth = 128;
    o->rx_depth = 256;
    o->cq_mod = IWP_DEFAULT_CQ_MOD;
    o->qps = 1;
    o->prog = "iwperf";
    bool perftest = argc > 0 && perftest_name(argv[0], &o->test, &o->lat) == 0;
    if (perftest) {
        o->perftest = true;
        const char *b = strrchr(argv[0], '/');
        o->prog = b ? b + 1 : argv[0];
    }
    bool size_set = false, iters_set = false, ord_set = false;
    uint32_t u;
    int c;
    optind = 1;
    opterr = 0;
    const char *shorts = perftest ? ":p:s:an:D:t:q:Q:I:o:r:ed:i:x:m:c:FRhV6" : ":t:s:n:aD:p:h6qeQ:";
    const struct option *longs = perftest ? perftest_longopts : native_longopts;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        switch (c) {
        case 't':
            if (perftest) {
                if (u32_opt(o, "tx depth", optarg, 1, 8192, &o->tx_depth) < 0)
                    return -1;
            } else if (iwp_test_from_name(optarg, &o->test) < 0) {
                return bad(o, "-t wants write, read or send, not '%s'", optarg);
            }
            break;
        case 's':
            if (iwp_parse_size(optarg, &o->size) < 0 || o->size == 0 || o->size > IWP_MAX_SIZE)
                return bad(o, "bad size '%s' (1 .. 1G)", optarg);
            size_set = true;
            break;
        case 'n':
            if (u32_opt(o, "iteration count", optarg, 1, 2000000000u, &u) < 0)
                return -1;
            o->iters = u;
            iters_set = true;
            break;
        case 'a':
            o->all = true;
            break;
        case 'D':
            if (cli_seconds(optarg, 1e-3, 86400, &o->duration) < 0)
                return bad(o, "bad duration '%s' (seconds, up to 86400)", optarg);
            break;
        case 'p':
            if (u32_opt(o, "port", optarg, 0, 65535, &u) < 0)
                return -1;
            o->port = (uint16_t)u;
            break;
        case 'h':
            if (perftest)
                usage_perftest(stdout, o->prog, o);
            else
                usage_native(stdout);
            return 1;
        case 'V':
        case OPT_VERSION:
            cli_version(o->prog);
            return 1;
        case '6':
            o->ipv6 = true;
            break;
        case 'q':
            if (perftest) {
                if (u32_opt(o, "number of QPs", optarg, 1, IWP_MAX_QPS, &o->qps) < 0)
                    return -1;
            } else {
                o->quiet = true;
            }
            break;
        case OPT_QPS:
            if (u32_opt(o, "number of QPs", optarg, 1, IWP_MAX_QPS, &o->qps) < 0)
                return -1;
            break;
        case 'e':
            o->events = true;
            break;
        case 'Q':
            if (u32_opt(o, "--cq-mod", optarg, 1, 8192, &o->cq_mod) < 0)
                return -1;
            break;
        case 'I':
        case OPT_INLINE:
            if (u32_opt(o, "inline size", optarg, 0, IWP_MAX_INLINE, &o->inline_size) < 0)
                return -1;
            break;
        case 'o':
            if (u32_opt(o, "outstanding Reads", optarg, 1, IWP_MAX_OUTS, &o->outs) < 0)
                return -1;
            ord_set = true;
            break;
        case 'r':
        case OPT_RXD:
            if (u32_opt(o, "--rx-depth", optarg, 4, 8192, &o->rx_depth) < 0)
                return -1;
            break;
        case 'c':
            if (strcmp(optarg, "RC") != 0)
                return bad(o, "-c %s: uiw's QPs are reliable connected (RC) only", optarg);
            break;
        case 'i':
        case 'x':
        case 'm':
            if (u32_opt(o, "value", optarg, 0, 65535, &u) < 0)
                return -1;
            break;
        case 'd':
        case 'F':
        case 'R':
            break; /* one device; no CPU frequency check; always the connection manager */
        case OPT_LAT:
            o->lat = true;
            break;
        case OPT_CRC:
            o->crc = true;
            break;
        case OPT_REV:
            if (u32_opt(o, "--mpa-rev", optarg, 1, 2, &u) < 0)
                return -1;
            o->mpa_rev = (int)u;
            break;
        case OPT_MARKERS:
            o->markers = true;
            break;
        case OPT_TXD:
            if (u32_opt(o, "--tx-depth", optarg, 1, 8192, &o->tx_depth) < 0)
                return -1;
            break;
        case OPT_VERIFY:
            o->verify = true;
            break;
        case OPT_GBITS:
            o->gbits = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_OUT_JSON:
            if (!o->out_json)
                o->out_json = "perftest_out.json";
            break;
        case OPT_OUT_JSON_FILE:
            if (!*optarg)
                return bad(o, "--out_json_file needs a file name");
            o->out_json = optarg;
            break;
        case OPT_STATS:
            o->stats = true;
            break;
        case OPT_TCP:
            o->tcp = true;
            break;
        case OPT_NOTHREAD:
            o->no_thread = true;
            break;
        case OPT_THREAD:
            o->thread = true;
            break;
        case OPT_BUSY:
            o->busy_poll = true;
            break;
        case OPT_TCPW:
            if (iwp_parse_size(optarg, &o->tcp_write) < 0 || o->tcp_write == 0 ||
                o->tcp_write > IWP_MAX_SIZE)
                return bad(o, "bad --tcp-write '%s' (1 .. 1G)", optarg);
            break;
        case ':':
            return bad(o, "option %s needs a value", argv[optind - 1]);
        default:
            return bad(o, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        o->host = argv[optind++];
    if (optind < argc)
        return bad(o, "unexpected argument '%s'", argv[optind]);
    if (o->host && o->port == 0)
        return bad(o, "a client needs the server's port (-p 0 is for a server)");
    if (o->events && o->no_thread)
        return bad(o, "--events needs the progress thread (no --no-thread)");
    if (o->thread && o->no_thread)
        return bad(o, "--thread and --no-thread exclude each other");
    if (!o->thread && !o->events && !o->no_thread)
        o->no_thread = sysconf(_SC_NPROCESSORS_ONLN) < IWP_THREAD_MIN_CPUS;
    if (o->all && size_set)
        return bad(o, "-a and -s exclude each other");
    if (o->duration > 0 && iters_set)
        return bad(o, "-D and -n exclude each other");
    if (o->qps > 1 && (o->lat || o->tcp))
        return bad(o, "more than one QP is for bandwidth tests over uiw");
    if (o->stats && o->tcp)
        return bad(o, "--stats counts the uiw stack's work: not with --tcp");
    if (o->inline_size && (o->test == IWP_READ || o->tcp))
        return bad(o, "inline data is for Sends and Writes over uiw");
    if (ord_set && o->test != IWP_READ)
        return bad(o, "-o (outstanding Reads) is for Read tests");
    if (!size_set)
        o->size = o->lat ? 2 : 65536;
    if (o->lat && o->test == IWP_WRITE && o->size < 2 && !o->all)
        return bad(o, "write latency needs -s 2 or more");
    if (o->cq_mod > o->tx_depth)
        o->cq_mod = o->tx_depth; /* a completion before the send queue is full */
    const char *st = getenv("IWPERF_VERIFY_SELFTEST");
    iwp_verify_selftest(st && *st ? strtoull(st, NULL, 10) : UINT64_MAX);
    if (o->duration > 0)
        o->iters = 0;
    else if (!iters_set)
        o->iters = o->lat                                  ? IWP_DEFAULT_LAT_ITERS
                   : (o->perftest && o->test != IWP_WRITE) ? 1000
                                                           : IWP_DEFAULT_BW_ITERS;
    return 0;
}

int iwp_sizes(const struct iwp_opts *o, uint64_t *sizes, int max)
{
    if (!o->all) {
        sizes[0] = o->size;
        return 1;
    }
    int n = 0;
    for (uint64_t s = IWP_MIN_ALL_SIZE; s <= IWP_MAX_ALL_SIZE && n < max; s <<= 1)
        sizes[n++] = s;
    return n;
}

uint64_t iwp_max_size(const struct iwp_opts *o)
{
    return o->all ? IWP_MAX_ALL_SIZE : o->size;
}
