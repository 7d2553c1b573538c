/*
 * The NFSv4.1 back channel (RFC 8881 sections 2.10.3.1, 2.10.6.3, 18.33, 18.34, 20):
 * callbacks from uiw-nfsd to its clients on the connections they bound to their sessions.
 *
 * A transport makes a uiw__nfs4_conn for each connection that can carry backward calls:
 * calls go out on the connection the client opened, and their replies come back on it
 * (RFC 8881 section 2.10.3.1): TCP's REPLY records, or RPC-over-RDMA's backward direction
 * (RFC 8167; rdma.c). CREATE_SESSION with CONN_BACK_CHAN and
 * BIND_CONN_TO_SESSION make a connection the session's back channel; a CB_NULL probes it
 * at once (as knfsd does), and a probe or callback that fails or goes unanswered for the
 * timeout marks the path down: SEQUENCE then says CB_PATH_DOWN_SESSION, and the client
 * binds a connection again.
 *
 * A callback is a CB_COMPOUND of CB_SEQUENCE and one operation (CB_RECALL,
 * CB_RECALL_ANY). It is sent asynchronously: no server thread waits for a client. It takes
 * a slot of the session's back-channel table (ca_maxrequests of the back channel as
 * granted, at most SLOTS_MAX) and that slot's next seqid, and keeps both until it ends, so
 * that a call sent again (on a new connection after the old one closed or timed out) is
 * a retry the client's CB_SEQUENCE reply cache answers without running it twice. The
 * client's NFS4ERR_BADSLOT narrows the table, NFS4ERR_SEQ_MISORDERED steps the seqid
 * back once (a call given up that never reached the client), NFS4ERR_DELAY sends it
 * again a second later. A callback without a path for give_up (a lease) ends with
 * NFS4ERR_CB_PATH_DOWN: what a recall's caller revokes on.
 *
 * Everything here is under one lock: callbacks are rare next to the fore channel's
 * calls. Lock order: the sessions' lock (nfs4state.c), this one, then the transport's.
 * Completions run with no lock held. A timer thread per server ends what timed out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfs/nfs4cb.h"
#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"

#define SLOTS_MAX   16   /* back-channel slots used at most */
#define WAITING_MAX 64   /* callbacks waiting or in flight per session */
#define REC_MAX     2048 /* a callback's call record: the header, AUTH_SYS, the operations */
#define CB_VERS     1    /* NFS4_CALLBACK's version (RFC 8881 section 18.36.3) */
#define DELAY_NS    1000000000ll
#define TICK_MS     100

enum kind { K_NULL, K_RECALL, K_RECALL_ANY };

struct call {
    struct call *next;
    struct uiw__nfs4_cb *cb;
    enum kind kind;
    uint32_t xid;
    stateid4 sid;
    int truncate;
    u_int fhlen;
    char fh[NFS4_FHSIZE];
    uint32_t keep, mask;
    int slot; /* -1: none yet */
    uint32_t seqid;
    int stepped_back;          /* SEQ_MISORDERED answered once */
    struct uiw__nfs4_conn *on; /* sent on it, waiting for its reply (NULL: waiting to be sent) */
    int64_t sent_ns, not_before_ns, give_up_ns;
    int sends;
    uiw__nfs4_cb_done_fn done;
    void *arg;
    nfsstat4 status; /* when it ended */
};

struct uiw__nfs4_conn {
    const struct uiw__nfs4_conn_ops *ops;
    void *tp;                  /* NULL: closed */
    unsigned refs;             /* the transport's and each session's bound to it */
    struct call *sent;         /* calls waiting for their replies */
    struct uiw__nfs4_cbs *cbs; /* of the sessions bound to it (NULL: none yet) */
};

struct uiw__nfs4_cb {
    struct uiw__nfs4_cb *next; /* the server's list */
    struct uiw__nfs4_cbs *cbs;
    unsigned refs;
    char id[NFS4_SESSIONID_SIZE];
    uint32_t prog;
    uint32_t flavor;
    authsys_parms4 sys;
    char machine[256];
    uint32_t sys_gids[16];
    int wanted;                  /* the client asked for a back channel */
    int nosec;                   /* no flavor given for callbacks */
    int probed;                  /* the probe of the connection bound now came back */
    int down;                    /* the probe or a callback failed on the connection bound now */
    int ended;                   /* the session is gone */
    struct uiw__nfs4_conn *conn; /* bound now (NULL: none) */
    uint32_t nslots;
    uint32_t seq[SLOTS_MAX];
    struct call *busy[SLOTS_MAX];
    struct call *waiting; /* not sent (or to send again), in order */
    unsigned ncalls;      /* waiting or sent */
};

struct uiw__nfs4_cbs {
    struct uiw__nfs4_cb *cbs;
    struct call *finished; /* ended, their completions for the timer to run */
    uint32_t xid;
    int64_t timeout_ns, give_up_ns;
    struct uiw__nfsd_cb_counts n;
    pthread_t timer;
    pthread_cond_t cv;
    int stopping;
};

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- connections */

struct uiw__nfs4_conn *uiw__nfs4_conn_new(const struct uiw__nfs4_conn_ops *ops, void *tp)
{
    struct uiw__nfs4_conn *cn = calloc(1, sizeof(*cn));
    if (!cn)
        return NULL;
    cn->ops = ops;
    cn->tp = tp;
    cn->refs = 1;
    return cn;
}

int uiw__nfs4_conn_rdma(const struct uiw__nfs4_conn *cn)
{
    return cn && cn->ops->rdma;
}

static void conn_unref(struct uiw__nfs4_conn *cn)
{
    if (--cn->refs == 0)
        free(cn);
}

void uiw__nfs4_conn_put(struct uiw__nfs4_conn *cn)
{
    if (!cn)
        return;
    pthread_mutex_lock(&lk);
    conn_unref(cn);
    pthread_mutex_unlock(&lk);
}

/* ---------------------------------------------------------------- calls */

static void cb_unref(struct uiw__nfs4_cb *cb);

/* Take c off its connection's list of calls sent (lock held). */
static void unsend(struct call *c)
{
    if (!c->on)
        return;
    for (struct call **pp = &c->on->sent; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    conn_unref(c->on);
    c->on = NULL;
    c->next = NULL;
}

/* Put c back at the head of its session's calls to send (lock held). */
static void requeue(struct call *c)
{
    unsend(c);
    c->next = c->cb->waiting;
    c->cb->waiting = c;
}

/* c ends with status: off every list, its slot free (the seqid kept as used), onto
 * *done for its completion (lock held); uncounted. */
static void end_call(struct call *c, nfsstat4 status, struct call **done)
{
    struct uiw__nfs4_cb *cb = c->cb;
    unsend(c);
    for (struct call **pp = &cb->waiting; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    if (c->slot >= 0 && cb->busy[c->slot] == c)
        cb->busy[c->slot] = NULL;
    cb->ncalls--;
    c->status = status;
    c->next = *done;
    *done = c;
}

/* c ends with status, an error counted (lock held). */
static void finish(struct call *c, nfsstat4 status, struct call **done)
{
    if (status != NFS4_OK)
        c->cb->cbs->n.errors++;
    end_call(c, status, done);
}

/* c's connection went, or another was bound: a callback goes again on the next one with
 * its slot and seqid; a probe is dropped (the next bind sends its own) (lock held). */
static void take_back(struct call *c, struct call **done)
{
    if (c->kind == K_NULL)
        end_call(c, NFS4ERR_CB_PATH_DOWN, done);
    else
        requeue(c);
}

/* Completions for the timer thread to run, from callers that may hold the sessions' lock
 * or the API caller's own (lock held). */
static void defer(struct uiw__nfs4_cbs *cbs, struct call *done)
{
    while (done) {
        struct call *c = done;
        done = c->next;
        c->next = cbs->finished;
        cbs->finished = c;
    }
    pthread_cond_signal(&cbs->cv);
}

/* Run the completions of calls that ended (no lock held). */
static void complete(struct call *done)
{
    while (done) {
        struct call *c = done;
        done = c->next;
        if (c->done)
            c->done(c->arg, c->status);
        pthread_mutex_lock(&lk);
        cb_unref(c->cb);
        pthread_mutex_unlock(&lk);
        free(c);
    }
}

/* The call's record: mark, RPC header (RFC 5531), then CB_COMPOUND's arguments. Its
 * length, or 0 when it does not encode. */
static size_t encode(struct call *c, char *buf, size_t cap)
{
    struct uiw__nfs4_cb *cb = c->cb;
    XDR x;
    xdrmem_create(&x, buf + 4, (u_int)(cap - 4), XDR_ENCODE);
    uint32_t xid = c->xid, mtype = 0, rpcvers = 2, prog = cb->prog, vers = CB_VERS;
    uint32_t proc = c->kind == K_NULL ? 0 : 1, flavor = cb->flavor, zero = 0;
    int ok = xdr_uint32_t(&x, &xid) && xdr_uint32_t(&x, &mtype) && xdr_uint32_t(&x, &rpcvers) &&
             xdr_uint32_t(&x, &prog) && xdr_uint32_t(&x, &vers) && xdr_uint32_t(&x, &proc) &&
             xdr_uint32_t(&x, &flavor);
    if (ok && flavor == AUTH_SYS) {
        /* the credential's body: its length, then the authsys_parms */
        u_int at = xdr_getpos(&x);
        uint32_t len = 0;
        ok = xdr_uint32_t(&x, &len) && xdr_authsys_parms4(&x, &cb->sys);
        u_int end = xdr_getpos(&x);
        len = end - at - 4;
        ok = ok && xdr_setpos(&x, at) && xdr_uint32_t(&x, &len) && xdr_setpos(&x, end);
    } else {
        ok = ok && xdr_uint32_t(&x, &zero);
    }
    ok = ok && xdr_uint32_t(&x, &zero) && xdr_uint32_t(&x, &zero); /* verifier: AUTH_NONE */
    if (ok && c->kind != K_NULL) {
        nfs_cb_argop4 ops[2];
        memset(ops, 0, sizeof(ops));
        ops[0].argop = OP_CB_SEQUENCE;
        CB_SEQUENCE4args *s = &ops[0].nfs_cb_argop4_u.opcbsequence;
        memcpy(s->csa_sessionid, cb->id, NFS4_SESSIONID_SIZE);
        s->csa_sequenceid = c->seqid;
        s->csa_slotid = (uint32_t)c->slot;
        s->csa_highest_slotid = 0;
        for (uint32_t i = 0; i < cb->nslots; i++)
            if (cb->busy[i])
                s->csa_highest_slotid = i;
        s->csa_cachethis = FALSE;
        if (c->kind == K_RECALL) {
            ops[1].argop = OP_CB_RECALL;
            CB_RECALL4args *r = &ops[1].nfs_cb_argop4_u.opcbrecall;
            r->stateid = c->sid;
            r->truncate = c->truncate ? TRUE : FALSE;
            r->fh.nfs_fh4_len = c->fhlen;
            r->fh.nfs_fh4_val = c->fh;
        } else {
            ops[1].argop = OP_CB_RECALL_ANY;
            CB_RECALL_ANY4args *r = &ops[1].nfs_cb_argop4_u.opcbrecall_any;
            r->craa_objects_to_keep = c->keep;
            r->craa_type_mask.bitmap4_len = 1;
            r->craa_type_mask.bitmap4_val = &c->mask;
        }
        CB_COMPOUND4args a;
        memset(&a, 0, sizeof(a));
        a.minorversion = 1;
        a.callback_ident = 0; /* section 20.2: not used by NFSv4.1 */
        a.argarray.argarray_len = 2;
        a.argarray.argarray_val = ops;
        ok = xdr_CB_COMPOUND4args(&x, &a);
    }
    size_t len = ok ? xdr_getpos(&x) : 0;
    xdr_destroy(&x);
    if (!len)
        return 0;
    uint32_t mark = htonl(0x80000000u | (uint32_t)len);
    memcpy(buf, &mark, 4);
    return len + 4;
}

/* A free slot of cb (its lowest), or -1 (lock held). */
static int free_slot(struct uiw__nfs4_cb *cb)
{
    for (uint32_t i = 0; i < cb->nslots; i++)
        if (!cb->busy[i])
            return (int)i;
    return -1;
}

/* Send what waits on cb's connection, as far as slots allow (lock held). */
static void kick(struct uiw__nfs4_cb *cb, struct call **done)
{
    struct uiw__nfs4_cbs *cbs = cb->cbs;
    int64_t now = uiw__nfsd_now_ns();
    for (struct call **pp = &cb->waiting, *c; (c = *pp) != NULL;) {
        struct uiw__nfs4_conn *cn = cb->conn;
        if (!cn || !cn->tp)
            return; /* no path: they wait for a bind (or give up) */
        if (cb->down && c->kind != K_NULL)
            return; /* the path failed: a new bind first */
        if (now < c->not_before_ns) {
            pp = &c->next;
            continue;
        }
        if (c->kind != K_NULL && c->slot < 0) {
            int s = free_slot(cb);
            if (s < 0) {
                pp = &c->next;
                continue;
            }
            c->slot = s;
            c->seqid = ++cb->seq[s];
            cb->busy[s] = c;
        }
        char rec[REC_MAX];
        size_t len = encode(c, rec, sizeof(rec));
        if (!len) {
            finish(c, NFS4ERR_SERVERFAULT, done);
            continue;
        }
        if (cn->ops->send(cn->tp, rec, len) != 0) {
            cb->down = 1; /* the connection cannot take it: wait for another */
            return;
        }
        *pp = c->next;
        c->on = cn;
        cn->refs++;
        c->next = cn->sent;
        cn->sent = c;
        c->sent_ns = now;
        cbs->n.sent++;
        if (c->sends++)
            cbs->n.resent++;
        if (c->kind == K_RECALL)
            cbs->n.recalls++;
    }
}

/* A new call of cb queued (first: before those waiting) and started (lock held). 0 or
 * -errno. */
static int start_call(struct uiw__nfs4_cb *cb, struct call *c, int first, struct call **done)
{
    struct uiw__nfs4_cbs *cbs = cb->cbs;
    if (cb->ended)
        return -ENOENT;
    if (cb->ncalls >= WAITING_MAX)
        return -ENOSPC;
    c->cb = cb;
    cb->refs++;
    cb->ncalls++;
    c->slot = -1;
    c->xid = ++cbs->xid;
    c->give_up_ns = uiw__nfsd_now_ns() + cbs->give_up_ns;
    struct call **pp = &cb->waiting;
    while (*pp && !first)
        pp = &(*pp)->next;
    c->next = *pp;
    *pp = c;
    kick(cb, done);
    pthread_cond_signal(&cbs->cv);
    return 0;
}

/* ---------------------------------------------------------------- replies */

/* The reply's header up to its results (RFC 5531): 0 with *st the accept_stat, or -1
 * (not an accepted reply that decodes). */
static int dec_reply_hdr(XDR *x, uint32_t *xid, uint32_t *st)
{
    uint32_t mtype, rstat, vflavor;
    u_int vlen;
    if (!xdr_uint32_t(x, xid) || !xdr_uint32_t(x, &mtype) || mtype != 1 || !xdr_uint32_t(x, &rstat))
        return -1;
    if (rstat != MSG_ACCEPTED) {
        *st = SYSTEM_ERR; /* denied: an RPC error all the same */
        return 0;
    }
    if (!xdr_uint32_t(x, &vflavor) || !xdr_u_int(x, &vlen) || vlen > 400)
        return -1;
    if (!xdr_setpos(x, xdr_getpos(x) + ((vlen + 3) & ~3u)))
        return -1;
    return xdr_uint32_t(x, st) ? 0 : -1;
}

/* What a CB_COMPOUND's reply says (lock held): c ends, or goes again. */
static void compound_done(struct call *c, XDR *x, struct call **done)
{
    struct uiw__nfs4_cb *cb = c->cb;
    CB_COMPOUND4res res;
    memset(&res, 0, sizeof(res));
    if (!xdr_CB_COMPOUND4res(x, &res)) {
        xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4res), (char *)&res);
        cb->down = 1;
        cb->seq[c->slot]--; /* not run: the slot's seqid is as it was */
        finish(c, NFS4ERR_CB_PATH_DOWN, done);
        return;
    }
    nfsstat4 st = res.status;
    u_int n = res.resarray.resarray_len;
    nfs_cb_resop4 *r = res.resarray.resarray_val;
    int seq_ok = n >= 1 && r[0].resop == OP_CB_SEQUENCE;
    nfsstat4 sst = seq_ok ? r[0].nfs_cb_resop4_u.opcbsequence.csr_status : NFS4ERR_BADXDR;
    if (seq_ok && sst == NFS4_OK) {
        CB_SEQUENCE4resok *ok = &r[0].nfs_cb_resop4_u.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
        if (memcmp(ok->csr_sessionid, cb->id, NFS4_SESSIONID_SIZE) != 0 ||
            ok->csr_sequenceid != c->seqid || ok->csr_slotid != (uint32_t)c->slot) {
            cb->down = 1; /* not the answer to this call: a client gone wrong */
            finish(c, NFS4ERR_SEQ_MISORDERED, done);
        } else {
            /* the slot's seqid stays used; the operation's own status is the result */
            if (ok->csr_target_highest_slotid + 1 < cb->nslots &&
                ok->csr_target_highest_slotid + 1 > (uint32_t)c->slot)
                cb->nslots = ok->csr_target_highest_slotid + 1;
            finish(c, n >= 2 ? st : (st != NFS4_OK ? st : NFS4ERR_SERVERFAULT), done);
        }
    } else if (sst == NFS4ERR_BADSLOT && c->slot > 0) {
        /* fewer slots than granted: this one's table shrinks to below it, and the call
         * goes again on another */
        cb->seq[c->slot]--;
        cb->busy[c->slot] = NULL;
        cb->nslots = (uint32_t)c->slot;
        c->slot = -1;
        requeue(c);
    } else if (sst == NFS4ERR_SEQ_MISORDERED && !c->stepped_back && c->seqid > 1) {
        /* ahead of the client (a call given up never reached it): once with the seqid
         * before */
        c->stepped_back = 1;
        c->seqid = --cb->seq[c->slot];
        requeue(c);
    } else if (sst == NFS4ERR_DELAY) {
        c->not_before_ns = uiw__nfsd_now_ns() + DELAY_NS; /* the same slot and seqid */
        requeue(c);
    } else {
        if (c->slot >= 0)
            cb->seq[c->slot]--; /* a CB_SEQUENCE that failed used no seqid */
        cb->down = cb->down || sst == NFS4ERR_BADSESSION || !seq_ok;
        finish(c, seq_ok ? sst : NFS4ERR_BADXDR, done);
    }
    xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4res), (char *)&res);
}

void uiw__nfs4_conn_reply(struct uiw__nfs4_conn *cn, const char *rec, size_t len)
{
    if (!cn)
        return;
    struct call *done = NULL;
    XDR x;
    xdrmem_create(&x, (char *)(uintptr_t)rec, (u_int)len, XDR_DECODE);
    uint32_t xid = 0, st = 0;
    pthread_mutex_lock(&lk);
    int hdr = dec_reply_hdr(&x, &xid, &st);
    struct call *c = NULL;
    if (hdr == 0)
        for (c = cn->sent; c && c->xid != xid; c = c->next)
            ;
    if (!c) {
        if (cn->cbs)
            cn->cbs->n.dropped++; /* not ours, or not a reply: dropped */
        pthread_mutex_unlock(&lk);
        xdr_destroy(&x);
        return;
    }
    struct uiw__nfs4_cb *cb = c->cb;
    cb->cbs->n.replies++;
    unsend(c);
    if (st != SUCCESS) {
        /* an RPC error (PROG_UNAVAIL, denied ...): the client cannot take callbacks */
        cb->down = 1;
        if (c->slot >= 0)
            cb->seq[c->slot]--;
        finish(c, NFS4ERR_CB_PATH_DOWN, &done);
    } else if (c->kind == K_NULL) {
        if (cn == cb->conn) {
            cb->down = 0; /* the probe came back: the path is up */
            cb->probed = 1;
        }
        finish(c, NFS4_OK, &done);
    } else {
        compound_done(c, &x, &done);
    }
    kick(cb, &done);
    pthread_mutex_unlock(&lk);
    xdr_destroy(&x);
    complete(done);
}

void uiw__nfs4_conn_closed(struct uiw__nfs4_conn *cn)
{
    if (!cn)
        return;
    pthread_mutex_lock(&lk);
    cn->tp = NULL;
    /* its calls go again, with their slots and seqids, on the next connection bound */
    struct call *done = NULL;
    while (cn->sent)
        take_back(cn->sent, &done);
    if (cn->cbs) {
        for (struct uiw__nfs4_cb *cb = cn->cbs->cbs; cb; cb = cb->next) {
            if (cb->conn == cn) {
                cb->conn = NULL;
                conn_unref(cn);
            }
        }
    }
    pthread_mutex_unlock(&lk);
    complete(done);
}

/* ---------------------------------------------------------------- sessions */

int uiw__nfs4_cb_sec_pick(const callback_sec_parms4 *v, u_int n)
{
    for (u_int i = 0; i < n; i++)
        if (v[i].cb_secflavor == AUTH_NONE || v[i].cb_secflavor == AUTH_SYS)
            return (int)i;
    return n ? -1 : -2;
}

/* The flavor callbacks use (lock held or cb new). */
static void set_sec(struct uiw__nfs4_cb *cb, const callback_sec_parms4 *sec)
{
    cb->nosec = sec == NULL;
    cb->flavor = sec ? sec->cb_secflavor : AUTH_NONE;
    memset(&cb->sys, 0, sizeof(cb->sys));
    cb->sys.machinename = cb->machine;
    cb->machine[0] = 0;
    cb->sys.gids.gids_val = cb->sys_gids;
    if (cb->flavor != AUTH_SYS)
        return;
    const authsys_parms4 *p = &sec->callback_sec_parms4_u.cbsp_sys_cred;
    cb->sys.stamp = p->stamp;
    cb->sys.uid = p->uid;
    cb->sys.gid = p->gid;
    if (p->machinename) {
        strncpy(cb->machine, p->machinename, sizeof(cb->machine) - 1);
        cb->machine[sizeof(cb->machine) - 1] = 0;
    }
    u_int ng = p->gids.gids_len < 16 ? p->gids.gids_len : 16;
    if (ng)
        memcpy(cb->sys_gids, p->gids.gids_val, ng * sizeof(uint32_t));
    cb->sys.gids.gids_len = ng;
}

struct uiw__nfs4_cb *uiw__nfs4_cb_new(struct uiw__nfs4_cbs *cbs, const char id[NFS4_SESSIONID_SIZE],
                                      const channel_attrs4 *back, uint32_t prog,
                                      const callback_sec_parms4 *sec)
{
    struct uiw__nfs4_cb *cb = calloc(1, sizeof(*cb));
    if (!cb)
        return NULL;
    cb->cbs = cbs;
    cb->refs = 1;
    memcpy(cb->id, id, NFS4_SESSIONID_SIZE);
    cb->prog = prog;
    set_sec(cb, sec);
    cb->nslots = back->ca_maxrequests < 1           ? 1
                 : back->ca_maxrequests > SLOTS_MAX ? SLOTS_MAX
                                                    : back->ca_maxrequests;
    pthread_mutex_lock(&lk);
    cb->next = cbs->cbs;
    cbs->cbs = cb;
    pthread_mutex_unlock(&lk);
    return cb;
}

nfsstat4 uiw__nfs4_cb_ctl(struct uiw__nfs4_cb *cb, uint32_t prog, const callback_sec_parms4 *sec)
{
    pthread_mutex_lock(&lk);
    cb->prog = prog;
    set_sec(cb, sec);
    pthread_mutex_unlock(&lk);
    return NFS4_OK;
}

int uiw__nfs4_cb_bind(struct uiw__nfs4_cb *cb, struct uiw__nfs4_conn *cn)
{
    if (!cn)
        return -1;
    struct call *done = NULL;
    pthread_mutex_lock(&lk);
    cb->wanted = 1;
    if (!cn->tp || cb->nosec) {
        pthread_mutex_unlock(&lk);
        return -1;
    }
    if (cb->conn != cn) {
        if (cb->conn) {
            /* calls sent on the old connection go again on this one */
            for (struct call *c = cb->conn->sent, *next; c; c = next) {
                next = c->next;
                if (c->cb == cb)
                    take_back(c, &done);
            }
            conn_unref(cb->conn);
        }
        cb->conn = cn;
        cn->refs++;
    }
    cn->cbs = cb->cbs;
    cb->down = 0;
    cb->probed = 0;
    /* the probe first (section 2.10.3.1 lets the server test the path), then the calls
     * that waited for a path */
    struct call *p = calloc(1, sizeof(*p));
    if (p) {
        p->kind = K_NULL;
        if (start_call(cb, p, 1, &done) != 0)
            free(p);
    }
    kick(cb, &done);
    defer(cb->cbs, done); /* the caller holds the sessions' lock */
    pthread_mutex_unlock(&lk);
    return 0;
}

int uiw__nfs4_cb_up(struct uiw__nfs4_cb *cb)
{
    pthread_mutex_lock(&lk);
    int up = cb->conn && cb->conn->tp && !cb->down && cb->probed;
    pthread_mutex_unlock(&lk);
    return up;
}

uint32_t uiw__nfs4_cb_flags(struct uiw__nfs4_cb *cb)
{
    if (!cb)
        return 0;
    pthread_mutex_lock(&lk);
    int down = cb->wanted && (!cb->conn || !cb->conn->tp || cb->down);
    pthread_mutex_unlock(&lk);
    return down ? SEQ4_STATUS_CB_PATH_DOWN_SESSION : 0;
}

void uiw__nfs4_cb_get(struct uiw__nfs4_cb *cb)
{
    pthread_mutex_lock(&lk);
    cb->refs++;
    pthread_mutex_unlock(&lk);
}

/* Lock held. */
static void cb_unref(struct uiw__nfs4_cb *cb)
{
    if (--cb->refs)
        return;
    for (struct uiw__nfs4_cb **pp = &cb->cbs->cbs; *pp; pp = &(*pp)->next) {
        if (*pp == cb) {
            *pp = cb->next;
            break;
        }
    }
    if (cb->conn)
        conn_unref(cb->conn);
    free(cb);
}

void uiw__nfs4_cb_put(struct uiw__nfs4_cb *cb, int end)
{
    if (!cb)
        return;
    pthread_mutex_lock(&lk);
    if (end) {
        /* the timer ends its calls (their completions run without the sessions' lock,
         * which the caller may hold) */
        cb->ended = 1;
        pthread_cond_signal(&cb->cbs->cv);
    }
    cb_unref(cb);
    pthread_mutex_unlock(&lk);
}

/* ---------------------------------------------------------------- the operations */

nfsstat4 uiw__nfs4_bind_conn(struct uiw__nfs4_state *st, struct uiw__nfs4_conn *cn,
                             const BIND_CONN_TO_SESSION4args *a, BIND_CONN_TO_SESSION4resok *r)
{
    if (a->bctsa_dir != CDFC4_FORE && a->bctsa_dir != CDFC4_BACK &&
        a->bctsa_dir != CDFC4_FORE_OR_BOTH && a->bctsa_dir != CDFC4_BACK_OR_BOTH)
        return NFS4ERR_INVAL;
    struct uiw__nfs4_cb *cb = uiw__nfs4_session_cb(st, a->bctsa_sessid);
    if (!cb)
        return NFS4ERR_BADSESSION;
    /* the fore channel takes any connection (SP4_NONE: each one is bound to every
     * session it is used for, section 2.10.5.1); the back channel this one, when its
     * transport can carry callbacks */
    nfsstat4 st4 = NFS4_OK;
    int back = a->bctsa_dir != CDFC4_FORE && uiw__nfs4_cb_bind(cb, cn) == 0;
    if (a->bctsa_dir == CDFC4_BACK && !back)
        st4 = NFS4ERR_INVAL; /* back alone, on a connection that cannot carry it */
    memcpy(r->bctsr_sessid, a->bctsa_sessid, NFS4_SESSIONID_SIZE);
    r->bctsr_dir = a->bctsa_dir == CDFC4_FORE   ? CDFS4_FORE
                   : a->bctsa_dir == CDFC4_BACK ? CDFS4_BACK
                   : back                       ? CDFS4_BOTH
                                                : CDFS4_FORE;
    /* RDMA mode (section 18.34.3) is what an RPC-over-RDMA connection is in from its
     * start: asked for there, it holds; a TCP connection is never stepped up to it */
    r->bctsr_use_conn_in_rdma_mode =
        a->bctsa_use_conn_in_rdma_mode && uiw__nfs4_conn_rdma(cn) ? TRUE : FALSE;
    uiw__nfs4_cb_put(cb, 0);
    return st4;
}

nfsstat4 uiw__nfs4_backchannel_ctl(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref,
                                   const BACKCHANNEL_CTL4args *a)
{
    int i = uiw__nfs4_cb_sec_pick(a->bca_sec_parms.bca_sec_parms_val,
                                  a->bca_sec_parms.bca_sec_parms_len);
    if (i < 0)
        return NFS4ERR_ENCR_ALG_UNSUPP;
    struct uiw__nfs4_cb *cb = uiw__nfs4_slot_cb(st, ref);
    if (!cb)
        return NFS4ERR_BADSESSION;
    nfsstat4 rc = uiw__nfs4_cb_ctl(cb, a->bca_cb_program, &a->bca_sec_parms.bca_sec_parms_val[i]);
    uiw__nfs4_cb_put(cb, 0);
    return rc;
}

/* ---------------------------------------------------------------- the API */

static int queue(struct uiw__nfs4_state *st, clientid4 clid, struct call *c)
{
    struct uiw__nfs4_cb *cb = uiw__nfs4_client_cb(st, clid);
    if (!cb) {
        free(c);
        return -ENOENT;
    }
    struct call *done = NULL;
    pthread_mutex_lock(&lk);
    int rc = start_call(cb, c, 0, &done);
    defer(cb->cbs, done); /* never inside the caller's call */
    cb_unref(cb);
    pthread_mutex_unlock(&lk);
    if (rc != 0)
        free(c);
    return rc;
}

int uiw__nfs4_cb_recall(struct uiw__nfs4_state *st, clientid4 clid, const stateid4 *sid,
                        const nfs_fh4 *fh, int truncate, uiw__nfs4_cb_done_fn done, void *arg)
{
    if (fh->nfs_fh4_len > NFS4_FHSIZE)
        return -EINVAL;
    struct call *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->kind = K_RECALL;
    c->sid = *sid;
    c->truncate = truncate;
    c->fhlen = fh->nfs_fh4_len;
    memcpy(c->fh, fh->nfs_fh4_val, c->fhlen);
    c->done = done;
    c->arg = arg;
    return queue(st, clid, c);
}

int uiw__nfs4_cb_recall_any(struct uiw__nfs4_state *st, clientid4 clid, uint32_t keep,
                            uint32_t mask, uiw__nfs4_cb_done_fn done, void *arg)
{
    struct call *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->kind = K_RECALL_ANY;
    c->keep = keep;
    c->mask = mask;
    c->done = done;
    c->arg = arg;
    return queue(st, clid, c);
}

/* ---------------------------------------------------------------- the timer */

/* Calls that timed out or waited too long, and those of sessions that ended (lock held). */
static void tick(struct uiw__nfs4_cbs *cbs, struct call **done)
{
    int64_t now = uiw__nfsd_now_ns();
    /* finish keeps each session's record (its calls hold it until they complete) */
    for (struct uiw__nfs4_cb *cb = cbs->cbs; cb; cb = cb->next) {
        /* sent and unanswered: the path is down; they wait for a new one */
        if (cb->conn) {
            for (struct call *c = cb->conn->sent, *next; c; c = next) {
                next = c->next;
                if (c->cb != cb || now - c->sent_ns < cbs->timeout_ns)
                    continue;
                cbs->n.timeouts++;
                cb->down = 1;
                if (c->kind == K_NULL)
                    finish(c, NFS4ERR_CB_PATH_DOWN, done);
                else
                    requeue(c);
            }
        }
        for (struct call *c = cb->waiting, *next; c; c = next) {
            next = c->next;
            if (cb->ended)
                finish(c, NFS4ERR_BADSESSION, done);
            else if (now >= c->give_up_ns || (c->kind == K_NULL && !c->on && cb->down))
                finish(c, NFS4ERR_CB_PATH_DOWN, done);
        }
        if (cb->ended && cb->conn) {
            for (struct call *c = cb->conn->sent, *next; c; c = next) {
                next = c->next;
                if (c->cb == cb)
                    finish(c, NFS4ERR_BADSESSION, done);
            }
        }
        kick(cb, done);
    }
}

/* Whether a session has calls waiting or sent (lock held): only then has the timer
 * something to look at every TICK_MS. Else it sleeps until signalled: a call queued,
 * completions deferred to it, a session ended, the server stopping. */
static bool calls_pending(const struct uiw__nfs4_cbs *cbs)
{
    for (const struct uiw__nfs4_cb *cb = cbs->cbs; cb; cb = cb->next)
        if (cb->ncalls)
            return true;
    return false;
}

static void *timer_main(void *arg)
{
    struct uiw__nfs4_cbs *cbs = arg;
    pthread_mutex_lock(&lk);
    while (!cbs->stopping) {
        if (!calls_pending(cbs) && !cbs->finished) {
            pthread_cond_wait(&cbs->cv, &lk);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += TICK_MS * 1000000l;
            if (ts.tv_nsec >= 1000000000l) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000l;
            }
            pthread_cond_timedwait(&cbs->cv, &lk, &ts);
        }
        struct call *done = cbs->finished;
        cbs->finished = NULL;
        tick(cbs, &done);
        if (done) {
            pthread_mutex_unlock(&lk);
            complete(done);
            pthread_mutex_lock(&lk);
        }
    }
    pthread_mutex_unlock(&lk);
    return NULL;
}

struct uiw__nfs4_cbs *uiw__nfs4_cbs_create(void)
{
    struct uiw__nfs4_cbs *cbs = calloc(1, sizeof(*cbs));
    if (!cbs)
        return NULL;
    cbs->timeout_ns = 5000000000ll;
    cbs->give_up_ns = 90000000000ll;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cbs->xid = (uint32_t)ts.tv_nsec ^ ((uint32_t)ts.tv_sec << 12);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cbs->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&cbs->timer, NULL, timer_main, cbs) != 0) {
        pthread_cond_destroy(&cbs->cv);
        free(cbs);
        return NULL;
    }
    return cbs;
}

void uiw__nfs4_cbs_destroy(struct uiw__nfs4_cbs *cbs)
{
    if (!cbs)
        return;
    pthread_mutex_lock(&lk);
    cbs->stopping = 1;
    pthread_cond_signal(&cbs->cv);
    pthread_mutex_unlock(&lk);
    pthread_join(cbs->timer, NULL);
    /* what is left: every call ends; the sessions were dropped before */
    pthread_mutex_lock(&lk);
    struct call *done = cbs->finished;
    cbs->finished = NULL;
    for (struct uiw__nfs4_cb *cb = cbs->cbs; cb; cb = cb->next) {
        cb->ended = 1;
        cb->refs++;
    }
    for (struct uiw__nfs4_cb *cb = cbs->cbs; cb; cb = cb->next) {
        while (cb->waiting)
            finish(cb->waiting, NFS4ERR_CB_PATH_DOWN, &done);
        if (cb->conn) {
            for (struct call *c = cb->conn->sent, *next; c; c = next) {
                next = c->next;
                if (c->cb == cb)
                    finish(c, NFS4ERR_CB_PATH_DOWN, &done);
            }
        }
    }
    pthread_mutex_unlock(&lk);
    complete(done);
    pthread_mutex_lock(&lk);
    while (cbs->cbs) {
        struct uiw__nfs4_cb *cb = cbs->cbs;
        cb->refs = 1;
        cb_unref(cb);
    }
    pthread_mutex_unlock(&lk);
    pthread_cond_destroy(&cbs->cv);
    free(cbs);
}

void uiw__nfs4_cb_counts(struct uiw__nfs4_cbs *cbs, struct uiw__nfsd_cb_counts *n)
{
    pthread_mutex_lock(&lk);
    *n = cbs->n;
    pthread_mutex_unlock(&lk);
}

int uiw__nfsd_cb_counts(struct uiw__nfsd *s, struct uiw__nfsd_cb_counts *n)
{
    if (!s->nfs4)
        return -ENOTSUP;
    uiw__nfs4_cb_counts(uiw__nfs4_state_cbs(s->nfs4), n);
    return 0;
}

void uiw__nfs4_cb_set_timeout(struct uiw__nfs4_cbs *cbs, unsigned ms, unsigned give_up_ms)
{
    pthread_mutex_lock(&lk);
    cbs->timeout_ns = (int64_t)ms * 1000000;
    cbs->give_up_ns = (int64_t)give_up_ms * 1000000;
    pthread_mutex_unlock(&lk);
}

int uiw__nfs4_cb_client_up(struct uiw__nfs4_state *st, clientid4 clid)
{
    struct uiw__nfs4_cb *cb = uiw__nfs4_client_cb(st, clid);
    if (!cb)
        return 0;
    int up = uiw__nfs4_cb_up(cb);
    uiw__nfs4_cb_put(cb, 0);
    return up;
}
