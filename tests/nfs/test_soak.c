/* Soak: uiw-nfsd (the program) serves 16 clients of mixed NFS traffic for
 * UIW_SOAK_MINUTES minutes (default 10), half over TCP and half over RPC-over-RDMA, each
 * through a relay that resets every connection every 30 s. Each client writes files of
 * random sizes, reads them back and compares them, lists its directory and removes them,
 * and must never see a call fail. Every minute the server's RSS, descriptors and threads
 * are printed; after the first minute they must stay flat. Not in scripts/test.sh (the
 * soak label): scripts/soak.sh --minutes N runs it.
 *
 * Flat, for the RSS: what the server keeps fills in the first minutes (the duplicate-reply
 * cache, pooled buffers up to the clients' concurrency) and then stays, so from minute 3,
 * or the run's second half when that is later, the least-squares slope of the RSS sampled
 * every 10 s must stay under SLOPE_KIB a minute: a leak of 1 MiB a minute fails a run of
 * 5 minutes or more. The RSS judged is net of the RPC-over-RDMA receive buffers' resident
 * pages, as the server counts them (--stats, on SIGUSR1): those fill as messages long
 * enough land in them, for minutes on this load, up to the bound of the buffers posted,
 * and would pass for a leak. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs_util.h"
#include "relay.h"
#include "test.h"

#define CLIENTS 16
/* KiB a minute: the server's own drift once its caches are full, 50 to 350 as its
 * load rises, is under it; a leak of 1 MiB a minute is over it */
#define SLOPE_KIB 512
#define SAMPLE_S  10

static atomic_int stop;
static atomic_ulong verified;
/* the server's --stats blocks read (their count) and the last one's resident inline
 * buffers (KiB) */
static atomic_long stats_blocks, inline_res_kib;

struct soaker {
    int id;
    char url[512];
    int failed;
    char why[640];
};

static int count_entry(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
                       const struct uiw__nfs_fh *fh)
{
    (void)name;
    (void)fileid;
    (void)attr;
    (void)fh;
    (*(unsigned *)arg)++;
    return 0;
}

#define SOAK_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(w->why, sizeof(w->why), __VA_ARGS__);                                         \
            w->failed = 1;                                                                         \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static void *soak_client(void *arg)
{
    struct soaker *w = arg;
    struct uiw__nfs_url u;
    char err[512];
    struct uiw__nfs_client *c = NULL;
    char *buf = malloc(4u << 20), *back = malloc(4u << 20);
    if (!buf || !back || uiw__nfs_url_parse(w->url, &u, err, sizeof(err)) != 0) {
        snprintf(w->why, sizeof(w->why), "setup: %s", err);
        w->failed = 1;
        goto out;
    }
    c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    SOAK_CHECK(c != NULL, "open: %s", err);
    struct uiw__nfs_fh dir;
    char dname[32];
    snprintf(dname, sizeof(dname), "c%02d", w->id);
    SOAK_CHECK(uiw__nfs_mkdir(c, uiw__nfs_client_root(c), dname, 0755, &dir) == 0, "mkdir");
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    uint32_t wt = uiw__nfs_client_wtmax(c), rt = uiw__nfs_client_rtmax(c);
    for (unsigned it = 0; !atomic_load(&stop); it++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t size = (uint32_t)(x % (4u << 20)) + 1;
        for (uint32_t i = 0; i < size; i++)
            buf[i] = (char)(x >> (8 * (i % 8))) ^ (char)i;
        char name[32];
        snprintf(name, sizeof(name), "f%u", it);
        struct uiw__nfs_fh f;
        int rc = uiw__nfs_create(c, &dir, name, 0644, 0, &f);
        SOAK_CHECK(rc == 0, "create %s: %s", name, uiw__nfs_errtext(c, rc));
        for (uint32_t off = 0; off < size;) {
            uint32_t n = size - off < wt ? size - off : wt;
            rc = uiw__nfs_write(c, &f, off, n, buf + off, UNSTABLE, NULL);
            SOAK_CHECK(rc == (int)n, "write %s at %u: %s", name, off, uiw__nfs_errtext(c, rc));
            off += n;
        }
        rc = uiw__nfs_commit(c, &f, NULL);
        SOAK_CHECK(rc == 0, "commit %s: %s", name, uiw__nfs_errtext(c, rc));
        for (uint32_t off = 0; off < size;) {
            int eof;
            uint32_t n = size - off < rt ? size - off : rt;
            rc = uiw__nfs_read(c, &f, off, n, back + off, &eof);
            SOAK_CHECK(rc > 0, "read %s at %u: %s", name, off, uiw__nfs_errtext(c, rc));
            off += (uint32_t)rc;
        }
        SOAK_CHECK(memcmp(buf, back, size) == 0, "%s read back differs", name);
        fattr3 a;
        rc = uiw__nfs_getattr(c, &f, &a);
        SOAK_CHECK(rc == 0 && a.size == size, "getattr %s", name);
        if (it % 8 == 0) {
            unsigned n = 0;
            rc = uiw__nfs_readdir(c, &dir, count_entry, &n);
            SOAK_CHECK(rc == 0 && n >= 3, "readdir: %s", uiw__nfs_errtext(c, rc));
        }
        rc = uiw__nfs_remove(c, &dir, name);
        SOAK_CHECK(rc == 0, "remove %s: %s", name, uiw__nfs_errtext(c, rc));
        atomic_fetch_add(&verified, 1);
    }
out:
    if (c)
        uiw__nfs_client_close(c);
    free(buf);
    free(back);
    return NULL;
}

/* Reads the server's standard output: its --stats blocks. */
static void *stats_reader(void *arg)
{
    FILE *out = arg;
    char line[512];
    while (fgets(line, sizeof(line), out)) {
        unsigned long mapped, res;
        if (sscanf(line, "   memory     : %lu KiB of inline buffers (%lu KiB resident)", &mapped,
                   &res) == 2)
            atomic_store(&inline_res_kib, (long)res);
        else if (strncmp(line, "uiw-nfsd: open files:", 21) == 0) /* a block's last line */
            atomic_fetch_add(&stats_blocks, 1);
    }
    return NULL;
}

/* The server's resident inline buffers (KiB), from a --stats block asked for now. */
static long server_inline_kib(pid_t pid)
{
    long n = atomic_load(&stats_blocks);
    CHECK_EQ(kill(pid, SIGUSR1), 0);
    for (int i = 0; i < 500 && atomic_load(&stats_blocks) == n; i++)
        usleep(10000);
    CHECK(atomic_load(&stats_blocks) > n);
    return atomic_load(&inline_res_kib);
}

/* The server's resident size (KiB), open descriptors and threads. */
static void server_usage(pid_t pid, long *rss, long *fds, long *threads)
{
    char p[64], line[256];
    snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    *rss = *threads = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            *rss = atol(line + 6);
        else if (strncmp(line, "Threads:", 8) == 0)
            *threads = atol(line + 8);
    }
    fclose(f);
    snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(p);
    CHECK(d != NULL);
    *fds = 0;
    while (readdir(d))
        (*fds)++;
    closedir(d);
}

TEST(soak_mixed_clients)
{
    signal(SIGPIPE, SIG_IGN); /* as uiw-nfs: libtirpc writes to connections the relay resets */
    const char *e = getenv("UIW_SOAK_MINUTES");
    int minutes = e && atoi(e) > 0 ? atoi(e) : 10;
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/uiw-soak.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    const char *argv[] = {
        "uiw-nfsd",     "-a", "127.0.0.1",        "-p",        "0",       "--tcp-port", "0",
        "--mount-port", "0",  "--no-root-squash", "--no-nfs4", "--stats", dir,          NULL};
    FILE *out;
    char line[256];
    pid_t srv = nfsd_spawn_argv(argv, &out, line, sizeof(line));
    pthread_t reader;
    CHECK_EQ(pthread_create(&reader, NULL, stats_reader, out), 0);
    int tcp, mount, rdma;
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    struct relay *rt = relay_start(tcp), *rr = relay_start(rdma);
    static struct soaker w[CLIENTS];
    pthread_t th[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        w[i].id = i;
        snprintf(w[i].url, sizeof(w[i].url), "nfs://127.0.0.1:%d%s?mountport=%d&transport=%s",
                 relay_port(i % 2 ? rr : rt), dir, mount, i % 2 ? "rdma" : "tcp");
        CHECK_EQ(pthread_create(&th[i], NULL, soak_client, &w[i]), 0);
    }
    long rss[128], fds[128], thr[128];
    /* the RSS net of the resident inline buffers every SAMPLE_S seconds: (second, KiB) */
    int nsamples = 0, cap = minutes * 60 / SAMPLE_S + 2;
    long(*sample)[2] = calloc((size_t)cap, sizeof(*sample));
    CHECK(sample != NULL);
    time_t t0 = time(NULL);
    int failed = 0;
    for (int s = 1; s <= 2 * minutes && !failed; s++) {
        while (time(NULL) < t0 + 30 * s) {
            sleep(1);
            long at = (long)(time(NULL) - t0);
            if (at >= (nsamples + 1) * SAMPLE_S && nsamples < cap) {
                long nfd, nth, ik = server_inline_kib(srv);
                sample[nsamples][0] = at;
                server_usage(srv, &sample[nsamples][1], &nfd, &nth);
                sample[nsamples][1] -= ik;
                nsamples++;
            }
        }
        relay_cut_all(rt);
        relay_cut_all(rr);
        for (int i = 0; i < CLIENTS; i++)
            failed |= w[i].failed;
        if (s % 2 == 0) {
            int m = s / 2;
            long inl = server_inline_kib(srv);
            server_usage(srv, &rss[m], &fds[m], &thr[m]);
            fprintf(stderr,
                    "soak: minute %d: server RSS %ld KiB (%ld of them RPC-over-RDMA receive "
                    "buffers), %ld descriptors, %ld threads; %lu files verified\n",
                    m, rss[m], inl, fds[m], thr[m], (unsigned long)atomic_load(&verified));
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        if (w[i].failed)
            uiw_test_fail(__FILE__, __LINE__, "client %d: %s", i, w[i].why);
    }
    /* flat after the first minute: no more descriptors or threads, the RSS within bounds */
    for (int m = 2; m <= minutes; m++) {
        if (rss[m] > rss[1] + rss[1] / 4 + 16 * 1024 || fds[m] > fds[1] + 32 || thr[m] > thr[1] + 2)
            uiw_test_fail(__FILE__, __LINE__,
                          "minute %d: RSS %ld KiB, %ld descriptors, %ld threads against %ld, "
                          "%ld, %ld in the first",
                          m, rss[m], fds[m], thr[m], rss[1], fds[1], thr[1]);
    }
    /* and not rising once the caches are full: the slope of the RSS over the later samples */
    long from = minutes * 60 / 2 > 180 ? minutes * 60 / 2 : 180;
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < nsamples; i++) {
        if (sample[i][0] < from)
            continue;
        double x = (double)sample[i][0] / 60, y = (double)sample[i][1];
        n++;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    if (minutes >= 5 && n >= 3) {
        double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        fprintf(stderr,
                "soak: RSS net of the receive buffers from minute %.1f: %+.0f KiB a minute "
                "(%d samples)\n",
                (double)from / 60, slope, (int)n);
        if (slope > SLOPE_KIB)
            uiw_test_fail(__FILE__, __LINE__,
                          "the server's RSS net of its receive buffers rises by %.0f KiB a "
                          "minute from minute %.1f on (at most %d)",
                          slope, (double)from / 60, SLOPE_KIB);
    }
    free(sample);
    CHECK(atomic_load(&verified) > (unsigned long)CLIENTS);
    relay_stop(rt);
    relay_stop(rr);
    CHECK_EQ(kill(srv, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(srv, &st, 0), srv);
    pthread_join(reader, NULL); /* at the end of the server's output */
    fclose(out);
    rm_tree(dir);
}
