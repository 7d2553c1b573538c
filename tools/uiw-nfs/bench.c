/*
 * uiw-nfs bench URL: a sequential WRITE of a file (-s SIZE in -b BLOCK calls, UNSTABLE,
 * then COMMIT), a sequential READ of it, GETATTR calls for -D seconds, and CREATEs of new
 * files beside it for -D seconds (removed afterwards); bandwidth,
 * calls per second and per-call latency (p50, p99). URL names the file to use, or a
 * directory to make it in (removed afterwards). As a table, or with --json one object per
 * line: {"test":"write","size":N,"block":N,"transport":"tcp","inflight":1,
 * "mbytes_per_sec":X,"calls_per_sec":X,"p50_us":X,"p99_us":X,"cpu_s":X}, where cpu_s is
 * the CPU time (user and system) uiw-nfs used during the test; with --cpu-of PID also
 * "server_cpu_s", that process's (from /proc, in clock ticks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs.h"
#include "nfs/xdr_data.h"

struct result {
    const char *test;
    uint64_t bytes;
    uint32_t block;
    double secs;
    size_t calls;
    double *lat;     /* seconds per call, sorted on report */
    double cpu, srv; /* CPU seconds of uiw-nfs and of --cpu-of's process (-1: unknown):
                      * readings at the start, then what the test used */
};

/* CPU seconds (user and system, every thread) process pid has used; -1 if unknown. */
static double proc_cpu(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces */
    unsigned long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* A test starts, and its timed part ends: the CPU clocks' readings, then their use. */
static void cpu_start(const struct opts *o, struct result *r)
{
    r->cpu = self_cpu_s();
    r->srv = o->cpu_of ? proc_cpu(o->cpu_of) : -1;
}

static void cpu_stop(const struct opts *o, struct result *r)
{
    r->cpu = self_cpu_s() - r->cpu;
    double now = r->srv >= 0 ? proc_cpu(o->cpu_of) : -1;
    r->srv = now >= 0 ? now - r->srv : -1;
}

static void report(const struct opts *o, struct target *t, struct result *r)
{
    lat_sort(r->lat, r->calls);
    double mbs = r->secs > 0 ? (double)r->bytes / r->secs / 1e6 : 0;
    double cps = r->secs > 0 ? (double)r->calls / r->secs : 0;
    double p50 = lat_pct(r->lat, r->calls, 0.50) * 1e6, p99 = lat_pct(r->lat, r->calls, 0.99) * 1e6;
    const char *tr = uiw__nfs_client_transport(t->c);
    double cpu = r->cpu, srv = r->srv;
    if (o->json) {
        printf("{\"test\":\"%s\",\"size\":%llu,\"block\":%u,\"transport\":\"%s\","
               "\"inflight\":%u,\"mbytes_per_sec\":%.1f,\"calls_per_sec\":%.0f,"
               "\"p50_us\":%.1f,\"p99_us\":%.1f,\"cpu_s\":%.3f",
               r->test, (unsigned long long)r->bytes, r->block, tr, o->inflight, mbs, cps, p50, p99,
               cpu);
        if (srv >= 0)
            printf(",\"server_cpu_s\":%.3f", srv);
        printf("}\n");
    } else {
        printf("%-8s %-8s %10llu %8u %8u %10.1f %10.0f %9.1f %9.1f %7.2f", r->test, tr,
               (unsigned long long)r->bytes, r->block, o->inflight, mbs, cps, p50, p99, cpu);
        if (srv >= 0)
            printf(" %7.2f", srv);
        printf("\n");
    }
    fflush(stdout);
}

/* ---- many calls in flight (RPC-over-RDMA's asynchronous calls; over NFSv4 each on a
 * slot of the session) ---- */

enum kind { K_WRITE, K_READ, K_GETATTR };

struct engine;
struct slot {
    struct uiw__nfs_op op;
    struct engine *e;
    double t0;
    char *buf;
    fattr3 attr;
    char verf[8];
    int eof;
};

struct engine {
    struct target *t;
    enum kind kind;
    uint64_t size, next;
    uint32_t block;
    double deadline;
    unsigned running;
    int failed;
    struct result *r;
    size_t cap;
};

static void slot_done(struct uiw__nfs_op *op, int rc);

static void slot_start(struct slot *s)
{
    struct engine *e = s->e;
    if (e->failed)
        return;
    if (e->kind == K_GETATTR) {
        if (now_s() >= e->deadline)
            return;
    } else if (e->next >= e->size) {
        return;
    }
    if (e->r->calls + e->running >= e->cap)
        return;
    struct uiw__nfs_client *c = e->t->c;
    s->op.done = slot_done;
    s->op.arg = s;
    s->t0 = now_s();
    e->running++;
    int rc;
    if (e->kind == K_GETATTR) {
        rc = uiw__nfs_getattr_start(c, &e->t->fh, &s->attr, &s->op);
    } else {
        uint32_t n = e->size - e->next < e->block ? (uint32_t)(e->size - e->next) : e->block;
        uint64_t off = e->next;
        e->next += n;
        if (e->kind == K_READ)
            rc = uiw__nfs_read_start(c, &e->t->fh, off, n, s->buf, &s->eof, &s->op);
        else
            rc = uiw__nfs_write_start(c, &e->t->fh, off, n, s->buf, UNSTABLE, s->verf, &s->op);
    }
    if (rc != 0) {
        fprintf(stderr, "uiw-nfs: bench: call: %s\n", strerror(-rc));
        e->running--;
        e->failed = 1;
    }
}

static void slot_done(struct uiw__nfs_op *op, int rc)
{
    struct slot *s = op->arg;
    struct engine *e = s->e;
    e->running--;
    if (rc < 0) {
        if (!e->failed)
            fprintf(stderr, "uiw-nfs: bench: %s\n", uiw__nfs_errtext(e->t->c, rc));
        e->failed = 1;
        return;
    }
    e->r->lat[e->r->calls++] = now_s() - s->t0;
    if (e->kind != K_GETATTR)
        e->r->bytes += (uint64_t)rc;
    slot_start(s);
}

/* Run one test with o->inflight calls in flight; 0 or -1. */
static int run_inflight(const struct opts *o, struct target *t, enum kind kind, uint32_t block,
                        struct result *r, size_t cap)
{
    struct engine e = {t, kind, o->size, 0, block, now_s() + o->seconds, 0, 0, r, cap};
    struct slot *slots = calloc(o->inflight, sizeof(*slots));
    if (!slots)
        return -1;
    int rc = 0;
    for (unsigned i = 0; i < o->inflight && !rc; i++) {
        slots[i].e = &e;
        if (kind != K_GETATTR) {
            slots[i].buf = malloc(block);
            if (!slots[i].buf)
                rc = -1;
            else
                memset(slots[i].buf, (int)i + 1, block);
        }
    }
    double t0 = now_s();
    for (unsigned i = 0; i < o->inflight && !rc; i++)
        slot_start(&slots[i]);
    while (e.running > 0)
        if (uiw__nfs_poll(t->c, 1000) < 0)
            break;
    r->secs = now_s() - t0;
    if (e.failed || e.running)
        rc = -1;
    for (unsigned i = 0; i < o->inflight; i++)
        free(slots[i].buf);
    free(slots);
    return rc;
}

int cmd_bench(const struct opts *o, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "usage: uiw-nfs bench [-s SIZE] [-b BLOCK] [--inflight N] [-D SECS] "
                        "[--json] URL\n");
        return 2;
    }
    struct target t;
    if (target_open(argv[0], o, &t) != 0)
        return 1;
    int rc = 1, made = 0;
    char name[64];
    if (t.exists && t.attr.type == NF3DIR) {
        snprintf(name, sizeof(name), "uiw-nfs-bench.%d", (int)getpid());
        t.dir = t.fh;
        snprintf(t.name, sizeof(t.name), "%s", name);
        t.exists = 0;
    }
    if (!t.name[0]) {
        fprintf(stderr, "uiw-nfs: bench: give a file or directory\n");
        goto out;
    }
    int r = uiw__nfs_create(t.c, &t.dir, t.name, 0644, 0, &t.fh);
    if (r != 0) {
        fprintf(stderr, "uiw-nfs: bench: create %s: %s\n", t.name, uiw__nfs_errtext(t.c, r));
        goto out;
    }
    made = 1;
    uint32_t bw = block_size(o, t.c, 0), br = block_size(o, t.c, 1);
    size_t ncalls = (size_t)(o->size / (bw < br ? bw : br)) + 2;
    double *lat = malloc(ncalls * sizeof(double));
    char *buf = malloc(bw > br ? bw : br);
    if (!lat || !buf) {
        free(lat);
        free(buf);
        goto out;
    }
    for (uint32_t i = 0; i < (bw > br ? bw : br); i++)
        buf[i] = (char)(i * 7 + 1);
    if (!o->json)
        printf("%-8s %-8s %10s %8s %8s %10s %10s %9s %9s %7s%s\n", "test", "transport", "bytes",
               "block", "inflight", "MB/s", "calls/s", "p50_us", "p99_us", "cpu_s",
               o->cpu_of ? "  srv_cpu_s" : "");

    /* WRITE */
    struct result w = {"write", 0, bw, 0, 0, lat, 0, 0};
    char verf[8];
    cpu_start(o, &w);
    double t0 = now_s();
    if (o->inflight > 1 && run_inflight(o, &t, K_WRITE, bw, &w, ncalls) != 0)
        goto free;
    for (uint64_t off = o->inflight > 1 ? o->size : 0; off < o->size;) {
        uint32_t n = o->size - off < bw ? (uint32_t)(o->size - off) : bw;
        double c0 = now_s();
        r = uiw__nfs_write(t.c, &t.fh, off, n, buf, UNSTABLE, verf);
        if (r <= 0) {
            fprintf(stderr, "uiw-nfs: bench: write: %s\n", uiw__nfs_errtext(t.c, r ? r : -5));
            goto free;
        }
        lat[w.calls++] = now_s() - c0;
        off += (uint64_t)r;
        w.bytes = off;
    }
    r = uiw__nfs_commit(t.c, &t.fh, verf);
    if (r != 0) {
        fprintf(stderr, "uiw-nfs: bench: commit: %s\n", uiw__nfs_errtext(t.c, r));
        goto free;
    }
    w.secs = now_s() - t0;
    cpu_stop(o, &w);
    report(o, &t, &w);

    /* READ */
    struct result rd = {"read", 0, br, 0, 0, lat, 0, 0};
    cpu_start(o, &rd);
    t0 = now_s();
    if (o->inflight > 1 && run_inflight(o, &t, K_READ, br, &rd, ncalls) != 0)
        goto free;
    for (uint64_t off = o->inflight > 1 ? o->size : 0; off < o->size;) {
        int eof = 0;
        double c0 = now_s();
        r = uiw__nfs_read(t.c, &t.fh, off, br, buf, &eof);
        if (r < 0) {
            fprintf(stderr, "uiw-nfs: bench: read: %s\n", uiw__nfs_errtext(t.c, r));
            goto free;
        }
        lat[rd.calls++] = now_s() - c0;
        off += (uint64_t)r;
        rd.bytes = off;
        if (r == 0 || rd.calls >= ncalls)
            break;
    }
    if (o->inflight <= 1)
        rd.secs = now_s() - t0;
    if (rd.bytes != o->size) {
        fprintf(stderr, "uiw-nfs: bench: read %llu of %llu bytes\n", (unsigned long long)rd.bytes,
                (unsigned long long)o->size);
        goto free;
    }
    cpu_stop(o, &rd);
    report(o, &t, &rd);

    /* GETATTR */
    size_t cap = o->inflight > 1 ? 1u << 22 : 1u << 16;
    double *glat = malloc(cap * sizeof(double));
    if (!glat)
        goto free;
    struct result g = {"getattr", 0, 0, 0, 0, glat, 0, 0};
    cpu_start(o, &g);
    t0 = now_s();
    fattr3 a;
    if (o->inflight > 1) {
        if (run_inflight(o, &t, K_GETATTR, 0, &g, cap) != 0) {
            free(glat);
            goto free;
        }
        t0 = now_s() - o->seconds - 1; /* done */
    }
    while (now_s() - t0 < o->seconds) {
        double c0 = now_s();
        r = uiw__nfs_getattr(t.c, &t.fh, &a);
        if (r != 0) {
            fprintf(stderr, "uiw-nfs: bench: getattr: %s\n", uiw__nfs_errtext(t.c, r));
            free(glat);
            goto free;
        }
        if (g.calls == cap) {
            double *nv = realloc(glat, 2 * cap * sizeof(double));
            if (!nv)
                break;
            glat = g.lat = nv;
            cap *= 2;
        }
        glat[g.calls++] = now_s() - c0;
    }
    if (o->inflight <= 1)
        g.secs = now_s() - t0;
    cpu_stop(o, &g);
    report(o, &t, &g);

    /* CREATE: new empty files in the directory for -D seconds (removed afterwards, not
     * timed): what a `sync` export's durable metadata costs shows here */
    struct result cr = {"create", 0, 0, 0, 0, glat, 0, 0};
    cpu_start(o, &cr);
    t0 = now_s();
    int crc = 0;
    while (now_s() - t0 < o->seconds && cr.calls < cap) {
        char n[300];
        snprintf(n, sizeof(n), "%s.create-%zu", t.name[0] ? t.name : "bench", cr.calls);
        struct uiw__nfs_fh nf;
        double c0 = now_s();
        crc = uiw__nfs_create(t.c, &t.dir, n, 0644, 1, &nf);
        if (crc != 0) {
            fprintf(stderr, "uiw-nfs: bench: create %s: %s\n", n, uiw__nfs_errtext(t.c, crc));
            break;
        }
        glat[cr.calls++] = now_s() - c0;
    }
    cr.secs = now_s() - t0;
    cpu_stop(o, &cr);
    for (size_t i = 0; i < cr.calls; i++) {
        char n[300];
        snprintf(n, sizeof(n), "%s.create-%zu", t.name[0] ? t.name : "bench", i);
        uiw__nfs_remove(t.c, &t.dir, n);
    }
    if (crc != 0) {
        free(glat);
        goto free;
    }
    report(o, &t, &cr);
    free(glat);
    rc = 0;
free:
    free(lat);
    free(buf);
out:
    if (made) {
        r = uiw__nfs_remove(t.c, &t.dir, t.name);
        if (r != 0)
            fprintf(stderr, "uiw-nfs: bench: remove %s: %s\n", t.name, uiw__nfs_errtext(t.c, r));
    }
    target_close(&t);
    return rc;
}
