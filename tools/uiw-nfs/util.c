/* uiw-nfs: opening URLs, block sizes, the progress bar, SHA-256. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "../rpcstats.h"
#include "nfs.h"

int is_url(const char *s)
{
    return strncmp(s, "nfs://", 6) == 0;
}

/* The client of the last target closed, kept for the next URL in its directory. */
static struct uiw__nfs_client *kept;

/* The RPC-over-RDMA counters of the clients closed so far (--stats). */
static struct uiw_rpc_xprt_stats rdma_sum;
static unsigned rdma_clients;

void targets_release(void)
{
    struct uiw_rpc_xprt_stats st;
    if (kept && uiw__nfs_client_xprt_stats(kept, &st) == 0) {
        rpcstats_add(&rdma_sum, &st);
        rdma_clients++;
    }
    uiw__nfs_client_close(kept);
    kept = NULL;
}

/* Set when the command writes file data on standard output (cat, get to "-"): the
 * counters then go to standard error, never into the data. */
static bool data_on_stdout;

void targets_data_on_stdout(void)
{
    data_on_stdout = true;
}

void targets_print_stats(const struct opts *o)
{
    FILE *f = data_on_stdout ? stderr : stdout;
    if (o->json) {
        fprintf(f, "{\"stats\":");
        if (rdma_clients)
            rpcstats_json(f, &rdma_sum);
        else
            fprintf(f, "null");
        fprintf(f, "}\n");
    } else if (rdma_clients) {
        rpcstats_text(f, "client", &rdma_sum);
    } else {
        fprintf(f, "uiw-nfs: no RPC-over-RDMA counters: no connection used RPC-over-RDMA\n");
    }
    fflush(f);
}

void say_nfs(const struct target *t, const char *what, int rc)
{
    fprintf(stderr, "uiw-nfs: %s: %s\n", what, uiw__nfs_errtext(t->c, rc));
}

/* The client's path below the export split into its directory (into parent) and last
 * name (into name): 0, or -NFS3ERR_NAMETOOLONG (a name cut to fit would be another
 * file's). */
static int split_subpath(const struct uiw__nfs_client *c, char parent[1024], char name[256])
{
    snprintf(parent, 1024, "%s", uiw__nfs_client_subpath(c));
    size_t n = strlen(parent);
    while (n > 0 && parent[n - 1] == '/')
        parent[--n] = 0;
    char *slash = strrchr(parent, '/');
    const char *last = parent;
    if (slash) {
        *slash = 0;
        last = slash + 1;
    }
    size_t len = strlen(last);
    if (len >= 256)
        return -NFS3ERR_NAMETOOLONG;
    memmove(name, last, len + 1);
    if (!slash)
        parent[0] = 0;
    return 0;
}

int target_open_dir(const char *url, const struct opts *o, struct target *t)
{
    char err[512];
    memset(t, 0, sizeof(*t));
    if (uiw__nfs_url_parse(url, &t->url, err, sizeof(err)) != 0) {
        fprintf(stderr, "uiw-nfs: %s\n", err);
        return 1;
    }
    t->url.inline_size = o->inline_size;
    t->url.ddp_threshold = o->ddp_threshold;
    if (kept && uiw__nfs_client_reuse(kept, &t->url) == 0) {
        t->c = kept;
        kept = NULL;
    } else {
        t->c = uiw__nfs_client_open(&t->url, o->verbose, err, sizeof(err));
    }
    if (!t->c) {
        fprintf(stderr, "uiw-nfs: %s\n", err);
        return 1;
    }
    /* The parent directory, then the last name in it. */
    char parent[1024];
    int rc = split_subpath(t->c, parent, t->name);
    if (rc == 0)
        rc = uiw__nfs_lookup_path(t->c, parent, &t->dir, NULL);
    if (rc != 0) {
        say_nfs(t, url, rc);
        target_close(t);
        return 1;
    }
    return 0;
}

int target_open(const char *url, const struct opts *o, struct target *t)
{
    if (target_open_dir(url, o, t) != 0)
        return 1;
    int rc;
    if (!t->name[0]) {
        t->fh = t->dir;
        rc = uiw__nfs_getattr(t->c, &t->fh, &t->attr);
    } else {
        rc = uiw__nfs_lookup(t->c, &t->dir, t->name, &t->fh, &t->attr);
    }
    if (rc == 0)
        t->exists = 1;
    else if (rc != -NFS3ERR_NOENT) {
        say_nfs(t, url, rc);
        target_close(t);
        return 1;
    }
    return 0;
}

int target_next(struct target *t, const char *url)
{
    struct uiw__nfs_url u;
    char err[512], parent[1024], name[256];
    if (uiw__nfs_url_parse(url, &u, err, sizeof(err)) != 0)
        return -1;
    u.inline_size = t->url.inline_size; /* the options', as the target's */
    u.ddp_threshold = t->url.ddp_threshold;
    if (uiw__nfs_client_reuse(t->c, &u) != 0 || split_subpath(t->c, parent, name) != 0)
        return -1;
    t->url = u;
    memcpy(t->name, name, sizeof(name));
    return 0;
}

int target_open_existing(const char *url, const struct opts *o, struct target *t)
{
    if (target_open(url, o, t) != 0)
        return 1;
    if (!t->exists) {
        say_nfs(t, url, -NFS3ERR_NOENT);
        target_close(t);
        return 1;
    }
    return 0;
}

void target_close(struct target *t)
{
    if (!t->c)
        return;
    targets_release();
    kept = t->c;
    t->c = NULL;
}

void xstats_lat(struct xstats *s, double secs)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        double *v = realloc(s->lat, cap * sizeof(*v));
        if (!v)
            return; /* the latencies are a sample: one lost is no error */
        s->lat = v;
        s->cap = cap;
    }
    s->lat[s->n++] = secs;
}

void xstats_add(struct xstats *into, const struct xstats *from)
{
    into->files += from->files;
    into->bytes += from->bytes;
    into->secs += from->secs;
    for (size_t i = 0; i < from->n; i++)
        xstats_lat(into, from->lat[i]);
}

void xstats_free(struct xstats *s)
{
    free(s->lat);
    memset(s, 0, sizeof(*s));
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void lat_sort(double *v, size_t n)
{
    if (n)
        qsort(v, n, sizeof(*v), cmp_d);
}

double lat_pct(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void xstats_json(FILE *f, const char *op, const char *file, unsigned files, const char *transport,
                 const char *version, struct xstats *st, const char *sha, double elapsed)
{
    lat_sort(st->lat, st->n);
    fprintf(f, "{\"op\":\"%s\",", op);
    if (file) {
        fprintf(f, "\"file\":");
        json_str(f, file);
    } else {
        fprintf(f, "\"files\":%u", files);
    }
    fprintf(f,
            ",\"transport\":\"%s\",\"bytes\":%llu,\"secs\":%.6f,\"mbytes_per_sec\":%.2f,"
            "\"calls\":%zu,\"p50_us\":%.1f,\"p99_us\":%.1f",
            transport, (unsigned long long)st->bytes, st->secs,
            st->secs > 0 ? (double)st->bytes / st->secs / 1e6 : 0.0, st->n,
            lat_pct(st->lat, st->n, 0.50) * 1e6, lat_pct(st->lat, st->n, 0.99) * 1e6);
    if (version)
        fprintf(f, ",\"version\":\"%s\"", version);
    if (sha)
        fprintf(f, ",\"sha256\":\"%s\"", sha);
    if (elapsed > 0)
        fprintf(f, ",\"elapsed_s\":%.6f,\"files_per_sec\":%.1f", elapsed, (double)files / elapsed);
    fprintf(f, ",\"process_cpu_s\":%.6f}\n", self_cpu_s());
    fflush(f);
}

void totals_add(struct totals *tt, struct xstats *st, struct uiw__nfs_client *c)
{
    if (!tt)
        return;
    if (!tt->all.files && c) {
        snprintf(tt->transport, sizeof(tt->transport), "%s", uiw__nfs_client_transport(c));
        snprintf(tt->version, sizeof(tt->version), "%s", uiw__nfs_client_version(c));
    }
    xstats_add(&tt->all, st);
}

void totals_end(const struct opts *o, struct totals *tt, const char *op)
{
    if (o->json && tt->all.files > 1)
        xstats_json(stdout, op, NULL, tt->all.files, tt->transport,
                    tt->version[0] ? tt->version : NULL, &tt->all, NULL, tt->elapsed);
    xstats_free(&tt->all);
}

void job_free(struct job *j)
{
    free(j->src.name);
    free(j->src.path);
    free(j->src.label);
    free(j->dst.name);
    free(j->dst.path);
    free(j->dst.label);
    free(j->err);
    free(j->out);
}

uint32_t block_size(const struct opts *o, struct uiw__nfs_client *c, int reading)
{
    uint32_t max = reading ? uiw__nfs_client_rtmax(c) : uiw__nfs_client_wtmax(c);
    uint32_t b = o->block ? o->block : 1u << 20;
    return b < max ? b : max;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double self_cpu_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_start(struct progress *p, const struct opts *o, const char *what, uint64_t total)
{
    memset(p, 0, sizeof(*p));
    p->on = o->progress > 0 || (o->progress < 0 && isatty(STDERR_FILENO));
    p->what = what;
    p->total = total;
    p->start = now_s();
}

static void draw(struct progress *p, double t)
{
    char files[40];
    const char *what = p->what;
    if (p->files) {
        snprintf(files, sizeof(files), "%zu/%zu %s", p->files_done, p->files, p->what);
        what = files;
    }
    double dt = t - p->start;
    double rate = dt > 0 ? (double)p->done / dt : 0;
    char pct[16] = "";
    if (p->total)
        snprintf(pct, sizeof(pct), "%3d%% ", (int)(100.0 * (double)p->done / (double)p->total));
    int width = 24, fill = p->total ? (int)(width * (double)p->done / (double)p->total) : 0;
    if (fill > width)
        fill = width;
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r%-28.28s [%s] %s%8.1f MB/s %6.1f s", what, bar, pct, rate / 1e6, dt);
    p->drawn = p->shown = 1;
}

void progress_update(struct progress *p, uint64_t done)
{
    p->done = done;
    if (!p->on)
        return;
    double t = now_s();
    if (t - p->start < 1.0 || t - p->last < 0.1)
        return;
    p->last = t;
    draw(p, t);
}

void progress_end(struct progress *p)
{
    if (p->on && p->shown) {
        draw(p, now_s());
        fputc('\n', stderr);
    }
    p->on = p->drawn = p->shown = 0;
}

void progress_clear(struct progress *p)
{
    if (p->on && p->drawn) {
        fprintf(stderr, "\r%79s\r", "");
        p->drawn = 0;
        p->last = 0;
    }
}

struct sha {
    EVP_MD_CTX *ctx;
};

struct sha *sha_new(void)
{
    struct sha *s = malloc(sizeof(*s));
    if (!s)
        abort();
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1)
        abort();
    return s;
}

void sha_update(struct sha *s, const void *p, size_t n)
{
    EVP_DigestUpdate(s->ctx, p, n);
}

void sha_hex(struct sha *s, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_DigestFinal_ex(s->ctx, md, &n);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(s->ctx);
    free(s);
}
