/*
 * ONC RPC record marking (RFC 5531 section 11): a receiver that does no I/O.
 *
 * Between records the stream is read into a small staging buffer, as much as the socket
 * holds, and the records found whole in it are handed out: the last one in the stage
 * takes the staging buffer itself, the others are copied into buffers of their own
 * (small calls: one read for many, no copy for the common one-call-at-a-time client).
 * A record that does not end in the stage moves into a buffer of its own (a large one
 * when it is longer than a small one), and the rest of each of its fragments is read
 * straight into it, each fragment's header on its own: a WRITE's payload is read once,
 * into the buffer it is written to the file from.
 */
#include <errno.h>
#include <string.h>

#include "nfs/server.h"

enum {
    RM_STAGE, /* between records, or a record that began in the stage */
    RM_MARK,  /* a fragment header of a record in rec, read on its own */
    RM_BODY,  /* the rest of a fragment, read into rec */
};

#define LAST_FRAG 0x80000000u

void uiw__nfs_rm_init(struct uiw__nfs_rm *r, struct uiw__nfs_pool *pool, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->pool = pool;
    r->max = max;
    r->state = RM_STAGE;
}

void uiw__nfs_rm_fini(struct uiw__nfs_rm *r)
{
    uiw__nfs_pool_put(r->pool, r->rec.buf);
    uiw__nfs_pool_put(r->pool, r->stage);
    for (unsigned i = 0; i < r->nready; i++)
        uiw__nfs_pool_put(r->pool, r->ready[i].buf);
    r->rec.buf = r->stage = NULL;
    r->nready = 0;
}

int uiw__nfs_rm_partial(const struct uiw__nfs_rm *r)
{
    return r->rec.buf != NULL || r->st_len > 0 || r->markgot > 0;
}

static uint32_t get_mark(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* rec can hold `need` bytes: a buffer taken, or a small one swapped for a large one. */
static int rec_room(struct uiw__nfs_rm *r, size_t need)
{
    if (need > r->max)
        return -EMSGSIZE;
    struct uiw__nfs_buf *b = r->rec.buf;
    if (b && b->cap - r->rec.off >= need)
        return 0;
    struct uiw__nfs_buf *n =
        need <= UIW__NFS_SMALL ? uiw__nfs_pool_small(r->pool) : uiw__nfs_pool_large(r->pool);
    if (!n)
        return -ENOBUFS;
    if (b) {
        memcpy(n->data, b->data + r->rec.off, r->rec.len);
        uiw__nfs_pool_put(r->pool, b);
    }
    r->rec.buf = n;
    r->rec.off = 0;
    return 0;
}

static void push_ready(struct uiw__nfs_rm *r, struct uiw__nfs_buf *b, size_t off, size_t len)
{
    r->ready[r->nready++] = (struct uiw__nfs_rec){b, off, len};
}

/* The record in rec is whole. */
static void rec_done(struct uiw__nfs_rm *r)
{
    if (r->rec.len)
        push_ready(r, r->rec.buf, r->rec.off, r->rec.len);
    else
        uiw__nfs_pool_put(r->pool, r->rec.buf); /* an empty record: no call */
    r->rec.buf = NULL;
    r->rec.off = r->rec.len = 0;
}

/* A fragment header: what follows goes into rec. */
static int frag_begin(struct uiw__nfs_rm *r, uint32_t mark)
{
    r->frag_left = mark & ~LAST_FRAG;
    r->last = (mark & LAST_FRAG) != 0;
    return rec_room(r, r->rec.len + r->frag_left);
}

/* Hand out what the stage holds whole; move a record that goes on beyond it into rec. */
static int parse(struct uiw__nfs_rm *r)
{
    while (r->st_len >= 4 && r->nready < UIW__NFS_RM_READY) {
        uint8_t *p = (uint8_t *)r->stage->data + r->st_off;
        uint32_t mark = get_mark(p);
        size_t flen = mark & ~LAST_FRAG, have = r->st_len - 4;
        if (!r->rec.buf && (mark & LAST_FRAG) && have >= flen) {
            /* a whole record in the stage */
            if (flen == 0) {
                /* empty: no call */
            } else if (have == flen) {
                push_ready(r, r->stage, r->st_off + 4, flen);
                r->stage = NULL;
                r->st_off = r->st_len = 0;
                return 0;
            } else {
                struct uiw__nfs_buf *b = uiw__nfs_pool_small(r->pool);
                if (!b)
                    return -ENOBUFS;
                memcpy(b->data, p + 4, flen);
                push_ready(r, b, 0, flen);
            }
            r->st_off += 4 + flen;
            r->st_len -= 4 + flen;
            continue;
        }
        int rc = frag_begin(r, mark);
        if (rc != 0)
            return rc;
        size_t n = have < flen ? have : flen;
        memcpy(r->rec.buf->data + r->rec.off + r->rec.len, p + 4, n);
        r->rec.len += n;
        r->frag_left -= (uint32_t)n;
        r->st_off += 4 + n;
        r->st_len -= 4 + n;
        if (r->frag_left) {
            r->state = RM_BODY; /* the stage is empty: the rest goes straight into rec */
            break;
        }
        if (r->last)
            rec_done(r);
    }
    if (r->st_len == 0) {
        /* nothing unparsed: the stage goes back (an idle connection holds no buffer) */
        uiw__nfs_pool_put(r->pool, r->stage);
        r->stage = NULL;
        r->st_off = 0;
        if (r->state == RM_STAGE && r->rec.buf)
            r->state = RM_MARK; /* a record of several fragments: its next header */
    } else if (r->st_off && r->st_len < 4) {
        memmove(r->stage->data, r->stage->data + r->st_off, r->st_len);
        r->st_off = 0;
    }
    return 0;
}

/* A fragment header read on its own is whole: the fragment's bytes go into rec (once
 * there is room for them: on -ENOBUFS the header is kept for the next try). */
static int mark_done(struct uiw__nfs_rm *r)
{
    int rc = frag_begin(r, get_mark(r->mark));
    if (rc != 0)
        return rc;
    r->markgot = 0;
    if (r->frag_left) {
        r->state = RM_BODY;
    } else if (r->last) {
        rec_done(r);
        r->state = RM_STAGE;
    }
    return 0;
}

int uiw__nfs_rm_want(struct uiw__nfs_rm *r, struct iovec *iov)
{
    if (r->nready == UIW__NFS_RM_READY)
        return -EAGAIN;
    if (r->state == RM_MARK && r->markgot == 4) {
        int rc = mark_done(r);
        if (rc != 0)
            return rc;
        return uiw__nfs_rm_want(r, iov);
    }
    switch (r->state) {
    case RM_MARK:
        iov->iov_base = r->mark + r->markgot;
        iov->iov_len = 4 - r->markgot;
        return 0;
    case RM_BODY:
        iov->iov_base = r->rec.buf->data + r->rec.off + r->rec.len;
        iov->iov_len = r->frag_left;
        return 0;
    default:
        break;
    }
    if (r->st_len >= 4) {
        /* what the stage holds could not all be handed out before: again */
        int rc = parse(r);
        if (rc != 0)
            return rc;
        if (r->nready == UIW__NFS_RM_READY)
            return -EAGAIN;
        if (r->state != RM_STAGE)
            return uiw__nfs_rm_want(r, iov);
    }
    if (!r->stage) {
        r->stage = uiw__nfs_pool_small(r->pool);
        if (!r->stage)
            return -ENOBUFS;
        r->st_off = r->st_len = 0;
    }
    if (r->st_off && r->st_off + r->st_len > r->stage->cap / 2) {
        memmove(r->stage->data, r->stage->data + r->st_off, r->st_len);
        r->st_off = 0;
    }
    iov->iov_base = r->stage->data + r->st_off + r->st_len;
    iov->iov_len = r->stage->cap - r->st_off - r->st_len;
    return 0;
}

int uiw__nfs_rm_got(struct uiw__nfs_rm *r, size_t n)
{
    switch (r->state) {
    case RM_MARK:
        r->markgot += (unsigned)n;
        return r->markgot < 4 ? 0 : mark_done(r);
    case RM_BODY:
        r->rec.len += n;
        r->frag_left -= (uint32_t)n;
        if (r->frag_left)
            return 0;
        if (r->last) {
            rec_done(r);
            r->state = RM_STAGE;
        } else {
            r->state = RM_MARK;
        }
        return 0;
    default:
        r->st_len += n;
        return parse(r);
    }
}

int uiw__nfs_rm_take(struct uiw__nfs_rm *r, struct uiw__nfs_rec *out)
{
    if (!r->nready)
        return 0;
    *out = r->ready[0];
    r->nready--;
    memmove(r->ready, r->ready + 1, r->nready * sizeof(r->ready[0]));
    return 1;
}
