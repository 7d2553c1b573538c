/*
 * bench-iwperf: uiw RDMA against a raw TCP baseline measured in the same run.
 *
 * Runs the built iwperf binary as two processes over one loopback connection (server and
 * client), alternating RDMA and TCP (iwperf --tcp, the same process layout), REPS times,
 * and prints the medians and the median of each repetition's ratio (RDMA over the TCP
 * run right before it: the machine's speed changes from second to second, and a pair
 * measured back to back shares it):
 *   RDMA Write 1 MiB with CRC / TCP one-way stream of 1 MiB messages   (target >= 0.90)
 *   RDMA Read 1 MiB / TCP 1 MiB per request, same depth               (target >= 0.85)
 *   Send ping-pong 64 B half RTT / TCP 64 B ping-pong half RTT         (target <= 1.10)
 *   payload bytes the stack copied in user space during the 1 MiB runs (target 0)
 *
 * usage: bench-iwperf [-r REPS] [-D SECS] [-m auto|inline|thread|events] [-i IWPERF]
 *   defaults: 5 repetitions, 1 s bandwidth runs, -m auto, the iwperf built next to this
 *   program. How the RDMA side waits for completions (the TCP side blocks in the kernel,
 *   except in the ping-pong when the RDMA side spins: then TCP spins too, --busy-poll):
 *     inline: no progress thread, the application busy-polls and so drives the stack
 *             (iwperf --no-thread);
 *     thread: the stack's progress thread, the application busy-polls (iwperf default);
 *     events: the progress thread, the application sleeps on the completion channel
 *             (iwperf --events, like perftest -e);
 *     auto:   events for the bandwidth runs, inline for the ping-pong (the fastest of
 *             each on a machine with few cores, where spinning steals the CPU the
 *             stack needs to move data).
 * A full run with the defaults takes about 5 * (4 * 1 s + 2 latency runs + start-up).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"

#ifndef IWPERF_PATH
#define IWPERF_PATH "iwperf"
#endif

static const char *iwperf = IWPERF_PATH;
static int next_port;
enum mode { M_AUTO, M_INLINE, M_THREAD, M_EVENTS };
static enum mode mode = M_AUTO;
static const char *const mode_names[] = {"auto", "inline", "thread", "events"};

/* Run argv with stdout captured into out (NUL-terminated); returns the exit status or -1. */
static int run_capture(char *const argv[], char *out, size_t cap)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    for (;;) {
        ssize_t k = read(p[0], out + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
        if (n == cap - 1)
            break;
    }
    out[n] = '\0';
    close(p[0]);
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static pid_t spawn_quiet(char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen("/dev/null", "w", stdout);
        (void)f;
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static bool json_num(const char *doc, const char *key, double *v)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    const char *p = strstr(doc, pat);
    if (!p)
        return false;
    p += strlen(pat);
    if (strncmp(p, "null", 4) == 0)
        return false;
    char *end;
    *v = strtod(p, &end);
    return end != p;
}

/* One client/server pair: extra[] are the test's options. Returns 0 and the JSON. */
static bool tcp_blocking; /* force the TCP side to sleep in the kernel */

static int pair(const char *const extra[], bool tcp, bool lat, char *out, size_t cap)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", next_port++);
    const char *sv[16], *cv[32];
    int ns = 0, nc = 0;
    sv[ns++] = iwperf;
    cv[nc++] = iwperf;
    if (tcp) {
        sv[ns++] = "--tcp";
        cv[nc++] = "--tcp";
        /* When the RDMA side busy-polls, so does the TCP baseline (like with like). */
        if (lat && !tcp_blocking && (mode == M_AUTO || mode == M_INLINE || mode == M_THREAD)) {
            sv[ns++] = "--busy-poll";
            cv[nc++] = "--busy-poll";
        }
    } else {
        enum mode m = mode == M_AUTO ? (lat ? M_INLINE : M_EVENTS) : mode;
        const char *flag = m == M_INLINE ? "--no-thread" : m == M_EVENTS ? "--events" : NULL;
        if (flag) {
            sv[ns++] = flag;
            cv[nc++] = flag;
        }
    }
    sv[ns++] = "-p";
    sv[ns++] = port;
    sv[ns++] = "-q";
    sv[ns] = NULL;
    cv[nc++] = "-p";
    cv[nc++] = port;
    cv[nc++] = "--json";
    for (int i = 0; extra[i]; i++)
        cv[nc++] = extra[i];
    cv[nc++] = "127.0.0.1";
    cv[nc] = NULL;
    pid_t srv = spawn_quiet((char *const *)sv);
    if (srv < 0)
        return -1;
    /* the client retries its connect while the server starts */
    int rc = run_capture((char *const *)cv, out, cap);
    int st = 0;
    for (int i = 0; i < 100; i++) {
        if (waitpid(srv, &st, WNOHANG) == srv)
            break;
        if (i == 99) {
            kill(srv, SIGKILL);
            waitpid(srv, &st, 0);
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    if (rc != 0)
        fprintf(stderr, "bench-iwperf: iwperf%s %s ... exited with %d\n", tcp ? " --tcp" : "",
                extra[0], rc);
    return rc;
}

enum { MAXR = 21 };

int main(int argc, char **argv)
{
    int reps = 5, c;
    const char *dur = "1";
    while ((c = getopt(argc, argv, "r:D:i:m:")) != -1) {
        switch (c) {
        case 'r':
            reps = atoi(optarg);
            break;
        case 'D':
            dur = optarg;
            break;
        case 'i':
            iwperf = optarg;
            break;
        case 'm':
            for (int k = 0; k < 4; k++)
                if (strcmp(optarg, mode_names[k]) == 0)
                    mode = (enum mode)k;
            break;
        default:
            fprintf(stderr,
                    "usage: bench-iwperf [-r REPS] [-D SECS] [-m auto|inline|thread|events] "
                    "[-i IWPERF]\n");
            return 1;
        }
    }
    if (reps < 1 || reps > MAXR)
        reps = 5;
    if (access(iwperf, X_OK) != 0) {
        fprintf(stderr, "bench-iwperf: no iwperf at %s (use -i)\n", iwperf);
        return 1;
    }
    next_port = 10000 + (int)(getpid() % 20000); /* below the ephemeral ports */

    const char *w_rdma[] = {"-t", "write", "-s", "1M", "-D", dur, "--crc", NULL};
    const char *w_tcp[] = {"-t", "write", "-s", "1M", "-D", dur, NULL};
    const char *r_rdma[] = {"-t", "read", "-s", "1M", "-D", dur, "--tx-depth", "16", NULL};
    const char *r_tcp[] = {"-t", "read", "-s", "1M", "-D", dur, "--tx-depth", "16", NULL};
    const char *l_rdma[] = {"-t", "send", "--lat", "-s", "64", "-n", "20000", NULL};
    const char *l_tcp[] = {"-t", "send", "--lat", "-s", "64", "-n", "20000", NULL};
    static char out[1 << 16];
    double wr[MAXR] = {0}, wt[MAXR] = {0}, rr[MAXR] = {0}, rt[MAXR] = {0}, lr[MAXR] = {0},
           lt[MAXR] = {0}, lb[MAXR] = {0}, copied = 0;
    bool copied_known = true, ok = true;

    printf("bench-iwperf: %d repetitions, bandwidth runs of %s s, %s progress, iwperf %s\n", reps,
           dur, mode_names[mode], iwperf);
    for (int i = 0; i < reps && ok; i++) {
        double v;
        ok = pair(w_tcp, true, false, out, sizeof(out)) == 0 && json_num(out, "bw_avg_mib", &wt[i]);
        ok = ok && pair(w_rdma, false, false, out, sizeof(out)) == 0 &&
             json_num(out, "bw_avg_mib", &wr[i]);
        if (ok && json_num(out, "copied_payload_bytes", &v))
            copied += v;
        else
            copied_known = false;
        ok = ok && pair(r_tcp, true, false, out, sizeof(out)) == 0 &&
             json_num(out, "bw_avg_mib", &rt[i]);
        ok = ok && pair(r_rdma, false, false, out, sizeof(out)) == 0 &&
             json_num(out, "bw_avg_mib", &rr[i]);
        if (ok && json_num(out, "copied_payload_bytes", &v))
            copied += v;
        else
            copied_known = false;
        ok = ok && pair(l_tcp, true, true, out, sizeof(out)) == 0 &&
             json_num(out, "t_typical_us", &lt[i]);
        ok = ok && pair(l_rdma, false, true, out, sizeof(out)) == 0 &&
             json_num(out, "t_typical_us", &lr[i]);
        tcp_blocking = true;
        ok = ok && pair(l_tcp, true, true, out, sizeof(out)) == 0 &&
             json_num(out, "t_typical_us", &lb[i]);
        tcp_blocking = false;
        if (ok)
            printf("  run %d: write %.0f / %.0f MiB/s, read %.0f / %.0f MiB/s, "
                   "64 B half RTT %.2f / %.2f us (RDMA / TCP), %.2f us (TCP blocking)\n",
                   i + 1, wr[i], wt[i], rr[i], rt[i], lr[i], lt[i], lb[i]);
        fflush(stdout);
    }
    if (!ok) {
        printf("bench-iwperf: a run failed; no ratios\n");
        return 1;
    }
    double qw[MAXR] = {0}, qr[MAXR] = {0}, ql[MAXR] = {0}, qb[MAXR] = {0};
    for (int i = 0; i < reps; i++) {
        qw[i] = wr[i] / wt[i];
        qr[i] = rr[i] / rt[i];
        ql[i] = lr[i] / lt[i];
        qb[i] = lr[i] / lb[i];
    }
    double mwr = bench_median(wr, (size_t)reps), mwt = bench_median(wt, (size_t)reps),
           mrr = bench_median(rr, (size_t)reps), mrt = bench_median(rt, (size_t)reps),
           mlr = bench_median(lr, (size_t)reps), mlt = bench_median(lt, (size_t)reps),
           mlb = bench_median(lb, (size_t)reps), rw = bench_median(qw, (size_t)reps),
           rrd = bench_median(qr, (size_t)reps), rl = bench_median(ql, (size_t)reps),
           rb = bench_median(qb, (size_t)reps);
    printf("\n%-48s %12s %12s %8s %8s\n", "measurement (medians; ratio: of the runs' ratios)",
           "uiw", "raw TCP", "ratio", "target");
    printf("%-48s %12.1f %12.1f %8.3f %8s %s\n", "RDMA Write 1 MiB, CRC on [MiB/s]", mwr, mwt, rw,
           ">= 0.90", rw >= 0.90 ? "met" : "NOT met");
    printf("%-48s %12.1f %12.1f %8.3f %8s %s\n", "RDMA Read 1 MiB [MiB/s]", mrr, mrt, rrd,
           ">= 0.85", rrd >= 0.85 ? "met" : "NOT met");
    printf("%-48s %12.2f %12.2f %8.3f %8s %s\n", "Send ping-pong 64 B, half RTT [usec]", mlr, mlt,
           rl, "<= 1.10", rl <= 1.10 ? "met" : "NOT met");
    printf("%-48s %12.2f %12.2f %8.3f %8s\n", "  (for reference: TCP sleeping in recv) [usec]", mlr,
           mlb, rb, "-");
    if (copied_known)
        printf("%-48s %12.0f %12s %8s %8s %s\n", "payload bytes copied (1 MiB runs, total)", copied,
               "-", "-", "0", copied == 0 ? "met" : "NOT met");
    else
        printf("%-48s %12s\n", "payload bytes copied (1 MiB runs, total)", "unknown");
    return 0;
}
