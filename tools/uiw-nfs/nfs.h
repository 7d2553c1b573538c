/* uiw-nfs: shared pieces of the commands. */
#ifndef UIW_TOOLS_NFS_H
#define UIW_TOOLS_NFS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nfs/client.h"

struct opts {
    int verbose;
    int verify;
    int progress; /* -1 auto (a terminal), 0 off, 1 on */
    int json;
    int stats;      /* --stats */
    uint64_t size;  /* bench -s */
    uint32_t block; /* bench -b; transfers' block (0: the server's maximum, at most 1 MiB) */
    unsigned inflight;
    double seconds;                      /* bench: GETATTR duration */
    uint32_t inline_size, ddp_threshold; /* RPC-over-RDMA settings (0: the defaults) */
    int cpu_of; /* bench --cpu-of: a process whose CPU time each test reports (0: none) */
};

/* An open URL: its client, the handle and attributes of what it names (exists == 0 when
 * it names nothing yet), and its parent directory's handle and the last name. */
struct target {
    struct uiw__nfs_url url;
    struct uiw__nfs_client *c;
    struct uiw__nfs_fh fh, dir;
    fattr3 attr;
    int exists;
    char name[256]; /* "" when the URL is the mounted directory itself */
};

/* Parse and open a URL; 0, or 1 after printing why. A client that target_close kept
 * serves the next URL of the same server and directory (no new MOUNT and connection). */
int target_open(const char *url, const struct opts *o, struct target *t);
void target_close(struct target *t);
/* Close the client target_close kept (UMNT), adding its counters to those --stats prints. */
void targets_release(void);
/* --stats: the RPC-over-RDMA counters of every client closed (text, or a JSON line). */
void targets_print_stats(const struct opts *o);
/* The command writes file data on standard output: --stats goes to standard error. */
void targets_data_on_stdout(void);
/* Open a URL and say what is wrong when it names nothing (must: 1): 0, or 1 after
 * printing why (the target closed). */
int target_open_existing(const char *url, const struct opts *o, struct target *t);
/* Print "uiw-nfs: WHAT: the error of rc" on stderr. */
void say_nfs(const struct target *t, const char *what, int rc);

int is_url(const char *s);
uint32_t block_size(const struct opts *o, struct uiw__nfs_client *c, int reading);

/* Progress on standard error for transfers longer than a second (on a terminal). */
struct progress {
    int on, drawn;
    const char *what;
    uint64_t total, done;
    double start, last;
};
double now_s(void);
void progress_start(struct progress *p, const struct opts *o, const char *what, uint64_t total);
void progress_update(struct progress *p, uint64_t done);
void progress_end(struct progress *p);

/* What transfers measured: bytes moved, seconds they took (checksums left out), and each
 * READ or WRITE call's latency in seconds. */
struct xstats {
    unsigned files;
    uint64_t bytes;
    double secs;
    double *lat;
    size_t n, cap;
};
void xstats_lat(struct xstats *s, double secs);
void xstats_add(struct xstats *into, const struct xstats *from);
void xstats_free(struct xstats *s);
/* Latencies sorted, then the p-th fraction (0.5, 0.99) of n sorted values. */
void lat_sort(double *v, size_t n);
double lat_pct(const double *v, size_t n, double p);
/* A JSON string (quoted, escaped) on f. */
void json_str(FILE *f, const char *s);

/* SHA-256 as hex (65 bytes with the NUL). */
struct sha;
struct sha *sha_new(void);
void sha_update(struct sha *s, const void *p, size_t n);
void sha_hex(struct sha *s, char out[65]); /* frees s */

/* Commands: each returns the exit status. */
int cmd_get(const struct opts *o, int argc, char **argv);
int cmd_put(const struct opts *o, int argc, char **argv);
int cmd_cp(const struct opts *o, int argc, char **argv);
int cmd_cat(const struct opts *o, int argc, char **argv);
int cmd_bench(const struct opts *o, int argc, char **argv);

#endif
