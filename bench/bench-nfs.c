/*
 * bench-nfs: uiw-nfs bench against uiw-nfsd on loopback, RPC-over-RDMA Version Two
 * against TCP (libtirpc's transport), same server and client, in one run:
 *   - 1 MiB sequential WRITE and READ bandwidth, one call at a time on both transports;
 *   - the CPU time per GiB moved by those WRITEs and READs and by 4 KiB ones, the client's
 *     and the server's together (uiw-nfs bench --cpu-of), on both transports;
 *   - NFSv4.1 against NFSv3, both over RPC-over-RDMA Version Two on the same server: 1 MiB
 *     WRITE and READ bandwidth one call at a time, and GETATTRs with N in flight (each on
 *     a slot of the session); targets >= 1.0x and >= 0.9x (issue 31);
 *   - GETATTR rates in two fair pairs: one call at a time on both transports (uiw-nfs), and
 *     N calls in flight on both (uiw-nfs over RDMA; over TCP libnfs's asynchronous RPC
 *     API, an independent pipelining client, as uiw-nfs's TCP path runs one call at a
 *     time);
 *   - CREATEs per second of a `sync` export (metadata durable before each reply, the
 *     default of an exports file) against an `async` one, over TCP: what durability
 *     costs;
 *   - the crossover of RPC-over-RDMA Version Two's inline transfers: READs and WRITEs of
 *     4 KiB to 64 KiB with the receive buffers uiw-nfs and uiw-nfsd agree on by default
 *     (32 KiB: what fits goes inline, a Send each way) against 4 KiB ones with a DDP
 *     threshold of 1 KiB (the data in a Read or Write chunk, an RDMA Read or Write more),
 *     as ratios of MB/s and of p50 and p99 call latency, alternated within each
 *     repetition (--calls N per run);
 *   - many small files (--files N of 4 KiB, default 256) put with uiw-nfs put -r into a
 *     new directory and got back with get -r, files per second (over the whole of each
 *     command's files: every LOOKUP, CREATE, WRITE, COMMIT or READ), with --parallel 8
 *     against --parallel 1 on each transport, and RDMA against TCP at --parallel 8, on a
 *     server of their own whose export is in memory (/dev/shm) when there is room, as the
 *     local files are.
 * Each repetition runs its runs in the reverse order of the one before (TCP's first, then
 * RDMA's; NFSv3's first, then NFSv4.1's; the files: the four runs likewise); each ratio is the
 * median of the repetitions' ratios (machines are shared and noisy). Targets: WRITE and READ
 * >= 1.5x TCP's bandwidth (issue 17); GETATTR over RDMA >= 1.0x TCP's at the same number in flight;
 * CPU per GiB over RDMA <= 0.7x TCP's for 1 MiB calls and <= 1.0x for 4 KiB ones (issue 32).
 *
 *   bench-nfs [-r REPS] [-s SIZE] [-D SECS] [--inflight N] [--calls N] [--files N] [--json]
 *             [--v4-getattr]
 * --v4-getattr runs only the NFSv4.1/NFSv3 GETATTR comparison at --inflight N (each
 * repetition in the reverse order of the one before), for iterating on the NFSv4 call path.
 * Exit 0 when the runs worked (whatever the ratios), 1 when one failed, 2 on usage.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"

struct figures {
    double write_mbs, read_mbs, getattr_cps, create_cps;
    double write_p50, write_p99, read_p50, read_p99; /* microseconds */
    double write_cpu, read_cpu; /* CPU seconds per GiB, client and server (-1: unknown) */
};

static pid_t server_pid; /* the uiw-nfsd whose CPU time uiw-nfs bench reads */

#ifdef UIW_HAVE_LIBNFS
#include <poll.h>
#include <time.h>

#include <nfsc/libnfs.h> /* first: the others need its definitions */

#include <nfsc/libnfs-raw.h>

#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

/* GETATTRs kept `inflight` in flight over TCP by libnfs's raw asynchronous RPC API. */
struct lnfs {
    int state;       /* 0 waiting, 1 done, -1 failed */
    const char *why; /* what failed */
    char fh[64];
    unsigned fhlen;
    GETATTR3args args;
    unsigned inflight;
    long calls;
    double end;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Service rpc until *state leaves 0 (or 10 s pass with nothing). */
static void lnfs_run(struct rpc_context *rpc, int *state)
{
    while (*state == 0) {
        struct pollfd p = {rpc_get_fd(rpc), (short)rpc_which_events(rpc), 0};
        int n = poll(&p, 1, 10000);
        if (n <= 0 || rpc_service(rpc, p.revents) < 0) {
            *state = -2; /* the connection, not a call */
            return;
        }
    }
}

static void lnfs_connected(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    (void)data;
    ((struct lnfs *)priv)->state = status == RPC_STATUS_SUCCESS ? 1 : -1;
}

static void lnfs_mounted(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct lnfs *l = priv;
    mountres3 *r = data;
    l->state = -1;
    if (status == RPC_STATUS_SUCCESS && r->fhs_status == MNT3_OK) {
        fhandle3 *h = &r->mountres3_u.mountinfo.fhandle;
        if (h->fhandle3_len <= sizeof(l->fh)) {
            memcpy(l->fh, h->fhandle3_val, h->fhandle3_len);
            l->fhlen = h->fhandle3_len;
            l->state = 1;
        }
    }
}

static void lnfs_got(struct rpc_context *rpc, int status, void *data, void *priv)
{
    struct lnfs *l = priv;
    GETATTR3res *r = data;
    if (status != RPC_STATUS_SUCCESS || r->status != NFS3_OK) {
        l->why = status != RPC_STATUS_SUCCESS ? "a GETATTR's RPC" : "a GETATTR's NFS status";
        l->state = -1;
        return;
    }
    l->calls++;
    if (now_s() < l->end) {
        if (rpc_nfs3_getattr_async(rpc, lnfs_got, &l->args, l) != 0)
            l->state = -1;
    } else if (--l->inflight == 0) {
        l->state = 1;
    }
}

/* GETATTRs per second of the export's root, `inflight` at a time, for secs: -1 on error. */
static double libnfs_getattr(int nfs_port, int mount_port, const char *dir, unsigned inflight,
                             double secs)
{
    struct lnfs l;
    memset(&l, 0, sizeof(l));
    double rate = -1;
    struct rpc_context *m = rpc_init_context(), *n = rpc_init_context();
    if (!m || !n)
        goto out;
    l.why = "connecting to MOUNT";
    if (rpc_connect_async(m, "127.0.0.1", mount_port, lnfs_connected, &l) != 0)
        goto out;
    lnfs_run(m, &l.state);
    l.state = l.state == 1 ? 0 : -1;
    l.why = "MNT";
    if (l.state == 0 && rpc_mount3_mnt_async(m, lnfs_mounted, (char *)dir, &l) == 0)
        lnfs_run(m, &l.state);
    if (l.state != 1)
        goto out;
    l.state = 0;
    l.why = "connecting to NFS";
    if (rpc_connect_async(n, "127.0.0.1", nfs_port, lnfs_connected, &l) != 0)
        goto out;
    lnfs_run(n, &l.state);
    if (l.state != 1)
        goto out;
    l.args.object.data.data_len = l.fhlen;
    l.args.object.data.data_val = l.fh;
    l.state = 0;
    l.why = NULL;
    l.inflight = inflight;
    double t0 = now_s();
    l.end = t0 + secs;
    for (unsigned i = 0; i < inflight; i++)
        if (rpc_nfs3_getattr_async(n, lnfs_got, &l.args, &l) != 0)
            goto out;
    lnfs_run(n, &l.state);
    if (l.state == 1)
        rate = (double)l.calls / (now_s() - t0);
out:
    if (rate < 0) {
        const char *em = m ? rpc_get_error(m) : NULL, *en = n ? rpc_get_error(n) : NULL;
        fprintf(stderr, "bench-nfs: libnfs GETATTR over TCP failed (%s, state %d): %s / %s\n",
                l.why ? l.why : "-", l.state, em ? em : "-", en ? en : "-");
    }
    if (m)
        rpc_destroy_context(m);
    if (n)
        rpc_destroy_context(n);
    return rate;
}
#else
static double libnfs_getattr(int nfs_port, int mount_port, const char *dir, unsigned inflight,
                             double secs)
{
    (void)nfs_port;
    (void)mount_port;
    (void)dir;
    (void)inflight;
    (void)secs;
    fprintf(stderr, "bench-nfs: built without libnfs (libnfs-dev): no pipelined TCP baseline\n");
    return -1;
}
#endif

/* Run a command; its standard output in *out (malloc'd). Returns its exit status. */
static int run(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += k;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    if (buf)
        buf[len] = 0;
    *out = buf;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A number after `"key":` in the JSON line of test `test`. */
static double field(const char *out, const char *test, const char *key)
{
    char want[64], k[64];
    snprintf(want, sizeof(want), "{\"test\":\"%s\"", test);
    const char *line = strstr(out, want);
    if (!line)
        return -1;
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(line, k);
    const char *eol = strchr(line, '\n');
    if (!p || (eol && p > eol))
        return -1;
    return strtod(p + strlen(k), NULL);
}

/* CPU seconds per GiB of test's line: uiw-nfs's and the server's over its bytes. */
static double cpu_per_gib(const char *out, const char *test)
{
    double bytes = field(out, test, "size"), c = field(out, test, "cpu_s"),
           s = field(out, test, "server_cpu_s");
    return bytes > 0 && c >= 0 && s >= 0 ? (c + s) / (bytes / 1073741824.0) : -1;
}

static int bench_with(const char *url, const char *size, const char *block, const char *secs,
                      unsigned inflight, const char *tests, const char *opts, struct figures *f)
{
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "'%s' bench --json --no-progress -s %s -b %s -D %s --inflight %u --cpu-of %d %s '%s'",
             UIW_NFS_PATH, size, block, secs, inflight, (int)server_pid, opts, url);
    int rc = run(cmd, &out);
    if (rc != 0 || !out) {
        fprintf(stderr, "bench-nfs: %s failed (%d)\n", cmd, rc);
        free(out);
        return -1;
    }
    if (strstr(tests, "write")) {
        f->write_mbs = field(out, "write", "mbytes_per_sec");
        f->write_cpu = cpu_per_gib(out, "write");
        f->write_p50 = field(out, "write", "p50_us");
        f->write_p99 = field(out, "write", "p99_us");
    }
    if (strstr(tests, "read")) {
        f->read_mbs = field(out, "read", "mbytes_per_sec");
        f->read_cpu = cpu_per_gib(out, "read");
        f->read_p50 = field(out, "read", "p50_us");
        f->read_p99 = field(out, "read", "p99_us");
    }
    if (strstr(tests, "getattr"))
        f->getattr_cps = field(out, "getattr", "calls_per_sec");
    if (strstr(tests, "create"))
        f->create_cps = field(out, "create", "calls_per_sec");
    free(out);
    return 0;
}

static int bench(const char *url, const char *size, const char *block, const char *secs,
                 unsigned inflight, const char *tests, struct figures *f)
{
    return bench_with(url, size, block, secs, inflight, tests, "", f);
}

/* One run of uiw-nfs bench: its URL, file size, block, calls in flight, tests, figures. */
struct run {
    const char *url, *size, *block;
    unsigned inflight;
    const char *tests;
    struct figures *f;
};

/* The n runs in their order, or in the reverse one (back). */
static int run_all(const struct run *runs, size_t n, bool back, const char *secs)
{
    for (size_t k = 0; k < n; k++) {
        const struct run *x = &runs[back ? n - 1 - k : k];
        if (bench(x->url, x->size, x->block, secs, x->inflight, x->tests, x->f) != 0)
            return -1;
    }
    return 0;
}

/* The inline crossover: sizes, and per size the figures of each repetition (chunks then
 * inline: MB/s, p50, p99 of WRITE then READ) */
#define NX 5
static const unsigned xsize[NX] = {4096, 8192, 16384, 32768, 65536};
#define NXF 12
static const char *const xchunks = "--inline-size 4096 --ddp-threshold 1024";

/* One repetition of the crossover runs: for each size, chunks then inline. */
static int crossover(const char *url, unsigned calls, double *x[NX][NXF], int rep)
{
    for (int i = 0; i < NX; i++) {
        char sz[32], blk[32];
        snprintf(sz, sizeof(sz), "%llu", (unsigned long long)xsize[i] * calls);
        snprintf(blk, sizeof(blk), "%u", xsize[i]);
        struct figures c = {0}, n = {0};
        if (bench_with(url, sz, blk, "0.05", 1, "write read", xchunks, &c) != 0 ||
            bench_with(url, sz, blk, "0.05", 1, "write read", "", &n) != 0)
            return -1;
        double v[NXF] = {c.write_mbs, c.write_p50, c.write_p99, c.read_mbs, c.read_p50, c.read_p99,
                         n.write_mbs, n.write_p50, n.write_p99, n.read_mbs, n.read_p50, n.read_p99};
        for (int k = 0; k < NXF; k++)
            x[i][k][rep] = v[k];
    }
    return 0;
}

/* The crossover's medians and ratios (inline over chunks, median of the repetitions'). */
static void crossover_report(double *x[NX][NXF], int reps, int json)
{
    static const char *const what[6] = {"write_mbs", "write_p50_us", "write_p99_us",
                                        "read_mbs",  "read_p50_us",  "read_p99_us"};
    double *q = calloc((size_t)reps, sizeof(double));
    if (!q)
        return;
    if (!json)
        printf("RPC-over-RDMA Version Two, inline (32 KiB buffers, the default) over chunks "
               "(4 KiB buffers, DDP threshold 1 KiB), median of %d:\n"
               "%-7s %11s %9s %9s %11s %9s %9s\n",
               reps, "size", "WRITE MB/s", "p50", "p99", "READ MB/s", "p50", "p99");
    for (int i = 0; i < NX; i++) {
        double r[6], mc[6], mi[6];
        for (int k = 0; k < 6; k++) {
            for (int j = 0; j < reps; j++)
                q[j] = x[i][k][j] > 0 ? x[i][6 + k][j] / x[i][k][j] : 0;
            r[k] = bench_median(q, (size_t)reps);
            mc[k] = bench_median(x[i][k], (size_t)reps);
            mi[k] = bench_median(x[i][6 + k], (size_t)reps);
        }
        if (json) {
            printf("{\"inline_v2\":{\"size\":%u", xsize[i]);
            for (int k = 0; k < 6; k++)
                printf(",\"%s\":{\"chunks\":%.1f,\"inline\":%.1f,\"ratio\":%.3f}", what[k], mc[k],
                       mi[k], r[k]);
            printf("}}\n");
        } else {
            printf("%3u KiB %10.2fx %8.2fx %8.2fx %10.2fx %8.2fx %8.2fx\n", xsize[i] / 1024, r[0],
                   r[1], r[2], r[3], r[4], r[5]);
        }
    }
    free(q);
}

/* uiw-nfsd started on 127.0.0.1 with its further arguments args (NULL-terminated): its
 * pid, the ports of its ready line in ports (TCP, MOUNT, RDMA) and its standard output in
 * *out (open until nfsd_stop); -1 when it did not start (said, with what it printed). */
static pid_t nfsd_start(const char *const *args, int ports[3], FILE **out)
{
    const char *argv[24] = {"uiw-nfsd", "-a", "127.0.0.1", "--tcp-port", "0", "--mount-port", "0"};
    size_t n = 7;
    while (*args && n < 23)
        argv[n++] = *args++;
    argv[n] = NULL;
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        close(pfd[0]);
        close(pfd[1]);
        execv(UIW_NFSD_PATH, (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    char line[256] = "";
    if (pid > 0 && f && fgets(line, sizeof(line), f) &&
        sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &ports[0], &ports[1], &ports[2]) ==
            3) {
        *out = f;
        return pid;
    }
    fprintf(stderr, "bench-nfs: uiw-nfsd did not start (%s)\n", line);
    if (f)
        fclose(f);
    else
        close(pfd[0]);
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    return -1;
}

static void nfsd_stop(pid_t pid, FILE *out)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fclose(out);
}

/* CREATEs per second on a sync and an async export of a second server: an exports file
 * with two lines, both open to 127.0.0.1 (insecure: the bench runs as anyone). */
static int creates(const char *base, const char *secs, double *sync, double *async)
{
    char file[256], dsync[256], dasync[256];
    snprintf(file, sizeof(file), "%s/exports", base);
    snprintf(dsync, sizeof(dsync), "%s/sync", base);
    snprintf(dasync, sizeof(dasync), "%s/async", base);
    if (mkdir(dsync, 0755) != 0 || mkdir(dasync, 0755) != 0)
        return -1;
    FILE *x = fopen(file, "w");
    if (!x)
        return -1;
    fprintf(x, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", dsync);
    fprintf(x, "%s 127.0.0.1(rw,insecure,no_root_squash,async)\n", dasync);
    fclose(x);
    int ports[3] = {-1, -1, -1};
    const char *args[] = {"-e", file, "-p", "-1", NULL};
    FILE *f = NULL;
    pid_t pid = nfsd_start(args, ports, &f);
    if (pid < 0)
        return -1;
    int tcp = ports[0], mnt = ports[1], rc = -1;
    struct figures a = {0}, b = {0};
    char us[512], ua[512];
    snprintf(us, sizeof(us), "nfs://127.0.0.1:%d%s?mountport=%d&version=3", tcp, dsync, mnt);
    snprintf(ua, sizeof(ua), "nfs://127.0.0.1:%d%s?mountport=%d&version=3", tcp, dasync, mnt);
    if (bench(us, "64K", "64K", secs, 1, "create", &a) == 0 &&
        bench(ua, "64K", "64K", secs, 1, "create", &b) == 0) {
        *sync = a.create_cps;
        *async = b.create_cps;
        rc = 0;
    }
    nfsd_stop(pid, f);
    return rc;
}

/* A number after `"key":` in the first line of out that starts with `start`; -1 if none. */
static double field_in(const char *out, const char *start, const char *key)
{
    const char *line = strstr(out, start);
    if (!line)
        return -1;
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(line, k), *eol = strchr(line, '\n');
    if (!p || (eol && p > eol))
        return -1;
    return strtod(p + strlen(k), NULL);
}

/* Many small files: the local directory src put with -r --parallel p as a new directory of
 * the export dir (over RDMA on port rdma, else TCP on tcp), then got back with -r into
 * the new local directory back; the files per second of each. 0, or -1 on a failure. */
static int files_round(const char *dir, int port, int mnt, int rdma, const char *src,
                       const char *back, int p, double *put_fps, double *get_fps)
{
    static unsigned round;
    char url[1024], cmd[4096], *out = NULL;
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s/files-%u?mountport=%d&version=3%s", port, dir,
             round++, mnt, rdma ? "&transport=rdma" : "");
    int rc = -1;
    snprintf(cmd, sizeof(cmd), "'%s' --json --no-progress -r --parallel %d put '%s' '%s'",
             UIW_NFS_PATH, p, src, url);
    if (run(cmd, &out) != 0 || !out ||
        (*put_fps = field_in(out, "{\"op\":\"put\",\"files\":", "files_per_sec")) <= 0)
        goto out;
    free(out);
    out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' --json --no-progress -r --parallel %d get '%s' '%s'",
             UIW_NFS_PATH, p, url, back);
    if (run(cmd, &out) != 0 || !out ||
        (*get_fps = field_in(out, "{\"op\":\"get\",\"files\":", "files_per_sec")) <= 0)
        goto out;
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "bench-nfs: %s failed\n", cmd);
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'/files-*", back, dir);
    if (run(cmd, &out) != 0)
        rc = -1;
    free(out);
    return rc;
}

/* The median of n values, leaving v as it was. */
static double median_of(const double *v, int n)
{
    double c[100];
    memcpy(c, v, (size_t)n * sizeof(*v));
    return bench_median(c, (size_t)n);
}

/* The many-small-files comparison: `files` files of 4 KiB put and got back with
 * --parallel 8 and 1 over each transport, reps times, alternating the order. A server of
 * its own, its export and the local files in memory when there is room (/dev/shm, as the
 * demo's): what is measured is the calls, not a disk's syncs. */
static int files_bench(int reps, int files, int json)
{
    char base[] = "/dev/shm/bench-nfs-files.XXXXXX";
    char *top = mkdtemp(base);
    if (!top) {
        memcpy(base, "/tmp/bench-nfs-files.XXXXXX", sizeof("/tmp/bench-nfs-files.XXXXXX"));
        top = mkdtemp(base);
    }
    if (!top)
        return -1;
    char local[sizeof(base) + 8], back[sizeof(base) + 8], dir[sizeof(base) + 8];
    snprintf(local, sizeof(local), "%s/src", top);
    snprintf(back, sizeof(back), "%s/back", top);
    snprintf(dir, sizeof(dir), "%s/exp", top);
    int rc = mkdir(local, 0755) != 0 || mkdir(dir, 0755) != 0 ? -1 : 0;
    int ports[3] = {-1, -1, -1};
    const char *args[] = {"-p", "0", "--no-root-squash", dir, NULL};
    FILE *f = NULL;
    pid_t pid = rc == 0 ? nfsd_start(args, ports, &f) : -1;
    int tcp = ports[0], mnt = ports[1], rdma = ports[2];
    if (pid < 0 || rdma <= 0)
        rc = -1;
    static char block[4096];
    for (int i = 0; rc == 0 && i < files; i++) {
        char path[sizeof(local) + 16];
        snprintf(path, sizeof(path), "%s/f%05d", local, i);
        for (size_t k = 0; k < sizeof(block); k++)
            block[k] = (char)(k * 131 + (size_t)i * 7);
        FILE *w = fopen(path, "w");
        if (!w || fwrite(block, 1, sizeof(block), w) != sizeof(block))
            rc = -1;
        if (w && fclose(w) != 0)
            rc = -1;
    }
    /* per repetition: files put and got per second, [0] rdma/8 [1] rdma/1 [2] tcp/8
     * [3] tcp/1; and the ratios */
    static const int par[4] = {8, 1, 8, 1}, on_rdma[4] = {1, 1, 0, 0};
    static const char *const name[4] = {"rdma_8", "rdma_1", "tcp_8", "tcp_1"};
    double put[4][100], get[4][100], r[6][100];
    if (!json && rc == 0)
        printf("%-4s %-24s %-24s\n%-4s %5s %5s %5s %5s  %5s %5s %5s %5s   (files/s, %d x 4 KiB)\n",
               "rep", "put -r", "get -r", "", "rdma8", "rdma1", "tcp8", "tcp1", "rdma8", "rdma1",
               "tcp8", "tcp1", files);
    for (int i = 0; rc == 0 && i < reps; i++) {
        for (int k = 0; rc == 0 && k < 4; k++) {
            int c = i % 2 ? 3 - k : k;
            rc = files_round(dir, on_rdma[c] ? rdma : tcp, mnt, on_rdma[c], local, back, par[c],
                             &put[c][i], &get[c][i]);
        }
        if (rc != 0)
            break;
        r[0][i] = put[0][i] / put[1][i]; /* --parallel 8 over 1, RDMA */
        r[1][i] = put[2][i] / put[3][i]; /* ... TCP */
        r[2][i] = put[0][i] / put[2][i]; /* RDMA over TCP, --parallel 8 */
        r[3][i] = get[0][i] / get[1][i];
        r[4][i] = get[2][i] / get[3][i];
        r[5][i] = get[0][i] / get[2][i];
        if (json) {
            printf("{\"files_rep\":%d,\"files\":%d,\"put_fps\":{", i, files);
            for (int k = 0; k < 4; k++)
                printf("%s\"%s\":%.1f", k ? "," : "", name[k], put[k][i]);
            printf("},\"get_fps\":{");
            for (int k = 0; k < 4; k++)
                printf("%s\"%s\":%.1f", k ? "," : "", name[k], get[k][i]);
            printf("}}\n");
        } else {
            printf("%-4d %5.0f %5.0f %5.0f %5.0f  %5.0f %5.0f %5.0f %5.0f\n", i, put[0][i],
                   put[1][i], put[2][i], put[3][i], get[0][i], get[1][i], get[2][i], get[3][i]);
        }
        fflush(stdout);
    }
    if (rc == 0) {
        double m[6];
        for (int k = 0; k < 6; k++)
            m[k] = median_of(r[k], reps);
        if (json)
            printf("{\"files_ratio\":{\"files\":%d,\"size\":4096,\"put_p8_p1_rdma\":%.3f,"
                   "\"put_p8_p1_tcp\":%.3f,\"put_rdma_tcp_p8\":%.3f,\"get_p8_p1_rdma\":%.3f,"
                   "\"get_p8_p1_tcp\":%.3f,\"get_rdma_tcp_p8\":%.3f}}\n",
                   files, m[0], m[1], m[2], m[3], m[4], m[5]);
        else
            printf("many small files (%d x 4 KiB, median of %d): put -r --parallel 8 over 1: "
                   "rdma %.2fx, tcp %.2fx; rdma over tcp at 8: %.2fx\n"
                   "                                     get -r --parallel 8 over 1: "
                   "rdma %.2fx, tcp %.2fx; rdma over tcp at 8: %.2fx\n",
                   files, reps, m[0], m[1], m[2], m[3], m[4], m[5]);
    }
    if (pid > 0)
        nfsd_stop(pid, f);
    char cmd[128], *o = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    run(cmd, &o);
    free(o);
    return rc;
}

int main(int argc, char **argv)
{
    int reps = 5, json = 0, files = 256, v4_getattr = 0;
    unsigned inflight = 64, xcalls = 2000;
    const char *size = "256M", *secs = "2";
    static const struct option lo[] = {
        {"reps", required_argument, NULL, 'r'},    {"size", required_argument, NULL, 's'},
        {"seconds", required_argument, NULL, 'D'}, {"inflight", required_argument, NULL, 'i'},
        {"calls", required_argument, NULL, 'c'},   {"files", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},          {"v4-getattr", no_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "r:s:D:h", lo, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'r':
            reps = (int)strtol(optarg, &end, 10);
            if (*end || reps < 1 || reps > 100) {
                fprintf(stderr, "bench-nfs: bad -r\n");
                return 2;
            }
            break;
        case 's':
            size = optarg;
            break;
        case 'D':
            secs = optarg;
            break;
        case 'i':
            inflight = (unsigned)strtoul(optarg, &end, 10);
            if (*end || inflight < 1 || inflight > 1024) {
                fprintf(stderr, "bench-nfs: bad --inflight\n");
                return 2;
            }
            break;
        case 'c':
            xcalls = (unsigned)strtoul(optarg, &end, 10);
            if (*end || xcalls < 1 || xcalls > 100000) {
                fprintf(stderr, "bench-nfs: bad --calls\n");
                return 2;
            }
            break;
        case 'f':
            files = (int)strtol(optarg, &end, 10);
            if (*end || files < 1 || files > 100000) {
                fprintf(stderr, "bench-nfs: bad --files\n");
                return 2;
            }
            break;
        case 'j':
            json = 1;
            break;
        case 'g':
            v4_getattr = 1;
            break;
        case 'h':
            printf("usage: bench-nfs [-r REPS] [-s SIZE] [-D SECS] [--inflight N] [--calls N] "
                   "[--files N] "
                   "[--json] [--v4-getattr]\n");
            return 0;
        default:
            return 2;
        }
    }
    char dir[] = "/tmp/bench-nfs.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench-nfs: mkdtemp");
        return 1;
    }
    /* The server: a child process on free ports; its ready line gives them. */
    int ports[3] = {-1, -1, -1}, rc = 1;
    const char *args[] = {"-p", "0", "--no-root-squash", dir, NULL};
    FILE *f = NULL;
    pid_t pid = nfsd_start(args, ports, &f);
    server_pid = pid;
    int tcp = ports[0], mnt = ports[1], rdma = ports[2];
    double *rw = NULL, *rr = NULL, *rg = NULL, *rs = NULL;
    double *v4[3] = {NULL};  /* NFSv4.1 over NFSv3, both RDMA: 1 MiB write, read, GETATTR/N */
    double *cpu[8] = {NULL}; /* CPU per GiB: 1 MiB write, read, 4 KiB write, read; tcp, rdma */
    double *xf[NX][NXF] = {{NULL}};
    if (pid < 0 || rdma <= 0) {
        fprintf(stderr, "bench-nfs: uiw-nfsd did not start with RPC-over-RDMA\n");
        goto out;
    }
    char utcp[512], urdma[512], urdma4[512];
    snprintf(utcp, sizeof(utcp), "nfs://127.0.0.1:%d%s?mountport=%d&version=3", tcp, dir, mnt);
    snprintf(urdma, sizeof(urdma), "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma&version=3",
             rdma, dir, mnt);
    snprintf(urdma4, sizeof(urdma4), "nfs://127.0.0.1:%d%s?transport=rdma&version=4.1", rdma, dir);
    rw = calloc((size_t)reps, sizeof(double));
    rr = calloc((size_t)reps, sizeof(double));
    rg = calloc((size_t)reps, sizeof(double));
    rs = calloc((size_t)reps, sizeof(double));
    for (int k = 0; k < 8; k++)
        cpu[k] = calloc((size_t)reps, sizeof(double));
    for (int k = 0; k < 3; k++)
        if (!(v4[k] = calloc((size_t)reps, sizeof(double))))
            goto out;
    for (int k = 0; k < 8; k++)
        if (!cpu[k])
            goto out;
    for (int i = 0; i < NX; i++)
        for (int k = 0; k < NXF; k++)
            if (!(xf[i][k] = calloc((size_t)reps, sizeof(double))))
                goto out;
    if (!rw || !rr || !rg || !rs)
        goto out;
    if (v4_getattr) {
        for (int i = 0; i < reps; i++) {
            struct figures g = {0}, gn4 = {0};
            const struct run runs[] = {{urdma, "1M", "1M", inflight, "getattr", &g},
                                       {urdma4, "1M", "1M", inflight, "getattr", &gn4}};
            if (run_all(runs, 2, i % 2 != 0, secs) != 0)
                goto out;
            v4[2][i] = gn4.getattr_cps / g.getattr_cps;
            printf("%-4d rdma-v2 NFSv3 / NFSv4.1: GETATTR %u in flight %.0f / %.0f/s (%.3fx)\n", i,
                   inflight, g.getattr_cps, gn4.getattr_cps, v4[2][i]);
            fflush(stdout);
        }
        printf("ratio NFSv4.1/NFSv3 over rdma-v2 (median of %d): GETATTR %u in flight %.2fx "
               "(>= 0.9)\n",
               reps, inflight, bench_median(v4[2], (size_t)reps));
        rc = 0;
        goto out;
    }
    if (!json)
        printf("%-4s %12s %12s %12s %12s %10s %10s %10s %10s\n", "rep", "write tcp", "write rdma",
               "read tcp", "read rdma", "ga tcp/1", "ga rdma/1", "ga tcp/N", "ga rdma/N");
    for (int i = 0; i < reps; i++) {
        struct figures t = {0}, r = {0}, g1 = {0}, g = {0}, t4 = {0}, r4 = {0}, n4 = {0}, gn4 = {0};
        const struct run runs[] = {
            {utcp, size, "1M", 1, "write read getattr", &t},
            {urdma, size, "1M", 1, "write read", &r},
            {urdma, "1M", "1M", 1, "getattr", &g1},
            {urdma, "1M", "1M", inflight, "getattr", &g},
            {urdma4, size, "1M", 1, "write read", &n4},
            {urdma4, "1M", "1M", inflight, "getattr", &gn4},
            {utcp, "16M", "4K", 1, "write read", &t4},
            {urdma, "16M", "4K", 1, "write read", &r4},
        };
        /* odd repetitions run the list backwards (RDMA's runs before TCP's, NFSv4.1's
         * before NFSv3's): what the order does cancels out in the medians */
        bool back = i % 2 != 0;
        double tn = back ? libnfs_getattr(tcp, mnt, dir, inflight, atof(secs)) : 0;
        if (run_all(runs, sizeof(runs) / sizeof(runs[0]), back, secs) != 0)
            goto out;
        if (!back)
            tn = libnfs_getattr(tcp, mnt, dir, inflight, atof(secs));
        v4[0][i] = n4.write_mbs / r.write_mbs;
        v4[1][i] = n4.read_mbs / r.read_mbs;
        v4[2][i] = gn4.getattr_cps / g.getattr_cps;
        if (json)
            printf("{\"nfs4_rep\":%d,\"first\":\"%s\",\"write_mbs\":{\"v3\":%.1f,\"v41\":%.1f},"
                   "\"read_mbs\":{"
                   "\"v3\":%.1f,\"v41\":%.1f},\"getattr_n_cps\":{\"v3\":%.0f,\"v41\":%.0f}}\n",
                   i, back ? "v41" : "v3", r.write_mbs, n4.write_mbs, r.read_mbs, n4.read_mbs,
                   g.getattr_cps, gn4.getattr_cps);
        else
            printf("%-4d rdma-v2 NFSv3 / NFSv4.1: write %.1f / %.1f MB/s, read %.1f / %.1f MB/s, "
                   "GETATTR %u in flight %.0f / %.0f/s\n",
                   i, r.write_mbs, n4.write_mbs, r.read_mbs, n4.read_mbs, inflight, g.getattr_cps,
                   gn4.getattr_cps);
        double c[8] = {t.write_cpu,  r.write_cpu,  t.read_cpu,  r.read_cpu,
                       t4.write_cpu, r4.write_cpu, t4.read_cpu, r4.read_cpu};
        for (int k = 0; k < 8; k++)
            cpu[k][i] = c[k];
        if (tn <= 0 || crossover(urdma, xcalls, xf, i) != 0)
            goto out;
        rw[i] = r.write_mbs / t.write_mbs;
        rr[i] = r.read_mbs / t.read_mbs;
        rs[i] = g1.getattr_cps / t.getattr_cps;
        rg[i] = g.getattr_cps / tn;
        if (json)
            printf("{\"rep\":%d,\"first\":\"%s\",\"write_mbs\":{\"tcp\":%.1f,\"rdma\":%.1f},\"read_"
                   "mbs\":{\"tcp\":"
                   "%.1f,\"rdma\":%.1f},\"getattr_cps\":{\"tcp_1\":%.0f,\"rdma_1\":%.0f,"
                   "\"tcp_libnfs_n\":%.0f,\"rdma_n\":%.0f},\"cpu_s_per_gib\":{\"write_1MiB\":{"
                   "\"tcp\":%.3f,\"rdma\":%.3f},\"read_1MiB\":{\"tcp\":%.3f,\"rdma\":%.3f},"
                   "\"write_4KiB\":{\"tcp\":%.3f,\"rdma\":%.3f},\"read_4KiB\":{\"tcp\":%.3f,"
                   "\"rdma\":%.3f}}}\n",
                   i, back ? "rdma" : "tcp", t.write_mbs, r.write_mbs, t.read_mbs, r.read_mbs,
                   t.getattr_cps, g1.getattr_cps, tn, g.getattr_cps, c[0], c[1], c[2], c[3], c[4],
                   c[5], c[6], c[7]);
        else
            printf("%-4d %7.1f MB/s %7.1f MB/s %7.1f MB/s %7.1f MB/s %8.0f/s %8.0f/s %8.0f/s "
                   "%8.0f/s\n",
                   i, t.write_mbs, r.write_mbs, t.read_mbs, r.read_mbs, t.getattr_cps,
                   g1.getattr_cps, tn, g.getattr_cps);
        fflush(stdout);
    }
    double mw = bench_median(rw, (size_t)reps), mr = bench_median(rr, (size_t)reps),
           mg = bench_median(rg, (size_t)reps), ms = bench_median(rs, (size_t)reps);
    /* CPU per GiB: medians of each, and of the repetitions' ratios rdma/tcp */
    double cm[8], cr[4];
    for (int k = 0; k < 8; k++)
        cm[k] = bench_median(cpu[k], (size_t)reps);
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < reps; i++)
            rw[i] = cpu[2 * k][i] > 0 ? cpu[2 * k + 1][i] / cpu[2 * k][i] : 0;
        cr[k] = bench_median(rw, (size_t)reps);
    }
    double m4[3];
    for (int k = 0; k < 3; k++)
        m4[k] = bench_median(v4[k], (size_t)reps);
    if (json)
        printf("{\"ratio_v41_v3\":{\"write_1MiB\":%.3f,\"read_1MiB\":%.3f,\"getattr_n\":%.3f}}\n",
               m4[0], m4[1], m4[2]);
    else
        printf("ratio NFSv4.1/NFSv3 over rdma-v2 (median of %d): 1 MiB WRITE %.2fx (target >= 1), "
               "1 MiB READ %.2fx (>= 1), GETATTR %u in flight %.2fx (>= 0.9)\n",
               reps, m4[0], m4[1], inflight, m4[2]);
    crossover_report(xf, reps, json);
    double csync = 0, casync = 0;
    if (creates(dir, secs, &csync, &casync) != 0)
        goto out;
    static const char *const cname[4] = {"1 MiB WRITE", "1 MiB READ", "4 KiB WRITE", "4 KiB READ"};
    static const char *const ckey[4] = {"write_1MiB", "read_1MiB", "write_4KiB", "read_4KiB"};
    static const double ctarget[4] = {0.7, 0.7, 1.0, 1.0};
    for (int k = 0; k < 4; k++) {
        if (json)
            printf("{\"cpu_s_per_gib\":{\"test\":\"%s\",\"tcp\":%.4f,\"rdma\":%.4f,"
                   "\"ratio\":%.3f,\"target\":%.1f}}\n",
                   ckey[k], cm[2 * k], cm[2 * k + 1], cr[k], ctarget[k]);
        else
            printf("CPU per GiB (client + server), %-11s: tcp %6.2f s, rdma-v2 %6.2f s, ratio "
                   "%.2fx (target <= %.1f) %s\n",
                   cname[k], cm[2 * k], cm[2 * k + 1], cr[k], ctarget[k],
                   cr[k] <= ctarget[k] ? "met" : "NOT met");
    }
    if (json)
        printf("{\"ratio\":{\"write_1MiB\":%.3f,\"read_1MiB\":%.3f,\"getattr_1\":%.3f,"
               "\"getattr_n\":%.3f,\"inflight\":%u}}\n"
               "{\"creates_per_sec\":{\"sync\":%.0f,\"async\":%.0f,\"ratio\":%.3f}}\n",
               mw, mr, ms, mg, inflight, csync, casync, casync > 0 ? csync / casync : 0);
    else
        printf("ratio rdma-v2/tcp (median of %d): 1 MiB WRITE %.2fx (target >= 1.5), 1 MiB READ "
               "%.2fx (>= 1.5), GETATTR one in flight %.2fx (>= 1), GETATTR %u in flight "
               "(tcp: libnfs) %.2fx (>= 1)\n"
               "CREATE over TCP: %.0f/s on a sync export, %.0f/s on an async one (sync/async "
               "%.2fx: durable metadata's cost)\n",
               reps, mw, mr, ms, inflight, mg, csync, casync, casync > 0 ? csync / casync : 0);
    fflush(stdout);
    if (files_bench(reps, files, json) != 0)
        goto out;
    rc = 0;
out:
    free(rw);
    free(rr);
    free(rg);
    free(rs);
    for (int k = 0; k < 8; k++)
        free(cpu[k]);
    for (int k = 0; k < 3; k++)
        free(v4[k]);
    for (int i = 0; i < NX; i++)
        for (int k = 0; k < NXF; k++)
            free(xf[i][k]);
    if (pid > 0)
        nfsd_stop(pid, f);
    char cmd[128], *o = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    run(cmd, &o);
    free(o);
    return rc;
}
