/*
 * bench-iwperf: uiw RDMA against the strongest raw TCP baseline measured in the same run.
 *
 * Runs the built iwperf binary as two processes over one loopback connection (server and
 * client), REPS rounds, each round running RDMA and raw TCP (iwperf --tcp, the same
 * process layout) back to back, RDMA first in every other round (the machine's speed
 * changes from second to second: a pair measured back to back shares it, and alternating
 * keeps the order from favouring either side). It prints the medians, their quotient (the
 * ratio, which the target judges: the printed figures give the printed ratio) and, as
 * "paired", the median of the rounds' own ratios. Each RDMA bandwidth figure (Write 1 MiB with CRC;
 * Read 1 MiB, 16 in flight) is printed over both TCP baselines, labelled: the one-way stream of 1
 * MiB messages (-t write): the limit for moving bytes, which a Write's and a Read's responder both
 * stream          (Write's target >= 0.95) request/response, 1 MiB per request, 16 requests in
 * flight (-t read): the same exchange as an RDMA Read                            (Read's target >=
 * 0.95) Send ping-pong 64 B half RTT / TCP 64 B ping-pong half RTT         (target <= 1.00) payload
 * bytes the stack copied in user space during the 1 MiB runs (target 0) The TCP baseline is the
 * strongest this machine gives: both ends spin on non-blocking calls (--busy-poll) as the RDMA
 * application polls its CQ, and each bandwidth round runs it with 64 KiB and with 1 MiB send()
 * calls (--tcp-write); the write size with the higher median over the rounds is the baseline of
 * every round (the stronger configuration, chosen once: keeping the faster of the two runs in each
 * round would also keep the luckier of two draws of the machine's noise, which no single RDMA run
 * gets).
 *
 * usage: bench-iwperf [-r REPS] [-D SECS] [-m auto|inline|thread|events] [-i IWPERF]
 *   defaults: 7 rounds, 3 s bandwidth runs (as iwperf -D 3 run by hand: TCP's one-way
 *   stream runs slower in its first second while RDMA's does not, so 1 s runs flattered
 *   the ratio), -m auto, the iwperf built next to this
 *   program. How the RDMA side waits for completions:
 *     inline: no progress thread, the application busy-polls and so drives the stack
 *             (iwperf --no-thread);
 *     thread: the stack's progress thread, the application busy-polls (iwperf --thread);
 *     events: the progress thread, the application sleeps on the completion channel
 *             (iwperf --events, like perftest -e); the TCP baseline then sleeps in the
 *             kernel too (no --busy-poll);
 *     auto:   no option: iwperf's own default, as a user running iwperf gets it (no
 *             progress thread with fewer than 4 CPUs, where spinning in one thread per
 *             process leaves each process a CPU; a progress thread otherwise); the mode
 *             iwperf reports (its JSON's "progress") is printed.
 *   The blocking TCP ping-pong (sleeping in recv) is printed for reference.
 * A full run with the defaults takes about 7 * (6 * 3 s + 3 latency runs + start-up).
 */
#include <errno.h>
#include <poll.h>
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

/* Start the server argv with its stdout on /dev/null and its stderr on a pipe (*err), and
 * read the port it listens on from there ("iwperf: listening on port N", with -p 0): the
 * port, or -1 (the server is then reaped). */
static int spawn_server(char *const argv[], pid_t *pid, int *err)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    fflush(NULL);
    *pid = fork();
    if (*pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (*pid == 0) {
        FILE *f = freopen("/dev/null", "w", stdout);
        (void)f;
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    *err = p[0];
    static const char mark[] = "iwperf: listening on port ";
    char line[256];
    size_t n = 0;
    for (;;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        char ch;
        if (poll(&pf, 1, 20000) <= 0 || read(p[0], &ch, 1) != 1)
            break;
        if (ch != '\n') {
            if (n < sizeof(line) - 1)
                line[n++] = ch;
            continue;
        }
        line[n] = '\0';
        n = 0;
        if (strncmp(line, mark, sizeof(mark) - 1) == 0)
            return atoi(line + sizeof(mark) - 1);
        fprintf(stderr, "%s\n", line);
    }
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    close(p[0]);
    return -1;
}

/* Copy what the server wrote on stderr after its port (its errors) to ours, and close. */
static void forward_stderr(int fd)
{
    char buf[4096];
    ssize_t k;
    while ((k = read(fd, buf, sizeof(buf))) > 0)
        fwrite(buf, 1, (size_t)k, stderr);
    close(fd);
}

/* Where the value of key starts in doc ("key": value), or NULL. */
static const char *json_value(const char *doc, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    const char *p = strstr(doc, pat);
    return p ? p + strlen(pat) : NULL;
}

/* The string value of key in doc, into buf (cap bytes); false if absent. */
static bool json_str(const char *doc, const char *key, char *buf, size_t cap)
{
    const char *p = json_value(doc, key), *e = p && *p == '"' ? strchr(++p, '"') : NULL;
    if (!e || (size_t)(e - p) >= cap)
        return false;
    memcpy(buf, p, (size_t)(e - p));
    buf[e - p] = '\0';
    return true;
}

static bool json_num(const char *doc, const char *key, double *v)
{
    const char *p = json_value(doc, key);
    if (!p || strncmp(p, "null", 4) == 0)
        return false;
    char *end;
    *v = strtod(p, &end);
    return end != p;
}

/* One client/server pair: extra[] are the test's options, then tcp_extra[] (TCP only).
 * Returns 0 and the client's JSON in out. */
static int pair(const char *const extra[], bool tcp, const char *const tcp_extra[], char *out,
                size_t cap)
{
    char port[16];
    const char *sv[16], *cv[32];
    int ns = 0, nc = 0;
    sv[ns++] = iwperf;
    cv[nc++] = iwperf;
    if (tcp) {
        sv[ns++] = "--tcp";
        cv[nc++] = "--tcp";
        for (int i = 0; tcp_extra && tcp_extra[i]; i++) {
            sv[ns++] = tcp_extra[i];
            cv[nc++] = tcp_extra[i];
        }
    } else {
        /* auto: no option, iwperf's own default (by the CPUs), as a user's run gets */
        const char *flag = mode == M_INLINE   ? "--no-thread"
                           : mode == M_THREAD ? "--thread"
                           : mode == M_EVENTS ? "--events"
                                              : NULL;
        if (flag) {
            sv[ns++] = flag;
            cv[nc++] = flag;
        }
    }
    sv[ns++] = "-p";
    sv[ns++] = "0";
    sv[ns++] = "-q";
    sv[ns] = NULL;
    cv[nc++] = "-p";
    cv[nc++] = port;
    cv[nc++] = "--json";
    for (int i = 0; extra[i]; i++)
        cv[nc++] = extra[i];
    cv[nc++] = "127.0.0.1";
    cv[nc] = NULL;
    pid_t srv;
    int err;
    int pn = spawn_server((char *const *)sv, &srv, &err);
    if (pn <= 0)
        return -1;
    snprintf(port, sizeof(port), "%d", pn);
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
    forward_stderr(err);
    if (rc != 0)
        fprintf(stderr, "bench-iwperf: iwperf%s %s ... exited with %d\n", tcp ? " --tcp" : "",
                extra[0], rc);
    return rc;
}

/* The progress mode the RDMA runs reported ("inline", "thread", "events"), for the
 * header: with -m auto, iwperf chose it. */
static char progress[16] = "?";

/* One iwperf run and the number key of its JSON; false if it failed. */
static bool measure(const char *const extra[], bool tcp, const char *const tcp_extra[],
                    const char *key, double *v, double *copied, bool *copied_known)
{
    static char out[1 << 16];
    if (pair(extra, tcp, tcp_extra, out, sizeof(out)) != 0 || !json_num(out, key, v))
        return false;
    if (!tcp)
        json_str(out, "progress", progress, sizeof(progress));
    double c;
    if (copied && json_num(out, "copied_payload_bytes", &c))
        *copied += c;
    else if (copied)
        *copied_known = false;
    return true;
}

enum { MAXR = 21 };

/* A bandwidth round: RDMA and the TCP baseline with 64 KiB and with 1 MiB send() calls
 * (*t64, *t1m), in the order the round says (RDMA first, or last). */
static bool bw_round(const char *const rdma[], const char *const tcp[], bool rdma_first, double *r,
                     double *t64, double *t1m, double *copied, bool *copied_known)
{
    const char *poll = mode == M_EVENTS ? NULL : "--busy-poll";
    const char *o64[] = {"--tcp-write", "64K", poll, NULL};
    const char *o1m[] = {"--tcp-write", "1M", poll, NULL};
    bool ok = true;
    if (rdma_first)
        ok = measure(rdma, false, NULL, "bw_avg_mib", r, copied, copied_known);
    ok = ok && measure(tcp, true, rdma_first ? o1m : o64, "bw_avg_mib", rdma_first ? t1m : t64,
                       NULL, NULL);
    ok = ok && measure(tcp, true, rdma_first ? o64 : o1m, "bw_avg_mib", rdma_first ? t64 : t1m,
                       NULL, NULL);
    if (!rdma_first)
        ok = ok && measure(rdma, false, NULL, "bw_avg_mib", r, copied, copied_known);
    return ok;
}

/* The TCP baseline of a bandwidth test: the write size whose median over the rounds is
 * the higher (the stronger configuration, chosen once for the run: a per-round maximum of
 * two draws would also pick the luckier draw); its rounds go to t[], its name is
 * returned. */
static const char *bw_baseline(const double *t64, const double *t1m, int reps, double *t)
{
    double a[MAXR], b[MAXR]; /* bench_median sorts: copies */
    memcpy(a, t64, (size_t)reps * sizeof(*a));
    memcpy(b, t1m, (size_t)reps * sizeof(*b));
    bool big = bench_median(b, (size_t)reps) >= bench_median(a, (size_t)reps);
    for (int i = 0; i < reps; i++)
        t[i] = big ? t1m[i] : t64[i];
    return big ? "1M" : "64K";
}

/* A row of the table: the two medians and their quotient, the ratio the target judges
 * (so that the printed figures give the printed ratio), then the median of the rounds' own
 * ratios (q[], n of them: each round's pair shared the machine's speed of the moment). */
static void table_row(const char *label, int prec, double u, double t, double *q, size_t n,
                      const char *target, double goal, bool at_most)
{
    double r = u / t;
    printf("%-52s %10.*f %10.*f %8.3f %8.3f %8s", label, prec, u, prec, t, r, bench_median(q, n),
           target ? target : "-");
    if (target)
        printf(" %s", (at_most ? r <= goal : r >= goal) ? "met" : "NOT met");
    putchar('\n');
}

int main(int argc, char **argv)
{
    int reps = 7, c;
    const char *dur = "3";
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
        reps = 7;
    if (access(iwperf, X_OK) != 0) {
        fprintf(stderr, "bench-iwperf: no iwperf at %s (use -i)\n", iwperf);
        return 1;
    }

    const char *w_rdma[] = {"-t", "write", "-s", "1M", "-D", dur, "--crc", NULL};
    const char *w_tcp[] = {"-t", "write", "-s", "1M", "-D", dur, NULL};
    const char *r_rdma[] = {"-t", "read", "-s", "1M", "-D", dur, "--tx-depth", "16", NULL};
    const char *r_tcp[] = {"-t", "read", "-s", "1M", "-D", dur, "--tx-depth", "16", NULL};
    const char *l_rdma[] = {"-t", "send", "--lat", "-s", "64", "-n", "20000", NULL};
    const char *l_tcp[] = {"-t", "send", "--lat", "-s", "64", "-n", "20000", NULL};
    const char *l_poll[] = {mode == M_EVENTS ? NULL : "--busy-poll", NULL};
    double wr[MAXR] = {0}, wt[MAXR] = {0}, rr[MAXR] = {0}, rt[MAXR] = {0}, lr[MAXR] = {0},
           lt[MAXR] = {0}, lb[MAXR] = {0}, copied = 0;
    double w64[MAXR] = {0}, w1m[MAXR] = {0}, r64[MAXR] = {0}, r1m[MAXR] = {0};
    bool copied_known = true, ok = true;

    printf("bench-iwperf: %d rounds, bandwidth runs of %s s, %s progress, iwperf %s\n", reps, dur,
           mode_names[mode], iwperf);
    for (int i = 0; i < reps && ok; i++) {
        bool rf = i % 2 == 1; /* RDMA first in every other round */
        ok = bw_round(w_rdma, w_tcp, rf, &wr[i], &w64[i], &w1m[i], &copied, &copied_known) &&
             bw_round(r_rdma, r_tcp, rf, &rr[i], &r64[i], &r1m[i], &copied, &copied_known);
        if (ok && rf)
            ok = measure(l_rdma, false, NULL, "t_typical_us", &lr[i], NULL, NULL);
        ok = ok && measure(l_tcp, true, l_poll, "t_typical_us", &lt[i], NULL, NULL);
        if (ok && !rf)
            ok = measure(l_rdma, false, NULL, "t_typical_us", &lr[i], NULL, NULL);
        const char *none[] = {NULL};
        ok = ok && measure(l_tcp, true, none, "t_typical_us", &lb[i], NULL, NULL);
        if (ok)
            printf("  round %d (%s first): write %.0f / %.0f, %.0f MiB/s (RDMA / TCP 64K, 1M "
                   "writes), read %.0f / %.0f, %.0f MiB/s, 64 B half RTT %.2f / %.2f us (RDMA / "
                   "TCP), %.2f us (TCP blocking)\n",
                   i + 1, rf ? "RDMA" : "TCP", wr[i], w64[i], w1m[i], rr[i], r64[i], r1m[i], lr[i],
                   lt[i], lb[i]);
        fflush(stdout);
    }
    if (!ok) {
        printf("bench-iwperf: a run failed; no ratios\n");
        return 1;
    }
    const char *ww = bw_baseline(w64, w1m, reps, wt), *rw = bw_baseline(r64, r1m, reps, rt);
    /* each RDMA bandwidth figure over both TCP baselines: the one-way stream (the limit for
     * moving bytes) and request/response with 16 requests in flight */
    double qww[MAXR] = {0}, qwr[MAXR] = {0}, qrw[MAXR] = {0}, qrr[MAXR] = {0}, ql[MAXR] = {0},
           qb[MAXR] = {0};
    for (int i = 0; i < reps; i++) {
        qww[i] = wr[i] / wt[i];
        qwr[i] = wr[i] / rt[i];
        qrw[i] = rr[i] / wt[i];
        qrr[i] = rr[i] / rt[i];
        ql[i] = lr[i] / lt[i];
        qb[i] = lr[i] / lb[i];
    }
    size_t n = (size_t)reps;
    double mwr = bench_median(wr, n), mwt = bench_median(wt, n), mrr = bench_median(rr, n),
           mrt = bench_median(rt, n), mlr = bench_median(lr, n), mlt = bench_median(lt, n),
           mlb = bench_median(lb, n);
    printf("\nRDMA: iwperf -t write|read -s 1M -D %s (write: --crc; read: --tx-depth 16), %s "
           "progress%s\n",
           dur, progress, mode == M_AUTO ? " (iwperf's default here)" : "");
    printf("TCP baselines (iwperf --tcp%s, the same 1 MiB messages and duration):\n"
           "  one-way stream: -t write, %s send() calls\n"
           "  request/response: -t read, 16 requests in flight, %s send() calls\n",
           mode == M_EVENTS ? "" : " --busy-poll", ww, rw);
    printf("\n%-52s %10s %10s %8s %8s %8s\n", "measurement (medians; ratio: uiw / TCP)", "uiw",
           "raw TCP", "ratio", "paired", "target");
    table_row("RDMA Write / TCP one-way stream [MiB/s]", 1, mwr, mwt, qww, n, ">= 0.95", 0.95,
              false);
    table_row("RDMA Write / TCP request/response [MiB/s]", 1, mwr, mrt, qwr, n, NULL, 0, false);
    table_row("RDMA Read / TCP one-way stream [MiB/s]", 1, mrr, mwt, qrw, n, NULL, 0, false);
    table_row("RDMA Read / TCP request/response [MiB/s]", 1, mrr, mrt, qrr, n, ">= 0.95", 0.95,
              false);
    table_row("Send ping-pong 64 B, half RTT [usec]", 2, mlr, mlt, ql, n, "<= 1.00", 1.00, true);
    table_row("  (for reference: TCP sleeping in recv) [usec]", 2, mlr, mlb, qb, n, NULL, 0, false);
    printf("(paired: the median of the rounds' own ratios, each round's pair measured back to "
           "back)\n");
    if (copied_known)
        printf("%-52s %10.0f %10s %8s %8s %8s %s\n", "payload bytes copied (1 MiB runs, total)",
               copied, "-", "-", "-", "0", copied == 0 ? "met" : "NOT met");
    else
        printf("%-52s %10s\n", "payload bytes copied (1 MiB runs, total)", "unknown");
    return 0;
}
