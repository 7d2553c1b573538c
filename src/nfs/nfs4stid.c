/*
 * NFSv4.1 stateids and the open state they name (RFC 8881 sections 8.2, 9.7, 18.16,
 * 18.18, 18.2, 18.48, 18.38): what OPEN, OPEN_DOWNGRADE, CLOSE, TEST_STATEID,
 * FREE_STATEID and the I/O operations' stateid checks keep, under one lock of its own.
 *
 *   - A stateid's `other` is this server's boot verifier (random, so that a former
 *     server's stateids are told apart: NFS4ERR_STALE_STATEID), the stateid's index in
 *     a hash table and a random word (a guessed stateid is NFS4ERR_BAD_STATEID); its
 *     seqid starts at 1 and goes up with each change of the open (an upgrade, a
 *     downgrade). A seqid above the open's is NFS4ERR_BAD_STATEID, below it
 *     NFS4ERR_OLD_STATEID, 0 the open as it is now (section 8.2.2).
 *   - An open is of one open-owner (client ID and owner bytes) on one file (device and
 *     inode): a second OPEN of the same owner and file upgrades it (the union of the
 *     access and deny bits, the same stateid with its seqid up). The share reservations
 *     of the opens of a file are checked against each other: access that another open
 *     denies, or deny of access another open has, is NFS4ERR_SHARE_DENIED (section 9.7).
 *   - Each client holds at most UIW__NFS4_STIDS_MAX stateids and as many owners: past
 *     that OPEN gets NFS4ERR_RESOURCE, which no wait clears (the client must close some
 *     first), so that a client cannot grow the server's memory without bound. A client
 *     that goes (its lease expired, DESTROY_CLIENTID, a restart's new record) loses its
 *     opens and owners with it.
 *   - A lock stateid (section 9.1) is of one lock-owner (apart from the open-owners, though
 *     its bytes may be the same) on one file, made from an open of that file, whose
 *     access its I/O has; its locks are nfs4lock.c's. It goes with its open (CLOSE
 *     releases its locks, as knfsd's), its client, or FREE_STATEID once it holds no lock.
 *   - A delegation (section 10.2) is of a client, of no owner, on the file's list with its
 *     opens (access and deny none); nfs4deleg.c grants and recalls it. It goes with
 *     DELEGRETURN or its client; revoked, it is off its file but kept until FREE_STATEID.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "nfs/nfs4int.h"

#define HASH 256u

enum { ST_OPEN = 1, ST_LOCK, ST_DELEG };

struct owner {
    struct owner *next;
    clientid4 cid;
    int lock; /* a lock-owner (else an open-owner) */
    u_int len;
    unsigned nstids;
    char bytes[];
};

struct sfile {
    struct sfile *next;
    dev_t dev;
    ino_t ino;
    struct stid *opens; /* and delegations (access and deny 0: no share) */
    struct stid *locks;
};

/* A delegation's own state, and the handle its recall names. */
struct uiw__nfs4_deleg {
    int64_t recalled_ns; /* when its recall started (0: not recalled) */
    int revoked;
    u_int fhlen;
    char fh[UIW__NFS_FH_MAX];
};

struct stid {
    struct stid *hnext; /* the hash bucket's */
    struct stid *fnext; /* the file's opens and delegations, or its locks */
    uint32_t idx, rnd, seqid;
    int type;
    clientid4 cid;
    struct owner *ow;           /* NULL: a delegation's */
    struct sfile *f;            /* NULL: a revoked delegation's (off its file) */
    uint32_t access, deny;      /* OPEN4_SHARE_ACCESS_*, OPEN4_SHARE_DENY_* */
    struct stid *open;          /* a lock stateid's */
    struct uiw__nfs4_lk *lk;    /* a lock stateid's locks */
    struct uiw__nfs4_deleg *dg; /* a delegation's (ST_DELEG) */
};

/* What one client holds, counted against its caps. */
struct holder {
    struct holder *next;
    clientid4 cid;
    unsigned nstids, nowners;
    unsigned nrevoked; /* delegations revoked, not freed yet */
};

struct uiw__nfs4_stids {
    pthread_mutex_t lock;
    uint32_t boot, next_idx, rnd;
    unsigned max; /* stateids (and owners) a client may hold */
    struct stid *hash[HASH];
    struct sfile *files[HASH];
    struct owner *owners;
    struct holder *holders;
    struct uiw__nfs4_deleg_counts dcounts;
    unsigned nrecalling; /* delegations recalled, not returned or revoked yet */
    /* nrecalling and the holders' nrevoked summed, changed with the lock held and read
     * without it: SEQUENCE of a client with no delegation recalled nor revoked (nearly
     * every one) looks no further */
    atomic_uint unsettled;
};

struct uiw__nfs4_stids *uiw__nfs4_stids_create(void)
{
    struct uiw__nfs4_stids *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    uint32_t r[2];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r[0] = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
        r[1] = r[0] * 2654435761u;
    }
    t->boot = r[0];
    t->rnd = r[1] | 1;
    t->next_idx = 1;
    t->max = UIW__NFS4_STIDS_MAX;
    return t;
}

static void free_stid(struct uiw__nfs4_stids *t, struct stid *s);

void uiw__nfs4_stids_destroy(struct uiw__nfs4_stids *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < HASH; i++)
        while (t->hash[i])
            free_stid(t, t->hash[i]);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void uiw__nfs4_stids_set_max(struct uiw__nfs4_stids *t, unsigned max)
{
    pthread_mutex_lock(&t->lock);
    t->max = max;
    pthread_mutex_unlock(&t->lock);
}

/* xorshift32: the stateids' random words, seeded from the kernel's randomness. */
static uint32_t next_rnd(struct uiw__nfs4_stids *t)
{
    uint32_t x = t->rnd;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return t->rnd = x;
}

static struct holder *holder(struct uiw__nfs4_stids *t, clientid4 cid, int make)
{
    for (struct holder *h = t->holders; h; h = h->next)
        if (h->cid == cid)
            return h;
    if (!make)
        return NULL;
    struct holder *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->cid = cid;
    h->next = t->holders;
    t->holders = h;
    return h;
}

static void holder_put(struct uiw__nfs4_stids *t, struct holder *h)
{
    if (h->nstids || h->nowners)
        return;
    for (struct holder **pp = &t->holders; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    free(h);
}

static unsigned file_hash(dev_t dev, ino_t ino)
{
    return (unsigned)(((uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev) >> 56) % HASH;
}

static struct sfile *find_file(struct uiw__nfs4_stids *t, dev_t dev, ino_t ino, int make)
{
    unsigned h = file_hash(dev, ino);
    for (struct sfile *f = t->files[h]; f; f = f->next)
        if (f->dev == dev && f->ino == ino)
            return f;
    if (!make)
        return NULL;
    struct sfile *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->dev = dev;
    f->ino = ino;
    f->next = t->files[h];
    t->files[h] = f;
    return f;
}

static void file_put(struct uiw__nfs4_stids *t, struct sfile *f)
{
    if (f->opens || f->locks)
        return;
    for (struct sfile **pp = &t->files[file_hash(f->dev, f->ino)]; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    free(f);
}

static struct owner *find_owner(struct uiw__nfs4_stids *t, clientid4 cid, const state_owner4 *o,
                                int lock, struct holder *h, nfsstat4 *st)
{
    for (struct owner *w = t->owners; w; w = w->next)
        if (w->cid == cid && w->lock == lock && w->len == o->owner.owner_len &&
            (w->len == 0 || memcmp(w->bytes, o->owner.owner_val, w->len) == 0))
            return w;
    if (h->nowners >= t->max) {
        *st = NFS4ERR_RESOURCE;
        return NULL;
    }
    struct owner *w = calloc(1, sizeof(*w) + o->owner.owner_len);
    if (!w) {
        *st = NFS4ERR_DELAY;
        return NULL;
    }
    w->cid = cid;
    w->lock = lock;
    w->len = o->owner.owner_len;
    if (w->len) /* an empty owner is one too (RFC 8881 leaves it the client's) */
        memcpy(w->bytes, o->owner.owner_val, w->len);
    w->next = t->owners;
    t->owners = w;
    h->nowners++;
    return w;
}

/* An owner with no stateid left goes (section 8.3: its state ends with its last open). */
static void owner_put(struct uiw__nfs4_stids *t, struct owner *w)
{
    if (w->nstids)
        return;
    for (struct owner **pp = &t->owners; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    struct holder *h = holder(t, w->cid, 0);
    if (h) {
        h->nowners--;
        holder_put(t, h);
    }
    free(w);
}

/* s off its file's list, its locks' or its opens' (its end, or a delegation's
 * revocation). */
static void off_file(struct uiw__nfs4_stids *t, struct stid *s)
{
    if (!s->f)
        return;
    if (s->dg && s->dg->recalled_ns) {
        t->nrecalling--;
        atomic_fetch_sub(&t->unsettled, 1);
    }
    for (struct stid **pp = s->type == ST_LOCK ? &s->f->locks : &s->f->opens; *pp;
         pp = &(*pp)->fnext)
        if (*pp == s) {
            *pp = s->fnext;
            break;
        }
    file_put(t, s->f);
    s->f = NULL;
}

static void free_stid(struct uiw__nfs4_stids *t, struct stid *s)
{
    /* an open's lock stateids go first, their locks released */
    for (struct stid **pp = s->type == ST_OPEN ? &s->f->locks : NULL; pp && *pp;)
        if ((*pp)->open == s)
            free_stid(t, *pp);
        else
            pp = &(*pp)->fnext;
    uiw__nfs4_lk_free(s->lk);
    for (struct stid **pp = &t->hash[s->idx % HASH]; *pp; pp = &(*pp)->hnext)
        if (*pp == s) {
            *pp = s->hnext;
            break;
        }
    off_file(t, s);
    struct holder *h = holder(t, s->cid, 0);
    if (h) {
        h->nstids--;
        if (s->dg && s->dg->revoked) {
            h->nrevoked--;
            atomic_fetch_sub(&t->unsettled, 1);
        }
        holder_put(t, h);
    }
    if (s->ow) {
        s->ow->nstids--;
        owner_put(t, s->ow);
    }
    free(s->dg);
    free(s);
}

void uiw__nfs4_stids_client_gone(struct uiw__nfs4_stids *t, clientid4 cid)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    for (unsigned i = 0; i < HASH; i++)
        for (struct stid **pp = &t->hash[i]; *pp;) {
            if ((*pp)->cid == cid)
                free_stid(t, *pp);
            else
                pp = &(*pp)->hnext;
        }
    pthread_mutex_unlock(&t->lock);
}

static void stateid_of(const struct uiw__nfs4_stids *t, const struct stid *s, stateid4 *out)
{
    out->seqid = s->seqid;
    memcpy(out->other, &t->boot, 4);
    memcpy(out->other + 4, &s->idx, 4);
    memcpy(out->other + 8, &s->rnd, 4);
}

static int other_all(const stateid4 *s, unsigned char b)
{
    for (unsigned i = 0; i < NFS4_OTHER_SIZE; i++)
        if ((unsigned char)s->other[i] != b)
            return 0;
    return 1;
}

int uiw__nfs4_stid_special(const stateid4 *s)
{
    return other_all(s, 0) || other_all(s, 0xff);
}

/* The stateid s of client cid (lock held), with section 8.2.2's errors. */
static nfsstat4 find(struct uiw__nfs4_stids *t, clientid4 cid, const stateid4 *s, struct stid **out)
{
    if (uiw__nfs4_stid_special(s))
        return NFS4ERR_BAD_STATEID;
    uint32_t boot, idx, rnd;
    memcpy(&boot, s->other, 4);
    memcpy(&idx, s->other + 4, 4);
    memcpy(&rnd, s->other + 8, 4);
    if (boot != t->boot)
        return NFS4ERR_STALE_STATEID;
    struct stid *x = t->hash[idx % HASH];
    while (x && x->idx != idx)
        x = x->hnext;
    if (!x || x->rnd != rnd || x->cid != cid)
        return NFS4ERR_BAD_STATEID;
    if (s->seqid != 0 && s->seqid > x->seqid)
        return NFS4ERR_BAD_STATEID;
    if (s->seqid != 0 && s->seqid < x->seqid)
        return NFS4ERR_OLD_STATEID;
    *out = x;
    return NFS4_OK;
}

static void bump(struct stid *s)
{
    if (++s->seqid == 0)
        s->seqid = 1; /* 0 means "the latest" (section 8.2.2): skipped on a wrap */
}

/* A new stateid of type of client h on f (NULL: no memory for it), of owner o (a
 * lock-owner for ST_LOCK; NULL for ST_DELEG, of no owner), in the hash and on the file's
 * list, in *out with seqid 0 (lock held): NFS4ERR_RESOURCE past the client's cap. */
static nfsstat4 new_stid(struct uiw__nfs4_stids *t, struct holder *h, const state_owner4 *o,
                         struct sfile *f, int type, struct stid **out)
{
    nfsstat4 st = NFS4ERR_RESOURCE;
    struct owner *w = NULL;
    if (h->nstids < t->max && o)
        w = find_owner(t, h->cid, o, type == ST_LOCK, h, &st);
    int owned = h->nstids < t->max && (w || !o);
    struct stid *s = owned && f ? calloc(1, sizeof(*s)) : NULL;
    if (!s) {
        if (w)
            owner_put(t, w);
        if (owned)
            st = NFS4ERR_DELAY;
        if (f)
            file_put(t, f);
        return f ? st : NFS4ERR_DELAY;
    }
    s->idx = t->next_idx++;
    if (t->next_idx == 0)
        t->next_idx = 1;
    s->rnd = next_rnd(t);
    s->type = type;
    s->cid = h->cid;
    s->ow = w;
    s->f = f;
    s->hnext = t->hash[s->idx % HASH];
    t->hash[s->idx % HASH] = s;
    struct stid **list = type == ST_LOCK ? &f->locks : &f->opens;
    s->fnext = *list;
    *list = s;
    if (w)
        w->nstids++;
    h->nstids++;
    *out = s;
    return NFS4_OK;
}

/* The union of access (which 0) or deny (1) of the opens of f other than `but`. */
static uint32_t share_of(const struct sfile *f, const struct stid *but, int which)
{
    uint32_t u = 0;
    for (const struct stid *s = f ? f->opens : NULL; s; s = s->fnext)
        if (s != but)
            u |= which ? s->deny : s->access;
    return u;
}

nfsstat4 uiw__nfs4_stid_open(struct uiw__nfs4_stids *t, clientid4 cid, const open_owner4 *o,
                             dev_t dev, ino_t ino, uint32_t access, uint32_t deny, stateid4 *out)
{
    nfsstat4 st = NFS4_OK;
    pthread_mutex_lock(&t->lock);
    struct holder *h = holder(t, cid, 1);
    struct sfile *f = find_file(t, dev, ino, 0);
    struct stid *s = NULL;
    if (!h) {
        st = NFS4ERR_DELAY;
        goto out;
    }
    for (s = f ? f->opens : NULL; s; s = s->fnext)
        if (s->type == ST_OPEN && s->cid == cid && s->ow->len == o->owner.owner_len &&
            (s->ow->len == 0 || memcmp(s->ow->bytes, o->owner.owner_val, s->ow->len) == 0))
            break;
    uint32_t a = access | (s ? s->access : 0), d = deny | (s ? s->deny : 0);
    if ((a & share_of(f, s, 1)) || (d & share_of(f, s, 0))) {
        st = NFS4ERR_SHARE_DENIED;
        goto out;
    }
    if (s) {
        /* an upgrade: the same stateid, its seqid up (section 18.16.3) */
        s->access = a;
        s->deny = d;
        bump(s);
        stateid_of(t, s, out);
        goto out;
    }
    if (!f)
        f = find_file(t, dev, ino, 1);
    st = new_stid(t, h, o, f, ST_OPEN, &s);
    if (st != NFS4_OK)
        goto out;
    s->seqid = 1;
    s->access = access;
    s->deny = deny;
    stateid_of(t, s, out);
out:
    if (h)
        holder_put(t, h);
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* The open stateid `in` of cid on (dev, ino) (lock held). */
static nfsstat4 find_open(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                          const stateid4 *in, struct stid **s)
{
    nfsstat4 st = find(t, cid, in, s);
    if (st == NFS4_OK && ((*s)->type != ST_OPEN || (*s)->f->dev != dev || (*s)->f->ino != ino))
        st = NFS4ERR_BAD_STATEID;
    return st;
}

nfsstat4 uiw__nfs4_stid_downgrade(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                                  const stateid4 *in, uint32_t access, uint32_t deny, stateid4 *out)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s;
    nfsstat4 st = find_open(t, cid, dev, ino, in, &s);
    /* only to a subset of what the open has (section 18.18.3) */
    if (st == NFS4_OK && ((access & ~s->access) || (deny & ~s->deny)))
        st = NFS4ERR_INVAL;
    if (st == NFS4_OK) {
        s->access = access;
        s->deny = deny;
        bump(s);
        stateid_of(t, s, out);
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

nfsstat4 uiw__nfs4_stid_close(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const stateid4 *in)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s;
    nfsstat4 st = find_open(t, cid, dev, ino, in, &s);
    if (st == NFS4_OK)
        free_stid(t, s);
    pthread_mutex_unlock(&t->lock);
    return st;
}

nfsstat4 uiw__nfs4_stid_io(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                           const stateid4 *in, int write)
{
    nfsstat4 st = NFS4_OK;
    pthread_mutex_lock(&t->lock);
    if (uiw__nfs4_stid_special(in)) {
        /* section 8.2.3: the anonymous stateid, and the bypass one (all ones) that a
         * READ may use past share reservations; any other special one is no stateid */
        int anon = other_all(in, 0) && in->seqid == 0;
        int bypass = other_all(in, 0xff) && in->seqid == UINT32_MAX;
        if (!anon && !bypass)
            st = NFS4ERR_BAD_STATEID;
        else if (write || anon) {
            /* I/O without an open: another's deny of that access refuses it */
            uint32_t deny = share_of(find_file(t, dev, ino, 0), NULL, 1);
            if (deny & (write ? OPEN4_SHARE_DENY_WRITE : OPEN4_SHARE_DENY_READ))
                st = NFS4ERR_LOCKED;
        }
        goto out;
    }
    struct stid *s;
    st = find(t, cid, in, &s);
    if (st != NFS4_OK)
        goto out;
    if (s->type == ST_LOCK)
        s = s->open; /* a lock stateid's I/O is its open's */
    if (!s->f)
        st = NFS4ERR_DELEG_REVOKED;
    else if (s->f->dev != dev || s->f->ino != ino)
        st = NFS4ERR_BAD_STATEID;
    else if (write && !(s->access & OPEN4_SHARE_ACCESS_WRITE))
        st = NFS4ERR_OPENMODE;
    /* a READ through an open for writing alone is let through, as knfsd does: a client
     * reads around the pages it writes */
out:
    pthread_mutex_unlock(&t->lock);
    return st;
}

nfsstat4 uiw__nfs4_stid_test(struct uiw__nfs4_stids *t, clientid4 cid, const stateid4 *in)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s;
    nfsstat4 st = find(t, cid, in, &s);
    if (st == NFS4_OK && !s->f)
        st = NFS4ERR_DELEG_REVOKED;
    pthread_mutex_unlock(&t->lock);
    return st;
}

nfsstat4 uiw__nfs4_stid_free(struct uiw__nfs4_stids *t, clientid4 cid, const stateid4 *in)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s;
    nfsstat4 st = find(t, cid, in, &s);
    /* section 18.38.3: an open stateid is freed by CLOSE, not by FREE_STATEID */
    if (st == NFS4_OK && s->type == ST_OPEN)
        st = NFS4ERR_LOCKS_HELD;
    /* a delegation is given back by DELEGRETURN; freed here once revoked (section
     * 8.2.4: the client acknowledges the revocation); a lock stateid once it holds no
     * lock */
    else if (st == NFS4_OK && (s->type == ST_DELEG ? s->f != NULL : uiw__nfs4_lk_held(s->lk)))
        st = NFS4ERR_LOCKS_HELD;
    else if (st == NFS4_OK)
        free_stid(t, s);
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* ---- lock stateids ---- */

/* The lock stateid of lock-owner lo of cid on f (lock held; NULL: none). */
static struct stid *find_lock(struct sfile *f, clientid4 cid, const lock_owner4 *lo)
{
    for (struct stid *s = f ? f->locks : NULL; s; s = s->fnext)
        if (s->cid == cid && s->ow->len == lo->owner.owner_len &&
            (s->ow->len == 0 || memcmp(s->ow->bytes, lo->owner.owner_val, s->ow->len) == 0))
            return s;
    return NULL;
}

/* The owner of the lock d names when it is one of ours: a lock stateid of f other than
 * `but` holding a lock over its range (else cid 0, no owner: a local process's). */
static void owner_of(const struct sfile *f, const struct stid *but, struct uiw__nfs4_lkdenied *d)
{
    d->cid = 0;
    d->len = 0;
    for (const struct stid *s = f ? f->locks : NULL; s; s = s->fnext)
        if (s != but && uiw__nfs4_lk_overlaps(s->lk, d->start, d->end)) {
            d->cid = s->cid;
            d->len = s->ow->len;
            if (d->len)
                memcpy(d->owner, s->ow->bytes, d->len);
            return;
        }
}

/* The lock stateid of lo of h's client made from open o, its locks on fd (lock held). */
static nfsstat4 new_lock(struct uiw__nfs4_stids *t, struct holder *h, struct stid *o,
                         const lock_owner4 *lo, int fd, struct stid **out)
{
    struct uiw__nfs4_lk *lk = uiw__nfs4_lk_new(fd);
    if (!lk)
        return NFS4ERR_DELAY;
    nfsstat4 st = new_stid(t, h, lo, o->f, ST_LOCK, out);
    if (st != NFS4_OK) {
        uiw__nfs4_lk_free(lk);
        return st;
    }
    (*out)->open = o;
    (*out)->lk = lk;
    return NFS4_OK;
}

nfsstat4 uiw__nfs4_stid_lock(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                             const stateid4 *in, const lock_owner4 *lo, int fd,
                             const struct uiw__nfs4_lkrange *q, stateid4 *out,
                             struct uiw__nfs4_lkdenied *d)
{
    pthread_mutex_lock(&t->lock);
    struct holder *h = holder(t, cid, 1);
    struct stid *s = NULL, *l = NULL;
    int made = 0;
    nfsstat4 st = h ? find(t, cid, in, &s) : NFS4ERR_DELAY;
    /* a new lock-owner's comes from an open stateid, an existing one's is its lock
     * stateid (section 18.10.3), of the current file */
    if (st == NFS4_OK &&
        (s->type != (lo ? ST_OPEN : ST_LOCK) || s->f->dev != dev || s->f->ino != ino))
        st = NFS4ERR_BAD_STATEID;
    if (st == NFS4_OK && lo && !(l = find_lock(s->f, cid, lo))) {
        st = new_lock(t, h, s, lo, fd, &l);
        made = st == NFS4_OK;
        fd = made ? -1 : fd;
    } else if (st == NFS4_OK && !lo) {
        l = s;
    }
    uint32_t need = q->type == F_WRLCK ? OPEN4_SHARE_ACCESS_WRITE : OPEN4_SHARE_ACCESS_READ;
    if (st == NFS4_OK && !(l->open->access & need))
        st = NFS4ERR_OPENMODE;
    if (st == NFS4_OK)
        st = uiw__nfs4_lk_set(l->lk, q, d);
    if (st == NFS4ERR_DENIED)
        owner_of(l->f, l, d);
    if (st == NFS4_OK) {
        bump(l);
        stateid_of(t, l, out);
    } else if (made) {
        free_stid(t, l);
    }
    if (h)
        holder_put(t, h);
    pthread_mutex_unlock(&t->lock);
    if (fd >= 0)
        close(fd);
    return st;
}

nfsstat4 uiw__nfs4_stid_lockt(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const lock_owner4 *lo, int fd, const struct uiw__nfs4_lkrange *q,
                              struct uiw__nfs4_lkdenied *d)
{
    pthread_mutex_lock(&t->lock);
    struct sfile *f = find_file(t, dev, ino, 0);
    struct stid *l = find_lock(f, cid, lo);
    nfsstat4 st = uiw__nfs4_lk_test(l ? l->lk : NULL, fd, q, d);
    if (st == NFS4ERR_DENIED)
        owner_of(f, l, d);
    pthread_mutex_unlock(&t->lock);
    return st;
}

nfsstat4 uiw__nfs4_stid_locku(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const stateid4 *in, const struct uiw__nfs4_lkrange *q, stateid4 *out)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s;
    struct uiw__nfs4_lkdenied d;
    nfsstat4 st = find(t, cid, in, &s);
    if (st == NFS4_OK && (s->type != ST_LOCK || s->f->dev != dev || s->f->ino != ino))
        st = NFS4ERR_BAD_STATEID;
    if (st == NFS4_OK)
        st = uiw__nfs4_lk_set(s->lk, q, &d);
    if (st == NFS4_OK) {
        bump(s);
        stateid_of(t, s, out);
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* ---- delegations (nfs4deleg.c decides when; this keeps them) ---- */

static void deleg_revoke(struct uiw__nfs4_stids *t, struct stid *s);

/* Whether s is a delegation of a client other than cid. */
static int others_deleg(const struct stid *s, clientid4 cid)
{
    return s->type == ST_DELEG && s->cid != cid;
}

nfsstat4 uiw__nfs4_stid_deleg(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const nfs_fh4 *fh, stateid4 *out)
{
    if (fh->nfs_fh4_len > UIW__NFS_FH_MAX)
        return NFS4ERR_SERVERFAULT;
    nfsstat4 st = NFS4_OK;
    pthread_mutex_lock(&t->lock);
    struct sfile *f = find_file(t, dev, ino, 0);
    struct holder *h = holder(t, cid, 0);
    /* the file is open already (the OPEN before this); contention: another client's open
     * for writing, a recall under way, a delegation of this client there already */
    for (struct stid *s = f ? f->opens : NULL; s && st == NFS4_OK; s = s->fnext)
        if ((s->type == ST_OPEN && s->cid != cid && (s->access & OPEN4_SHARE_ACCESS_WRITE)) ||
            (s->type == ST_DELEG && (s->dg->recalled_ns || s->cid == cid)))
            st = NFS4ERR_DELAY;
    struct uiw__nfs4_deleg *dg = NULL;
    if (st == NFS4_OK && (!f || !h || !(dg = calloc(1, sizeof(*dg)))))
        st = NFS4ERR_RESOURCE;
    struct stid *s = NULL;
    if (st == NFS4_OK)
        st = new_stid(t, h, NULL, f, ST_DELEG, &s);
    if (st == NFS4_OK) {
        dg->fhlen = fh->nfs_fh4_len;
        memcpy(dg->fh, fh->nfs_fh4_val, fh->nfs_fh4_len);
        s->dg = dg;
        s->seqid = 1;
        stateid_of(t, s, out);
        t->dcounts.granted++;
    } else {
        free(dg);
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

unsigned uiw__nfs4_stid_deleg_conflict(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev,
                                       ino_t ino, int64_t now_ns, int64_t before_ns,
                                       struct uiw__nfs4_recall *out, unsigned n, unsigned *nout)
{
    unsigned held = 0;
    *nout = 0;
    pthread_mutex_lock(&t->lock);
    struct sfile *f = find_file(t, dev, ino, 0);
    for (struct stid *s = f ? f->opens : NULL, *next; s; s = next) {
        next = s->fnext;
        if (!others_deleg(s, cid))
            continue;
        if (s->dg->recalled_ns && s->dg->recalled_ns < before_ns) {
            deleg_revoke(t, s); /* f goes only with its last stateid: the loop ends */
            continue;
        }
        held++;
        if (s->dg->recalled_ns || *nout >= n)
            continue; /* recalled once only; one past n is recalled by the retry */
        s->dg->recalled_ns = now_ns ? now_ns : 1;
        struct uiw__nfs4_recall *r = &out[(*nout)++];
        r->cid = s->cid;
        stateid_of(t, s, &r->sid);
        r->fhlen = s->dg->fhlen;
        memcpy(r->fh, s->dg->fh, s->dg->fhlen);
        t->dcounts.recalled++;
        t->nrecalling++;
        atomic_fetch_add(&t->unsettled, 1);
    }
    pthread_mutex_unlock(&t->lock);
    return held;
}

/* The delegation that sid names, whoever holds it (lock held): NULL when none. */
static struct stid *find_deleg(struct uiw__nfs4_stids *t, const stateid4 *sid)
{
    uint32_t idx, rnd;
    memcpy(&idx, sid->other + 4, 4);
    memcpy(&rnd, sid->other + 8, 4);
    struct stid *s = t->hash[idx % HASH];
    while (s && s->idx != idx)
        s = s->hnext;
    return s && s->rnd == rnd && s->type == ST_DELEG ? s : NULL;
}

/* Revoke s (lock held): off its file, so that what waits for it goes on; kept for the
 * client's TEST_STATEID and FREE_STATEID. */
static void deleg_revoke(struct uiw__nfs4_stids *t, struct stid *s)
{
    if (!s->f)
        return;
    off_file(t, s);
    s->dg->revoked = 1;
    t->dcounts.revoked++;
    struct holder *h = holder(t, s->cid, 0);
    if (h) {
        h->nrevoked++;
        atomic_fetch_add(&t->unsettled, 1);
    }
}

void uiw__nfs4_stid_deleg_revoke(struct uiw__nfs4_stids *t, const stateid4 *sid)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s = find_deleg(t, sid);
    if (s)
        deleg_revoke(t, s);
    pthread_mutex_unlock(&t->lock);
}

int uiw__nfs4_stid_deleg_revoked(struct uiw__nfs4_stids *t, clientid4 cid, int64_t before_ns)
{
    if (atomic_load(&t->unsettled) == 0)
        return 0; /* no recall under way, nothing revoked */
    pthread_mutex_lock(&t->lock);
    /* a scan only while recalls are under way */
    for (unsigned i = 0; t->nrecalling && i < HASH; i++)
        for (struct stid *s = t->hash[i]; s; s = s->hnext)
            if (s->type == ST_DELEG && s->f && s->dg->recalled_ns && s->dg->recalled_ns < before_ns)
                deleg_revoke(t, s);
    struct holder *h = holder(t, cid, 0);
    int any = h && h->nrevoked;
    pthread_mutex_unlock(&t->lock);
    return any;
}

nfsstat4 uiw__nfs4_stid_deleg_check(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                                    const stateid4 *in, int ret)
{
    pthread_mutex_lock(&t->lock);
    struct stid *s;
    nfsstat4 st = find(t, cid, in, &s);
    if (st == NFS4_OK && s->type != ST_DELEG)
        st = NFS4ERR_BAD_STATEID;
    else if (st == NFS4_OK && !s->f)
        st = NFS4ERR_DELEG_REVOKED;
    else if (st == NFS4_OK && (s->f->dev != dev || s->f->ino != ino))
        st = NFS4ERR_BAD_STATEID;
    if (st == NFS4_OK && ret) {
        free_stid(t, s);
        t->dcounts.returned++;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

void uiw__nfs4_stid_deleg_counts(struct uiw__nfs4_stids *t, struct uiw__nfs4_deleg_counts *n)
{
    pthread_mutex_lock(&t->lock);
    *n = t->dcounts;
    pthread_mutex_unlock(&t->lock);
}
