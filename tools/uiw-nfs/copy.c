/*
 * Copies in flight: each job moves one file between a local end and a remote one (or two
 * remote ones), block by block, and up to --parallel jobs run at once on the client they
 * share. A job is a sequence of steps; a remote step is an operation in flight on the
 * client (client.h: LOOKUP, SETATTR or CREATE, READ, WRITE, COMMIT, GETATTR), a local one
 * (open, read, write, fsync, checksums) is done at once. When no job can go on, the engine
 * polls the client of the job that has waited longest, and the operations that ended
 * make their jobs ready again: the calls of different files go out together.
 *
 * Within a file, up to --inflight blocks are in flight at once (default 4), as a kernel
 * client's read-ahead and write-behind keep several READs or WRITEs of one file going: a
 * block is read from the source (a READ, or a local read at once), then written to the
 * destination (a WRITE, or a local write at once, in the order of the blocks), and a
 * block written makes room for the next. The server thus has the next call of a large
 * file in hand while it serves one, rather than waiting for the client between them.
 *
 * Each job does what a copy of one file always did: remote writes are UNSTABLE and end
 * with a COMMIT whose verifier must match every WRITE's (else the server restarted in
 * between and the copy is done again with FILE_SYNC writes); --verify reads the source
 * and the destination again afterwards, each in a pass of its own, and fails unless both
 * hold as many bytes as their sizes say and as were copied, with the same SHA-256.
 * A failure ends its job only, with its message; the others go on.
 *
 * What a job prints (its messages on standard error, its --json object on standard
 * output) comes out in the order of the jobs, whatever order they end in: with one job
 * at a time as it happens, with several held until the jobs before have printed theirs.
 * With several at a time there is one progress bar for them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs.h"

enum step {
    S_OPEN_SRC,
    S_SRC_LOOKED,
    S_OPEN_DST,
    S_DST_LOOKED,
    S_DST_MADE,
    S_COPY,
    S_BLOCKS,
    S_COPIED,
    S_COMMITTED,
    S_SYNCED,
    S_HASH,
    S_HASH_READ,
    S_HASH_READ_ENDED,
    S_HASH_SIZED,
    S_HASHED,
    S_REPORT,
    S_END,
};

struct engine;
struct slot;

/* The calls in flight of one file at most (--inflight). */
#define MAX_INFLIGHT 64

/* Where a block of the copy is. */
enum blk_state {
    B_FREE,
    B_READING, /* a READ in flight */
    B_READ,    /* its bytes in buf, not all written */
    B_WRITING, /* a WRITE in flight */
    B_WRITTEN,
};

/* A block of a file's copy: read from the source into buf, then written out. */
struct blk {
    struct slot *s;
    struct uiw__nfs_op op;
    char *buf;
    enum blk_state st;
    uint64_t off;       /* of the file */
    uint32_t want;      /* a remote source: the bytes asked for */
    uint32_t n, put;    /* bytes in buf; of them written */
    int ended, rc, eof; /* its operation ended, with rc (and eof) not yet taken */
    double c0;          /* when its call went out */
    char verf[8];
};

/* A job running. */
struct slot {
    struct engine *e;
    struct job *j;
    enum step step;
    int waiting; /* an operation in flight */
    int rc;      /* what the last one ended with */
    double since;
    struct uiw__nfs_client *wc; /* the client of the operation in flight */
    struct uiw__nfs_op op;
    struct slot *next_ready;
    fattr3 attr;
    char *buf;     /* the slot's, kept from one job to the next */
    size_t bufcap; /* its size */
    uint32_t cap;  /* what the job's calls take at once: each block's part of buf */
    int attempt;   /* 0: UNSTABLE writes; 1: again, FILE_SYNC */
    uint64_t off;  /* bytes copied (the blocks written, in order) */
    int eof;
    int queued; /* on the engine's ready list */
    /* the copy's blocks: a ring of depth, used of them from head on, in file order */
    struct blk blk[MAX_INFLIGHT];
    unsigned depth, head, used, inflight;
    uint64_t next;   /* where the next block starts */
    uint64_t end_at; /* a remote source's end as its READs said (UINT64_MAX: not yet) */
    int src_end;     /* no block after those in use */
    int broken;      /* a block failed (said): those in flight end, then the job */
    char verf[8], first[8];
    int have_verf, changed;
    struct xstats st;
    double t0, c0;
    struct progress pr; /* one job at a time: its own bar */
    /* --verify: each end hashed in turn (side 0 the source) */
    int side, hfd;
    struct sha *h;
    uint64_t hlen[2], hsize[2];
    char hex[2][65];
    /* what it prints: straight out, or held (several jobs at a time) */
    FILE *err, *out;
    char *errbuf, *outbuf;
    size_t errlen, outlen;
};

struct engine {
    const struct opts *o;
    const char *op;
    struct job *jobs;
    size_t n, next, flushed;
    unsigned parallel, active;
    struct slot *slots;
    struct slot *ready;
    int held; /* several jobs at a time: output held, one bar */
    struct progress bar;
    uint64_t moved; /* bytes copied by every job (the bar's) */
    size_t ended;
    struct totals *tt;
    int failed;
};

static void vsay(struct slot *s, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vsay(struct slot *s, const char *fmt, va_list ap)
{
    fputs("uiw-nfs: ", s->err);
    vfprintf(s->err, fmt, ap);
    fputc('\n', s->err);
}

static void say(struct slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct slot *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(s, fmt, ap);
    va_end(ap);
}

/* The job fails with that message (its other steps skipped). */
static void fail(struct slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct slot *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(s, fmt, ap);
    va_end(ap);
    s->j->failed = 1;
    s->step = S_END;
}

static void make_ready(struct slot *s)
{
    s->waiting = 0;
    if (s->queued)
        return;
    s->queued = 1;
    s->next_ready = s->e->ready;
    s->e->ready = s;
}

static void op_ended(struct uiw__nfs_op *op, int rc)
{
    struct slot *s = op->arg;
    s->rc = rc;
    make_ready(s);
}

static void blk_ended(struct uiw__nfs_op *op, int rc)
{
    struct blk *b = op->arg;
    b->rc = rc;
    b->ended = 1;
    b->s->inflight--;
    make_ready(b->s);
}

/* An operation started (rc 0: the job waits for it, then goes on at `next`), or it could
 * not start: the job fails. */
static void started(struct slot *s, struct uiw__nfs_client *c, int rc, enum step next,
                    const char *what, const char *label)
{
    if (rc != 0) {
        fail(s, "%s %s: %s", what, label, strerror(-rc));
        return;
    }
    s->waiting = 1;
    s->wc = c;
    s->since = now_s();
    s->step = next;
}

/* Local reads: pread, or read for a pipe, which fills the buffer (or reaches the end)
 * however little each read returns. The count, or -errno. */
static int local_read(int fd, uint64_t off, char *buf, uint32_t n)
{
    uint32_t got = 0;
    int stream = 0;
    while (got < n) {
        ssize_t k = stream ? read(fd, buf + got, n - got)
                           : pread(fd, buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == ESPIPE && !stream) {
            stream = 1; /* a pipe: sequential */
            continue;
        }
        if (k < 0)
            return -errno;
        got += (uint32_t)k;
        if (k == 0 || !stream)
            break; /* the end; or a file's short read, at its end */
    }
    return (int)got;
}

/* Local writes, at off (in order for a pipe): 0 or -errno. */
static int local_write(int fd, uint64_t off, const char *buf, uint32_t n)
{
    uint32_t done = 0;
    while (done < n) {
        ssize_t k = pwrite(fd, buf + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == ESPIPE)
            k = write(fd, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return -EIO; /* no progress */
        done += (uint32_t)k;
    }
    return 0;
}

/* The bytes the buffer takes at once: the block, or less for a file known to be smaller
 * (not a pipe, whose size nobody knows). */
static uint32_t buffer_size(const struct job *j, uint32_t bs)
{
    if (j->src.stream)
        return bs;
    uint64_t want = j->src.size > 4096 ? j->src.size : 4096;
    return want < bs ? (uint32_t)want : bs;
}

/* A remote end known by its name is looked up (the job goes on at next): 1, or 0 for
 * another end. */
static int look_up(struct slot *s, struct end *e, enum step next)
{
    if (!e->c || !e->name)
        return 0;
    started(s, e->c, uiw__nfs_lookup_start(e->c, e->dir, e->name, &e->fh, &s->attr, &s->op), next,
            "lookup", e->label);
    return 1;
}

static void open_src(struct slot *s)
{
    struct end *e = &s->j->src;
    if (look_up(s, e, S_SRC_LOOKED))
        return;
    if (!e->c) {
        e->fd = e->path ? open(e->path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
        if (e->fd < 0) {
            fail(s, "%s: %s", e->label, strerror(errno));
            return;
        }
        struct stat st;
        int bad = fstat(e->fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
        if (bad) {
            fail(s, "%s: %s", e->label, strerror(bad));
            return;
        }
        if (S_ISREG(st.st_mode))
            e->size = (uint64_t)st.st_size;
        else
            e->stream = 1;
    }
    s->step = S_OPEN_DST;
}

/* A remote source looked up: its size (the bar's, and the buffer's). */
static void src_known(struct slot *s)
{
    s->j->src.size = s->attr.size;
    s->step = S_OPEN_DST;
}

static void open_dst(struct slot *s)
{
    struct end *e = &s->j->dst;
    if (look_up(s, e, S_DST_LOOKED))
        return;
    if (!e->c) {
        e->fd =
            e->path ? open(e->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : STDOUT_FILENO;
        if (e->fd < 0) {
            fail(s, "%s: %s", e->label, strerror(errno));
            return;
        }
    }
    s->step = S_COPY;
}

/* A remote destination looked up: a file there is truncated, none is created. */
static void dst_looked(struct slot *s)
{
    struct end *e = &s->j->dst;
    if (s->rc == 0 && s->attr.type == NF3DIR) {
        fail(s, "%s is a directory", e->label);
    } else if (s->rc == 0) {
        started(s, e->c, uiw__nfs_truncate_start(e->c, &e->fh, 0, &s->op), S_DST_MADE, "truncate",
                e->label);
    } else if (s->rc == -NFS3ERR_NOENT) {
        started(s, e->c, uiw__nfs_create_start(e->c, e->dir, e->name, 0644, 0, &e->fh, &s->op),
                S_DST_MADE, "create", e->label);
    } else {
        fail(s, "%s: %s", e->label, uiw__nfs_errtext(e->c, s->rc));
    }
}

/* The copy (again, with FILE_SYNC writes, after a restart of the server) from the start. */
static void copy_start(struct slot *s)
{
    const struct job *j = s->j;
    s->cap = buffer_size(j, j->bs);
    /* as many blocks as the file has, up to --inflight */
    unsigned depth = s->e->o->inflight; /* main: 4 unless asked */
    if (depth > MAX_INFLIGHT)
        depth = MAX_INFLIGHT;
    if (j->src.size && (j->src.size + s->cap - 1) / s->cap < depth)
        depth = (unsigned)((j->src.size + s->cap - 1) / s->cap);
    s->depth = depth ? depth : 1;
    size_t need = (size_t)s->cap * s->depth;
    /* the clients' buffers for calls of that size, ready before the first */
    if (j->src.c)
        uiw__nfs_client_reserve(j->src.c, s->cap);
    if (j->dst.c)
        uiw__nfs_client_reserve(j->dst.c, s->cap);
    if (need > s->bufcap) {
        free(s->buf);
        s->bufcap = 0;
        s->buf = malloc(need);
        if (!s->buf) {
            fail(s, "out of memory");
            return;
        }
        /* its pages touched now, once: their faults are not in the latency of the first
         * READs or WRITEs (a buffer allocated a file made the first files' calls fault
         * in fresh memory) */
        memset(s->buf, 0xa5, need);
        s->bufcap = need;
    }
    for (unsigned i = 0; i < s->depth; i++) {
        struct blk *b = &s->blk[i];
        memset(b, 0, sizeof(*b));
        b->s = s;
        b->buf = s->buf + (size_t)i * s->cap;
        b->op.done = blk_ended;
        b->op.arg = b;
    }
    s->head = s->used = s->inflight = 0;
    s->next = 0;
    s->end_at = UINT64_MAX;
    s->src_end = s->broken = 0;
    s->off = 0;
    s->have_verf = s->changed = 0;
    xstats_free(&s->st);
    if (!s->e->held)
        progress_start(&s->pr, s->e->o, s->j->dst.label, s->j->src.size);
    s->t0 = now_s();
    s->step = S_BLOCKS;
}

/* A block failed: said once, the job's other blocks in flight end, then the job. */
static void broken(struct slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void broken(struct slot *s, const char *fmt, ...)
{
    if (s->broken)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(s, fmt, ap);
    va_end(ap);
    s->j->failed = 1;
    s->broken = 1;
}

static struct blk *blk_at(struct slot *s, unsigned k)
{
    return &s->blk[(s->head + k) % s->depth];
}

/* A READ of what block b still lacks. */
static void blk_read_more(struct slot *s, struct blk *b)
{
    struct end *e = &s->j->src;
    b->eof = 0;
    b->c0 = now_s();
    int rc = uiw__nfs_read_start(e->c, &e->fh, b->off + b->n, b->want - b->n, b->buf + b->n,
                                 &b->eof, &b->op);
    if (rc != 0) {
        broken(s, "read %s: %s", e->label, strerror(-rc));
        b->st = B_WRITTEN; /* nothing of it goes out */
        return;
    }
    b->st = B_READING;
    s->inflight++;
}

/* The next block of the source, into a free block: 0, or -1 when there is none now (the
 * source's end, it failed, or the blocks before must end first). */
static int blk_next(struct slot *s)
{
    struct end *e = &s->j->src;
    /* at or past the size a remote source had when looked up (its attributes always
     * say one, 0 too), one block at a time: the READs before it say where the file ends
     * (EOF), and none goes out past that for nothing (a file that grew meanwhile is still
     * read to its new end) */
    if (e->c && s->next >= e->size && s->used)
        return -1;
    struct blk *b = blk_at(s, s->used);
    b->off = s->next;
    b->n = b->put = 0;
    b->ended = 0;
    if (e->c) {
        b->want = s->cap;
        s->next += s->cap;
        s->used++;
        blk_read_more(s, b);
        return s->broken ? -1 : 0;
    }
    int k = local_read(e->fd, b->off, b->buf, s->cap);
    if (k <= 0) {
        if (k < 0)
            broken(s, "read %s: %s", e->label, strerror(-k));
        s->src_end = 1;
        return -1;
    }
    b->n = (uint32_t)k;
    b->st = B_READ;
    s->next += (uint32_t)k;
    s->used++;
    return 0;
}

/* A block's bytes out: a WRITE of what is not written yet, or a local write. */
static void blk_write(struct slot *s, struct blk *b)
{
    struct end *e = &s->j->dst;
    if (!e->c) {
        int rc = local_write(e->fd, b->off, b->buf, b->n);
        if (rc != 0)
            broken(s, "write %s: %s", e->label, strerror(-rc));
        b->st = B_WRITTEN;
        return;
    }
    b->c0 = now_s();
    int rc = uiw__nfs_write_start(e->c, &e->fh, b->off + b->put, b->n - b->put, b->buf + b->put,
                                  s->attempt ? FILE_SYNC : UNSTABLE, b->verf, &b->op);
    if (rc != 0) {
        broken(s, "write %s: %s", e->label, strerror(-rc));
        b->st = B_WRITTEN;
        return;
    }
    b->st = B_WRITING;
    s->inflight++;
}

/* A block's READ ended. */
static void read_ended(struct slot *s, struct blk *b)
{
    struct end *e = &s->j->src;
    b->st = B_READ;
    if (b->rc < 0) {
        broken(s, "read %s: %s", e->label, uiw__nfs_errtext(e->c, b->rc));
        b->st = B_WRITTEN;
        return;
    }
    xstats_lat(&s->st, now_s() - b->c0);
    b->n += (uint32_t)b->rc;
    if (b->rc == 0 || b->eof) {
        /* the source ends here: no block after this one, and what those in flight
         * bring back from past it is left out */
        s->src_end = 1;
        if (b->off + b->n < s->end_at)
            s->end_at = b->off + b->n;
    } else if (b->n < b->want) {
        blk_read_more(s, b); /* a short READ: the rest of the block */
    }
}

/* A block's WRITE ended. */
static void write_ended(struct slot *s, struct blk *b)
{
    struct end *e = &s->j->dst;
    b->st = B_READ;
    if (b->rc <= 0) {
        if (b->rc == 0)
            broken(s, "write %s: no progress", e->label);
        else
            broken(s, "write %s: %s", e->label, uiw__nfs_errtext(e->c, b->rc));
        b->st = B_WRITTEN;
        return;
    }
    xstats_lat(&s->st, now_s() - b->c0);
    if (!s->have_verf)
        memcpy(s->first, b->verf, 8);
    else if (memcmp(s->first, b->verf, 8) != 0)
        s->changed = 1;
    s->have_verf = 1;
    b->put = (uint32_t)b->rc < b->n - b->put ? b->put + (uint32_t)b->rc : b->n;
    if (b->put == b->n)
        b->st = B_WRITTEN;
}

/* The oldest block written (or failed) leaves the ring: copied, in order. */
static void blk_retire(struct slot *s)
{
    struct blk *b = blk_at(s, 0);
    b->st = B_FREE;
    s->head = (s->head + 1) % s->depth;
    s->used--;
    if (s->broken)
        return;
    s->off += b->n;
    s->e->moved += b->n;
    if (s->e->held)
        progress_update(&s->e->bar, s->e->moved);
    else
        progress_update(&s->pr, s->off);
}

/* The copy's blocks moved on as far as they go without waiting. */
static void blocks(struct slot *s)
{
    const struct end *dst = &s->j->dst;
    for (unsigned k = 0; k < s->used; k++) {
        struct blk *b = blk_at(s, k);
        if (!b->ended)
            continue;
        b->ended = 0;
        if (b->st == B_READING)
            read_ended(s, b);
        else
            write_ended(s, b);
    }
    for (int moved = 1; moved;) {
        moved = 0;
        for (unsigned k = 0; k < s->used && !s->broken; k++) {
            struct blk *b = blk_at(s, k);
            if (b->st != B_READ)
                continue;
            if (b->off >= s->end_at || b->n == 0) {
                b->n = 0;
                b->st = B_WRITTEN;
            } else if (b->off + b->n > s->end_at) {
                b->n = (uint32_t)(s->end_at - b->off);
            }
            /* a local destination takes the blocks in order (a pipe has no offsets) */
            if (b->st == B_READ && (dst->c || k == 0)) {
                blk_write(s, b);
                moved = 1;
            }
        }
        while (s->used && blk_at(s, 0)->st == B_WRITTEN) {
            blk_retire(s);
            moved = 1;
        }
        if (!s->broken && !s->src_end && s->used < s->depth && blk_next(s) == 0)
            moved = 1;
    }
    /* the engine polls the client of the call that went out first */
    struct blk *w = NULL;
    for (unsigned k = 0; k < s->used && s->inflight; k++) {
        struct blk *b = blk_at(s, k);
        if ((b->st == B_READING || b->st == B_WRITING) && (!w || b->c0 < w->c0))
            w = b;
    }
    if (w) {
        s->waiting = 1;
        s->wc = w->st == B_READING ? s->j->src.c : s->j->dst.c;
        s->since = w->c0;
        return;
    }
    if (s->broken) {
        s->step = S_END;
        return;
    }
    if (!s->used && s->src_end)
        s->step = S_COPIED;
}

/* Every block written: COMMIT (UNSTABLE writes), or fsync of a local file. */
static void copied(struct slot *s)
{
    struct end *e = &s->j->dst;
    if (e->c && !s->attempt && s->off > 0) {
        started(s, e->c, uiw__nfs_commit_start(e->c, &e->fh, s->verf, &s->op), S_COMMITTED,
                "commit", e->label);
        return;
    }
    if (!e->c && fsync(e->fd) != 0 && errno != EINVAL) {
        fail(s, "%s: %s", e->label, strerror(errno));
        return;
    }
    s->step = S_SYNCED;
}

static void synced(struct slot *s)
{
    const struct opts *o = s->e->o;
    struct job *j = s->j;
    if (!s->e->held)
        progress_end(&s->pr);
    if (s->changed) {
        if (s->attempt) {
            fail(s, "%s: the server restarted again during the copy", j->dst.label);
            return;
        }
        say(s,
            "%s: the server restarted during the copy (write verifier changed): copying "
            "again with FILE_SYNC",
            j->dst.label);
        s->e->moved -= s->off;
        s->attempt = 1;
        s->step = S_COPY;
        return;
    }
    double dt = now_s() - s->t0;
    s->st.files = 1;
    s->st.bytes = s->off;
    s->st.secs = dt;
    if (o->verbose)
        say(s, "%s: %llu bytes in %.3f s (%.1f MB/s)", j->dst.label, (unsigned long long)s->off, dt,
            dt > 0 ? (double)s->off / dt / 1e6 : 0.0);
    s->side = 0;
    s->step = o->verify ? S_HASH : S_REPORT;
}

/* --verify: the SHA-256 of what an end holds now, read again from the start in a pass of
 * its own (a local file opened again by its name, a remote one with new READ calls), its
 * length, and the size the end reports for itself afterwards (fstat, GETATTR). */
static void hash_start(struct slot *s)
{
    struct end *e = s->side ? &s->j->dst : &s->j->src;
    if (!e->c && !e->path) {
        fail(s, "verify: %s cannot be read again", e->label);
        return;
    }
    s->h = sha_new();
    s->hlen[s->side] = 0;
    if (e->c) {
        s->step = S_HASH_READ;
        return;
    }
    s->hfd = open(e->path, O_RDONLY | O_CLOEXEC);
    if (s->hfd < 0) {
        fail(s, "verify: %s: %s", e->label, strerror(errno));
        return;
    }
    for (;;) {
        int k = local_read(s->hfd, s->hlen[s->side], s->buf, s->cap);
        if (k < 0)
            fail(s, "read %s: %s", e->label, strerror(-k));
        if (k <= 0)
            break;
        sha_update(s->h, s->buf, (size_t)k);
        s->hlen[s->side] += (uint64_t)k;
    }
    struct stat st;
    if (s->step != S_END && fstat(s->hfd, &st) != 0)
        fail(s, "verify: %s: %s", e->label, strerror(errno));
    close(s->hfd);
    s->hfd = -1;
    if (s->step == S_END)
        return;
    s->hsize[s->side] = (uint64_t)st.st_size;
    s->step = S_HASHED;
}

static void hash_read(struct slot *s)
{
    struct end *e = s->side ? &s->j->dst : &s->j->src;
    s->eof = 0;
    started(s, e->c,
            uiw__nfs_read_start(e->c, &e->fh, s->hlen[s->side], s->cap, s->buf, &s->eof, &s->op),
            S_HASH_READ_ENDED, "read", e->label);
}

static void hash_read_ended(struct slot *s)
{
    struct end *e = s->side ? &s->j->dst : &s->j->src;
    if (s->rc < 0) {
        fail(s, "read %s: %s", e->label, uiw__nfs_errtext(e->c, s->rc));
        return;
    }
    sha_update(s->h, s->buf, (size_t)s->rc);
    s->hlen[s->side] += (uint64_t)s->rc;
    if (s->rc > 0 && !s->eof) {
        s->step = S_HASH_READ;
        return;
    }
    started(s, e->c, uiw__nfs_getattr_start(e->c, &e->fh, &s->attr, &s->op), S_HASH_SIZED,
            "getattr", e->label);
}

static void hash_sized(struct slot *s)
{
    struct end *e = s->side ? &s->j->dst : &s->j->src;
    if (s->rc != 0) {
        fail(s, "verify: getattr %s: %s", e->label, uiw__nfs_errtext(e->c, s->rc));
        return;
    }
    s->hsize[s->side] = s->attr.size;
    s->step = S_HASHED;
}

static void hashed(struct slot *s)
{
    struct job *j = s->j;
    sha_hex(s->h, s->hex[s->side]);
    s->h = NULL;
    if (s->side++ == 0) {
        s->step = S_HASH;
        return;
    }
    uint64_t slen = s->hlen[0], ssize = s->hsize[0], dlen = s->hlen[1], dsize = s->hsize[1];
    if (slen != ssize || dlen != dsize || slen != dlen || dlen != s->off) {
        fail(s,
             "verify FAILED: %s holds %llu bytes (size %llu), %s %llu (size %llu), %llu "
             "copied",
             j->src.label, (unsigned long long)slen, (unsigned long long)ssize, j->dst.label,
             (unsigned long long)dlen, (unsigned long long)dsize, (unsigned long long)s->off);
        return;
    }
    if (strcmp(s->hex[0], s->hex[1]) != 0) {
        fail(s, "verify FAILED: %s has sha256 %s, %s has %s", j->src.label, s->hex[0], j->dst.label,
             s->hex[1]);
        return;
    }
    say(s, "verified %s: sha256 %s, %llu bytes", j->dst.label, s->hex[1], (unsigned long long)dlen);
    s->step = S_REPORT;
}

static void report(struct slot *s)
{
    struct job *j = s->j;
    const struct opts *o = s->e->o;
    if (o->json) {
        struct uiw__nfs_client *c = j->src.c ? j->src.c : j->dst.c;
        xstats_json(s->out, s->e->op, j->dst.label, 0, c ? uiw__nfs_client_transport(c) : "local",
                    c ? uiw__nfs_client_version(c) : NULL, &s->st, s->hex[1][0] ? s->hex[1] : NULL,
                    0);
    }
    totals_add(s->e->tt, &s->st, j->src.c ? j->src.c : j->dst.c);
    s->step = S_END;
}

/* Run a job until it waits for an operation or has ended. */
static void step(struct slot *s)
{
    while (!s->waiting && s->step != S_END) {
        switch (s->step) {
        case S_OPEN_SRC:
            open_src(s);
            break;
        case S_SRC_LOOKED:
            if (s->rc != 0)
                fail(s, "%s: %s", s->j->src.label, uiw__nfs_errtext(s->j->src.c, s->rc));
            else if (s->attr.type == NF3DIR)
                fail(s, "%s: is a directory", s->j->src.label);
            else
                src_known(s);
            break;
        case S_OPEN_DST:
            open_dst(s);
            break;
        case S_DST_LOOKED:
            dst_looked(s);
            break;
        case S_DST_MADE:
            if (s->rc != 0)
                fail(s, "%s: %s", s->j->dst.label, uiw__nfs_errtext(s->j->dst.c, s->rc));
            else
                s->step = S_COPY;
            break;
        case S_COPY:
            copy_start(s);
            break;
        case S_BLOCKS:
            blocks(s);
            break;
        case S_COPIED:
            copied(s);
            break;
        case S_COMMITTED:
            if (s->rc != 0) {
                fail(s, "commit %s: %s", s->j->dst.label, uiw__nfs_errtext(s->j->dst.c, s->rc));
                break;
            }
            if (memcmp(s->first, s->verf, 8) != 0)
                s->changed = 1;
            s->step = S_SYNCED;
            break;
        case S_SYNCED:
            synced(s);
            break;
        case S_HASH:
            hash_start(s);
            break;
        case S_HASH_READ:
            hash_read(s);
            break;
        case S_HASH_READ_ENDED:
            hash_read_ended(s);
            break;
        case S_HASH_SIZED:
            hash_sized(s);
            break;
        case S_HASHED:
            hashed(s);
            break;
        case S_REPORT:
            report(s);
            break;
        case S_END:
            break;
        }
    }
}

static void close_end(struct slot *s, struct end *e, int dst)
{
    if (e->c || e->fd < 0 || e->fd == STDIN_FILENO || e->fd == STDOUT_FILENO) {
        e->fd = -1;
        return;
    }
    if (close(e->fd) != 0 && dst && !s->j->failed)
        fail(s, "%s: %s", e->label, strerror(errno));
    e->fd = -1;
}

/* Start job j in slot s. */
static void slot_start(struct engine *e, struct slot *s, struct job *j)
{
    char *buf = s->buf;
    uint32_t bufcap = s->bufcap;
    memset(s, 0, sizeof(*s));
    s->buf = buf;
    s->bufcap = bufcap;
    s->e = e;
    s->j = j;
    s->hfd = -1;
    s->op.done = op_ended;
    s->op.arg = s;
    j->src.fd = j->dst.fd = -1;
    j->state = JOB_RUNNING;
    if (e->held) {
        s->err = open_memstream(&s->errbuf, &s->errlen);
        s->out = open_memstream(&s->outbuf, &s->outlen);
        if (!s->err || !s->out) {
            fprintf(stderr, "uiw-nfs: out of memory\n");
            exit(1);
        }
    } else {
        s->err = stderr;
        s->out = stdout;
    }
    e->active++;
}

/* A job ended: its files closed, what it printed kept for its turn, the slot free. */
static void slot_end(struct engine *e, struct slot *s)
{
    struct job *j = s->j;
    close_end(s, &j->src, 0);
    close_end(s, &j->dst, 1);
    if (!e->held)
        progress_end(&s->pr); /* a copy that failed: its bar ends here */
    if (s->h) {
        char hex[65];
        sha_hex(s->h, hex);
    }
    if (e->held) {
        fclose(s->err);
        fclose(s->out);
        j->err = s->errbuf;
        j->errlen = s->errlen;
        j->out = s->outbuf;
        j->outlen = s->outlen;
    } else {
        fflush(stdout);
    }
    xstats_free(&s->st);
    if (j->failed)
        e->failed++;
    j->state = JOB_ENDED;
    s->j = NULL;
    e->active--;
    e->ended++;
}

/* What the jobs that ended print, in their order. */
static void flush_ended(struct engine *e)
{
    while (e->flushed < e->next && e->jobs[e->flushed].state == JOB_ENDED) {
        struct job *j = &e->jobs[e->flushed++];
        if (j->errlen || j->outlen)
            progress_clear(&e->bar);
        if (j->errlen)
            fwrite(j->err, 1, j->errlen, stderr);
        if (j->outlen)
            fwrite(j->out, 1, j->outlen, stdout);
        fflush(stdout);
        free(j->err);
        free(j->out);
        j->err = j->out = NULL;
        j->errlen = j->outlen = 0;
    }
}

/* The next job may start: a slot is free, and no earlier job has its destination. */
static struct slot *free_slot(struct engine *e)
{
    if (e->next >= e->n || e->active >= e->parallel)
        return NULL;
    struct job *j = &e->jobs[e->next];
    if (j->after && e->jobs[j->after - 1].state != JOB_ENDED)
        return NULL;
    for (unsigned i = 0; i < e->parallel; i++)
        if (!e->slots[i].j)
            return &e->slots[i];
    return NULL;
}

/* The client of the job that has waited longest for an operation. */
static struct uiw__nfs_client *oldest_wait(struct engine *e)
{
    struct slot *w = NULL;
    for (unsigned i = 0; i < e->parallel; i++) {
        struct slot *s = &e->slots[i];
        if (s->j && s->waiting && (!w || s->since < w->since))
            w = s;
    }
    return w ? w->wc : NULL;
}

int copy_run(const struct opts *o, const char *op, struct job *jobs, size_t n, struct totals *tt)
{
    struct engine e = {.o = o, .op = op, .jobs = jobs, .n = n, .tt = tt};
    e.parallel = o->parallel ? o->parallel : 1;
    if (e.parallel > n)
        e.parallel = n ? (unsigned)n : 1;
    e.held = e.parallel > 1;
    e.slots = calloc(e.parallel, sizeof(*e.slots));
    if (!e.slots) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        return (int)n;
    }
    if (e.held) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += jobs[i].src.size;
        progress_start(&e.bar, o, "files", total);
        e.bar.files = n;
    }
    double t0 = now_s();
    while (e.flushed < n) {
        struct slot *s;
        /* the calls the steps start go out together, as those of the callbacks in a poll */
        uiw__nfs_batch_begin();
        while ((s = free_slot(&e)) != NULL) {
            slot_start(&e, s, &jobs[e.next++]);
            step(s);
            if (s->step == S_END)
                slot_end(&e, s);
        }
        while ((s = e.ready) != NULL) {
            e.ready = s->next_ready;
            s->queued = 0;
            step(s);
            if (s->step == S_END)
                slot_end(&e, s);
        }
        uiw__nfs_batch_end();
        if (e.held) {
            e.bar.files_done = e.ended;
            progress_update(&e.bar, e.moved);
        }
        flush_ended(&e);
        if (e.ready || free_slot(&e))
            continue;
        struct uiw__nfs_client *c = oldest_wait(&e);
        if (!c && !e.active && e.next >= n)
            break;
        if (c && uiw__nfs_poll(c, 1000) < 0)
            usleep(1000); /* the transport's trouble: its calls end by its timeout */
    }
    if (tt)
        tt->elapsed += now_s() - t0;
    if (e.held) {
        e.bar.files_done = e.ended;
        progress_end(&e.bar);
    }
    for (unsigned i = 0; i < e.parallel; i++)
        free(e.slots[i].buf);
    free(e.slots);
    return e.failed;
}
