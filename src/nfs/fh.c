/*
 * File handles.
 *
 * A handle (at most 64 bytes, all big-endian) holds a magic byte and a version, the
 * export's id, the id of the file's file system, its inode number, and then either the
 * kernel's own handle of the file (name_to_handle_at: its type and bytes, when they fit)
 * or a generation tag (uiw__nfs_fh_tag). The file system is named by the id statfs gives
 * it (f_fsid: from its UUID on ext4, XFS and Btrfs), never by st_dev, which a Btrfs
 * subvolume, LVM or ZFS may change from one boot to the next; the export's id is its
 * fsid= when the exports file gives one, else a hash of its path. So a handle stays
 * valid across restarts of the server and of the host. Version 1 handles (32 bytes, with
 * st_dev) are still taken.
 *
 * A handle resolves, fastest first:
 *  - through the record of a recently used file (its O_PATH descriptor);
 *  - when the server may open files by their kernel handle (root, or CAP_DAC_READ_SEARCH:
 *    probed per file system), by open_by_handle_at: no search, whatever the export's size
 *    and however long ago the handle was made;
 *  - by opening the file's last known name in its directory again (records of names);
 *  - else by a search of the export's tree, within a budget (below).
 * The file found must have the handle's inode number and generation (a later file that
 * reuses the inode number is another one), must still be linked, and must lie inside the
 * export the handle names: a directory, or a file whose path the kernel knows, that is
 * not below the export's root (moved out locally, or a forged handle of a file beside
 * the export) gives NFS3ERR_STALE. A record that served a call is checked again at most
 * RECHECK_MS later (a path lookup of its descriptor, about 10 µs, is too dear for every
 * call). A file the kernel opened by handle with no path known to it yet (no name of it
 * cached, as after a reboot) is taken under no_subtree_check, as knfsd takes any file of
 * the exported file system then; under subtree_check it must be found in the export by
 * name or by the search first. A mount point below an export is crossed only when the
 * caller says so (crossmnt: uiw__nfs_fh_issue's `cross`).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "nfs/server.h"

#define FH_MAGIC         0x75
#define FH_V1            1 /* 32 bytes: export id, st_dev, inode, tag */
#define FH_V2            2
#define FH_KERNEL        1  /* v2 kinds: the kernel's handle follows */
#define FH_TAG           2  /* a generation tag follows */
#define FH_V2_HEAD       24 /* magic, version, kind, klen, export id, fsid, inode */
#define FH_PSEUDO        3  /* v2 kind: a directory of NFSv4's pseudo file system */
#define FH_PSEUDO_LEN    16 /* magic, version, kind, 0, export id 0, the node */
#define NBUCKETS         (1u << 16)
#define MAX_DEPTH        256
#define MAX_FS           64
#define SEARCH_MAX       1000000u
#define SEARCH_REFILL_MS 100 /* of every second, on average */
#define SEARCH_BURST_MS  1000
#define RECHECK_MS       1000
#define MOUNT_SCAN_MS    1000 /* at most one look for unknown file systems a second */

struct rec {
    struct rec *next;                /* hash chain */
    struct rec *lru_prev, *lru_next; /* open records, most recent first */
    struct rec *all_prev, *all_next; /* every record, most recent first */
    uint64_t dev, ino, tag;
    uint64_t pdev, pino; /* directory it was last seen in; pino 0: unknown */
    char *name;
    int fd; /* O_PATH, or -1 */
    /* last found inside this export at this time (CLOCK_MONOTONIC) */
    uint32_t checked_ex;
    int64_t checked_ns;
};

/* A file system handles were made on: the fsid handles carry, the device it has now, a
 * directory of it open for open_by_handle_at (which takes no O_PATH descriptor). */
struct fsent {
    uint64_t fsid, dev;
    int mfd;       /* -1: none */
    int by_handle; /* open_by_handle_at works on it (the server's capability) */
};

struct uiw__nfs_fhcache {
    pthread_mutex_t lock;
    struct rec **buckets;
    struct rec lru; /* sentinel of the open records */
    struct rec all; /* sentinel of every record */
    unsigned nopen, max_open;
    unsigned nrecs, max_recs;
    struct fsent fs[MAX_FS];
    unsigned nfs;
    int64_t mount_scan_ns;
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
    for (unsigned i = 0; i < c->nfs; i++)
        if (c->fs[i].mfd >= 0)
            close(c->fs[i].mfd);
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

/* Drop a record (its descriptor, name and place). Under the lock. */
static void rec_drop(struct uiw__nfs_fhcache *c, struct rec *r)
{
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

/* Drop the least recently used record. Under the lock. */
static void rec_evict(struct uiw__nfs_fhcache *c)
{
    if (c->all.all_prev != &c->all)
        rec_drop(c, c->all.all_prev);
}

/* Insert or update the record of (dev, ino) with tag, dropping the least recently used
 * records past the limit; under the lock. NULL: no memory. */
static struct rec *rec_put(struct uiw__nfs_fhcache *c, uint64_t dev, uint64_t ino, uint64_t tag,
                           uint64_t pdev, uint64_t pino, const char *name)
{
    struct rec *r = find(c, dev, ino);
    if (r && r->tag != tag) {
        rec_close(c, r); /* an earlier file with this inode number: gone */
        r->tag = tag;
        r->checked_ns = 0;
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

/* The record was found inside export `id` just now. Under the lock. */
static void rec_checked(struct rec *r, uint32_t id)
{
    r->checked_ex = id;
    r->checked_ns = uiw__nfsd_now_ns();
}

/* ---- the kernel's handle, and the generation tag made of it ---- */

struct khandle {
    struct file_handle fh;
    unsigned char bytes[MAX_HANDLE_SZ];
};

static uint64_t khash(const unsigned char *b, unsigned n, int type)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the kernel's handle */
    for (unsigned i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return (h ^ (uint32_t)type) * 0x100000001b3ull;
}

/* The kernel's handle of fd (allowed to anyone): 0, or -1 where the file system has none. */
static int khandle_of(int fd, struct khandle *k)
{
    int mount_id;
    k->fh.handle_bytes = MAX_HANDLE_SZ;
    return name_to_handle_at(fd, "", &k->fh, &mount_id, AT_EMPTY_PATH) == 0 ? 0 : -1;
}

uint64_t uiw__nfs_fh_tag(int fd)
{
    struct khandle k;
    if (khandle_of(fd, &k) == 0)
        return khash(k.fh.f_handle, k.fh.handle_bytes, k.fh.handle_type);
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) == 0 &&
        (stx.stx_mask & STATX_BTIME))
        return ((uint64_t)stx.stx_btime.tv_sec << 30) ^ stx.stx_btime.tv_nsec;
    return 0;
}

/* ---- the bytes of a handle ---- */

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

void uiw__nfs_fh_encode(const struct uiw__nfsd_fh *fh, nfs_fh3 *out, char buf[UIW__NFS_FH_MAX])
{
    unsigned char *p = (unsigned char *)buf;
    p[0] = FH_MAGIC;
    p[1] = FH_V2;
    p[2] = fh->klen ? FH_KERNEL : FH_TAG;
    p[3] = (unsigned char)fh->klen;
    put32(p + 4, fh->export_id);
    put64(p + 8, fh->fsid);
    put64(p + 16, fh->ino);
    unsigned n = FH_V2_HEAD;
    if (fh->klen) {
        put32(p + n, (uint32_t)fh->ktype);
        memcpy(p + n + 4, fh->kh, fh->klen);
        n += 4 + fh->klen;
    } else {
        put64(p + n, fh->tag);
        n += 8;
    }
    out->data.data_len = n;
    out->data.data_val = buf;
}

int uiw__nfs_fh_decode(const nfs_fh3 *h, struct uiw__nfsd_fh *fh)
{
    const unsigned char *p = (const unsigned char *)h->data.data_val;
    unsigned n = h->data.data_len;
    memset(fh, 0, sizeof(*fh));
    if (!p || n < 4 || p[0] != FH_MAGIC)
        return -1;
    if (p[1] == FH_V1) {
        if (n != 32 || p[2] || p[3])
            return -1;
        fh->v1 = 1;
        fh->export_id = get32(p + 4);
        fh->dev = get64(p + 8);
        fh->ino = get64(p + 16);
        fh->tag = get64(p + 24);
        return 0;
    }
    if (p[1] != FH_V2 || n < FH_V2_HEAD)
        return -1;
    fh->export_id = get32(p + 4);
    fh->fsid = get64(p + 8);
    fh->ino = get64(p + 16);
    if (p[2] == FH_TAG && p[3] == 0 && n == FH_V2_HEAD + 8) {
        fh->tag = get64(p + FH_V2_HEAD);
        return 0;
    }
    if (p[2] != FH_KERNEL || p[3] == 0 || p[3] > UIW__NFS_FH_KMAX || n != FH_V2_HEAD + 4u + p[3])
        return -1;
    fh->ktype = (int)get32(p + FH_V2_HEAD);
    fh->klen = p[3];
    memcpy(fh->kh, p + FH_V2_HEAD + 4, fh->klen);
    fh->tag = khash(fh->kh, fh->klen, fh->ktype);
    return 0;
}

void uiw__nfs_fh_pseudo(uint64_t node, nfs_fh3 *out, char buf[UIW__NFS_FH_MAX])
{
    unsigned char *p = (unsigned char *)buf;
    p[0] = FH_MAGIC;
    p[1] = FH_V2;
    p[2] = FH_PSEUDO;
    p[3] = 0;
    put32(p + 4, 0);
    put64(p + 8, node);
    out->data.data_len = FH_PSEUDO_LEN;
    out->data.data_val = buf;
}

int uiw__nfs_fh_pseudo_node(const nfs_fh3 *h, uint64_t *node)
{
    const unsigned char *p = (const unsigned char *)h->data.data_val;
    if (!p || h->data.data_len != FH_PSEUDO_LEN || p[0] != FH_MAGIC || p[1] != FH_V2 ||
        p[2] != FH_PSEUDO || p[3] != 0 || get32(p + 4) != 0)
        return 0;
    *node = get64(p + 8);
    return 1;
}

/* ---- file systems ---- */

/* The entry of device dev, made from fd (on it) when new: a copy in *out. 0, or -1. */
static int fs_by_dev(struct uiw__nfs_fhcache *c, uint64_t dev, int fd, struct fsent *out)
{
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->nfs; i++)
        if (c->fs[i].dev == dev) {
            *out = c->fs[i];
            pthread_mutex_unlock(&c->lock);
            return 0;
        }
    pthread_mutex_unlock(&c->lock);
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0)
        return -1;
    struct fsent e = {0, dev, -1, 0};
    memcpy(&e.fsid, &sf.f_fsid,
           sizeof(e.fsid) < sizeof(sf.f_fsid) ? sizeof(e.fsid) : sizeof(sf.f_fsid));
    e.mfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct khandle k;
    if (e.mfd >= 0 && khandle_of(e.mfd, &k) == 0) {
        int t = open_by_handle_at(e.mfd, &k.fh, O_PATH | O_CLOEXEC);
        if (t >= 0) {
            e.by_handle = 1;
            close(t);
        }
    }
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (e.fsid == 0)
        e.fsid = dev | 1ull << 63; /* no id of its own: its device must do */
    for (unsigned i = 0; i < c->nfs; i++) {
        if (c->fs[i].dev == dev) { /* made meanwhile */
            if (e.mfd >= 0)
                close(e.mfd);
            *out = c->fs[i];
            pthread_mutex_unlock(&c->lock);
            return 0;
        }
        if (c->fs[i].fsid == e.fsid)
            e.fsid = dev | 1ull << 63; /* another's id: its device must do */
    }
    if (c->nfs < MAX_FS) {
        c->fs[c->nfs++] = e;
        *out = e;
    } else {
        rc = -1;
        if (e.mfd >= 0)
            close(e.mfd);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static int fs_by_id(struct uiw__nfs_fhcache *c, uint64_t fsid, uint64_t dev, struct fsent *out)
{
    pthread_mutex_lock(&c->lock);
    int rc = -1;
    for (unsigned i = 0; i < c->nfs && rc; i++)
        if (dev ? c->fs[i].dev == dev : c->fs[i].fsid == fsid) {
            *out = c->fs[i];
            rc = 0;
        }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++, o++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
            s += 3;
        } else {
            *o = *s;
        }
    }
    *o = 0;
}

/* The file systems mounted below the export, entered in the table (a handle of one the
 * server has not seen since it started); at most once every MOUNT_SCAN_MS. */
static void scan_mounts(struct uiw__nfs_fhcache *c, const struct uiw__nfs_export *ex)
{
    int64_t now = uiw__nfsd_now_ns();
    pthread_mutex_lock(&c->lock);
    int skip = c->mount_scan_ns && now - c->mount_scan_ns < MOUNT_SCAN_MS * 1000000ll;
    if (!skip)
        c->mount_scan_ns = now;
    pthread_mutex_unlock(&c->lock);
    if (skip)
        return;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return;
    char line[4096];
    size_t pl = strlen(ex->path);
    while (fgets(line, sizeof(line), f)) {
        /* id parent major:minor root mount-point ... */
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " ", &save);
        if (!tok)
            continue;
        unescape(tok);
        if (strncmp(tok, ex->path, pl) != 0 || (pl > 1 && tok[pl] != '/'))
            continue;
        int fd = open(tok, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        struct fsent e;
        if (fd >= 0 && fstat(fd, &st) == 0)
            fs_by_dev(c, (uint64_t)st.st_dev, fd, &e);
        if (fd >= 0)
            close(fd);
    }
    fclose(f);
}

/* The file system a decoded handle names, for export ex. 0, or -1 (none known). */
static int fs_of(struct uiw__nfsd *s, const struct uiw__nfs_export *ex,
                 const struct uiw__nfsd_fh *fh, struct fsent *out)
{
    if (fs_by_id(s->fhcache, fh->fsid, fh->v1 ? fh->dev : 0, out) == 0)
        return 0;
    scan_mounts(s->fhcache, ex);
    return fs_by_id(s->fhcache, fh->fsid, fh->v1 ? fh->dev : 0, out);
}

int uiw__nfs_fh_export_fs(struct uiw__nfsd *s, struct uiw__nfs_export *ex)
{
    struct fsent e;
    if (fs_by_dev(s->fhcache, (uint64_t)ex->dev, ex->rootfd, &e) != 0)
        return -ENOMEM;
    ex->fsid = e.fsid;
    return 0;
}

/* ---- exports, and being inside one ---- */

static struct uiw__nfs_export *export_by_id(struct uiw__nfsd *s, const struct uiw__nfsd_fh *fh)
{
    for (unsigned i = 0; i < s->nexports; i++)
        if ((fh->v1 ? s->exports[i].old_id : s->exports[i].id) == fh->export_id)
            return &s->exports[i];
    return NULL;
}

nfsstat3 uiw__nfs_fh_export_of(struct uiw__nfsd *s, const nfs_fh3 *h, struct uiw__nfsd_fh *fh,
                               struct uiw__nfs_export **ex)
{
    if (uiw__nfs_fh_decode(h, fh) != 0)
        return NFS3ERR_BADHANDLE;
    *ex = export_by_id(s, fh);
    return *ex ? NFS3_OK : NFS3ERR_STALE;
}

nfsstat3 uiw__nfs_fh_export(struct uiw__nfsd *s, const nfs_fh3 *h, struct uiw__nfs_export **ex)
{
    struct uiw__nfsd_fh fh;
    return uiw__nfs_fh_export_of(s, h, &fh, ex);
}

enum { OUTSIDE = 0, INSIDE = 1, NO_PATH = -1 };

/* Where the kernel says fd's object is: INSIDE the export (its root or below), OUTSIDE
 * it, or NO_PATH (a file opened by handle whose name the kernel has not looked up). */
static int where(const struct uiw__nfs_export *ex, int fd, int isdir)
{
    char p[32], path[PATH_MAX + 16];
    snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(p, path, sizeof(path) - 1);
    if (n <= 0)
        return isdir ? OUTSIDE : NO_PATH;
    path[n] = 0;
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof(deleted) - 1;
    if ((size_t)n > dl && strcmp(path + n - dl, deleted) == 0)
        path[n - dl] = 0;
    size_t pl = strlen(ex->path);
    if (pl == 1 || (strncmp(path, ex->path, pl) == 0 && (path[pl] == 0 || path[pl] == '/')))
        return INSIDE;
    if (!isdir && strcmp(path, "/") == 0)
        return NO_PATH; /* a disconnected name: only directories are always connected */
    return OUTSIDE;
}

/* Whether a file whose path the kernel does not know may be served (fh.c's header). */
static int no_path_ok(const struct uiw__nfs_export *ex)
{
    return !ex->subtree_check;
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
 * name is no longer it. `depth` bounds the walk up the records. What it finds is inside
 * the export: each step is a name in a directory found the same way, from its root. */
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
    if (!r || r->tag != tag || !r->name || !r->pino) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    uint64_t pdev = r->pdev, pino = r->pino;
    char *name = strdup(r->name);
    pthread_mutex_unlock(&c->lock);
    if (!name)
        return -1;
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
        if (r && r->tag == tag) {
            rec_close(c, r); /* its old descriptor may be of a path outside */
            rec_open(c, r, fd);
            rec_checked(r, ex->id);
        }
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
                struct rec *r =
                    rec_put(q->s->fhcache, q->dev, q->ino, q->tag, ddev, dino, de->d_name);
                if (r) {
                    rec_close(q->s->fhcache, r);
                    rec_open(q->s->fhcache, r, fd);
                    rec_checked(r, q->ex->id);
                }
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
                rec_put(q->s->fhcache, (uint64_t)st.st_dev, (uint64_t)st.st_ino, tag, ddev, dino,
                        de->d_name);
                pthread_mutex_unlock(&q->s->fhcache->lock);
            }
        }
        close(fd);
    }
    closedir(d);
    return found;
}

/* The search for a handle no record leads to, within its budget: NFS3_OK with *fd the
 * file or -1 (not found), NFS3ERR_STALE for an AUTH_NONE caller, NFS3ERR_JUKEBOX when
 * another search runs or the budget is spent. */
static nfsstat3 search_in_budget(struct uiw__nfsd *s, const struct uiw__nfs_cred *who,
                                 struct uiw__nfs_export *ex, uint64_t dev,
                                 const struct uiw__nfsd_fh *fh, int *fd)
{
    struct uiw__nfs_fhcache *c = s->fhcache;
    *fd = -1;
    if (who->anonymous) {
        pthread_mutex_lock(&c->lock);
        c->counts.search_refused++;
        pthread_mutex_unlock(&c->lock);
        return NFS3ERR_STALE;
    }
    int64_t t0 = uiw__nfsd_now_ns();
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
    struct search q = {s, ex, dev, fh->ino, fh->tag, 0};
    *fd = search_dir(&q, ex->rootfd, (uint64_t)ex->dev, (uint64_t)ex->ino, 0);
    int64_t spent = uiw__nfsd_now_ns() - t0;
    pthread_mutex_lock(&c->lock);
    c->searching = 0;
    c->budget_ns -= spent;
    pthread_mutex_unlock(&c->lock);
    return NFS3_OK;
}

enum { GONE = -2, NOT_YET = -1 };

/* fd (whose stat is st) if it may be served as a file of ex; else closed, and GONE (a
 * directory outside: directories have one name) or NOT_YET (a file outside, or of no known
 * path under subtree_check: maybe a link to it is still inside, found by reopen or search). */
static int judged(const struct uiw__nfs_export *ex, int fd, const struct stat *st)
{
    int w = where(ex, fd, S_ISDIR(st->st_mode));
    if (w == INSIDE || (w == NO_PATH && no_path_ok(ex)))
        return fd;
    close(fd);
    return w == OUTSIDE && S_ISDIR(st->st_mode) ? GONE : NOT_YET;
}

/* Through the record of (dev, ino): a new descriptor, GONE (the handle is STALE), or
 * NOT_YET (no record with a descriptor, or it must be found again by name). The record's
 * descriptor is checked to be inside ex when it was not lately. */
static int via_record(struct uiw__nfsd *s, struct uiw__nfs_export *ex, uint64_t dev,
                      const struct uiw__nfsd_fh *fh, struct stat *out)
{
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, dev, fh->ino);
    if (!r || r->fd < 0) {
        pthread_mutex_unlock(&c->lock);
        return NOT_YET;
    }
    if (r->tag != fh->tag) {
        /* The inode number belongs to the file we hold open: if that one is still linked,
         * the handle's file is gone. */
        struct stat st;
        int live = fstat(r->fd, &st) == 0 && st.st_nlink > 0;
        pthread_mutex_unlock(&c->lock);
        return live ? GONE : NOT_YET;
    }
    int fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
    lru_front(c, r);
    int check =
        r->checked_ex != ex->id || uiw__nfsd_now_ns() - r->checked_ns > RECHECK_MS * 1000000ll;
    pthread_mutex_unlock(&c->lock);
    if (fd < 0)
        return NOT_YET;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
        close(fd);
        uiw__nfs_fh_removed(s, (dev_t)dev, (ino_t)fh->ino);
        return GONE;
    }
    if (!check) {
        *out = st;
        return fd;
    }
    fd = judged(ex, fd, &st);
    if (fd < 0)
        return fd;
    pthread_mutex_lock(&c->lock);
    r = find(c, dev, fh->ino);
    if (r && r->tag == fh->tag)
        rec_checked(r, ex->id);
    pthread_mutex_unlock(&c->lock);
    *out = st;
    return fd;
}

/* By the kernel's handle: a new descriptor, GONE, or NOT_YET (not allowed, or a file
 * the kernel knows no path of, under subtree_check; or a file outside: maybe a link to it
 * is inside). */
static int via_khandle(struct uiw__nfsd *s, struct uiw__nfs_export *ex, const struct fsent *fe,
                       const struct uiw__nfsd_fh *fh, struct stat *out)
{
    if (!fh->klen || !fe->by_handle || fe->mfd < 0)
        return NOT_YET;
    struct khandle k;
    k.fh.handle_bytes = fh->klen;
    k.fh.handle_type = fh->ktype;
    memcpy(k.fh.f_handle, fh->kh, fh->klen);
    int fd = open_by_handle_at(fe->mfd, &k.fh, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ESTALE ? GONE : NOT_YET;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != fh->ino || st.st_nlink == 0) {
        close(fd);
        return GONE;
    }
    fd = judged(ex, fd, &st);
    if (fd < 0)
        return fd;
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = rec_put(c, fe->dev, fh->ino, fh->tag, 0, 0, NULL);
    if (r) {
        rec_open(c, r, fd);
        rec_checked(r, ex->id);
    }
    pthread_mutex_unlock(&c->lock);
    *out = st;
    return fd;
}

nfsstat3 uiw__nfs_fh_resolve(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                             int *fdp, struct uiw__nfs_export **exp, struct stat *sb)
{
    struct uiw__nfsd_fh fh;
    if (uiw__nfs_fh_decode(h, &fh) != 0)
        return NFS3ERR_BADHANDLE;
    struct uiw__nfs_export *ex = export_by_id(s, &fh);
    if (!ex)
        return NFS3ERR_STALE; /* ours, but of an export not served now */
    *exp = ex;
    struct fsent fe;
    if (fs_of(s, ex, &fh, &fe) != 0)
        return NFS3ERR_STALE;
    int fd;
    /* the attributes of the descriptor found, when finding it took them (st_nlink 0: not) */
    struct stat st;
    st.st_nlink = 0;
    if (fe.dev == (uint64_t)ex->dev && fh.ino == (uint64_t)ex->ino) {
        if (fh.tag != ex->tag)
            return NFS3ERR_STALE;
        fd = fcntl(ex->rootfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return NFS3ERR_SERVERFAULT;
    } else {
        fd = via_record(s, ex, fe.dev, &fh, &st);
        if (fd == NOT_YET)
            fd = via_khandle(s, ex, &fe, &fh, &st);
        if (fd == NOT_YET)
            fd = reopen(s, ex, fe.dev, fh.ino, fh.tag, 0);
        if (fd == GONE)
            return NFS3ERR_STALE;
        if (fd < 0) {
            nfsstat3 rs = search_in_budget(s, who, ex, fe.dev, &fh, &fd);
            if (rs != NFS3_OK)
                return rs;
        }
        if (fd < 0)
            return NFS3ERR_STALE;
    }
    if (sb) {
        if (st.st_nlink != 0)
            *sb = st;
        else if (fstat(fd, sb) != 0) {
            nfsstat3 rs = uiw__nfsd_errno(errno);
            close(fd);
            return rs;
        }
    }
    *fdp = fd;
    return NFS3_OK;
}

nfsstat3 uiw__nfs_fh_stat(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                          const struct uiw__nfsd_fh *fh, struct stat *st,
                          struct uiw__nfs_export **exp)
{
    struct uiw__nfs_export *ex = *exp;
    struct fsent fe;
    if (fs_of(s, ex, fh, &fe) != 0)
        return NFS3ERR_STALE;
    if (fe.dev == (uint64_t)ex->dev && fh->ino == (uint64_t)ex->ino) {
        if (fh->tag != ex->tag)
            return NFS3ERR_STALE;
        return fstat(ex->rootfd, st) == 0 ? NFS3_OK : uiw__nfsd_errno(errno);
    }
    /* An open record checked lately: one fstat on its own descriptor, under the lock that
     * keeps it open (no duplicate to make and close). */
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = find(c, fe.dev, fh->ino);
    if (r && r->fd >= 0 && r->tag == fh->tag && r->checked_ex == ex->id &&
        uiw__nfsd_now_ns() - r->checked_ns <= RECHECK_MS * 1000000ll) {
        int rc = fstat(r->fd, st);
        int err = errno;
        lru_front(c, r);
        pthread_mutex_unlock(&c->lock);
        if (rc != 0)
            return uiw__nfsd_errno(err);
        if (st->st_nlink == 0) {
            uiw__nfs_fh_removed(s, (dev_t)fe.dev, (ino_t)fh->ino);
            return NFS3ERR_STALE;
        }
        return NFS3_OK;
    }
    pthread_mutex_unlock(&c->lock);
    int fd;
    nfsstat3 rc = uiw__nfs_fh_resolve(s, who, h, &fd, exp, st);
    if (rc == NFS3_OK)
        close(fd);
    return rc;
}

/* The handle of fd, whose device and inode number the caller has. */
static int fh_of_known(struct uiw__nfsd *s, const struct uiw__nfs_export *ex, int fd, uint64_t dev,
                       uint64_t ino, struct uiw__nfsd_fh *fh)
{
    struct fsent fe;
    if (fs_by_dev(s->fhcache, dev, fd, &fe) != 0)
        return -ENOMEM;
    memset(fh, 0, sizeof(*fh));
    fh->export_id = ex->id;
    fh->fsid = fe.fsid;
    fh->ino = ino;
    struct khandle k;
    if (khandle_of(fd, &k) == 0) {
        fh->tag = khash(k.fh.f_handle, k.fh.handle_bytes, k.fh.handle_type);
        if (k.fh.handle_bytes <= UIW__NFS_FH_KMAX) {
            fh->ktype = k.fh.handle_type;
            fh->klen = k.fh.handle_bytes;
            memcpy(fh->kh, k.fh.f_handle, fh->klen);
        }
    } else {
        fh->tag = uiw__nfs_fh_tag(fd);
    }
    return 0;
}

int uiw__nfs_fh_of(struct uiw__nfsd *s, const struct uiw__nfs_export *ex, int fd,
                   struct uiw__nfsd_fh *fh)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    return fh_of_known(s, ex, fd, (uint64_t)st.st_dev, (uint64_t)st.st_ino, fh);
}

int uiw__nfs_fh_issue(struct uiw__nfsd *s, struct uiw__nfs_export *ex, int dirfd, const char *name,
                      int fd, int cross, nfs_fh3 *out, char buf[UIW__NFS_FH_MAX])
{
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO, &stx) != 0)
        return -errno;
    uint64_t dev = (uint64_t)makedev(stx.stx_dev_major, stx.stx_dev_minor);
    int root = dev == (uint64_t)ex->dev && stx.stx_ino == (uint64_t)ex->ino;
    if (!root && !cross && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
        return -EXDEV; /* a mount point below the export, not crossed */
    struct uiw__nfsd_fh fh;
    int rc = fh_of_known(s, ex, fd, dev, (uint64_t)stx.stx_ino, &fh);
    if (rc != 0)
        return rc;
    if (root) {
        fh.tag = ex->tag;
        uiw__nfs_fh_encode(&fh, out, buf);
        return 0;
    }
    uint64_t pdev = 0, pino = 0;
    struct stat dst;
    if (name && dirfd >= 0 && fstat(dirfd, &dst) == 0) {
        pdev = (uint64_t)dst.st_dev;
        pino = (uint64_t)dst.st_ino;
    }
    struct uiw__nfs_fhcache *c = s->fhcache;
    pthread_mutex_lock(&c->lock);
    struct rec *r = rec_put(c, dev, fh.ino, fh.tag, pdev, pino, name);
    if (r) {
        rec_open(c, r, fd);
        if (name)
            rec_checked(r, ex->id); /* just found by a name inside the export */
    }
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
    /* a file with another name keeps its record (its descriptor finds it still); one
     * gone, or one without a descriptor to tell, loses it: a server whose clients make
     * and remove files all day keeps no record of each (records are a cache: a handle
     * of a file still there is found again by the kernel's handle or a search) */
    struct stat st;
    if (r && (r->fd < 0 || fstat(r->fd, &st) != 0 || st.st_nlink == 0))
        rec_drop(c, r);
    pthread_mutex_unlock(&c->lock);
}
