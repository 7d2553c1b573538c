/* iwperf: command line. */
#include "iwperf.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
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

static void usage(FILE *f)
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
            "      --tcp                    raw TCP baseline (same layout, no RDMA)\n"
            "      --no-thread              no progress thread: progress from post/poll\n"
            "      --busy-poll              with --tcp: spin on non-blocking sends and receives\n"
            "                               instead of sleeping in the kernel (a like-for-like\n"
            "                               baseline for a busy-polling RDMA application)\n"
            "      --tcp-write BYTES        with --tcp: at most BYTES per send() (default: a\n"
            "                               whole message per call)\n"
            "  -e, --events                 wait for completions on the completion channel\n"
            "                               instead of busy polling\n"
            "  -6                           server: listen on :: instead of 0.0.0.0\n"
            "  -q                           no banner\n"
            "The client chooses the test; the server learns it when the client connects.\n",
            IWP_DEFAULT_PORT);
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v < lo || v > hi)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

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
    OPT_BUSY,
    OPT_TCPW,
};

enum { IWP_DEFAULT_CQ_MOD = 100 };

int iwp_parse_args(struct iwp_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"test", required_argument, NULL, 't'},
        {"size", required_argument, NULL, 's'},
        {"iters", required_argument, NULL, 'n'},
        {"all", no_argument, NULL, 'a'},
        {"duration", required_argument, NULL, 'D'},
        {"port", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {"lat", no_argument, NULL, OPT_LAT},
        {"crc", no_argument, NULL, OPT_CRC},
        {"mpa-rev", required_argument, NULL, OPT_REV},
        {"markers", no_argument, NULL, OPT_MARKERS},
        {"tx-depth", required_argument, NULL, OPT_TXD},
        {"rx-depth", required_argument, NULL, OPT_RXD},
        {"verify", no_argument, NULL, OPT_VERIFY},
        {"report_gbits", no_argument, NULL, OPT_GBITS},
        {"report-gbits", no_argument, NULL, OPT_GBITS},
        {"json", no_argument, NULL, OPT_JSON},
        {"tcp", no_argument, NULL, OPT_TCP},
        {"no-thread", no_argument, NULL, OPT_NOTHREAD},
        {"busy-poll", no_argument, NULL, OPT_BUSY},
        {"tcp-write", required_argument, NULL, OPT_TCPW},
        {"events", no_argument, NULL, 'e'},
        {"cq-mod", required_argument, NULL, 'Q'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->test = IWP_WRITE;
    o->port = IWP_DEFAULT_PORT;
    o->mpa_rev = 2;
    o->tx_depth = 128;
    o->rx_depth = 256;
    o->cq_mod = IWP_DEFAULT_CQ_MOD;
    bool size_set = false, iters_set = false;
    uint32_t u;
    char *end;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:s:n:aD:p:h6qeQ:", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (iwp_test_from_name(optarg, &o->test) < 0) {
                fprintf(stderr, "iwperf: -t wants write, read or send, not '%s'\n", optarg);
                return -1;
            }
            break;
        case 's':
            if (iwp_parse_size(optarg, &o->size) < 0 || o->size == 0 || o->size > IWP_MAX_SIZE) {
                fprintf(stderr, "iwperf: bad size '%s' (1 .. 1G)\n", optarg);
                return -1;
            }
            size_set = true;
            break;
        case 'n':
            if (parse_u32(optarg, 1, 2000000000u, &u) < 0) {
                fprintf(stderr, "iwperf: bad iteration count '%s'\n", optarg);
                return -1;
            }
            o->iters = u;
            iters_set = true;
            break;
        case 'a':
            o->all = true;
            break;
        case 'D':
            o->duration = strtod(optarg, &end);
            if (*end || !(o->duration > 0) || o->duration > 86400) {
                fprintf(stderr, "iwperf: bad duration '%s'\n", optarg);
                return -1;
            }
            break;
        case 'p':
            if (parse_u32(optarg, 0, 65535, &u) < 0) {
                fprintf(stderr, "iwperf: bad port '%s'\n", optarg);
                return -1;
            }
            o->port = (uint16_t)u;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case '6':
            o->ipv6 = true;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'e':
            o->events = true;
            break;
        case 'Q':
            if (parse_u32(optarg, 1, 8192, &u) < 0) {
                fprintf(stderr, "iwperf: bad --cq-mod '%s' (1 .. 8192)\n", optarg);
                return -1;
            }
            o->cq_mod = u;
            break;
        case OPT_LAT:
            o->lat = true;
            break;
        case OPT_CRC:
            o->crc = true;
            break;
        case OPT_REV:
            if (parse_u32(optarg, 1, 2, &u) < 0) {
                fprintf(stderr, "iwperf: --mpa-rev wants 1 or 2\n");
                return -1;
            }
            o->mpa_rev = (int)u;
            break;
        case OPT_MARKERS:
            o->markers = true;
            break;
        case OPT_TXD:
            if (parse_u32(optarg, 1, 8192, &u) < 0) {
                fprintf(stderr, "iwperf: bad --tx-depth '%s' (1 .. 8192)\n", optarg);
                return -1;
            }
            o->tx_depth = u;
            break;
        case OPT_RXD:
            if (parse_u32(optarg, 4, 8192, &u) < 0) {
                fprintf(stderr, "iwperf: bad --rx-depth '%s' (4 .. 8192)\n", optarg);
                return -1;
            }
            o->rx_depth = u;
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
        case OPT_TCP:
            o->tcp = true;
            break;
        case OPT_NOTHREAD:
            o->no_thread = true;
            break;
        case OPT_BUSY:
            o->busy_poll = true;
            break;
        case OPT_TCPW:
            if (iwp_parse_size(optarg, &o->tcp_write) < 0 || o->tcp_write == 0 ||
                o->tcp_write > IWP_MAX_SIZE) {
                fprintf(stderr, "iwperf: bad --tcp-write '%s' (1 .. 1G)\n", optarg);
                return -1;
            }
            break;
        case ':':
            fprintf(stderr, "iwperf: option needs a value: %s\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "iwperf: unknown option %s (see --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc)
        o->host = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "iwperf: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (o->host && o->port == 0) {
        fprintf(stderr, "iwperf: a client needs the server's port (-p 0 is for a server)\n");
        return -1;
    }
    if (o->events && o->no_thread) {
        fprintf(stderr, "iwperf: --events needs the progress thread (no --no-thread)\n");
        return -1;
    }
    if (o->all && size_set) {
        fprintf(stderr, "iwperf: -a and -s exclude each other\n");
        return -1;
    }
    if (o->duration > 0 && iters_set) {
        fprintf(stderr, "iwperf: -D and -n exclude each other\n");
        return -1;
    }
    if (!size_set)
        o->size = o->lat ? 2 : 65536;
    if (o->lat && o->test == IWP_WRITE && o->size < 2 && !o->all) {
        fprintf(stderr, "iwperf: write latency needs -s 2 or more\n");
        return -1;
    }
    if (o->cq_mod > o->tx_depth)
        o->cq_mod = o->tx_depth; /* a completion before the send queue is full */
    const char *st = getenv("IWPERF_VERIFY_SELFTEST");
    iwp_verify_selftest(st && *st ? strtoull(st, NULL, 10) : UINT64_MAX);
    if (o->duration > 0)
        o->iters = 0;
    else if (!iters_set)
        o->iters = o->lat ? IWP_DEFAULT_LAT_ITERS : IWP_DEFAULT_BW_ITERS;
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
