/*
 * NFSv4.1 client records and sessions (RFC 8881 sections 2.4, 2.10, 18.35 to 18.37,
 * 18.46, 18.50): what EXCHANGE_ID, CREATE_SESSION, SEQUENCE, DESTROY_SESSION and
 * DESTROY_CLIENTID keep, under one lock (the operations are short and rare next to the
 * file operations they let through).
 *
 * A client record is keyed by its co_ownerid: EXCHANGE_ID of a new owner makes an
 * unconfirmed record; of a confirmed owner with the same verifier returns that record
 * (section 18.35.5 cases 2 and 3); with another verifier (the client restarted, case 5)
 * or of an unconfirmed owner (cases 4 and 6) makes a new unconfirmed record with a new
 * client ID, which the first CREATE_SESSION of it confirms, dropping the owner's older
 * record and its sessions. Principals are not compared (AUTH_SYS only, no state
 * protection). Each session's fore channel has a slot table with the seqid rules of
 * section 2.10.6.1; a slot keeps its last reply when the client asked for it (sa_cachethis)
 * or when the reply is the SEQUENCE alone. SEQUENCE and CREATE_SESSION renew the lease;
 * a client that does not renew it for a whole lease goes with its sessions and its
 * opens (nfs4stid.c; no courtesy for a client that comes back late). What a client
 * holds is bounded: sessions per client and client records (see below). Each session
 * has its back channel's state in nfs4cb.c (the program, flavor, slots and connection
 * of its callbacks), made by CREATE_SESSION and ended with the session.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nfs/nfs4cb.h"
#include "nfs/nfs4grace.h"
#include "nfs/nfs4int.h"

/* Sessions of one client at once: CREATE_SESSION past them gets NFS4ERR_NOSPC (section
 * 18.36.4: the server lacks the resources), so that a client that makes sessions in a
 * loop without destroying them holds a bounded part of the server. */
#define SESSIONS_PER_CLIENT 16
/* Client records at once: an EXCHANGE_ID past them drops the oldest unconfirmed record
 * (it holds no state), or gets NFS4ERR_DELAY when every record is confirmed. */
#define CLIENTS_MAX 4096

struct slot {
    uint32_t seqid;
    int inuse;
    char *reply; /* kept for a retry (NULL: none) */
    size_t len;
};

struct uiw__nfs4_session {
    struct uiw__nfs4_session *next;
    char id[NFS4_SESSIONID_SIZE];
    struct client *clp;
    channel_attrs4 fore, back; /* as granted (ca_rdma_ird empty) */
    struct uiw__nfs4_cb *cb;   /* its back channel (nfs4cb.c) */
    unsigned refs;             /* the list's (until destroyed) and each taken slot's */
    uint32_t nslots;
    struct slot slots[];
};

struct client {
    struct client *next;
    char *owner;
    u_int ownerlen;
    char verf[NFS4_VERIFIER_SIZE];
    clientid4 id;
    int confirmed;
    uint32_t cs_seq; /* the next CREATE_SESSION's csa_sequence */
    int reclaimed;   /* RECLAIM_COMPLETE received */
    int have_last;   /* the last CREATE_SESSION's reply, for its retry */
    nfsstat4 last_rc;
    CREATE_SESSION4resok last;
    int64_t renewed_ns; /* the lease's last renewal */
    unsigned nsessions;
};

struct uiw__nfs4_state {
    pthread_mutex_t lock;
    struct client *clients; /* the newest first */
    unsigned nclients;
    struct uiw__nfs4_session *sessions;
    uint32_t boot; /* the high word of client IDs: tells this server's from a former one's */
    uint32_t next_id, next_session;
    uint32_t lease;
    struct uiw__nfs4_cbs *cbs;     /* callbacks (nfs4cb.c) */
    int64_t scanned_ns;            /* the last look for expired leases */
    struct uiw__nfs4_grace *grace; /* client records and the grace period (NULL: none) */
    char owner[64];
    struct uiw__nfs4_stids *stids; /* the open state (nfs4stid.c) */
    /* reclaims granted in this instance's grace period (uiw__nfsd_reclaim_counts) */
    uint64_t reclaimed_opens, reclaimed_locks;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct uiw__nfs4_state *uiw__nfs4_state_create(unsigned lease_s, const char *state_dir)
{
    struct uiw__nfs4_state *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    if (state_dir && !(st->grace = uiw__nfs4_grace_open(state_dir, lease_s))) {
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->lock, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    st->boot = (uint32_t)ts.tv_sec ^ ((uint32_t)getpid() << 16);
    st->next_id = 1;
    st->next_session = 1;
    st->lease = lease_s;
    st->stids = uiw__nfs4_stids_create();
    st->cbs = uiw__nfs4_cbs_create();
    if (!st->stids || !st->cbs) {
        if (st->stids)
            uiw__nfs4_stids_destroy(st->stids);
        if (st->cbs)
            uiw__nfs4_cbs_destroy(st->cbs);
        uiw__nfs4_grace_close(st->grace);
        pthread_mutex_destroy(&st->lock);
        free(st);
        return NULL;
    }
    /* a callback unanswered for 5 s marks its path down; one without a path for a lease
     * ends (its delegation may then be revoked, section 10.2) */
    uiw__nfs4_cb_set_timeout(st->cbs, 5000, lease_s * 1000);
    char host[48] = "";
    gethostname(host, sizeof(host) - 1);
    strcpy(st->owner, "uiw-nfsd:");
    strncat(st->owner, host, sizeof(st->owner) - strlen(st->owner) - 1);
    return st;
}

static void session_unref(struct uiw__nfs4_session *ses)
{
    if (--ses->refs)
        return;
    for (uint32_t i = 0; i < ses->nslots; i++)
        free(ses->slots[i].reply);
    free(ses);
}

/* The list's reference to an unlinked session: its back channel ends (lock held). */
static void session_end(struct uiw__nfs4_session *ses)
{
    ses->clp = NULL;
    uiw__nfs4_cb_put(ses->cb, 1);
    ses->cb = NULL;
    session_unref(ses);
}

/* Unlink and drop the sessions of clp (lock held). */
static void drop_sessions(struct uiw__nfs4_state *st, struct client *clp)
{
    for (struct uiw__nfs4_session **pp = &st->sessions; *pp;) {
        struct uiw__nfs4_session *ses = *pp;
        if (ses->clp != clp) {
            pp = &ses->next;
            continue;
        }
        *pp = ses->next;
        session_end(ses);
    }
    clp->nsessions = 0;
}

static void client_free(struct client *clp)
{
    free(clp->owner);
    free(clp);
}

/* Unlink and free clp and its sessions (lock held). */
static void drop_client(struct uiw__nfs4_state *st, struct client *clp)
{
    drop_sessions(st, clp);
    if (clp->confirmed)
        uiw__nfs4_grace_forget(st->grace, clp->owner, clp->ownerlen);
    uiw__nfs4_stids_client_gone(st->stids, clp->id);
    for (struct client **pp = &st->clients; *pp; pp = &(*pp)->next) {
        if (*pp == clp) {
            *pp = clp->next;
            st->nclients--;
            break;
        }
    }
    client_free(clp);
}

void uiw__nfs4_state_destroy(struct uiw__nfs4_state *st)
{
    if (!st)
        return;
    /* the records stay for the next instance: the clients are let go, not forgotten */
    uiw__nfs4_grace_close(st->grace);
    st->grace = NULL;
    pthread_mutex_lock(&st->lock);
    while (st->clients)
        drop_client(st, st->clients);
    pthread_mutex_unlock(&st->lock);
    /* the callbacks first: their ends revoke delegations, which are the stateids' */
    uiw__nfs4_cbs_destroy(st->cbs);
    uiw__nfs4_stids_destroy(st->stids);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

uint32_t uiw__nfs4_lease(const struct uiw__nfs4_state *st)
{
    return st->lease;
}

void uiw__nfs4_limits(const struct uiw__nfsd *s, struct uiw__nfs4_limits *l)
{
    /* a READ or WRITE of max_io with room for the COMPOUND around it, as knfsd adds its
     * header room to its payload size */
    l->max_req = uiw__nfsd_max_io(s) + 16384;
    l->max_resp = l->max_req;
    l->max_cached = UIW__NFS_SMALL;
    l->max_ops = 16;
    /* a client may keep 64 calls in flight beside a synchronous one on a slot of its own */
    l->max_slots = 128;
}

/* Whether a session of clp has a request running (its slot taken). */
static int busy(struct uiw__nfs4_state *st, struct client *clp)
{
    for (struct uiw__nfs4_session *s = st->sessions; s; s = s->next)
        if (s->clp == clp && s->refs > 1)
            return 1;
    return 0;
}

/* Drop the clients whose lease ran out (not renewed for a lease; none with a request
 * running), with their sessions: looked for at most four times a lease (lock held; now:
 * the monotonic clock's nanoseconds). */
static void expire_at(struct uiw__nfs4_state *st, int64_t now)
{
    int64_t lease = (int64_t)st->lease * 1000000000;
    if (now - st->scanned_ns < lease / 4)
        return;
    st->scanned_ns = now;
    for (struct client *c = st->clients, *next; c; c = next) {
        next = c->next;
        if (now - c->renewed_ns > lease && !busy(st, c))
            drop_client(st, c);
    }
}

static void expire(struct uiw__nfs4_state *st)
{
    expire_at(st, now_ns());
}

static struct client *find_id(struct uiw__nfs4_state *st, clientid4 id)
{
    for (struct client *c = st->clients; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

/* Room for one more client record (lock held): 0, or -1 when every record is confirmed. */
static int room(struct uiw__nfs4_state *st)
{
    if (st->nclients < CLIENTS_MAX)
        return 0;
    struct client *oldest = NULL;
    for (struct client *c = st->clients; c; c = c->next)
        if (!c->confirmed)
            oldest = c;
    if (!oldest)
        return -1;
    drop_client(st, oldest);
    return 0;
}

static struct client *new_client(struct uiw__nfs4_state *st, const client_owner4 *o)
{
    struct client *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->owner = malloc(o->co_ownerid.co_ownerid_len ? o->co_ownerid.co_ownerid_len : 1);
    if (!c->owner) {
        free(c);
        return NULL;
    }
    memcpy(c->owner, o->co_ownerid.co_ownerid_val, o->co_ownerid.co_ownerid_len);
    c->ownerlen = o->co_ownerid.co_ownerid_len;
    memcpy(c->verf, o->co_verifier, NFS4_VERIFIER_SIZE);
    c->id = (uint64_t)st->boot << 32 | st->next_id++;
    c->cs_seq = 1;
    c->renewed_ns = now_ns();
    c->next = st->clients;
    st->clients = c;
    st->nclients++;
    return c;
}

nfsstat4 uiw__nfs4_exchange_id(struct uiw__nfs4_state *st, const EXCHANGE_ID4args *a,
                               EXCHANGE_ID4resok *r)
{
    if (a->eia_state_protect.spa_how != SP4_NONE)
        return NFS4ERR_NOTSUPP; /* no machine-credential or SSV protection */
    if (a->eia_flags &
        ~(uint32_t)(EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR |
                    EXCHGID4_FLAG_BIND_PRINC_STATEID | EXCHGID4_FLAG_USE_NON_PNFS |
                    EXCHGID4_FLAG_USE_PNFS_MDS | EXCHGID4_FLAG_USE_PNFS_DS |
                    EXCHGID4_FLAG_UPD_CONFIRMED_REC_A | EXCHGID4_FLAG_SUPP_FENCE_OPS))
        return NFS4ERR_INVAL;
    const client_owner4 *o = &a->eia_clientowner;
    if (o->co_ownerid.co_ownerid_len == 0)
        return NFS4ERR_INVAL; /* an owner that names nobody tells no client from another */
    int update = (a->eia_flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A) != 0;
    nfsstat4 rc = NFS4_OK;
    pthread_mutex_lock(&st->lock);
    expire(st);
    struct client *conf = NULL, *unconf = NULL;
    for (struct client *c = st->clients; c; c = c->next) {
        if (c->ownerlen != o->co_ownerid.co_ownerid_len ||
            memcmp(c->owner, o->co_ownerid.co_ownerid_val, c->ownerlen) != 0)
            continue;
        if (c->confirmed)
            conf = c;
        else
            unconf = c;
    }
    struct client *got = NULL;
    if (update) {
        /* section 18.35.5: an update needs the confirmed record of the same verifier */
        if (!conf)
            rc = NFS4ERR_NOENT;
        else if (memcmp(conf->verf, o->co_verifier, NFS4_VERIFIER_SIZE) != 0)
            rc = NFS4ERR_NOT_SAME;
        else
            got = conf;
    } else if (conf && memcmp(conf->verf, o->co_verifier, NFS4_VERIFIER_SIZE) == 0) {
        got = conf; /* the same incarnation again */
    } else {
        /* new, restarted (a confirmed record of another verifier, kept until the new one
         * is confirmed) or unconfirmed again: a new record */
        if (unconf)
            drop_client(st, unconf);
        if (room(st) != 0)
            rc = NFS4ERR_DELAY;
        else if (!(got = new_client(st, o)))
            rc = NFS4ERR_SERVERFAULT;
    }
    if (got) {
        got->renewed_ns = now_ns();
        r->eir_clientid = got->id;
        r->eir_sequenceid = got->cs_seq;
        r->eir_flags =
            EXCHGID4_FLAG_USE_NON_PNFS | (got->confirmed ? EXCHGID4_FLAG_CONFIRMED_R : 0);
        r->eir_state_protect.spr_how = SP4_NONE;
        r->eir_server_owner.so_minor_id = 0;
        r->eir_server_owner.so_major_id.so_major_id_len = (u_int)strlen(st->owner);
        r->eir_server_owner.so_major_id.so_major_id_val = st->owner;
        r->eir_server_scope.eir_server_scope_len = (u_int)strlen(st->owner);
        r->eir_server_scope.eir_server_scope_val = st->owner;
        r->eir_server_impl_id.eir_server_impl_id_len = 0;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static uint32_t clamp(uint32_t v, uint32_t max)
{
    return v < max ? v : max;
}

nfsstat4 uiw__nfs4_create_session(struct uiw__nfs4_state *st, const struct uiw__nfs4_limits *l,
                                  struct uiw__nfs4_conn *conn, const CREATE_SESSION4args *a,
                                  CREATE_SESSION4resok *r)
{
    const channel_attrs4 *f = &a->csa_fore_chan_attrs, *b = &a->csa_back_chan_attrs;
    nfsstat4 rc = NFS4_OK;
    pthread_mutex_lock(&st->lock);
    expire(st);
    struct client *clp = find_id(st, a->csa_clientid);
    if (!clp) {
        rc = NFS4ERR_STALE_CLIENTID;
        goto out;
    }
    if (clp->have_last && a->csa_sequence == clp->cs_seq - 1) {
        *r = clp->last; /* the retry of the last one (section 18.36.4) */
        rc = clp->last_rc;
        goto out;
    }
    if (a->csa_sequence != clp->cs_seq) {
        rc = NFS4ERR_SEQ_MISORDERED;
        goto out;
    }
    /* room for at least a SEQUENCE and a small operation each way (as knfsd's minimum) */
    if (f->ca_maxrequestsize < 256 || f->ca_maxresponsesize < 256 || f->ca_maxoperations < 1 ||
        f->ca_maxrequests < 1) {
        rc = NFS4ERR_TOOSMALL;
        goto out;
    }
    if (clp->nsessions >= SESSIONS_PER_CLIENT) {
        /* a result of this sequence, kept for its retry as a session would be (Linux's
         * client takes the sequence as used by every error but DELAY and STALE_CLIENTID) */
        rc = clp->last_rc = NFS4ERR_NOSPC;
        clp->cs_seq++;
        clp->have_last = 1;
        goto out;
    }
    int sec = uiw__nfs4_cb_sec_pick(a->csa_sec_parms.csa_sec_parms_val,
                                    a->csa_sec_parms.csa_sec_parms_len);
    if (sec == -1) {
        /* callbacks in RPCSEC_GSS alone; the sequence used, as for NOSPC above */
        rc = clp->last_rc = NFS4ERR_ENCR_ALG_UNSUPP;
        clp->cs_seq++;
        clp->have_last = 1;
        goto out;
    }
    uint32_t nslots = clamp(f->ca_maxrequests, l->max_slots);
    struct uiw__nfs4_session *ses = calloc(1, sizeof(*ses) + nslots * sizeof(struct slot));
    if (!ses) {
        rc = NFS4ERR_SERVERFAULT;
        goto out;
    }
    ses->nslots = nslots;
    ses->refs = 1;
    ses->fore.ca_headerpadsize = 0;
    ses->fore.ca_maxrequestsize = clamp(f->ca_maxrequestsize, l->max_req);
    ses->fore.ca_maxresponsesize = clamp(f->ca_maxresponsesize, l->max_resp);
    ses->fore.ca_maxresponsesize_cached = clamp(f->ca_maxresponsesize_cached, l->max_cached);
    ses->fore.ca_maxoperations = clamp(f->ca_maxoperations, l->max_ops);
    ses->fore.ca_maxrequests = nslots;
    /* the back channel's: callbacks are small (a CB_SEQUENCE and a CB_RECALL) */
    ses->back = *b;
    ses->back.ca_headerpadsize = 0;
    ses->back.ca_maxrequests = b->ca_maxrequests < 1 ? 1 : clamp(b->ca_maxrequests, 16);
    ses->back.ca_rdma_ird.ca_rdma_ird_len = 0;
    ses->back.ca_rdma_ird.ca_rdma_ird_val = NULL;
    uint64_t id = clp->id;
    uint32_t n = st->next_session++;
    memcpy(ses->id, &id, 8);
    memcpy(ses->id + 8, &n, 4);
    memcpy(ses->id + 12, &st->boot, 4);
    ses->cb = uiw__nfs4_cb_new(st->cbs, ses->id, &ses->back, a->csa_cb_program,
                               sec >= 0 ? &a->csa_sec_parms.csa_sec_parms_val[sec] : NULL);
    if (!ses->cb) {
        free(ses);
        rc = NFS4ERR_SERVERFAULT;
        goto out;
    }
    if (!clp->confirmed) {
        /* the owner's older record (a client that restarted) goes with its sessions */
        for (struct client *c = st->clients; c; c = c->next) {
            if (c != clp && c->confirmed && c->ownerlen == clp->ownerlen &&
                memcmp(c->owner, clp->owner, c->ownerlen) == 0) {
                drop_client(st, c);
                break;
            }
        }
        clp->confirmed = 1;
        /* on disk before the client hears it is confirmed (a failure to write leaves it
         * without a reclaim after a restart, as knfsd's client tracking does) */
        uiw__nfs4_grace_record(st->grace, clp->owner, clp->ownerlen);
    }
    ses->clp = clp;
    ses->next = st->sessions;
    st->sessions = ses;
    clp->nsessions++;
    clp->renewed_ns = now_ns();
    memcpy(r->csr_sessionid, ses->id, NFS4_SESSIONID_SIZE);
    r->csr_sequence = clp->cs_seq++;
    /* the connection of this call is the back channel when asked and its transport can
     * carry callbacks (a CB_NULL probes it) */
    r->csr_flags = 0;
    if ((a->csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN) &&
        uiw__nfs4_cb_bind(ses->cb, conn) == 0)
        r->csr_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
    /* RDMA mode (section 18.36.3): an RPC-over-RDMA connection is in it from its start,
     * so asked for there it holds; a TCP connection is never stepped up to it */
    if ((a->csa_flags & CREATE_SESSION4_FLAG_CONN_RDMA) && uiw__nfs4_conn_rdma(conn))
        r->csr_flags |= CREATE_SESSION4_FLAG_CONN_RDMA;
    r->csr_fore_chan_attrs = ses->fore;
    r->csr_back_chan_attrs = ses->back;
    clp->last = *r;
    clp->last_rc = NFS4_OK;
    clp->have_last = 1;
out:
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static struct uiw__nfs4_session *find_session(struct uiw__nfs4_state *st,
                                              const char id[NFS4_SESSIONID_SIZE])
{
    for (struct uiw__nfs4_session *s = st->sessions; s; s = s->next)
        if (memcmp(s->id, id, NFS4_SESSIONID_SIZE) == 0)
            return s;
    return NULL;
}

nfsstat4 uiw__nfs4_destroy_session(struct uiw__nfs4_state *st, const char id[NFS4_SESSIONID_SIZE])
{
    nfsstat4 rc = NFS4ERR_BADSESSION;
    pthread_mutex_lock(&st->lock);
    for (struct uiw__nfs4_session **pp = &st->sessions; *pp; pp = &(*pp)->next) {
        struct uiw__nfs4_session *ses = *pp;
        if (memcmp(ses->id, id, NFS4_SESSIONID_SIZE) != 0)
            continue;
        *pp = ses->next;
        ses->clp->nsessions--;
        session_end(ses);
        rc = NFS4_OK;
        break;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

nfsstat4 uiw__nfs4_destroy_clientid(struct uiw__nfs4_state *st, clientid4 id)
{
    nfsstat4 rc = NFS4_OK;
    pthread_mutex_lock(&st->lock);
    struct client *clp = find_id(st, id);
    if (!clp)
        rc = NFS4ERR_STALE_CLIENTID;
    else if (clp->nsessions)
        rc = NFS4ERR_CLIENTID_BUSY;
    else
        drop_client(st, clp);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

nfsstat4 uiw__nfs4_sequence(struct uiw__nfs4_state *st, const SEQUENCE4args *a, uint32_t nops,
                            uint32_t req_len, SEQUENCE4resok *r, struct uiw__nfs4_slotref *ref,
                            char **cached, size_t *clen)
{
    nfsstat4 rc = NFS4_OK;
    *cached = NULL;
    ref->ses = NULL;
    /* one reading of the clock for the expiry scan, the renewal and the revocations */
    int64_t now = now_ns();
    pthread_mutex_lock(&st->lock);
    expire_at(st, now);
    struct uiw__nfs4_session *ses = find_session(st, a->sa_sessionid);
    if (!ses) {
        rc = NFS4ERR_BADSESSION;
        goto out;
    }
    if (nops > ses->fore.ca_maxoperations) {
        rc = NFS4ERR_TOO_MANY_OPS;
        goto out;
    }
    if (req_len > ses->fore.ca_maxrequestsize) {
        rc = NFS4ERR_REQ_TOO_BIG;
        goto out;
    }
    if (a->sa_slotid >= ses->nslots) {
        rc = NFS4ERR_BADSLOT;
        goto out;
    }
    struct slot *sl = &ses->slots[a->sa_slotid];
    if (a->sa_sequenceid == sl->seqid && (sl->seqid || sl->inuse)) {
        /* a retry: the first one's reply, or wait for it */
        if (sl->inuse) {
            rc = NFS4ERR_DELAY;
        } else if (!sl->reply) {
            rc = NFS4ERR_RETRY_UNCACHED_REP;
        } else if ((*cached = malloc(sl->len)) == NULL) {
            rc = NFS4ERR_DELAY;
        } else {
            memcpy(*cached, sl->reply, sl->len);
            *clen = sl->len;
        }
        goto out;
    }
    if (a->sa_sequenceid != sl->seqid + 1 || sl->inuse) {
        rc = NFS4ERR_SEQ_MISORDERED;
        goto out;
    }
    sl->seqid = a->sa_sequenceid;
    sl->inuse = 1;
    free(sl->reply);
    sl->reply = NULL;
    ses->refs++;
    ses->clp->renewed_ns = now;
    ref->ses = ses;
    ref->slot = a->sa_slotid;
    memcpy(r->sr_sessionid, ses->id, NFS4_SESSIONID_SIZE);
    r->sr_sequenceid = a->sa_sequenceid;
    r->sr_slotid = a->sa_slotid;
    r->sr_highest_slotid = ses->nslots - 1;
    r->sr_target_highest_slotid = ses->nslots - 1;
    /* section 18.46.3: the session's back channel down, and the client's on all of them */
    r->sr_status_flags = uiw__nfs4_cb_flags(ses->cb);
    if (r->sr_status_flags) {
        int up = 0;
        for (struct uiw__nfs4_session *o = st->sessions; o && !up; o = o->next)
            up = o->clp == ses->clp && uiw__nfs4_cb_up(o->cb);
        if (!up)
            r->sr_status_flags |= SEQ4_STATUS_CB_PATH_DOWN;
    }
    /* a delegation revoked (its recall unanswered for a lease), until FREE_STATEID */
    if (uiw__nfs4_stid_deleg_revoked(st->stids, ses->clp->id,
                                     now - (int64_t)st->lease * 1000000000))
        r->sr_status_flags |= SEQ4_STATUS_RECALLABLE_STATE_REVOKED;
out:
    pthread_mutex_unlock(&st->lock);
    return rc;
}

struct uiw__nfs4_stids *uiw__nfs4_state_stids(struct uiw__nfs4_state *st)
{
    return st->stids;
}

clientid4 uiw__nfs4_session_client(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref)
{
    clientid4 id = 0;
    pthread_mutex_lock(&st->lock);
    if (ref->ses && ref->ses->clp)
        id = ref->ses->clp->id;
    pthread_mutex_unlock(&st->lock);
    return id;
}

uint32_t uiw__nfs4_session_max_ops(const struct uiw__nfs4_slotref *ref)
{
    return ref->ses->fore.ca_maxoperations;
}

void uiw__nfs4_session_sizes(const struct uiw__nfs4_slotref *ref, uint32_t *max_resp,
                             uint32_t *max_cached)
{
    *max_resp = ref->ses->fore.ca_maxresponsesize;
    *max_cached = ref->ses->fore.ca_maxresponsesize_cached;
}

void uiw__nfs4_slot_done(struct uiw__nfs4_state *st, struct uiw__nfs4_slotref *ref,
                         const char *reply, size_t len, int keep)
{
    if (!ref->ses)
        return;
    pthread_mutex_lock(&st->lock);
    struct slot *sl = &ref->ses->slots[ref->slot];
    if (keep && reply && len <= ref->ses->fore.ca_maxresponsesize_cached) {
        sl->reply = malloc(len);
        if (sl->reply) {
            memcpy(sl->reply, reply, len);
            sl->len = len;
        }
    }
    sl->inuse = 0;
    session_unref(ref->ses);
    ref->ses = NULL;
    pthread_mutex_unlock(&st->lock);
}

nfsstat4 uiw__nfs4_reclaim_complete(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref,
                                    int one_fs)
{
    nfsstat4 rc = NFS4_OK;
    pthread_mutex_lock(&st->lock);
    struct client *clp = ref->ses ? ref->ses->clp : NULL;
    if (!clp)
        rc = NFS4ERR_BADSESSION;
    else if (one_fs)
        rc = NFS4_OK; /* one file system's reclaims done: nothing per file system is kept */
    else if (clp->reclaimed)
        rc = NFS4ERR_COMPLETE_ALREADY;
    else {
        clp->reclaimed = 1;
        uiw__nfs4_grace_done(st->grace, clp->owner, clp->ownerlen);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

nfsstat4 uiw__nfs4_grace_check(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref,
                               int reclaim)
{
    nfsstat4 rc = NFS4_OK;
    pthread_mutex_lock(&st->lock);
    struct client *clp = ref->ses ? ref->ses->clp : NULL;
    if (!reclaim)
        rc = uiw__nfs4_grace_active(st->grace) ? NFS4ERR_GRACE : NFS4_OK;
    else if (!clp || clp->reclaimed ||
             !uiw__nfs4_grace_may_reclaim(st->grace, clp->owner, clp->ownerlen))
        rc = NFS4ERR_NO_GRACE;
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void uiw__nfs4_reclaimed(struct uiw__nfs4_state *st, int lock)
{
    pthread_mutex_lock(&st->lock);
    if (lock)
        st->reclaimed_locks++;
    else
        st->reclaimed_opens++;
    pthread_mutex_unlock(&st->lock);
}

int uiw__nfsd_reclaim_counts(struct uiw__nfsd *s, struct uiw__nfsd_reclaim_counts *n)
{
    if (!s->nfs4)
        return -ENOENT;
    pthread_mutex_lock(&s->nfs4->lock);
    n->opens = s->nfs4->reclaimed_opens;
    n->locks = s->nfs4->reclaimed_locks;
    pthread_mutex_unlock(&s->nfs4->lock);
    return 0;
}

unsigned uiw__nfs4_in_grace(struct uiw__nfs4_state *st)
{
    pthread_mutex_lock(&st->lock);
    unsigned n = uiw__nfs4_grace_active(st->grace) ? uiw__nfs4_grace_pending(st->grace) : 0;
    pthread_mutex_unlock(&st->lock);
    return n;
}

struct uiw__nfs4_cb *uiw__nfs4_session_cb(struct uiw__nfs4_state *st,
                                          const char id[NFS4_SESSIONID_SIZE])
{
    pthread_mutex_lock(&st->lock);
    struct uiw__nfs4_session *ses = find_session(st, id);
    struct uiw__nfs4_cb *cb = ses ? ses->cb : NULL;
    if (cb)
        uiw__nfs4_cb_get(cb);
    pthread_mutex_unlock(&st->lock);
    return cb;
}

struct uiw__nfs4_cb *uiw__nfs4_slot_cb(struct uiw__nfs4_state *st,
                                       const struct uiw__nfs4_slotref *ref)
{
    pthread_mutex_lock(&st->lock);
    struct uiw__nfs4_cb *cb = ref->ses ? ref->ses->cb : NULL;
    if (cb)
        uiw__nfs4_cb_get(cb);
    pthread_mutex_unlock(&st->lock);
    return cb;
}

struct uiw__nfs4_cb *uiw__nfs4_client_cb(struct uiw__nfs4_state *st, clientid4 clid)
{
    pthread_mutex_lock(&st->lock);
    struct uiw__nfs4_cb *best = NULL;
    int rank = 0;
    for (struct uiw__nfs4_session *s = st->sessions; s; s = s->next) {
        if (!s->clp || s->clp->id != clid || !s->cb)
            continue;
        int r = uiw__nfs4_cb_up(s->cb) ? 3 : uiw__nfs4_cb_flags(s->cb) ? 2 : 1;
        if (r > rank) {
            rank = r;
            best = s->cb;
        }
    }
    if (best)
        uiw__nfs4_cb_get(best);
    pthread_mutex_unlock(&st->lock);
    return best;
}

struct uiw__nfs4_cbs *uiw__nfs4_state_cbs(struct uiw__nfs4_state *st)
{
    return st->cbs;
}
