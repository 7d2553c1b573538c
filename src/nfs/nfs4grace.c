/*
 * NFSv4.1 client records on disk and the grace period after a restart (RFC 8881 sections
 * 8.4.2 and 8.4.3), for nfs4state.c, which calls these under its lock.
 *
 * With a state directory (uiw-nfsd --state-dir), each confirmed client has a record: a
 * file `c-NAME` holding its co_ownerid, written (to a temporary name, synced, renamed,
 * the directory synced) before the CREATE_SESSION that confirms the client is answered,
 * and removed when the client goes (DESTROY_CLIENTID, its lease run out). NAME is the
 * owner in hex, or for an owner of more than 120 bytes the hex of its first 112 and a
 * hash of all of it (the file's content tells such owners apart).
 *
 * At start the records found are the clients of the last instance: while any of them has
 * not sent RECLAIM_COMPLETE, for at most one grace period (the lease), the server is in
 * grace, in which those clients reclaim their state and any other new state waits
 * (NFS4ERR_GRACE). The records of the last instance's clients that did not come back are
 * removed when the grace period ends. Without a state directory there are no records and
 * no grace period: a reclaim gets NFS4ERR_NO_GRACE.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/nfs4grace.h"

#define NAME_HEX_MAX 120 /* owners of up to this many bytes are named by their hex */
#define NAME_HEX_CUT 112 /* longer ones by the hex of this many, then a hash */
#define NAME_LEN     (2 + 2 * NAME_HEX_CUT + 1 + 16 + 1)

struct prev {
    struct prev *next;
    char *owner;
    size_t len;
    int done; /* RECLAIM_COMPLETE received from it in this instance */
};

struct uiw__nfs4_grace {
    int dirfd;
    struct prev *prev; /* the last instance's clients */
    unsigned pending;  /* of them, those not done */
    int64_t end_ns;    /* the grace period's end at the latest */
    int over;          /* ended (and the records of the clients not come back removed) */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t fnv64(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void record_name(const char *owner, size_t len, char out[NAME_LEN])
{
    size_t n = len <= NAME_HEX_MAX ? len : NAME_HEX_CUT;
    char *o = out;
    *o++ = 'c';
    *o++ = '-';
    for (size_t i = 0; i < n; i++)
        o += sprintf(o, "%02x", (unsigned char)owner[i]);
    if (len > NAME_HEX_MAX)
        sprintf(o, "-%016llx", (unsigned long long)fnv64(owner, len));
    else
        *o = 0;
}

/* The content of record `name` (malloc'd, *len bytes), or NULL. */
static char *read_record(int dirfd, const char *name, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *buf = malloc(1025);
    ssize_t n = buf ? read(fd, buf, 1025) : -1;
    close(fd);
    if (n <= 0 || n > 1024) {
        free(buf);
        return NULL;
    }
    *len = (size_t)n;
    return buf;
}

struct uiw__nfs4_grace *uiw__nfs4_grace_open(const char *dir, unsigned grace_s)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return NULL;
    struct uiw__nfs4_grace *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = g->dirfd >= 0 ? fdopendir(dup(g->dirfd)) : NULL;
    if (!d) {
        if (g->dirfd >= 0)
            close(g->dirfd);
        free(g);
        return NULL;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "t-", 2) == 0) {
            unlinkat(g->dirfd, e->d_name, 0); /* a record not written whole */
            continue;
        }
        if (strncmp(e->d_name, "c-", 2) != 0)
            continue;
        size_t len;
        char *owner = read_record(g->dirfd, e->d_name, &len);
        struct prev *p = owner ? calloc(1, sizeof(*p)) : NULL;
        if (!p) {
            free(owner);
            continue;
        }
        p->owner = owner;
        p->len = len;
        p->next = g->prev;
        g->prev = p;
        g->pending++;
    }
    closedir(d);
    g->end_ns = now_ns() + (int64_t)grace_s * 1000000000;
    g->over = g->pending == 0;
    return g;
}

static struct prev *find_prev(struct uiw__nfs4_grace *g, const char *owner, size_t len)
{
    for (struct prev *p = g->prev; p; p = p->next)
        if (p->len == len && memcmp(p->owner, owner, len) == 0)
            return p;
    return NULL;
}

void uiw__nfs4_grace_close(struct uiw__nfs4_grace *g)
{
    if (!g)
        return;
    while (g->prev) {
        struct prev *p = g->prev;
        g->prev = p->next;
        free(p->owner);
        free(p);
    }
    close(g->dirfd);
    free(g);
}

int uiw__nfs4_grace_record(struct uiw__nfs4_grace *g, const char *owner, size_t len)
{
    if (!g)
        return 0;
    char name[NAME_LEN], tmp[NAME_LEN + 2];
    record_name(owner, len, name);
    snprintf(tmp, sizeof(tmp), "t-%s", name + 2);
    int fd = openat(g->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = write(fd, owner, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : -EIO;
    close(fd);
    if (rc == 0 && renameat(g->dirfd, tmp, g->dirfd, name) != 0)
        rc = -errno;
    if (rc == 0 && fsync(g->dirfd) != 0)
        rc = -errno;
    if (rc != 0)
        unlinkat(g->dirfd, tmp, 0);
    return rc;
}

void uiw__nfs4_grace_forget(struct uiw__nfs4_grace *g, const char *owner, size_t len)
{
    if (!g)
        return;
    /* a client of the last instance keeps its record through the grace period */
    struct prev *p = g->over ? NULL : find_prev(g, owner, len);
    if (p && !p->done)
        return;
    char name[NAME_LEN];
    record_name(owner, len, name);
    if (unlinkat(g->dirfd, name, 0) == 0)
        fsync(g->dirfd);
}

/* The grace period ended (every client of the last instance done, or its time up): the
 * records of the last instance's clients that did not come back go. */
static void end(struct uiw__nfs4_grace *g)
{
    g->over = 1;
    for (struct prev *p = g->prev; p; p = p->next) {
        if (p->done)
            continue;
        char name[NAME_LEN];
        record_name(p->owner, p->len, name);
        unlinkat(g->dirfd, name, 0);
    }
    fsync(g->dirfd);
}

int uiw__nfs4_grace_active(struct uiw__nfs4_grace *g)
{
    if (!g || g->over)
        return 0;
    if (g->pending == 0 || now_ns() >= g->end_ns) {
        end(g);
        return 0;
    }
    return 1;
}

int uiw__nfs4_grace_may_reclaim(struct uiw__nfs4_grace *g, const char *owner, size_t len)
{
    if (!uiw__nfs4_grace_active(g))
        return 0;
    struct prev *p = find_prev(g, owner, len);
    return p && !p->done;
}

void uiw__nfs4_grace_done(struct uiw__nfs4_grace *g, const char *owner, size_t len)
{
    if (!g || g->over)
        return;
    struct prev *p = find_prev(g, owner, len);
    if (p && !p->done) {
        p->done = 1;
        g->pending--;
    }
    uiw__nfs4_grace_active(g); /* the last one ends it */
}

unsigned uiw__nfs4_grace_pending(const struct uiw__nfs4_grace *g)
{
    return g && !g->over ? g->pending : 0;
}
