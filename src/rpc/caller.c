/*
 * The requester side of the RPC layer (a client, or a server's backward-call client):
 * call slots (as many as the credits asked for), XIDs, synchronous and asynchronous
 * calls, timeouts, and retransmission with the same XIDs after a lost connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/byteorder.h"
#include "rpc/clnt_hooks.h"
#include "rpc/rpc_internal.h"

#define RECONNECT_MIN_MS 100
#define SCAN_NS          10000000u /* async deadlines are checked this often */

/* uiw__rpc_clnt_plug's depth in this thread: its asynchronous calls wait for the unplug. */
static _Thread_local unsigned held;

void uiw__rpc_clnt_plug(void)
{
    held++;
    uiw__rr_plug();
}

void uiw__rpc_clnt_unplug(void)
{
    if (held)
        held--;
    uiw__rr_unplug();
}

int uiw__rpc_caller_init(struct uiw__rpc_caller *c, struct uiw__rr_dev *d, unsigned nslots)
{
    c->dev = d;
    c->nslots = nslots;
    c->slots = calloc(nslots, sizeof(*c->slots));
    if (!c->slots)
        return -ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->connect_lock, NULL);
    pthread_mutex_init(&c->scan_lock, NULL);
    for (unsigned i = nslots; i-- > 0;) {
        c->slots[i].caller = c;
        c->slots[i].next = c->free;
        c->free = &c->slots[i];
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->xid = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec << 10 ^ (uint32_t)(uintptr_t)c;
    c->timeout.tv_sec = -1;
    return 0;
}

void uiw__rpc_caller_fini(struct uiw__rpc_caller *c)
{
    for (unsigned i = 0; c->slots && i < c->nslots; i++) {
        struct uiw__rr_conn *k = atomic_exchange(&c->slots[i].k, NULL);
        if (k)
            uiw__rr_conn_put(k);
    }
    free(c->slots);
    c->slots = NULL;
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->connect_lock);
    pthread_mutex_destroy(&c->scan_lock);
}

/* ---------------------------------------------------------------- slots */

static bool slot_free(void *arg)
{
    struct uiw__rpc_caller *c = arg;
    return atomic_load(&c->busy) < c->nslots || atomic_load(&c->ndone) > 0 || c->lost;
}

static void slot_put(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s)
{
    pthread_mutex_lock(&c->lock);
    struct uiw__rr_conn *k = atomic_exchange(&s->k, NULL);
    s->in_use = false;
    s->next = c->free;
    c->free = s;
    atomic_fetch_sub(&c->busy, 1);
    pthread_mutex_unlock(&c->lock);
    if (k)
        uiw__rr_conn_put(k);
}

/* Put s on the list of calls waiting for the next connection (it lets go of the last);
 * false, and nothing done, when s is an async call that expired meanwhile. */
static bool resend_later(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s)
{
    pthread_mutex_lock(&c->lock);
    if (s->async && !s->done) {
        pthread_mutex_unlock(&c->lock);
        return false;
    }
    struct uiw__rr_conn *k = atomic_exchange(&s->k, NULL);
    s->next = c->resend;
    c->resend = s;
    pthread_mutex_unlock(&c->lock);
    if (k)
        uiw__rr_conn_put(k);
    return true;
}

static int reconnect(struct uiw__rpc_caller *c, uint64_t deadline);

static bool past(uint64_t deadline)
{
    return deadline && uiw__rr_now_ns() >= deadline;
}

/* A free slot for a call ending by deadline, asynchronous when done is given: what expire
 * reads of it is set under the lock that it reads it under. */
static struct uiw__rpc_slot *slot_get(struct uiw__rpc_caller *c, uint64_t deadline,
                                      uiw_rpc_done_fn done, void *arg)
{
    for (;;) {
        pthread_mutex_lock(&c->lock);
        struct uiw__rpc_slot *s = c->free;
        if (s) {
            c->free = s->next;
            s->next = NULL;
            s->in_use = true;
            s->deadline = deadline;
            s->async = done != NULL;
            s->done = done;
            s->arg = arg;
            s->queued_done = false;
            atomic_fetch_add(&c->busy, 1);
        }
        pthread_mutex_unlock(&c->lock);
        if (s)
            return s;
        int r = uiw__rr_dev_wait(c->dev, slot_free, c, deadline);
        uiw__rpc_caller_run(c);
        if (c->lost && c->reconnect)
            reconnect(c, deadline);
        if (r == -ETIMEDOUT || past(deadline))
            return NULL;
    }
}

/* ---------------------------------------------------------------- connection */

/* The connection to send on (a reference), or NULL. */
static struct uiw__rr_conn *conn_of(struct uiw__rpc_caller *c)
{
    pthread_mutex_lock(&c->lock);
    struct uiw__rr_conn *k = c->conn;
    if (k && uiw__rr_conn_usable(k))
        uiw__rr_conn_get(k);
    else
        k = NULL;
    pthread_mutex_unlock(&c->lock);
    return k;
}

/* Send the orphans of a lost connection again (same XIDs) on the new one. */
static void resend(struct uiw__rpc_caller *c)
{
    struct uiw__rr_conn *k = conn_of(c);
    if (!k)
        return;
    pthread_mutex_lock(&c->lock);
    struct uiw__rpc_slot *list = c->resend;
    c->resend = NULL;
    pthread_mutex_unlock(&c->lock);
    while (list) {
        struct uiw__rpc_slot *s = list;
        list = s->next;
        s->next = NULL;
        pthread_mutex_lock(&c->lock);
        bool expired = s->async && !s->done;
        if (!expired) {
            uiw__rr_conn_get(k);
            atomic_store(&s->k, k);
        }
        pthread_mutex_unlock(&c->lock);
        if (expired) {
            /* it timed out while it waited (its callback ran) */
            uiw__rr_req_release(c->dev, &s->rq);
            slot_put(c, s);
            continue;
        }
        atomic_fetch_add(&c->n_retrans, 1);
        int r = uiw__rr_req_send(k, &s->rq);
        if (r) {
            s->rq.status = r;
            uiw__rpc_caller_req_done(k, &s->rq);
        }
    }
    uiw__rr_conn_put(k);
}

static int reconnect(struct uiw__rpc_caller *c, uint64_t deadline)
{
    pthread_mutex_lock(&c->connect_lock);
    int r = 0;
    struct uiw__rr_conn *k = conn_of(c);
    if (k) {
        uiw__rr_conn_put(k);
    } else if (!c->reconnect || c->closing) {
        r = -ENOTCONN;
    } else if (past(deadline)) {
        r = -ETIMEDOUT;
    } else {
        r = c->connect(c, deadline);
        if (r == 0) {
            pthread_mutex_lock(&c->lock);
            c->lost = false;
            pthread_mutex_unlock(&c->lock);
        } else {
            struct timespec ts = {0, RECONNECT_MIN_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (r == 0)
        resend(c);
    pthread_mutex_unlock(&c->connect_lock);
    return r;
}

/* ---------------------------------------------------------------- transport callbacks */

/* An async call ends: queue it for a thread driving the client. */
static void queue_done(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s)
{
    pthread_mutex_lock(&c->lock);
    if (!s->queued_done) {
        s->queued_done = true;
        s->next = NULL;
        if (c->done_tail)
            c->done_tail->next = s;
        else
            c->done_head = s;
        c->done_tail = s;
        atomic_fetch_add(&c->ndone, 1);
    }
    pthread_mutex_unlock(&c->lock);
}

/* A raw call ended: its reply (or failure) to its function, then the slot is free. */
static void raw_done(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s)
{
    struct uiw__rr_req *q = &s->rq;
    uiw__rpc_raw_fn fn = s->raw;
    if (!q->abandoned)
        fn(s->arg, q->status, q->status ? NULL : q->body, q->status ? 0 : q->body_len);
    uiw__rr_req_release(c->dev, q);
    pthread_mutex_lock(&c->lock);
    s->raw = NULL;
    pthread_mutex_unlock(&c->lock);
    slot_put(c, s);
}

void uiw__rpc_caller_req_done(struct uiw__rr_conn *conn, struct uiw__rr_req *q)
{
    (void)conn;
    struct uiw__rpc_slot *s = (struct uiw__rpc_slot *)q;
    struct uiw__rpc_caller *c = s->caller;
    if (s->raw) {
        raw_done(c, s);
        return;
    }
    if (q->abandoned) {
        /* its caller is gone (timed out): nothing to deliver */
        if (s->async && s->done == NULL) {
            uiw__rr_req_release(c->dev, q);
            slot_put(c, s);
            return;
        }
        if (!s->async) {
            uiw__rr_req_release(c->dev, q);
            slot_put(c, s);
            return;
        }
    }
    /* DONE is the last thing published: the waiter of a synchronous call may free the
     * slot the moment it sees it */
    if (s->async) {
        atomic_store(&q->state, UIW__RR_REQ_DONE);
        queue_done(c, s);
    } else {
        atomic_store(&q->state, UIW__RR_REQ_DONE);
    }
}

void uiw__rpc_caller_drained(struct uiw__rpc_caller *c, struct uiw__rr_conn *conn)
{
    struct uiw__rr_req *o = uiw__rr_conn_orphans(conn);
    while (o) {
        struct uiw__rpc_slot *s = (struct uiw__rpc_slot *)o;
        o = o->next;
        struct uiw__rpc_caller *sc = s->caller;
        if (atomic_load(&s->rq.state) == UIW__RR_REQ_INVALIDATING || s->rq.abandoned) {
            /* its reply was in (deliver it), or its caller is gone (release it) */
            uiw__rpc_caller_req_done(conn, &s->rq);
            continue;
        }
        if (sc->reconnect && !sc->closing) {
            uiw__rr_ibuf_put(sc->dev, s->rq.rib);
            s->rq.rib = NULL;
            if (!resend_later(sc, s)) {
                /* it timed out meanwhile: its callback ran, nothing to send again */
                s->rq.status = -ETIMEDOUT;
                uiw__rpc_caller_req_done(conn, &s->rq);
            }
        } else {
            s->rq.status = -ENOTCONN;
            uiw__rpc_caller_req_done(conn, &s->rq);
        }
    }
    if (c) {
        pthread_mutex_lock(&c->lock);
        bool mine = c->conn == conn;
        if (mine) {
            c->conn = NULL;
            c->lost = true;
        }
        pthread_mutex_unlock(&c->lock);
        if (mine)
            uiw__rr_conn_put(conn);
    }
    uiw__rr_dev_kick(conn->dev);
}

/* ---------------------------------------------------------------- one call */

static uint32_t next_xid(struct uiw__rpc_caller *c)
{
    pthread_mutex_lock(&c->lock);
    uint32_t x = ++c->xid;
    pthread_mutex_unlock(&c->lock);
    return x;
}

/* Decode the reply of a DONE slot into its result. */
static enum clnt_stat finish(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s,
                             struct rpc_err *err)
{
    struct uiw__rr_req *q = &s->rq;
    enum clnt_stat st;
    if (q->status) {
        st = uiw__rpc_stat_of(q->status, err);
        if (q->rdma_err) {
            err->re_lb.s1 = (int32_t)q->rdma_err;
            err->re_lb.s2 = (int32_t)q->err.length_needed;
        }
    } else {
        struct uiw__xs xs;
        struct uiw__rpc_rhdr h;
        uiw__xs_reply_dec(&xs, q, 0, c->threshold);
        st = uiw__rpc_dec_reply(&xs.x, &h, err);
        if (st == RPC_SUCCESS && c->clnt && c->clnt->cl_auth &&
            !AUTH_VALIDATE(c->clnt->cl_auth, &h.verf)) {
            err->re_status = st = RPC_AUTHERROR;
            err->re_why = AUTH_INVALIDRESP;
        }
        if (st == RPC_SUCCESS && s->xres && !s->xres(&xs.x, s->resp)) {
            err->re_status = st = RPC_CANTDECODERES;
            err->re_errno = EPROTO;
        }
    }
    s->stat = st;
    uiw__rr_req_release(c->dev, q);
    return st;
}

struct wait_arg {
    struct uiw__rpc_caller *c;
    struct uiw__rpc_slot *s;
};

static bool call_over(void *arg)
{
    struct wait_arg *w = arg;
    return atomic_load(&w->s->rq.state) == UIW__RR_REQ_DONE || w->c->lost ||
           atomic_load(&w->c->ndone) > 0 || (w->c->bc && atomic_load(&w->c->bc->nready) > 0);
}

/* Remove s from the list of calls waiting for a connection (true if it was there). */
static bool unresend(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s)
{
    pthread_mutex_lock(&c->lock);
    bool found = false;
    for (struct uiw__rpc_slot **pp = &c->resend; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* The caller of s gives up. Returns true when s ended meanwhile (use its outcome). */
static bool give_up(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s)
{
    atomic_fetch_add(&c->n_timeouts, 1);
    if (unresend(c, s)) {
        uiw__rr_req_release(c->dev, &s->rq);
        return false;
    }
    /* the connection it went out on, held by the slot: another thread may be reaping
     * it, so take a reference of one's own */
    pthread_mutex_lock(&c->lock);
    struct uiw__rr_conn *k = atomic_load(&s->k);
    if (k)
        uiw__rr_conn_get(k);
    pthread_mutex_unlock(&c->lock);
    if (k) {
        uiw__rr_req_abandon(k, &s->rq);
        uiw__rr_conn_put(k);
    }
    return atomic_load(&s->rq.state) == UIW__RR_REQ_DONE && !s->rq.abandoned;
}

enum clnt_stat uiw__rpc_call(struct uiw__rpc_caller *c, rpcproc_t proc, xdrproc_t xargs, void *argp,
                             xdrproc_t xres, void *resp, struct timeval timeout,
                             const struct uiw_rpc_call_opts *opts, uiw_rpc_done_fn done, void *arg,
                             struct rpc_err *err, int *start_err)
{
    memset(err, 0, sizeof(*err));
    if (c->timeout.tv_sec >= 0)
        timeout = c->timeout;
    uint64_t deadline = uiw__rpc_deadline(timeout);
    if (start_err)
        *start_err = 0;
    struct uiw__rpc_slot *s = slot_get(c, deadline, done, arg);
    if (!s) {
        if (start_err)
            *start_err = -ETIMEDOUT;
        err->re_status = RPC_TIMEDOUT;
        return RPC_TIMEDOUT;
    }
    struct uiw__rr_req *q = &s->rq;
    int r = uiw__rr_req_begin(c->dev, q);
    if (r) {
        slot_put(c, s);
        if (start_err)
            *start_err = r;
        return uiw__rpc_stat_of(r, err);
    }
    s->proc = proc;
    s->xres = xres;
    s->resp = resp;
    q->xid = next_xid(c);
    q->backward = c->backward;
    struct uiw__rr_conn *k = conn_of(c);
    if (!k && c->reconnect) {
        reconnect(c, deadline);
        k = conn_of(c);
    }
    if (c->backward && k && !uiw__rr_peer_takes_calls(k)) {
        /* the client's BRS became NONE (UPDPROP) since this CLIENT was made: not sent */
        uiw__rr_req_release(c->dev, q);
        slot_put(c, s);
        uiw__rr_conn_put(k);
        if (start_err)
            *start_err = -EOPNOTSUPP;
        return uiw__rpc_stat_of(-EOPNOTSUPP, err);
    }
    if (c->backward && k && uiw__rr_req_inline_only(k, q))
        q->no_ddp = true;
    uint32_t thr = q->no_ddp ? 0 : c->threshold;
    struct uiw__xs xs;
    uiw__xs_call_enc(&xs, c->dev, q, thr);
    AUTH *auth = c->clnt ? c->clnt->cl_auth : NULL;
    if (!uiw__rpc_enc_call(&xs.x, q->xid, c->prog, c->vers, proc, auth) || !xargs(&xs.x, argp)) {
        r = xs.err ? xs.err : -EINVAL;
        uiw__rr_req_release(c->dev, q);
        slot_put(c, s);
        if (k)
            uiw__rr_conn_put(k);
        if (start_err)
            *start_err = r == -EINVAL ? -EMSGSIZE : r;
        err->re_errno = -r;
        return err->re_status = r == -EMSGSIZE ? RPC_CANTSEND : RPC_CANTENCODEARGS;
    }
    /* Write chunk targets: the result buffers the caller named */
    if (opts && thr) {
        unsigned n = opts->nresult_bufs < UIW_RPC_MAX_DDP ? opts->nresult_bufs : UIW_RPC_MAX_DDP;
        for (unsigned i = 0; i < n && q->nwrites < UIW__RR_MAX_CHUNKS; i++) {
            if (!opts->result_bufs[i].addr || !opts->result_bufs[i].len)
                continue;
            q->writes[q->nwrites].addr = opts->result_bufs[i].addr;
            q->writes[q->nwrites].len = opts->result_bufs[i].len;
            q->writes[q->nwrites++].mr = NULL;
        }
    }
    q->reply_max = opts ? opts->reply_max : 0;
    if (k) {
        atomic_store(&s->k, k); /* the slot holds the reference until it is free */
        r = uiw__rr_req_send(k, q);
    } else {
        r = -ENOTCONN;
    }
    if (r == -ENOTCONN && c->reconnect && !c->closing) {
        /* wait for the next connection (lost set after: a reconnect then finds it) */
        bool queued = resend_later(c, s);
        c->lost = true;
        r = 0;
        if (!queued) {
            /* it expired meanwhile (its callback ran): nothing more to do */
            uiw__rr_req_release(c->dev, q);
            slot_put(c, s);
            return RPC_SUCCESS;
        }
    }
    if (r) {
        uiw__rr_req_release(c->dev, q);
        slot_put(c, s);
        if (start_err)
            *start_err = r;
        return uiw__rpc_stat_of(r, err);
    }
    if (s->async) {
        /* held for one doorbell only while more ended calls' callbacks are to run (a
         * callback that goes on working after starting it does not hold it meanwhile),
         * or while the thread said that more calls follow (uiw__rpc_clnt_plug) */
        if (!held && !atomic_load(&c->ndone))
            uiw__rr_plug_flush();
        return RPC_SUCCESS;
    }
    struct wait_arg w = {c, s};
    for (;;) {
        r = uiw__rr_dev_wait(c->dev, call_over, &w, deadline);
        if (atomic_load(&q->state) == UIW__RR_REQ_DONE)
            break;
        if (atomic_load(&c->ndone) || (c->bc && atomic_load(&c->bc->nready)))
            uiw__rpc_caller_run(c);
        if (c->lost && c->reconnect)
            reconnect(c, deadline);
        if ((r == -ETIMEDOUT || past(deadline)) && atomic_load(&q->state) != UIW__RR_REQ_DONE) {
            if (give_up(c, s))
                break;
            if (!q->abandoned)
                slot_put(c, s); /* not sent: the slot is free again */
            err->re_status = RPC_TIMEDOUT;
            err->re_errno = ETIMEDOUT;
            return RPC_TIMEDOUT;
        }
    }
    enum clnt_stat st = finish(c, s, err);
    slot_put(c, s);
    return st;
}

int uiw__rpc_call_raw(struct uiw__rpc_caller *c, const void *msg, uint32_t len, uiw__rpc_raw_fn fn,
                      void *arg)
{
    if (!msg || len < 8 || (len & 3) || !fn)
        return -EINVAL;
    uint32_t xid = uiw__get_be32((const uint8_t *)msg);
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->nslots; i++) {
        if (c->slots[i].in_use && c->slots[i].raw && c->slots[i].rq.xid == xid) {
            pthread_mutex_unlock(&c->lock);
            return 0; /* still in flight: its reply will come */
        }
    }
    struct uiw__rpc_slot *s = c->free;
    if (s) {
        c->free = s->next;
        s->next = NULL;
        s->in_use = true;
        s->raw = fn;
        s->arg = arg;
        s->async = false;
        s->done = NULL;
        s->rq.xid = xid;
        atomic_fetch_add(&c->busy, 1);
    }
    pthread_mutex_unlock(&c->lock);
    if (!s)
        return -EAGAIN;
    struct uiw__rr_req *q = &s->rq;
    int r = uiw__rr_req_begin(c->dev, q);
    struct uiw__rr_conn *k = r ? NULL : conn_of(c);
    if (!r && !k)
        r = -ENOTCONN;
    if (!r && !uiw__rr_peer_takes_calls(k))
        r = -EOPNOTSUPP;
    if (!r) {
        q->backward = c->backward;
        q->no_ddp = true;
        q->reply_max = 0;
        struct uiw__xs xs;
        uiw__xs_call_enc(&xs, c->dev, q, 0);
        if (!XDR_PUTBYTES(&xs.x, (const char *)msg, len))
            r = xs.err ? xs.err : -EMSGSIZE;
    }
    if (!r)
        r = uiw__rr_req_send(k, q);
    if (k)
        uiw__rr_conn_put(k);
    if (r) {
        uiw__rr_req_release(c->dev, q);
        pthread_mutex_lock(&c->lock);
        s->raw = NULL;
        pthread_mutex_unlock(&c->lock);
        slot_put(c, s);
    }
    return r;
}

/* ---------------------------------------------------------------- driving */

enum expiry { NOT_EXPIRED, EXPIRED_UNSENT, EXPIRED_SENT };

/* Whether s is an asynchronous call past its deadline that nothing has ended yet; if so,
 * it is claimed (its done cleared, *fn and *arg its callback): off the resend list
 * (EXPIRED_UNSENT, the slot is the caller's again), or in flight (EXPIRED_SENT, *k the
 * connection it went out on, a reference, or NULL while it moves between connections). */
static enum expiry claim_expired(struct uiw__rpc_caller *c, struct uiw__rpc_slot *s, uint64_t now,
                                 uiw_rpc_done_fn *fn, void **arg, struct uiw__rr_conn **k)
{
    pthread_mutex_lock(&c->lock);
    if (!s->in_use || !s->async || !s->deadline || now < s->deadline || s->queued_done ||
        s->done == NULL || atomic_load(&s->rq.state) == UIW__RR_REQ_DONE) {
        pthread_mutex_unlock(&c->lock);
        return NOT_EXPIRED;
    }
    *fn = s->done;
    *arg = s->arg;
    s->done = NULL; /* the slot is freed when the transport lets go of it */
    enum expiry e = EXPIRED_SENT;
    for (struct uiw__rpc_slot **pp = &c->resend; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            e = EXPIRED_UNSENT;
            break;
        }
    *k = e == EXPIRED_SENT ? atomic_load(&s->k) : NULL;
    if (*k)
        uiw__rr_conn_get(*k);
    pthread_mutex_unlock(&c->lock);
    return e;
}

/* Async calls past their deadline end with RPC_TIMEDOUT; one thread at a time (any
 * thread that polls or calls may come here). */
static void expire(struct uiw__rpc_caller *c)
{
    uint64_t now = uiw__rr_now_ns();
    if (now - atomic_load_explicit(&c->last_scan, memory_order_relaxed) < SCAN_NS ||
        pthread_mutex_trylock(&c->scan_lock) != 0)
        return;
    atomic_store_explicit(&c->last_scan, now, memory_order_relaxed);
    for (unsigned i = 0; i < c->nslots; i++) {
        struct uiw__rpc_slot *s = &c->slots[i];
        uiw_rpc_done_fn fn;
        void *arg;
        struct uiw__rr_conn *k;
        enum expiry x = claim_expired(c, s, now, &fn, &arg, &k);
        if (x == NOT_EXPIRED)
            continue;
        atomic_fetch_add(&c->n_timeouts, 1);
        if (x == EXPIRED_UNSENT || (k && uiw__rr_req_abandon(k, &s->rq))) {
            /* not on the wire (waiting for a connection or for credits): free now */
            uiw__rr_req_release(c->dev, &s->rq);
            slot_put(c, s);
        }
        if (k)
            uiw__rr_conn_put(k);
        struct rpc_err e = {.re_status = RPC_TIMEDOUT, .re_errno = ETIMEDOUT};
        fn(c->clnt, arg, RPC_TIMEDOUT, &e);
    }
    pthread_mutex_unlock(&c->scan_lock);
}

int uiw__rpc_caller_run(struct uiw__rpc_caller *c)
{
    int n = 0;
    /* the calls the callbacks start go out together */
    uiw__rr_plug();
    for (;;) {
        pthread_mutex_lock(&c->lock);
        struct uiw__rpc_slot *s = c->done_head;
        if (s) {
            c->done_head = s->next;
            if (!c->done_head)
                c->done_tail = NULL;
            atomic_fetch_sub(&c->ndone, 1);
        }
        pthread_mutex_unlock(&c->lock);
        if (!s)
            break;
        s->next = NULL;
        if (s->rq.abandoned || !s->done) {
            uiw__rr_req_release(c->dev, &s->rq);
            s->queued_done = false;
            slot_put(c, s);
            continue;
        }
        struct rpc_err e;
        enum clnt_stat st = finish(c, s, &e);
        uiw_rpc_done_fn fn = s->done;
        void *arg = s->arg;
        s->queued_done = false;
        slot_put(c, s);
        fn(c->clnt, arg, st, &e);
        n++;
    }
    uiw__rr_unplug();
    if (c->bc)
        while (uiw__rpc_resp_run_one(c->bc))
            ;
    expire(c);
    return n;
}

static bool poll_ready(void *arg)
{
    struct uiw__rpc_caller *c = arg;
    return atomic_load(&c->ndone) > 0 || c->lost || (c->bc && atomic_load(&c->bc->nready) > 0);
}

int uiw__rpc_caller_poll(struct uiw__rpc_caller *c, int timeout_ms)
{
    uint64_t deadline = timeout_ms < 0 ? 0 : uiw__rr_now_ns() + (uint64_t)timeout_ms * 1000000u;
    int n = uiw__rpc_caller_run(c);
    if (c->lost && c->reconnect && atomic_load(&c->busy))
        reconnect(c, deadline);
    if (n)
        return n;
    if (timeout_ms == 0) {
        uiw__rr_dev_poll(c->dev);
        return uiw__rpc_caller_run(c);
    }
    for (;;) {
        int r = uiw__rr_dev_wait(c->dev, poll_ready, c, deadline ? deadline : 0);
        if (c->lost && c->reconnect && atomic_load(&c->busy))
            reconnect(c, deadline);
        n = uiw__rpc_caller_run(c);
        if (n || r == -ETIMEDOUT || past(deadline))
            return n;
        if (timeout_ms < 0 && atomic_load(&c->busy) == 0)
            return 0;
    }
}
