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
    unsigned parallel;                   /* get, put: files in flight at once */
    int recursive;                       /* get, put -r: directories and what they hold */
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
/* target_open up to the URL's directory: its handle in t->dir and the last name in
 * t->name, which is not looked up (t->exists 0). */
int target_open_dir(const char *url, const struct opts *o, struct target *t);
/* The URL names something else in the directory of an open target (the same server,
 * transport, identity and directory): 0 with t->url and t->name its own, or -1 (it
 * needs a target of its own). */
int target_next(struct target *t, const char *url);
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

/* Progress on standard error for transfers longer than a second (on a terminal): bytes,
 * and for several files at once (files set) how many have ended. */
struct progress {
    int on, drawn, shown; /* drawn: on the line now; shown: at some time */
    const char *what;
    uint64_t total, done;
    size_t files, files_done;
    double start, last;
};
double now_s(void);
/* CPU seconds this process has used so far: user and system, every thread. */
double self_cpu_s(void);
void progress_start(struct progress *p, const struct opts *o, const char *what, uint64_t total);
void progress_update(struct progress *p, uint64_t done);
/* The bar drawn a last time and its line ended (once: the bar is off afterwards). */
void progress_end(struct progress *p);
/* The bar's line wiped, for lines printed under it (it is drawn again on an update). */
void progress_clear(struct progress *p);

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
/* A transfer's figures as one JSON line on f: {"op":OP,"file":FILE,...}, or for several
 * (file NULL) {"op":OP,"files":N,...}: the transport, bytes, seconds, MB/s, the calls'
 * latencies (st's sorted), the NFS version when given ("3", "4.1", "4.2": what a reader
 * of several versions' figures tells them apart by), the SHA-256 when given, when
 * elapsed > 0 that and the files per second over it, and last the CPU time the process
 * has used so far (self_cpu_s: in the last line, what the whole run cost). */
void xstats_json(FILE *f, const char *op, const char *file, unsigned files, const char *transport,
                 const char *version, struct xstats *st, const char *sha, double elapsed);

/* Figures of several transfers: each one's added to the total (its seconds too: with
 * several in flight the sum of times that overlap), printed at the end when there was
 * more than one. elapsed: the time the files took from the first one's start to the
 * last one's end, every step of theirs counted (looking up, creating, --verify). */
struct totals {
    struct xstats all;
    char transport[16];
    char version[8]; /* the first file's NFS version; "" when no file was remote */
    double elapsed;
};
void totals_add(struct totals *tt, struct xstats *st, struct uiw__nfs_client *c);
/* The total as JSON (--json, more than one file), then freed. */
void totals_end(const struct opts *o, struct totals *tt, const char *op);

/* One end of a copy: a local file (c NULL) or a remote one. */
struct end {
    struct uiw__nfs_client *c;     /* remote: its client */
    struct uiw__nfs_fh fh;         /* remote: the file, once known */
    const struct uiw__nfs_fh *dir; /* remote, known by name: its directory, and */
    char *name;                    /* the name there (NULL: fh is known) */
    char *path;                    /* local: its path (NULL: standard input or output) */
    char *label;                   /* how messages name it: a path or a URL */
    uint64_t size;                 /* a source's size once known (0: unknown) */
    int stream;                    /* a local source that is not a file (a pipe): no size */
    int fd;
};

enum { JOB_WAITING, JOB_RUNNING, JOB_ENDED };

/* A file to copy, and what became of it. */
struct job {
    struct end src, dst;
    uint32_t bs;  /* the largest READ or WRITE */
    size_t after; /* 1 + the index of an earlier job with the same destination (0: none):
                   * this one starts once that one has ended */
    int state, failed;
    char *err, *out; /* what it printed, held for its turn */
    size_t errlen, outlen;
};
/* Run the jobs, o->parallel at a time (op names them in --json: get, put, cp); returns
 * how many failed. tt (or NULL) gets each one's figures. */
int copy_run(const struct opts *o, const char *op, struct job *jobs, size_t n, struct totals *tt);
/* A job's strings freed. */
void job_free(struct job *j);

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
