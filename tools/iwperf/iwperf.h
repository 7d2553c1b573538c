/*
 * iwperf: a perftest-style RDMA benchmark over uiw (and a raw TCP baseline with --tcp).
 *
 * Internal header of the tool: options, statistics, report tables, the control messages
 * both sides exchange, and the two transports (uiw RDMA in rdma.c, plain TCP in tcp.c).
 */
#ifndef IWPERF_H
#define IWPERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>

enum iwp_test { IWP_WRITE = 0, IWP_READ = 1, IWP_SEND = 2 };

/* A function of the per-message loops: kept together (.text.hot) with the stack's own
 * data path, so that a message's path touches few code pages. */
#if defined(__GNUC__)
#define IWP_HOT __attribute__((hot))
#else
#define IWP_HOT
#endif

#define IWP_MIN_ALL_SIZE      2u
#define IWP_MAX_ALL_SIZE      (8u << 20)
#define IWP_MAX_SIZE          (1u << 30)
#define IWP_DEFAULT_PORT      18515
#define IWP_DEFAULT_BW_ITERS  5000
#define IWP_DEFAULT_LAT_ITERS 1000
#define IWP_MAX_QPS           16
#define IWP_MAX_INLINE        256   /* -I: uiw's max_inline_data (uiw_query_device) */
#define IWP_MAX_OUTS          65535 /* -o: at most the device's ORD is used */

struct iwp_opts {
    const char *prog; /* the name it runs under (iwperf, or iw_write_bw ...) */
    bool perftest;    /* run as iw_<verb>_<bw|lat>: perftest's options and output */
    enum iwp_test test;
    bool lat;             /* --lat: ping-pong latency instead of bandwidth */
    bool all;             /* -a: every power of two from 2 B to 8 MiB */
    uint64_t size;        /* -s */
    uint64_t iters;       /* -n (0 with -D) */
    double duration;      /* -D seconds (0 = count iterations) */
    uint16_t port;        /* -p */
    bool crc;             /* --crc */
    int mpa_rev;          /* --mpa-rev 1|2 */
    bool markers;         /* --markers */
    uint32_t tx_depth;    /* --tx-depth */
    uint32_t rx_depth;    /* --rx-depth (server receives posted for Send tests) */
    uint32_t cq_mod;      /* -Q, --cq-mod: latency Sends and Writes signalled one in cq_mod */
    bool verify;          /* --verify */
    bool gbits;           /* --report_gbits */
    bool json;            /* --json */
    bool tcp;             /* --tcp: the raw TCP baseline instead of RDMA */
    bool busy_poll;       /* --busy-poll: TCP sends and receives spin instead of sleeping */
    bool no_thread;       /* --no-thread: progress only inline from post/poll (also the
                             default with fewer than IWP_THREAD_MIN_CPUS CPUs) */
    bool thread;          /* --thread: a progress thread whatever the CPUs */
    bool events;          /* -e, --events: sleep on the completion channel instead of spinning */
    bool ipv6;            /* -6: the server listens on :: */
    bool quiet;           /* -q: no banner lines */
    bool stats;           /* --stats: the stack's counters at the end */
    uint32_t qps;         /* perftest -q, --qps: connections of a bandwidth test (1 ..) */
    uint32_t inline_size; /* perftest -I, --inline: Sends / Writes up to this are inline */
    uint32_t outs;        /* perftest -o: outstanding Reads (ORD); 0: the default */
    const char *out_json; /* perftest --out_json / --out_json_file: the report's file */
    const char *host;     /* client: the server's address; NULL: server */

    uint64_t tcp_write; /* --tcp-write: bytes per send() with --tcp (0: a whole message) */
};

/* Parse argv into o (defaults first): iwperf's options, or perftest's when argv[0] is
 * iw_write_bw, iw_read_bw, iw_send_bw, iw_write_lat, iw_read_lat or iw_send_lat.
 * Returns 0, 1 when help or the version was printed (exit 0), or -1 with a message on
 * stderr for a bad command line (exit 2). */
/* With fewer CPUs than this, iwperf runs without a progress thread unless told otherwise:
 * the application's polling thread and a progress thread on each side would spin four
 * threads on them. */
#define IWP_THREAD_MIN_CPUS 4
int iwp_parse_args(struct iwp_opts *o, int argc, char **argv);
const char *iwp_test_name(enum iwp_test t);
int iwp_test_from_name(const char *s, enum iwp_test *t);
/* Parse "4096", "64K", "1M", "8m", "1G" (binary multiples). 0 or -1. */
int iwp_parse_size(const char *s, uint64_t *out);

/* --- statistics ---------------------------------------------------------------------- */

struct iwp_lat_stats {
    double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* microseconds */
};

/* Sort samples (nanoseconds) in place and summarise them, each multiplied by scale
 * (0.5 for half round trips). t_typical is the median, the percentiles use the nearest
 * rank, t_stdev is the sample standard deviation (0 for n < 2). n must be > 0. */
void iwp_lat_summarise(uint64_t *samples, size_t n, double scale, struct iwp_lat_stats *out);

/* Nearest-rank percentile (0 < p <= 100) of sorted samples. */
uint64_t iwp_percentile(const uint64_t *sorted, size_t n, double p);

/* Peak bandwidth over windows of at least win_ns nanoseconds. */
struct iwp_bw_meter {
    uint64_t win_ns;
    uint64_t t_last, bytes_last;
    double peak; /* bytes per second */
};
void iwp_bw_start(struct iwp_bw_meter *m, uint64_t now_ns, uint64_t win_ns);
void iwp_bw_update(struct iwp_bw_meter *m, uint64_t now_ns, uint64_t bytes_done);

/* A growable array of latency samples (grows by doubling, never per message otherwise). */
struct iwp_samples {
    uint64_t *v;
    size_t n, cap;
};
int iwp_samples_reserve(struct iwp_samples *s, size_t cap);
int iwp_samples_push(struct iwp_samples *s, uint64_t x);
void iwp_samples_free(struct iwp_samples *s);

uint64_t iwp_now_ns(void);

/* --- data pattern and checksum ------------------------------------------------------- */

/* Fill buf with the test pattern (depends only on the byte offset and seed). */
void iwp_fill_pattern(void *buf, size_t len, uint32_t seed);
/* A 64-bit checksum of buf (order sensitive). */
uint64_t iwp_checksum(const void *buf, size_t len);
/* --verify: message msg of a stream gets a pattern of its own (of seed, msg and the
 * offset; a prefix of a longer message's), so that a message lost, repeated, stale,
 * misplaced or cut short is told from the right one; iwp_check_msg compares. */
void iwp_fill_msg(void *buf, size_t len, uint32_t seed, uint64_t msg);
bool iwp_check_msg(const void *buf, size_t len, uint32_t seed, uint64_t msg);
/* A self-test of --verify (IWPERF_VERIFY_SELFTEST=N): from now on iwp_fill_msg gives
 * message N the pattern of message N + 1 (UINT64_MAX: never). */
void iwp_verify_selftest(uint64_t msg);

struct iwp_ctrl;

/* --- results and report -------------------------------------------------------------- */

enum iwp_verify { IWP_VERIFY_OFF = 0, IWP_VERIFY_OK = 1, IWP_VERIFY_FAIL = 2 };

struct iwp_result {
    uint64_t bytes;  /* message size */
    uint64_t iters;  /* messages (bw) or round trips (lat) completed */
    double seconds;  /* duration of the measured phase */
    double bw_peak;  /* bytes per second */
    double bw_avg;   /* bytes per second */
    double msg_rate; /* messages per second */
    struct iwp_lat_stats lat;
    enum iwp_verify verify;
    uint64_t copied; /* payload bytes the stack copied (both sides) in the phase */
    bool copied_known;
};

struct iwp_report {
    const struct iwp_opts *o;
    const char *role; /* "client" or "server" */
    FILE *out;
    int nresults;
    struct iwp_result results[32];
    /* connection facts, printed in the banner and the JSON */
    int mpa_rev;
    bool crc, markers;
    unsigned ird, ord, mulpdu;
    /* --stats: the stack's counters (uiw_query_context_stats), summed over the QPs'
     * contexts */
    bool have_stats;
    struct iwp_stack_stats {
        uint64_t tx_bytes, rx_bytes, tx_fpdus, rx_fpdus, placed, copied;
        uint64_t terms_sent, terms_received, crc_errors, async_dropped;
    } stats;
};

void iwp_report_init(struct iwp_report *r, const struct iwp_opts *o, const char *role, FILE *out);
/* Banner + column header (tables only; no-op with --json). */
void iwp_report_header(struct iwp_report *r);
/* Record one result and print its row (tables) or keep it for the JSON document. */
void iwp_report_row(struct iwp_report *r, const struct iwp_result *res);
/* Footer line (tables) or the whole JSON document. */
void iwp_report_finish(struct iwp_report *r);
/* The column header line for bandwidth or latency tables (without newline). */
const char *iwp_bw_columns(bool gbits);
const char *iwp_lat_columns(void);
/* A result row as an IWP_C_REPORT message and back. */
void iwp_result_to_ctrl(const struct iwp_result *r, struct iwp_ctrl *c);
void iwp_result_from_ctrl(const struct iwp_ctrl *c, struct iwp_result *r);

/* --- control messages ---------------------------------------------------------------- */

#define IWP_MAGIC    0x69777066u /* "iwpf" */
#define IWP_CTRL_LEN 128

enum iwp_ctrl_type {
    IWP_C_HELLO = 1,  /* TCP: v[0] test, v[1] flags, v[2] max size */
    IWP_C_START = 2,  /* v[0] size, v[1] iterations (0: until STOP) */
    IWP_C_ACK = 3,    /* v[0] credits granted (total) */
    IWP_C_RESULT = 4, /* v[0] credits, v[1] messages found right (--verify), v[2] messages,
                         v[3] server ns, v[4] copied bytes, v[5] copied known */
    IWP_C_CREDIT = 5, /* v[0] credits granted (total receives posted) */
    IWP_C_BYE = 6,
    IWP_C_BURST = 7,  /* TCP: v[0] messages that follow (0: end of phase) */
    IWP_C_REQ = 8,    /* TCP read: send v[0] bytes back */
    IWP_C_REPORT = 9, /* client -> server: the row of the phase (iwp_report_to_ctrl) */
    IWP_C_MARK = 10,  /* RDMA --verify: v[0] the Write of the phase placed before it */
};

#define IWP_F_LAT    0x1u
#define IWP_F_VERIFY 0x2u

#define IWP_CTRL_NV 15
struct iwp_ctrl {
    uint32_t type;
    uint64_t v[IWP_CTRL_NV];
};
void iwp_ctrl_encode(const struct iwp_ctrl *c, uint8_t out[IWP_CTRL_LEN]);
/* 0, or -1 if the magic is wrong. */
int iwp_ctrl_decode(const uint8_t in[IWP_CTRL_LEN], struct iwp_ctrl *c);

/* Connection private data: client -> server (connect) and server -> client (accept). */
#define IWP_PD_LEN 48
struct iwp_pd {
    uint32_t test, flags;
    uint64_t max_size;
    uint64_t addr; /* base of the peer's buffer: source at +0, sink at +max_size */
    uint32_t rkey;
    uint32_t credits; /* server: receives posted */
    uint32_t qps;     /* client: QPs (connections) of the test, 0 or 1: one */
    uint32_t index;   /* client: this QP's number among them, from 0 */
};
void iwp_pd_encode(const struct iwp_pd *p, uint8_t out[IWP_PD_LEN]);
int iwp_pd_decode(const void *in, size_t len, struct iwp_pd *p);

/* --- transports ---------------------------------------------------------------------- */

/* The sizes a client runs (one, or all with -a). Returns the count. */
int iwp_sizes(const struct iwp_opts *o, uint64_t *sizes, int max);
uint64_t iwp_max_size(const struct iwp_opts *o);

/* A server announces the port it listens on, on stderr: "iwperf: listening on port N"
 * (with -p 0 the one the system picked, which a caller reads there; the program's name
 * when it runs as iw_write_bw ...), and as one of perftest's entry points prints
 * perftest's "Waiting for client to connect..." banner on stdout. */
struct sockaddr;
void iwp_listening(const struct iwp_opts *o, const struct sockaddr *local);

/* perftest's JSON report (--out_json): {"test_info": ..., "results": ...} with perftest's
 * keys, into o->out_json. 0, or -1 with a message. */
int iwp_report_out_json(const struct iwp_report *r);

/* Each returns the process exit status (0 ok, 1 error or a verify failure). */
int iwp_tcp_run(const struct iwp_opts *o);
int iwp_rdma_run(const struct iwp_opts *o);

#endif
