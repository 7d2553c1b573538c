/*
 * File handles.
 *
 * A handle is 32 opaque bytes: a magic byte and a version, the export's id, the file's
 * device and inode number, and its generation tag (uiw__nfs_fh_tag), all big-endian.
 * Nothing in it is a path or a kernel handle, so it works for a server run by an ordinary
 * user (open_by_handle_at needs CAP_DAC_READ_SEARCH).
 *
 * The server keeps a record of the files it has handed out handles for, the most recently
 * used ones (a bounded number: the least recently used record goes first, as a restart
 * would drop them all): where the file was seen last (its directory's record and its
 * name) and, for the most recently used, an O_PATH descriptor. A handle resolves through
 * its record's descriptor, else by opening its name again in its directory, else (no
 * record, or its directory's record dropped) by a search of its export's tree; the file found
 * must have the handle's device, inode and generation tag, or the handle is STALE. So a
 * handle never names another file (an inode number reused by a later file has another
 * tag), a file removed is STALE, and a handle of a file outside the export (forged, or
 * the file moved out) is STALE too: the search never leaves the export and never follows
 * a symbolic link.
 *
 * The search costs the server's time on behalf of whoever sends a handle, and a forged
 * handle is free to make: it is never run for an AUTH_NONE caller (STALE at once), runs
 * one at a time, and spends at most SEARCH_REFILL_MS of a second on average (a budget
 * of up to SEARCH_BURST_MS, refilled at that rate, from which each search's own time is
 * taken). A handle that would need a search while one runs or the budget is spent gets
 * NFS3ERR_JUKEBOX: the client tries again later, and a real handle is found then.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/server.h"

#define FH_MAGIC         0x75
#define FH_VERSION       1
#define NBUCKETS         (1u << 16)
#define MAX_DEPTH        256
#define SEARCH_MAX       1000000u
#define SEARCH_REFILL_MS 100 /* of every second, on average */
#define SEARCH_BURST_MS  1000

struct rec {
    struct rec *next;                /* hash chain */
    struct rec *lru_prev, *lru_next; /* open records, most recent first */
    struct rec *all_prev, *all_next; /* every record, most recent first */
    uint64_t dev, ino, tag;
    uint32_t export_id;
    uint64_t pdev, pino; /* directory it was last seen in; pino 0: unknown */
    char *name;
    int fd; /* O_PATH, or -1 */
};

struct uiw__nfs_fhcache {
    pthread_mutex_t lock;
    struct rec **buckets;
    struct rec lru; /* sentinel of the open records */
    struct rec all; /* sentinel of every record */
    unsigned nopen, max_open;
    unsigned nrecs, max_recs;
    /* the search's budget (fh.c's header); under `lock` */
    int searching;
    int64_t budget_ns, refilled_ns;
    struct uiw__nfs_fh_counts counts;
};

struct uiw__nfs_fhcache *uiw__nfs_fhcache_create(unsigned max_open, unsigned max_recs)
{
    struct uiw__nfs_fhcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->buckets = calloc(NBUCKETS, sizeof(*c->buckets));
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->lru.lru_next = c->lru.lru_prev = &c->lru;
    c->all.all_next = c->all.all_prev = &c->all;
    c->budget_ns = SEARCH_BURST_MS * 1000000ll;
    c->max_open = max_open ? max_open : 4096;
    c->max_recs = max_recs ? max_recs : UIW__NFS_MAX_HANDLES;
    if (c->max_open > c->max_recs)
        c->max_open = c->max_recs;
    return c;
}

unsigned uiw__nfs_fhcache_count(struct uiw__nfs_fhcache *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned n = c->nrecs;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void uiw__nfs_fhcache_counts(struct uiw__nfs_fhcache *c, struct uiw__nfs_fh_counts *n)
{
    pthread_mutex_lock(&c->lock);
    *n = c->counts;
    pthread_mutex_unlock(&c->lock);
}

void uiw__nfs_fhcache_destroy(struct uiw__nfs_fhcache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < NBUCKETS; i++) {
        struct rec *r = c->buckets[i];
        while (r) {
            struct rec *n = r->next;
            if (r->fd >= 0)
                close(r->fd);
            free(r->name);
            free(r);
            r = n;
        }
    }
    pthread_mutex_destroy(&c->lock);
    free(c->buckets);
    free(c);
}

static unsigned bucket(uint64_t dev, uint64_t ino)
{
    uint64_t h = (ino * 0x9E3779B97F4A7C15ull) ^ (dev * 0xC2B2AE3D27D4EB4Full);
    return (unsigned)(h >> 48) & (NBUCKETS - 1);
}

static void all_unlink(struct rec *r)
{
    r->all_prev->all_next = r->all_next;
    r->all_next->all_prev = r->all_prev;
}

static void all_front(struct uiw__nfs_fhcache *c, struct rec *r)
{
    r->all_next = c->all.all_next;
    r->all_prev = &c->all;
    c->all.all_next->all_prev = r;
    c->all.all_next = r;
}

/* The record of (dev, ino), now the most recently used; NULL if none. Under the lock. */
static struct rec *find(struct uiw__nfs_fhcache *c, uint64_t dev, uint64_t ino)
{
    for (struct rec *r = c->buckets[bucket(dev, ino)]; r; r = r->next)
        if (r->dev == dev && r->ino == ino) {
            all_unlink(r);
            all_front(c, r);
            return r;
        }
    return NULL;
}

static void lru_unlink(struct uiw__nfs_fhcache *c, struct rec *r)
{
    r->lru_prev->lru_next = r->lru_next;
    r->lru_next->lru_prev = r->lru_prev;
    r->lru_next = r->lru_prev = NULL;
    c->nopen--;
}

static void lru_front(struct uiw__nfs_fhcache *c, struct rec *r)
{
    if (r->lru_next) {
        r->lru_prev->lru_next = r->lru_next;
        r->lru_next->lru_prev = r->lru_prev;
    } else {
        c->nopen++;
    }
    r->lru_next = c->lru.lru_next;
    r->lru_prev = &c->lru;
    c->lru.lru_next->lru_prev = r;
    c->lru.lru_next = r;
}

/* Give a record its own descriptor (a duplicate of fd), closing the least recently used
 * ones past the limit. Under the lock. */
static void rec_open(struct uiw__nfs_fhcache *c, struct rec *r, int fd)
{
    if (r->fd < 0) {
        r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (r->fd < 0)
            return;
    }
    lru_front(c, r);
    while (c->nopen > c->max_open) {
        struct rec *old = c->lru.lru_prev;
        lru_unlink(c, old);
        close(old->fd);
        old->fd = -1;
    }
}

static void rec_close(struct uiw__nfs_fhcache *c, struct rec *r)
{
    if (r->fd >= 0) {
        lru_unlink(c, r);
        close(r->fd);
        r->fd = -1;
    }
}

/* Drop the least recently used record (its descriptor, name and place). Under the lock. */
static void rec_evict(struct uiw__nfs_fhcache *c)
{
    struct rec *r = c->all.all_prev;
    if (r == &c->all)
        return;
    rec_close(c, r);
    all_unlink(r);
    for (struct rec **pp = &c->buckets[bucket(r->dev, r->ino)]; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    c->nrecs--;
    free(r->name);
    free(r);
}

/* Insert or update the record of (dev, ino) with tag, dropping the least recently used
 * records past the limit; under the lock. NULL: no memory. */
static struct rec *rec_put(struct uiw__nfs_fhcache *c, uint32_t export_id, uint64_t dev,
                           uint64_t ino, uint64_t tag, uint64_t pdev, uint64_t pino,
                           const char *name)
{
    struct rec *r = find(c, dev, ino);
    if (r && r->tag != tag) {
        rec_close(c, r); /* an earlier file with this inode number: gone */
        r->tag = tag;
    }
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return NULL;
        r->dev = dev;
        r->ino = ino;
        r->tag = tag;
        r->fd = -1;
        unsigned b = bucket(dev, ino);
        r->next = c->buckets[b];
        c->buckets[b] = r;
        all_front(c, r);
        c->nrecs++;
        while (c->nrecs > c->max_recs)
            rec_evict(c); /* never r: it is the most recent */
    }
    r->export_id = export_id;
    if (name && pino) {
        if (!r->name || strcmp(r->name, name) != 0) {
            char *n = strdup(name);
            if (n) {
                free(r->name);
                r->name = n;
            }
        }
        r->pdev = pdev;
        r->pino = pino;
    }
    return r;
}

uint64_t uiw__nfs_fh_tag(int fd)
{
    union {
        struct file_handle fh;
        char buf[sizeof(struct file_handle) + 128];
    } u;
    int mount_id;
    u.fh.handle_bytes = 128;
    if (name_to_handle_at(fd, "", &u.fh, &mount_id, AT_EMPTY_PATH) == 0) {
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the kernel's handle */
        for (unsigned i = 0; i < u.fh.handle_bytes; i++)
            h = (h ^ u.fh.f_handle[i]) * 0x100000001b3ull;
        h = (h ^ (uint32_t)u.fh.handle_type) * 0x100000001b3ull;
        return h;
    }
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) == 0 &&
        (stx.stx_mask & STATX_BTIME))
        return ((uint64_t)stx.stx_btime.tv_sec << 30) ^ stx.stx_btime.tv_nsec;
    return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

void uiw__nfs_fh_encode(const struct uiw__nfsd_fh *fh, nfs_fh3 *out, char buf[UIW__NFS_FH_LEN])
{
    unsigned char *p = (unsigned char *)buf;
    p[0] = FH_MAGIC;
    p[1] = FH_VERSION;
    p[2] = p[3] = 0;
    put32(p + 4, fh->export_id);
    put64(p + 8, fh->dev);
    put64(p + 16, fh->ino);
    put64(p + 24, fh->tag);
    out->data.data_len = UIW__NFS_FH_LEN;
    out->data.data_val = buf;
}

static int decode(const nfs_fh3 *h, struct uiw__nfsd_fh *fh)
{
    const unsigned char *p = (const unsigned char *)h->data.data_val;
    if (h->data.data_len != UIW__NFS_FH_LEN || !p || p[0] != FH_MAGIC || p[1] != FH_VERSION ||
        p[2] || p[3])
        return -1;
    fh->export_id = get32(p + 4);
    fh->dev = get64(p + 8);
    fh->ino = get64(p + 16);
    fh->tag = get64(p + 24);
    return 0;
}

static struct uiw__nfs_export *export_by_id(struct uiw__nfsd *s, uint32_t id)
{
    for (unsigned i = 0; i < s->nexports; i++)
        if (s->exports[i].id == id)
            return &s->exports[i];
    return NULL;
}

nfsstat3 uiw__nfs_fh_export(struct uiw__nfsd *s, const nfs_fh3 *h, struct uiw__nfs_export **ex)
{
    struct uiw__nfsd_fh fh;
    if (decode(h, &fh) != 0)
        return NFS3ERR_BADHANDLE;
    *ex = export_by_id(s, fh.export_id);
    return *ex ? NFS3_OK : NFS3ERR_STALE;
}

/* Is the open file fd the one named (dev, ino, tag), and still linked? */
static int same_file(int fd, uint64_t dev, uint64_t ino, uint64_t tag)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)
        return 0;
    if (st.st_nlink == 0)
        return 0;
    return uiw__nfs_fh_tag(fd) == tag;
}

/* A new descriptor of the record (dev, ino, tag) by its directory and name; -1 if that
 * name is no longer it. `depth` bounds the walk up the records. */
static int reopen(struct uiw__nfsd *s, struct uiw__nfs_export *ex, uint64_t dev, uint64_t ino,
                  uint64_t tag, int depth)
{
    struct uiw__nfs_fhcache *c = s->fhcache;
    if (dev == (uint64_t)ex->dev && ino == (uint64_t)ex->ino)
        return tag == ex->tag ? fcntl(ex->rootfd, F_DUPFD_CLOEXEC, 0) : -1;
    if (depth > MAX_DEPTH)
        return -1;
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, dev, ino);
    if (!r || r->tag != tag || r->export_id != ex->id) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    if (r->fd >= 0) {
        int fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
        lru_front(c, r);
        pthread_mutex_unlock(&c->lock);
        return fd;
    }
    uint64_t pdev = r->pdev, pino = r->pino;
    char *name = r->name ? strdup(r->name) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (!name || !pino) {
        free(name);
        return -1;
    }
    uint64_t ptag = 0;
    if (pdev == (uint64_t)ex->dev && pino == (uint64_t)ex->ino) {
        ptag = ex->tag;
    } else {
        pthread_mutex_lock(&c->lock);
        struct rec *p = find(c, pdev, pino);
        if (p)
            ptag = p->tag;
        pthread_mutex_unlock(&c->lock);
        if (!p) {
            free(name);
            return -1;
        }
    }
    int pfd = reopen(s, ex, pdev, pino, ptag, depth + 1);
    int fd = -1;
    if (pfd >= 0) {
        fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        close(pfd);
        if (fd >= 0 && !same_file(fd, dev, ino, tag)) {
            close(fd);
            fd = -1;
        }
    }
    free(name);
    if (fd >= 0) {
        pthread_mutex_lock(&c->lock);
        r = find(c, dev, ino);
        if (r && r->tag == tag)
            rec_open(c, r, fd);
        pthread_mutex_unlock(&c->lock);
    }
    return fd;
}

/* The search of an export's tree for (dev, ino, tag): depth first, no symbolic link
 * followed, at most SEARCH_MAX entries looked at. On success the records of the path
 * down to the file are (re)made and a descriptor of it returned. */
struct search {
    struct uiw__nfsd *s;
    struct uiw__nfs_export *ex;
    uint64_t dev, ino, tag;
    unsigned seen;
};

static int search_dir(struct search *q, int dirfd, uint64_t ddev, uint64_t dino, int depth)
{
    if (depth > MAX_DEPTH)
        return -1;
    int lfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lfd < 0)
        return -1;
    DIR *d = fdopendir(lfd);
    if (!d) {
        close(lfd);
        return -1;
    }
    int found = -1;
    struct dirent *de;
    while (found < 0 && (de = readdir(d)) != NULL) {
        if (++q->seen > SEARCH_MAX)
            break;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int want = (uint64_t)de->d_ino == q->ino;
        if (!want && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
            continue;
        int fd = openat(dirfd, de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) != 0) {
            close(fd);
            continue;
        }
        if ((uint64_t)st.st_dev == q->dev && (uint64_t)st.st_ino == q->ino) {
            if (st.st_nlink > 0 && uiw__nfs_fh_tag(fd) == q->tag) {
                found = fd;
                pthread_mutex_lock(&q->s->fhcache->lock);
                struct rec *r = rec_put(q->s->fhcache, q->ex->id, q->dev, q->ino, q->tag, ddev,
                                        dino, de->d_name);
                if (r)
                    rec_open(q->s->fhcache, r, fd);
                pthread_mutex_unlock(&q->s->fhcache->lock);
                break;
            }
            close(fd);
            break; /* that inode number is another file now */
        }
        if (S_ISDIR(st.st_mode)) {
            found = search_dir(q, fd, (uint64_t)st.st_dev, (uint64_t)st.st_ino, depth + 1);
            if (found >= 0) {
                uint64_t tag = uiw__nfs_fh_tag(fd);
                pthread_mutex_lock(&q->s->fhcache->lock);
                rec_put(q->s->fhcache, q->ex->id, (uint64_t)st.st_dev, (uint64_t)st.st_ino, tag,
                        ddev, dino, de->d_name);
                pthread_mutex_unlock(&q->s->fhcache->lock);
            }
        }
        close(fd);
    }
    closedir(d);
    return found;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The search for a handle no record leads to, within its budget: NFS3_OK with *fd the
 * file or -1 (not found), NFS3ERR_STALE for an AUTH_NONE caller, NFS3ERR_JUKEBOX when
 * another search runs or the budget is spent. */
static nfsstat3 search_in_budget(struct uiw__nfsd *s, const struct uiw__nfs_cred *who,
                                 struct uiw__nfs_export *ex, const struct uiw__nfsd_fh *fh, int *fd)
{
    struct uiw__nfs_fhcache *c = s->fhcache;
    *fd = -1;
    if (who->anonymous) {
        pthread_mutex_lock(&c->lock);
        c->counts.search_refused++;
        pthread_mutex_unlock(&c->lock);
        return NFS3ERR_STALE;
    }
    int64_t t0 = now_ns();
    pthread_mutex_lock(&c->lock);
    c->budget_ns += (t0 - c->refilled_ns) / (1000 / SEARCH_REFILL_MS);
    if (c->budget_ns > SEARCH_BURST_MS * 1000000ll)
        c->budget_ns = SEARCH_BURST_MS * 1000000ll;
    c->refilled_ns = t0;
    if (c->searching || c->budget_ns <= 0) {
        c->counts.search_deferred++;
        pthread_mutex_unlock(&c->lock);
        uiw__nfsd_refused(s, UIW__NFSD_REFUSED_SEARCH,
                          "a handle's search deferred (NFS3ERR_JUKEBOX): another search runs "
                          "or its budget (%d ms a second) is spent",
                          SEARCH_REFILL_MS);
        return NFS3ERR_JUKEBOX;
    }
    c->searching = 1;
    c->counts.searches++;
    pthread_mutex_unlock(&c->lock);
    struct search q = {s, ex, fh->dev, fh->ino, fh->tag, 0};
    *fd = search_dir(&q, ex->rootfd, (uint64_t)ex->dev, (uint64_t)ex->ino, 0);
    int64_t spent = now_ns() - t0;
    pthread_mutex_lock(&c->lock);
    c->searching = 0;
    c->budget_ns -= spent;
    pthread_mutex_unlock(&c->lock);
    return NFS3_OK;
}

nfsstat3 uiw__nfs_fh_resolve(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                             int *fdp, struct uiw__nfs_export **exp)
{
    struct uiw__nfsd_fh fh;
    if (decode(h, &fh) != 0)
        return NFS3ERR_BADHANDLE;
    struct uiw__nfs_export *ex = export_by_id(s, fh.export_id);
    if (!ex)
        return NFS3ERR_STALE; /* ours, but of an export not served now */
    *exp = ex;
    struct uiw__nfs_fhcache *c = s->fhcache;
    int fd = -1;
    if (fh.dev == (uint64_t)ex->dev && fh.ino == (uint64_t)ex->ino) {
        if (fh.tag != ex->tag)
            return NFS3ERR_STALE;
        fd = fcntl(ex->rootfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return NFS3ERR_SERVERFAULT;
        *fdp = fd;
        return NFS3_OK;
    }
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, fh.dev, fh.ino);
    if (r && r->fd >= 0) {
        if (r->tag != fh.tag || r->export_id != ex->id) {
            /* The inode number belongs to the file we hold open: if that one is still
             * linked, the handle's file is gone. */
            struct stat st;
            int live = fstat(r->fd, &st) == 0 && st.st_nlink > 0;
            pthread_mutex_unlock(&c->lock);
            if (live)
                return NFS3ERR_STALE;
        } else {
            fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
            lru_front(c, r);
            pthread_mutex_unlock(&c->lock);
            if (fd < 0)
                return NFS3ERR_SERVERFAULT;
            struct stat st;
            if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
                close(fd);
                uiw__nfs_fh_removed(s, (dev_t)fh.dev, (ino_t)fh.ino);
                return NFS3ERR_STALE;
            }
            *fdp = fd;
            return NFS3_OK;
        }
    } else {
        pthread_mutex_unlock(&c->lock);
    }
    fd = reopen(s, ex, fh.dev, fh.ino, fh.tag, 0);
    if (fd < 0) {
        nfsstat3 st = search_in_budget(s, who, ex, &fh, &fd);
        if (st != NFS3_OK)
            return st;
    }
    if (fd < 0)
        return NFS3ERR_STALE;
    *fdp = fd;
    return NFS3_OK;
}

nfsstat3 uiw__nfs_fh_stat(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                          struct stat *st, struct uiw__nfs_export **exp)
{
    struct uiw__nfsd_fh fh;
    if (decode(h, &fh) != 0)
        return NFS3ERR_BADHANDLE;
    struct uiw__nfs_export *ex = export_by_id(s, fh.export_id);
    if (!ex)
        return NFS3ERR_STALE;
    *exp = ex;
    if (fh.dev == (uint64_t)ex->dev && fh.ino == (uint64_t)ex->ino) {
        if (fh.tag != ex->tag)
            return NFS3ERR_STALE;
        return fstat(ex->rootfd, st) == 0 ? NFS3_OK : uiw__nfsd_errno(errno);
    }
    /* An open record: one fstat on its own descriptor, under the lock that keeps it
     * open (no duplicate to make and close). */
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, fh.dev, fh.ino);
    if (r && r->fd >= 0 && r->tag == fh.tag && r->export_id == ex->id) {
        int rc = fstat(r->fd, st);
        int err = errno;
        lru_front(c, r);
        pthread_mutex_unlock(&c->lock);
        if (rc != 0)
            return uiw__nfsd_errno(err);
        if (st->st_nlink == 0) {
            uiw__nfs_fh_removed(s, (dev_t)fh.dev, (ino_t)fh.ino);
            return NFS3ERR_STALE;
        }
        return NFS3_OK;
    }
    pthread_mutex_unlock(&c->lock);
    int fd;
    nfsstat3 rc = uiw__nfs_fh_resolve(s, who, h, &fd, exp);
    if (rc != NFS3_OK)
        return rc;
    rc = fstat(fd, st) == 0 ? NFS3_OK : uiw__nfsd_errno(errno);
    close(fd);
    return rc;
}

int uiw__nfs_fh_issue(struct uiw__nfsd *s, struct uiw__nfs_export *ex, int dirfd, const char *name,
                      int fd, nfs_fh3 *out, char buf[UIW__NFS_FH_LEN])
{
    struct stat st, dst;
    if (fstat(fd, &st) != 0)
        return -errno;
    struct uiw__nfsd_fh fh = {ex->id, (uint64_t)st.st_dev, (uint64_t)st.st_ino, 0};
    if (st.st_dev == ex->dev && st.st_ino == ex->ino) {
        fh.tag = ex->tag;
        uiw__nfs_fh_encode(&fh, out, buf);
        return 0;
    }
    fh.tag = uiw__nfs_fh_tag(fd);
    uint64_t pdev = 0, pino = 0;
    if (name && dirfd >= 0 && fstat(dirfd, &dst) == 0) {
        pdev = (uint64_t)dst.st_dev;
        pino = (uint64_t)dst.st_ino;
    }
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = rec_put(c, ex->id, fh.dev, fh.ino, fh.tag, pdev, pino, name);
    if (r)
        rec_open(c, r, fd);
    pthread_mutex_unlock(&c->lock);
    if (!r)
        return -ENOMEM;
    uiw__nfs_fh_encode(&fh, out, buf);
    return 0;
}

void uiw__nfs_fh_moved(struct uiw__nfsd *s, dev_t dev, ino_t ino, int newdirfd, const char *newname)
{
    struct stat dst;
    if (fstat(newdirfd, &dst) != 0)
        return;
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, (uint64_t)dev, (uint64_t)ino);
    if (r) {
        char *n = strdup(newname);
        if (n) {
            free(r->name);
            r->name = n;
            r->pdev = (uint64_t)dst.st_dev;
            r->pino = (uint64_t)dst.st_ino;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void uiw__nfs_fh_removed(struct uiw__nfsd *s, dev_t dev, ino_t ino)
{
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, (uint64_t)dev, (uint64_t)ino);
    struct stat st;
    if (r && r->fd >= 0 && (fstat(r->fd, &st) != 0 || st.st_nlink == 0))
        rec_close(c, r);
    pthread_mutex_unlock(&c->lock);
}
