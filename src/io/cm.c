/*
 * The connection manager: event channels, ids, listen/connect/accept/reject/disconnect
 * and the MPA Request/Reply handshake (RFC 5044 section 7.1, RFC 6581).
 *
 * Each channel has its own epoll set (its fd is the channel fd) holding the listening
 * sockets, the sockets in handshake, a timerfd for handshake deadlines and an eventfd
 * that is readable while events are queued. uiw_cm_get_event does the pending work.
 * Once a connection is established its socket moves to the QP's context (conn.c).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <uiw/wire.h>

#include "common/log.h"
#include "io/io.h"
#include "io/pcap.h"
#include "io/sock.h"
#include "wire/hdr.h"
#include "wire/mpa_setup.h"

enum cm_state {
    S_IDLE = 0,
    S_BOUND,
    S_LISTEN,
    S_CONNECTING,  /* active: TCP connect in progress */
    S_REQ_SENT,    /* active: waiting for the Reply */
    S_WAIT_REQ,    /* passive: waiting for the Request (id not yet visible) */
    S_REQ_RCVD,    /* passive: CONNECT_REQUEST delivered, waiting for accept / reject */
    S_ESTABLISHED, /* handshake done */
    S_CLOSED,
};

#define FRAME_MAX (UIW_MPA_HDR_LEN + UIW_CM_PD_MAX)

struct uiw__cmid {
    struct uiw_cm_id pub;
    struct uiw_cm_channel *ch;
    struct uiw__cmid *next, *prev;
    enum cm_state state;
    bool hidden; /* passive id not yet announced by CONNECT_REQUEST */
    struct uiw__ioh h;
    struct sockaddr_storage local, peer;
    bool has_local, has_peer;
    struct uiw__cmid *listener;
    struct uiw_conn_param param; /* connect / listen parameters (private data copied) */
    uint8_t pd[UIW_CM_PD_MAX];
    char pcap_dir[256];
    uint64_t deadline; /* ms, 0 = none */
    uint8_t rx[FRAME_MAX];
    size_t rxlen;
    struct uiw_mpa_frame peer_frame; /* the peer's Request (passive); pd points into rx */
    struct uiw_cm_conn_info info;
    bool info_valid;
    struct uiw__pcap *pcap;
    struct uiw__conn *conn;
    uint32_t log_id; /* the id's number in log lines (common/log.h) */
};

static _Atomic uint32_t next_log_id = 1;

static uint32_t id_qpn(const struct uiw__cmid *id)
{
    return id->pub.qp ? uiw_qp_num(id->pub.qp) : 0;
}

struct evnode {
    struct uiw_cm_event ev;
    struct evnode *next;
    struct uiw_cm_channel *ch;
    uint8_t pd[UIW_CM_PD_MAX];
};

struct uiw_cm_channel {
    pthread_mutex_t lock;
    struct uiw__loop loop; /* no thread: driven by uiw_cm_get_event */
    struct uiw__ioh timer;
    struct uiw__ioh queued;
    pthread_mutex_t evlock;
    struct evnode *head, *tail;
    bool qset;
    struct uiw__cmid *ids;
};

#define CMID(p)         ((struct uiw__cmid *)(p))
#define CMID_OF_IOH(hp) ((struct uiw__cmid *)((char *)(hp)-offsetof(struct uiw__cmid, h)))

static const uint32_t default_timeout_active = 10000, default_timeout_passive = 5000;
/* The initiator's wake-up Write: this long after its first FPDU went out (cm.h) */
static const unsigned wake_ms = 50;

/* ------------------------------------------------------------------------------------- */
/* events */

static struct evnode *ev_new(struct uiw__cmid *id, enum uiw_cm_event_type t, int status)
{
    struct evnode *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->ev.event = t;
    n->ev.id = &id->pub;
    n->ev.status = status;
    n->ch = id->ch;
    return n;
}

static void ev_set_pd(struct evnode *n, const void *pd, size_t len)
{
    if (len > sizeof(n->pd))
        len = sizeof(n->pd);
    if (len)
        memcpy(n->pd, pd, len);
    n->ev.param.private_data = len ? n->pd : NULL;
    n->ev.param.private_data_len = (uint16_t)len;
}

static void ev_push(struct uiw_cm_channel *ch, struct evnode *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&ch->evlock);
    if (ch->tail)
        ch->tail->next = n;
    else
        ch->head = n;
    ch->tail = n;
    if (!ch->qset) {
        uint64_t one = 1;
        ssize_t w = write(ch->queued.fd, &one, sizeof(one));
        (void)w;
        ch->qset = true;
    }
    pthread_mutex_unlock(&ch->evlock);
}

static void ev_drain_fd(struct uiw_cm_channel *ch)
{
    if (!ch->head && ch->qset) {
        uint64_t v;
        ssize_t r = read(ch->queued.fd, &v, sizeof(v));
        (void)r;
        ch->qset = false;
    }
}

static struct evnode *ev_pop(struct uiw_cm_channel *ch)
{
    pthread_mutex_lock(&ch->evlock);
    struct evnode *n = ch->head;
    if (n) {
        ch->head = n->next;
        if (!ch->head)
            ch->tail = NULL;
        n->next = NULL;
    }
    ev_drain_fd(ch);
    pthread_mutex_unlock(&ch->evlock);
    return n;
}

/* Drop queued events naming id (it is being destroyed). */
static void ev_forget(struct uiw_cm_channel *ch, struct uiw__cmid *id)
{
    pthread_mutex_lock(&ch->evlock);
    struct evnode **pp = &ch->head, *last = NULL;
    while (*pp) {
        struct evnode *n = *pp;
        if (n->ev.id == &id->pub) {
            *pp = n->next;
            free(n);
            continue;
        }
        if (n->ev.listen_id == &id->pub)
            n->ev.listen_id = NULL;
        last = n;
        pp = &n->next;
    }
    ch->tail = last;
    ev_drain_fd(ch);
    pthread_mutex_unlock(&ch->evlock);
}

const char *uiw_cm_event_str(enum uiw_cm_event_type e)
{
    switch (e) {
    case UIW_CM_EVENT_CONNECT_REQUEST:
        return "UIW_CM_EVENT_CONNECT_REQUEST";
    case UIW_CM_EVENT_ESTABLISHED:
        return "UIW_CM_EVENT_ESTABLISHED";
    case UIW_CM_EVENT_REJECTED:
        return "UIW_CM_EVENT_REJECTED";
    case UIW_CM_EVENT_CONNECT_ERROR:
        return "UIW_CM_EVENT_CONNECT_ERROR";
    case UIW_CM_EVENT_UNREACHABLE:
        return "UIW_CM_EVENT_UNREACHABLE";
    case UIW_CM_EVENT_DISCONNECTED:
        return "UIW_CM_EVENT_DISCONNECTED";
    }
    return "UIW_CM_EVENT_UNKNOWN";
}

/* ------------------------------------------------------------------------------------- */
/* ids */

static void id_link(struct uiw_cm_channel *ch, struct uiw__cmid *id)
{
    id->ch = ch;
    id->pub.channel = ch;
    id->next = ch->ids;
    id->prev = NULL;
    if (ch->ids)
        ch->ids->prev = id;
    ch->ids = id;
}

static void id_unlink(struct uiw__cmid *id)
{
    struct uiw_cm_channel *ch = id->ch;
    if (id->prev)
        id->prev->next = id->next;
    else
        ch->ids = id->next;
    if (id->next)
        id->next->prev = id->prev;
}

static struct uiw__cmid *id_alloc(struct uiw_cm_channel *ch)
{
    struct uiw__cmid *id = calloc(1, sizeof(*id));
    if (!id)
        return NULL;
    id->h.fd = -1;
    id->log_id = atomic_fetch_add(&next_log_id, 1);
    id_link(ch, id);
    return id;
}

/* Close the id's socket (if it still owns one) and its capture. */
static void id_close_sock(struct uiw__cmid *id)
{
    if (id->h.fd >= 0) {
        uiw__loop_del(&id->ch->loop, &id->h);
        close(id->h.fd);
        id->h.fd = -1;
    }
    uiw__pcap_close(id->pcap);
    id->pcap = NULL;
    id->deadline = 0;
}

static void id_free(struct uiw__cmid *id)
{
    id_close_sock(id);
    id_unlink(id);
    free(id);
}

/* The handshake failed: close, report (or drop a hidden passive id). */
static void id_fail(struct uiw__cmid *id, enum uiw_cm_event_type t, int status)
{
    if (id->hidden) {
        char a[64];
        const char *peer = uiw__log_addr((const struct sockaddr *)&id->peer, a, sizeof(a));
        if (status == -ETIMEDOUT && id->state == S_WAIT_REQ)
            UIW__LOG(UIW__LOG_WARN, id->log_id, 0,
                     "incoming connection from %s dropped: no complete MPA request within "
                     "%u ms",
                     peer, id->param.timeout_ms ? id->param.timeout_ms : default_timeout_passive);
        else
            UIW__LOG(UIW__LOG_INFO, id->log_id, 0, "incoming connection from %s dropped: %s", peer,
                     uiw_strerror(status));
        id_free(id);
        return;
    }
    UIW__LOG(UIW__LOG_WARN, id->log_id, id_qpn(id), "%s: %s", uiw_cm_event_str(t),
             uiw_strerror(status));
    id_close_sock(id);
    id->state = S_CLOSED;
    ev_push(id->ch, ev_new(id, t, status));
}

static const char *id_pcap_dir(struct uiw__cmid *id)
{
    if (id->pcap_dir[0])
        return id->pcap_dir;
    struct uiw__io *io = uiw__io_of(id->pub.verbs);
    if (io && io->pcap_dir)
        return io->pcap_dir;
    return NULL;
}

static void id_open_pcap(struct uiw__cmid *id)
{
    const struct sockaddr *l = (const struct sockaddr *)&id->local;
    const struct sockaddr *r = (const struct sockaddr *)&id->peer;
    const char *dir = id_pcap_dir(id);
    if (dir) {
        char path[PATH_MAX];
        if (uiw__pcap_name(path, sizeof(path), dir, l, r) > 0)
            id->pcap = uiw__pcap_open(path, l, r);
    } else {
        id->pcap = uiw__pcap_open_env(l, r);
    }
}

static void copy_param(struct uiw__cmid *id, const struct uiw_conn_param *p)
{
    if (!p) {
        uiw_conn_param_init(&id->param);
        return;
    }
    id->param = *p;
    if (p->private_data_len)
        memcpy(id->pd, p->private_data, p->private_data_len);
    id->param.private_data = id->pd;
    id->pcap_dir[0] = 0;
    if (p->pcap_dir) {
        size_t n = strlen(p->pcap_dir);
        if (n < sizeof(id->pcap_dir))
            memcpy(id->pcap_dir, p->pcap_dir, n + 1);
    }
    id->param.pcap_dir = NULL;
}

static int check_param(const struct uiw_conn_param *p)
{
    if (!p)
        return 0;
    uint8_t rev = p->mpa_rev ? p->mpa_rev : 2;
    if (rev != 1 && rev != 2)
        return -EINVAL;
    size_t room = UIW_CM_PD_MAX - (rev == 2 ? UIW_MPA_V2_IRD_ORD_LEN : 0);
    if (p->private_data_len > room || (p->private_data_len && !p->private_data))
        return -EINVAL;
    if (p->pd_cap > UIW_CM_PD_MAX)
        return -EINVAL;
    if ((p->responder_resources > UIW_MPA_V2_IRD_ORD_MASK &&
         p->responder_resources != UIW_CM_IRD_ORD_DEFAULT) ||
        (p->initiator_depth > UIW_MPA_V2_IRD_ORD_MASK &&
         p->initiator_depth != UIW_CM_IRD_ORD_DEFAULT))
        return -EINVAL;
    if (p->rtr & ~(UIW_CM_RTR_SEND | UIW_CM_RTR_WRITE | UIW_CM_RTR_READ))
        return -EINVAL;
    return 0;
}

void uiw_conn_param_init(struct uiw_conn_param *param)
{
    if (!param)
        return;
    memset(param, 0, sizeof(*param));
    param->responder_resources = UIW_CM_IRD_ORD_DEFAULT;
    param->initiator_depth = UIW_CM_IRD_ORD_DEFAULT;
}

/* One of our depths: what the application asked for (0 is none), bounded by the QP's. */
static uint16_t depth(uint16_t asked, uint16_t qp_max)
{
    return asked == UIW_CM_IRD_ORD_DEFAULT || asked > qp_max ? qp_max : asked;
}

/* Our IRD/ORD: the parameters (NULL: the defaults), bounded by what the QP was created
 * for. */
static void my_limits(struct uiw__cmid *id, const struct uiw_conn_param *p, uint16_t *ird,
                      uint16_t *ord, uint16_t *qp_ird)
{
    uint16_t mi = UIW_DEFAULT_IRD_ORD, mo = UIW_DEFAULT_IRD_ORD;
    if (id->pub.qp)
        uiw__qp_get_limits(id->pub.qp, &mi, &mo);
    *qp_ird = mi;
    *ird = p ? depth(p->responder_resources, mi) : mi;
    *ord = p ? depth(p->initiator_depth, mo) : mo;
}

/* ------------------------------------------------------------------------------------- */
/* frames */

static int send_frame(struct uiw__cmid *id, const struct uiw_mpa_frame *f)
{
    uint8_t buf[FRAME_MAX];
    ssize_t n = uiw_mpa_frame_encode(f, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    int r = uiw__sock_write_all(id->h.fd, buf, (size_t)n, 2000);
    if (r == 0 && id->pcap) {
        struct iovec v = {.iov_base = buf, .iov_len = (size_t)n};
        uiw__pcap_data(id->pcap, 1, &v, 1, (size_t)n);
    }
    return r;
}

/* Read exactly the frame's bytes (never beyond: FPDUs may follow). Returns 1 when the
 * frame is complete, 0 for more later, or a negative code. */
static int read_frame(struct uiw__cmid *id)
{
    for (;;) {
        size_t need = UIW_MPA_HDR_LEN;
        if (id->rxlen >= UIW_MPA_HDR_LEN) {
            /* The key decides first: garbage is "not MPA", whatever its length field. */
            if (memcmp(id->rx, "MPA ID Req Frame", UIW_MPA_KEY_LEN) != 0 &&
                memcmp(id->rx, "MPA ID Rep Frame", UIW_MPA_KEY_LEN) != 0)
                return UIW_E_MPA_BAD_KEY;
            size_t pdl = uiw__mpa_hdr_pd_len(id->rx);
            if (pdl > UIW_MPA_PD_MAX)
                return UIW_E_MPA_PD_TOO_LONG;
            need += pdl;
        }
        if (id->rxlen == need)
            return 1;
        ssize_t n = read(id->h.fd, id->rx + id->rxlen, need - id->rxlen);
        if (n == 0)
            return -ECONNRESET;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
        }
        if (id->pcap) {
            struct iovec v = {.iov_base = id->rx + id->rxlen, .iov_len = (size_t)n};
            uiw__pcap_data(id->pcap, 0, &v, 1, (size_t)n);
        }
        id->rxlen += (size_t)n;
    }
}

static uint16_t pd_cap_of(const struct uiw_conn_param *p)
{
    return p->pd_cap ? p->pd_cap : UIW_MPA_PD_DEFAULT_CAP;
}

/* Parse the complete frame in id->rx, applying the private-data cap to the ULP data. */
static int parse_frame(struct uiw__cmid *id, enum uiw_mpa_frame_kind kind, struct uiw_mpa_frame *f)
{
    uint16_t cap = pd_cap_of(&id->param);
    size_t pcap = (size_t)cap + UIW_MPA_V2_IRD_ORD_LEN;
    if (pcap > UIW_MPA_PD_MAX)
        pcap = UIW_MPA_PD_MAX;
    ssize_t r = uiw_mpa_frame_parse(kind, id->rx, id->rxlen, pcap, f);
    if (r < 0)
        return r == UIW_E_MPA_TRUNCATED ? UIW_E_MPA_BAD_KEY : (int)r;
    if (f->pd_len > cap)
        return UIW_E_MPA_PD_TOO_LONG;
    return 0;
}

static enum uiw__rtr rtr_engine(uint8_t bit)
{
    switch (bit) {
    case UIW_CM_RTR_WRITE:
        return UIW__RTR_WRITE;
    case UIW_CM_RTR_READ:
        return UIW__RTR_READ;
    case UIW_CM_RTR_SEND:
        return UIW__RTR_SEND;
    default:
        return UIW__RTR_NONE;
    }
}

/* What this side brings to the MPA setup (wire/mpa_setup.h): the parameters p, our depths
 * bounded by the QP's. The cm's UIW_CM_RTR_* are the setup's UIW__MPA_RTR_*. */
static void my_offer(struct uiw__cmid *id, const struct uiw_conn_param *p, struct uiw__mpa_offer *o)
{
    _Static_assert(UIW_CM_RTR_SEND == UIW__MPA_RTR_SEND && UIW_CM_RTR_WRITE == UIW__MPA_RTR_WRITE &&
                       UIW_CM_RTR_READ == UIW__MPA_RTR_READ,
                   "one set of RTR bits");
    memset(o, 0, sizeof(*o));
    o->rev = p->mpa_rev ? p->mpa_rev : 2;
    o->crc = p->crc;
    o->markers = p->markers;
    o->reject_markers = p->reject_markers;
    my_limits(id, p, &o->ird, &o->ord, &o->ird_max);
    o->peer2peer = p->peer2peer;
    o->rtr = p->rtr;
}

/* What the setup settled, as the cm reports it. */
static void set_info(struct uiw_cm_conn_info *in, const struct uiw__mpa_result *res, bool initiator)
{
    memset(in, 0, sizeof(*in));
    in->initiator = initiator;
    in->mpa_rev = res->rev;
    in->crc = res->crc;
    in->markers_tx = res->markers_tx;
    in->markers_rx = res->markers_rx;
    in->peer2peer = res->peer2peer;
    in->rtr = res->rtr;
    in->ird = res->ird;
    in->ord = res->ord;
    in->peer_ird = res->peer_ird;
    in->peer_ord = res->peer_ord;
}

/* ------------------------------------------------------------------------------------- */
/* establishment */

static void fill_negotiated(struct uiw_conn_param *p, const struct uiw_cm_conn_info *in)
{
    p->mpa_rev = in->mpa_rev;
    p->crc = in->crc;
    p->markers = in->markers_rx;
    p->peer2peer = in->peer2peer;
    p->rtr = in->rtr;
    p->responder_resources = in->ird;
    p->initiator_depth = in->ord;
}

/* The connection's callbacks to its id. */

/* The QP of the id is being destroyed (uiw_destroy_qp): detach it from the id. */
static void id_qp_destroyed(void *arg, struct uiw__conn *c)
{
    struct uiw__cmid *id = arg;
    struct uiw_cm_channel *ch = id->ch;
    pthread_mutex_lock(&ch->lock);
    if (uiw__conn_release_owner(c, id)) {
        id->conn = NULL;
        id->pub.qp = NULL;
    }
    pthread_mutex_unlock(&ch->lock);
}

/* The id's connection ended (status 0 orderly, else the reason): DISCONNECTED. */
static void id_conn_ended(void *arg, int status)
{
    struct uiw__cmid *id = arg;
    ev_push(id->ch, ev_new(id, UIW_CM_EVENT_DISCONNECTED, status));
}

static const struct uiw__conn_owner id_owner = {
    .ended = id_conn_ended,
    .qp_destroyed = id_qp_destroyed,
};

/* The handshake is done: hand the socket to the QP's connection (or keep it on the
 * channel when the id has no QP) and report ESTABLISHED (with the Reply's private data on
 * the active side). Returns 0 or a negative code (the caller fails the id). */
static int id_established(struct uiw__cmid *id, const void *pd, size_t pd_len)
{
    struct uiw_cm_conn_info *in = &id->info;
    in->emss = uiw__sock_emss(id->h.fd);
    in->mulpdu = uiw_mpa_mulpdu(in->emss, in->markers_tx);
    id->info_valid = true;
    id->deadline = 0;
    if (uiw__log_on(UIW__LOG_INFO)) {
        char la[64], pa[64];
        UIW__LOG(UIW__LOG_INFO, id->log_id, id_qpn(id),
                 "established (%s) %s -> %s: MPA rev %u, CRC %s, markers %s/%s, IRD %u ORD %u, "
                 "MULPDU %u",
                 in->initiator ? "initiator" : "responder",
                 uiw__log_addr((const struct sockaddr *)&id->local, la, sizeof(la)),
                 uiw__log_addr((const struct sockaddr *)&id->peer, pa, sizeof(pa)), in->mpa_rev,
                 in->crc ? "on" : "off", in->markers_tx ? "tx" : "-", in->markers_rx ? "rx" : "-",
                 in->ird, in->ord, in->mulpdu);
    }
    struct evnode *n = ev_new(id, UIW_CM_EVENT_ESTABLISHED, 0);
    if (!n)
        return -ENOMEM;
    fill_negotiated(&n->ev.param, in);
    ev_set_pd(n, pd, pd_len);
    if (!id->pub.qp) {
        id->state = S_ESTABLISHED;
        uiw__loop_set(&id->ch->loop, &id->h, EPOLLIN);
        ev_push(id->ch, n);
        return 0;
    }
    struct uiw__conn_params cp = {
        .mpa_rev = in->mpa_rev,
        .crc = in->crc,
        .markers_tx = in->markers_tx,
        .markers_rx = in->markers_rx,
        .mulpdu = in->mulpdu,
        .ird = in->ird,
        .ord = in->ord,
        .rtr = rtr_engine(in->rtr),
        .conn_id = id->log_id,
        .initiator = in->initiator,
    };
    uiw__loop_del(&id->ch->loop, &id->h);
    struct uiw__conn *c = NULL;
    int r = uiw__conn_start(id->pub.qp, id->h.fd, id->pcap, &id_owner, id, &cp, &c);
    if (r < 0) {
        free(n);
        return r;
    }
    if (in->initiator && !id->param.no_wake_write)
        uiw__conn_wake(c, wake_ms); /* without a timer, no wake-up: nothing else changes */
    id->h.fd = -1;
    id->pcap = NULL;
    id->conn = c;
    id->state = S_ESTABLISHED;
    ev_push(id->ch, n);
    uiw__conn_go(c);
    return 0;
}

/* Initiator: the Reply arrived. */
static void active_reply(struct uiw__cmid *id)
{
    struct uiw_mpa_frame f;
    int r = parse_frame(id, UIW_MPA_REPLY, &f);
    if (r < 0) {
        id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, r);
        return;
    }
    if (f.flags & UIW_MPA_FLAG_REJECT) {
        UIW__LOG(UIW__LOG_INFO, id->log_id, id_qpn(id),
                 "rejected by the peer (%u bytes of "
                 "private data)",
                 (unsigned)f.pd_len);
        struct evnode *n = ev_new(id, UIW_CM_EVENT_REJECTED, UIW_E_MPA_REJECTED);
        if (n) {
            ev_set_pd(n, f.pd, f.pd_len);
            n->ev.param.mpa_rev = f.rev;
        }
        id_close_sock(id);
        id->state = S_CLOSED;
        ev_push(id->ch, n);
        return;
    }
    struct uiw__mpa_offer o;
    struct uiw__mpa_result res;
    my_offer(id, &id->param, &o);
    r = uiw__mpa_conclude(&o, &f, &res);
    if (r != 0) {
        id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, r);
        return;
    }
    set_info(&id->info, &res, true);
    r = id_established(id, f.pd, f.pd_len);
    if (r < 0)
        id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, r);
}

/* Responder: the Request arrived; announce it. */
static void passive_request(struct uiw__cmid *id)
{
    struct uiw_mpa_frame *f = &id->peer_frame;
    int r = parse_frame(id, UIW_MPA_REQUEST, f);
    if (r < 0 || f->rev < 1) {
        id_free(id); /* not a connection the application ever saw */
        return;
    }
    struct evnode *n = ev_new(id, UIW_CM_EVENT_CONNECT_REQUEST, 0);
    if (!n) {
        id_free(id);
        return;
    }
    uiw__loop_del(&id->ch->loop, &id->h);
    id->deadline = 0;
    id->state = S_REQ_RCVD;
    id->hidden = false;
    if (uiw__log_on(UIW__LOG_INFO)) {
        char pa[64];
        UIW__LOG(UIW__LOG_INFO, id->log_id, 0,
                 "connection request from %s: MPA rev %u, CRC %s, markers %s, %u bytes of "
                 "private data",
                 uiw__log_addr((const struct sockaddr *)&id->peer, pa, sizeof(pa)), f->rev,
                 (f->flags & UIW_MPA_FLAG_CRC) ? "asked" : "not asked",
                 (f->flags & UIW_MPA_FLAG_MARKERS) ? "asked" : "not asked", (unsigned)f->pd_len);
    }
    if (id->listener) {
        id->pub.context = id->listener->pub.context;
        id->pub.verbs = id->listener->pub.verbs;
        n->ev.listen_id = &id->listener->pub;
    }
    struct uiw_conn_param *ep = &n->ev.param;
    ev_set_pd(n, f->pd, f->pd_len);
    ep->mpa_rev = f->rev;
    ep->crc = f->flags & UIW_MPA_FLAG_CRC;
    ep->markers = f->flags & UIW_MPA_FLAG_MARKERS;
    if (f->rev == 2 && (f->flags & UIW_MPA_FLAG_ENHANCED)) {
        ep->responder_resources = f->ird;
        ep->initiator_depth = f->ord;
        ep->peer2peer = f->peer2peer;
        ep->rtr = uiw__mpa_rtr_set(f);
    } else {
        ep->responder_resources = UIW_CM_IRD_ORD_DEFAULT; /* not stated */
        ep->initiator_depth = UIW_CM_IRD_ORD_DEFAULT;
    }
    ev_push(id->ch, n);
}

/* ------------------------------------------------------------------------------------- */
/* socket handlers (channel lock held) */

static void send_request(struct uiw__cmid *id)
{
    struct uiw__mpa_offer o;
    struct uiw_mpa_frame f;
    my_offer(id, &id->param, &o);
    uiw__mpa_request(&o, id->pd, id->param.private_data_len, &f);
    int r = send_frame(id, &f);
    if (r < 0) {
        id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, r);
        return;
    }
    id->state = S_REQ_SENT;
    id->rxlen = 0;
    uiw__loop_set(&id->ch->loop, &id->h, EPOLLIN);
}

static void id_events(struct uiw__ioh *h, uint32_t events);

static void listener_accept(struct uiw__cmid *l)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(l->h.fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct uiw__cmid *id = id_alloc(l->ch);
        if (!id) {
            close(fd);
            continue;
        }
        id->hidden = true;
        id->listener = l;
        id->pub.verbs = l->pub.verbs;
        id->h.fd = fd;
        id->h.fn = id_events;
        id->peer = ss;
        id->has_peer = true;
        len = sizeof(id->local);
        id->has_local = getsockname(fd, (struct sockaddr *)&id->local, &len) == 0;
        copy_param(id, &l->param);
        id->param.private_data_len = 0;
        memcpy(id->pcap_dir, l->pcap_dir, sizeof(id->pcap_dir));
        uiw__sock_setup(fd, &id->param);
        id->state = S_WAIT_REQ;
        id->deadline =
            uiw__now_ms() + (l->param.timeout_ms ? l->param.timeout_ms : default_timeout_passive);
        id_open_pcap(id);
        if (uiw__loop_set(&l->ch->loop, &id->h, EPOLLIN) < 0)
            id_free(id);
    }
}

static void id_events(struct uiw__ioh *h, uint32_t events)
{
    struct uiw__cmid *id = CMID_OF_IOH(h);
    switch (id->state) {
    case S_LISTEN:
        listener_accept(id);
        return;
    case S_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        if (err) {
            id_fail(id, UIW_CM_EVENT_UNREACHABLE, -err);
            return;
        }
        len = sizeof(id->local);
        id->has_local = getsockname(h->fd, (struct sockaddr *)&id->local, &len) == 0;
        uiw__sock_setup(h->fd, &id->param);
        id_open_pcap(id);
        send_request(id);
        return;
    }
    case S_REQ_SENT:
    case S_WAIT_REQ: {
        int r = read_frame(id);
        if (r < 0)
            id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, r);
        else if (r == 1 && id->state == S_REQ_SENT)
            active_reply(id);
        else if (r == 1)
            passive_request(id);
        return;
    }
    case S_ESTABLISHED: {
        /* No QP: nothing consumes the stream; watch for its end. */
        uint8_t sink[1024];
        ssize_t n = read(h->fd, sink, sizeof(sink));
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
            return;
        int st = n == 0 ? 0 : -errno;
        UIW__LOG(st ? UIW__LOG_WARN : UIW__LOG_INFO, id->log_id, 0, "connection %s%s",
                 st ? "lost: " : "closed", st ? uiw_strerror(st) : "");
        id_close_sock(id);
        id->state = S_CLOSED;
        ev_push(id->ch, ev_new(id, UIW_CM_EVENT_DISCONNECTED, st));
        return;
    }
    default:
        uiw__loop_del(&id->ch->loop, h);
        return;
    }
}

static void timer_events(struct uiw__ioh *h, uint32_t events)
{
    (void)events;
    uint64_t v;
    ssize_t r = read(h->fd, &v, sizeof(v));
    (void)r;
}

static void queued_events(struct uiw__ioh *h, uint32_t events)
{
    (void)h;
    (void)events;
}

/* Fail every id whose handshake deadline passed; arm the timer for the next one. */
static void expire_and_arm(struct uiw_cm_channel *ch)
{
    uint64_t now = uiw__now_ms(), next = 0;
    for (struct uiw__cmid *id = ch->ids, *nx; id; id = nx) {
        nx = id->next;
        if (!id->deadline)
            continue;
        if (id->deadline <= now) {
            id_fail(id,
                    id->state == S_CONNECTING ? UIW_CM_EVENT_UNREACHABLE
                                              : UIW_CM_EVENT_CONNECT_ERROR,
                    -ETIMEDOUT);
            continue;
        }
        if (!next || id->deadline < next)
            next = id->deadline;
    }
    struct itimerspec its = {0};
    if (next) {
        its.it_value.tv_sec = (time_t)(next / 1000);
        its.it_value.tv_nsec = (long)(next % 1000) * 1000000L;
    }
    timerfd_settime(ch->timer.fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* One pass over the channel. Connections whose context runs no progress thread get an
 * inline pass too, so their DISCONNECTED arrives while the application waits here.
 * Returns true when such connections exist (the caller then wakes up periodically). */
static bool ch_process(struct uiw_cm_channel *ch)
{
    uiw__loop_run(&ch->loop, 0);
    expire_and_arm(ch);
    bool inline_conns = false;
    for (struct uiw__cmid *id = ch->ids; id; id = id->next) {
        if (id->conn && !id->conn->io->loop.has_thread) {
            inline_conns = true;
            uiw__loop_try(&id->conn->io->loop);
        }
    }
    return inline_conns;
}

/* ------------------------------------------------------------------------------------- */
/* channel API */

struct uiw_cm_channel *uiw_cm_create_channel(void)
{
    struct uiw_cm_channel *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        errno = ENOMEM;
        return NULL;
    }
    int r = uiw__loop_init(&ch->loop, false);
    if (r < 0) {
        free(ch);
        errno = -r;
        return NULL;
    }
    ch->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    ch->timer.fn = timer_events;
    ch->queued.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ch->queued.fn = queued_events;
    if (ch->timer.fd < 0 || ch->queued.fd < 0 ||
        uiw__loop_set(&ch->loop, &ch->timer, EPOLLIN) < 0 ||
        uiw__loop_set(&ch->loop, &ch->queued, EPOLLIN) < 0) {
        int e = errno ? errno : ENOMEM;
        if (ch->timer.fd >= 0)
            close(ch->timer.fd);
        if (ch->queued.fd >= 0)
            close(ch->queued.fd);
        uiw__loop_fini(&ch->loop);
        free(ch);
        errno = e;
        return NULL;
    }
    pthread_mutex_init(&ch->lock, NULL);
    pthread_mutex_init(&ch->evlock, NULL);
    return ch;
}

int uiw_cm_destroy_channel(struct uiw_cm_channel *ch)
{
    if (!ch)
        return -EINVAL;
    pthread_mutex_lock(&ch->lock);
    for (struct uiw__cmid *id = ch->ids; id; id = id->next) {
        if (!id->hidden) {
            pthread_mutex_unlock(&ch->lock);
            return -EBUSY;
        }
    }
    while (ch->ids)
        id_free(ch->ids);
    struct evnode *n;
    while ((n = ev_pop(ch)))
        free(n);
    pthread_mutex_unlock(&ch->lock);
    uiw__loop_del(&ch->loop, &ch->timer);
    uiw__loop_del(&ch->loop, &ch->queued);
    close(ch->timer.fd);
    close(ch->queued.fd);
    uiw__loop_fini(&ch->loop);
    pthread_mutex_destroy(&ch->lock);
    pthread_mutex_destroy(&ch->evlock);
    free(ch);
    return 0;
}

int uiw_cm_channel_fd(const struct uiw_cm_channel *ch)
{
    return ch ? ch->loop.epfd : -EINVAL;
}

int uiw_cm_get_event(struct uiw_cm_channel *ch, struct uiw_cm_event **ev, int timeout_ms)
{
    if (!ch || !ev)
        return -EINVAL;
    uint64_t end = timeout_ms > 0 ? uiw__now_ms() + (uint64_t)timeout_ms : 0;
    for (;;) {
        pthread_mutex_lock(&ch->lock);
        struct evnode *n = ev_pop(ch);
        bool inline_conns = false;
        if (!n) {
            inline_conns = ch_process(ch);
            n = ev_pop(ch);
        }
        pthread_mutex_unlock(&ch->lock);
        if (n) {
            *ev = &n->ev;
            return 0;
        }
        int wait = -1;
        if (timeout_ms == 0)
            return -EAGAIN;
        if (timeout_ms > 0) {
            uint64_t now = uiw__now_ms();
            if (now >= end)
                return -EAGAIN;
            wait = (int)(end - now);
        }
        if (inline_conns && (wait < 0 || wait > 10))
            wait = 10;
        struct pollfd pfd = {.fd = ch->loop.epfd, .events = POLLIN};
        if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
            return -errno;
    }
}

int uiw_cm_ack_event(struct uiw_cm_event *ev)
{
    if (!ev)
        return -EINVAL;
    free((struct evnode *)((char *)ev - offsetof(struct evnode, ev)));
    return 0;
}

/* ------------------------------------------------------------------------------------- */
/* id API */

struct uiw_cm_id *uiw_cm_create_id(struct uiw_cm_channel *ch, struct uiw_context *ctx,
                                   void *context)
{
    if (!ch) {
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_lock(&ch->lock);
    struct uiw__cmid *id = id_alloc(ch);
    pthread_mutex_unlock(&ch->lock);
    if (!id) {
        errno = ENOMEM;
        return NULL;
    }
    id->pub.verbs = ctx;
    id->pub.context = context;
    return &id->pub;
}

int uiw_cm_destroy_id(struct uiw_cm_id *pid)
{
    if (!pid)
        return -EINVAL;
    struct uiw__cmid *id = CMID(pid);
    struct uiw_cm_channel *ch = id->ch;
    pthread_mutex_lock(&ch->lock);
    if (id->conn)
        uiw__conn_release_owner(id->conn, id);
    for (struct uiw__cmid *o = ch->ids, *nx; o; o = nx) {
        nx = o->next;
        if (o->listener == id) {
            if (o->hidden)
                id_free(o);
            else
                o->listener = NULL;
        }
    }
    ev_forget(ch, id);
    id_free(id);
    pthread_mutex_unlock(&ch->lock);
    return 0;
}

int uiw_cm_bind_addr(struct uiw_cm_id *pid, const struct sockaddr *addr)
{
    struct uiw__cmid *id = CMID(pid);
    socklen_t len = uiw__sock_addrlen(addr);
    if (!id || !len)
        return -EINVAL;
    pthread_mutex_lock(&id->ch->lock);
    int r = 0;
    if (id->state != S_IDLE && id->state != S_BOUND)
        r = -EINVAL;
    else {
        memset(&id->local, 0, sizeof(id->local));
        memcpy(&id->local, addr, len);
        id->has_local = true;
        id->state = S_BOUND;
    }
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

int uiw_cm_listen(struct uiw_cm_id *pid, int backlog, const struct uiw_conn_param *param)
{
    struct uiw__cmid *id = CMID(pid);
    if (!id)
        return -EINVAL;
    int r = check_param(param);
    if (r < 0)
        return r;
    pthread_mutex_lock(&id->ch->lock);
    if (id->state != S_BOUND) {
        pthread_mutex_unlock(&id->ch->lock);
        return -EINVAL;
    }
    const struct sockaddr *la = (const struct sockaddr *)&id->local;
    int fd = uiw__sock_tcp(la);
    if (fd < 0) {
        pthread_mutex_unlock(&id->ch->lock);
        return fd;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    socklen_t len = uiw__sock_addrlen(la);
    if (bind(fd, la, len) < 0 || listen(fd, backlog > 0 ? backlog : 16) < 0) {
        r = -errno;
        close(fd);
        pthread_mutex_unlock(&id->ch->lock);
        return r;
    }
    len = sizeof(id->local);
    getsockname(fd, (struct sockaddr *)&id->local, &len);
    copy_param(id, param);
    id->h.fd = fd;
    id->h.fn = id_events;
    id->state = S_LISTEN;
    r = uiw__loop_set(&id->ch->loop, &id->h, EPOLLIN);
    if (r < 0) {
        close(fd);
        id->h.fd = -1;
        id->state = S_BOUND;
    } else if (uiw__log_on(UIW__LOG_INFO)) {
        char la_text[64];
        UIW__LOG(UIW__LOG_INFO, id->log_id, 0, "listening on %s",
                 uiw__log_addr((const struct sockaddr *)&id->local, la_text, sizeof(la_text)));
    }
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

const struct sockaddr *uiw_cm_get_local_addr(const struct uiw_cm_id *pid)
{
    const struct uiw__cmid *id = (const struct uiw__cmid *)pid;
    return id && id->has_local ? (const struct sockaddr *)&id->local : NULL;
}

const struct sockaddr *uiw_cm_get_peer_addr(const struct uiw_cm_id *pid)
{
    const struct uiw__cmid *id = (const struct uiw__cmid *)pid;
    return id && id->has_peer ? (const struct sockaddr *)&id->peer : NULL;
}

int uiw_cm_create_qp(struct uiw_cm_id *pid, struct uiw_pd *pd, struct uiw_qp_init_attr *attr)
{
    struct uiw__cmid *id = CMID(pid);
    if (!id || !pd || !attr)
        return -EINVAL;
    pthread_mutex_lock(&id->ch->lock);
    int r = 0;
    if (id->pub.qp)
        r = -EEXIST;
    else if (id->pub.verbs && id->pub.verbs != pd->context)
        r = -EINVAL;
    else if (id->state != S_IDLE && id->state != S_BOUND && id->state != S_REQ_RCVD)
        r = -EINVAL;
    else {
        struct uiw_qp *qp = uiw_create_qp(pd, attr);
        if (!qp)
            r = -errno;
        else {
            id->pub.qp = qp;
            id->pub.verbs = pd->context;
        }
    }
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

void uiw_cm_destroy_qp(struct uiw_cm_id *pid)
{
    struct uiw__cmid *id = CMID(pid);
    if (!id)
        return;
    pthread_mutex_lock(&id->ch->lock);
    struct uiw_qp *qp = id->pub.qp;
    if (id->conn)
        uiw__conn_release_owner(id->conn, id);
    id->conn = NULL;
    id->pub.qp = NULL;
    pthread_mutex_unlock(&id->ch->lock);
    if (qp)
        uiw_destroy_qp(qp);
}

int uiw_cm_connect(struct uiw_cm_id *pid, const struct sockaddr *dst,
                   const struct uiw_conn_param *param)
{
    struct uiw__cmid *id = CMID(pid);
    socklen_t dlen = uiw__sock_addrlen(dst);
    if (!id || !dlen)
        return -EINVAL;
    int r = check_param(param);
    if (r < 0)
        return r;
    pthread_mutex_lock(&id->ch->lock);
    if (id->state != S_IDLE && id->state != S_BOUND) {
        pthread_mutex_unlock(&id->ch->lock);
        return -EISCONN;
    }
    int fd = uiw__sock_tcp(dst);
    if (fd < 0) {
        pthread_mutex_unlock(&id->ch->lock);
        return fd;
    }
    if (id->has_local && bind(fd, (const struct sockaddr *)&id->local,
                              uiw__sock_addrlen((const struct sockaddr *)&id->local)) < 0) {
        r = -errno;
        close(fd);
        pthread_mutex_unlock(&id->ch->lock);
        return r;
    }
    copy_param(id, param);
    memset(&id->peer, 0, sizeof(id->peer));
    memcpy(&id->peer, dst, dlen);
    id->has_peer = true;
    id->h.fd = fd;
    id->h.fn = id_events;
    id->state = S_CONNECTING;
    id->deadline =
        uiw__now_ms() + (id->param.timeout_ms ? id->param.timeout_ms : default_timeout_active);
    if (connect(fd, dst, dlen) < 0 && errno != EINPROGRESS) {
        r = -errno;
        id_close_sock(id);
        id->state = id->has_local ? S_BOUND : S_IDLE;
        pthread_mutex_unlock(&id->ch->lock);
        return r;
    }
    r = uiw__loop_set(&id->ch->loop, &id->h, EPOLLOUT);
    if (r < 0) {
        id_close_sock(id);
        id->state = S_IDLE;
    } else if (uiw__log_on(UIW__LOG_DEBUG)) {
        char pa[64];
        UIW__LOG(UIW__LOG_DEBUG, id->log_id, id_qpn(id), "connecting to %s",
                 uiw__log_addr(dst, pa, sizeof(pa)));
    }
    expire_and_arm(id->ch);
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

int uiw_cm_accept(struct uiw_cm_id *pid, const struct uiw_conn_param *param)
{
    struct uiw__cmid *id = CMID(pid);
    if (!id)
        return -EINVAL;
    int r = check_param(param);
    if (r < 0)
        return r;
    pthread_mutex_lock(&id->ch->lock);
    if (id->state != S_REQ_RCVD) {
        pthread_mutex_unlock(&id->ch->lock);
        return -EINVAL;
    }
    struct uiw_conn_param dflt;
    uiw_conn_param_init(&dflt);
    const struct uiw_conn_param *p = param ? param : &dflt;
    struct uiw__mpa_offer o;
    struct uiw__mpa_result res;
    struct uiw_mpa_frame f;
    my_offer(id, p, &o);
    int fail =
        uiw__mpa_respond(&o, &id->peer_frame, p->private_data, p->private_data_len, &f, &res);
    if (fail) {
        send_frame(id, &f);
        id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, fail);
        pthread_mutex_unlock(&id->ch->lock);
        return fail;
    }
    set_info(&id->info, &res, false);
    if (p->private_data_len > UIW_CM_PD_MAX - (res.enhanced ? UIW_MPA_V2_IRD_ORD_LEN : 0)) {
        pthread_mutex_unlock(&id->ch->lock);
        return -EINVAL;
    }
    uiw__sock_setup(id->h.fd, p);
    r = send_frame(id, &f);
    if (r == 0)
        r = id_established(id, NULL, 0);
    if (r < 0)
        id_fail(id, UIW_CM_EVENT_CONNECT_ERROR, r);
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

int uiw_cm_reject(struct uiw_cm_id *pid, const void *private_data, uint16_t len)
{
    struct uiw__cmid *id = CMID(pid);
    if (!id || (len && !private_data))
        return -EINVAL;
    pthread_mutex_lock(&id->ch->lock);
    if (id->state != S_REQ_RCVD) {
        pthread_mutex_unlock(&id->ch->lock);
        return -EINVAL;
    }
    const struct uiw_mpa_frame *q = &id->peer_frame;
    struct uiw_mpa_frame f = {
        .kind = UIW_MPA_REPLY,
        .flags = UIW_MPA_FLAG_REJECT,
        .rev = q->rev,
        .pd = private_data,
        .pd_len = len,
    };
    bool enhanced = q->rev == 2 && (q->flags & UIW_MPA_FLAG_ENHANCED);
    if (enhanced)
        f.flags |= UIW_MPA_FLAG_ENHANCED;
    if (len > UIW_CM_PD_MAX - (enhanced ? UIW_MPA_V2_IRD_ORD_LEN : 0)) {
        pthread_mutex_unlock(&id->ch->lock);
        return -EINVAL;
    }
    int r = send_frame(id, &f);
    UIW__LOG(UIW__LOG_INFO, id->log_id, id_qpn(id), "request rejected (%u bytes of private data)",
             (unsigned)len);
    id_close_sock(id);
    id->state = S_CLOSED;
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

int uiw_cm_disconnect(struct uiw_cm_id *pid)
{
    struct uiw__cmid *id = CMID(pid);
    if (!id)
        return -EINVAL;
    pthread_mutex_lock(&id->ch->lock);
    int r = 0;
    UIW__LOG(UIW__LOG_DEBUG, id->log_id, id_qpn(id), "disconnect");
    if (id->conn) {
        struct uiw__conn *c = id->conn;
        uiw__qp_close(id->pub.qp, true);
        uiw__conn_kick(c);
    } else if (id->state == S_ESTABLISHED) {
        shutdown(id->h.fd, SHUT_WR);
        id_close_sock(id);
        id->state = S_CLOSED;
        ev_push(id->ch, ev_new(id, UIW_CM_EVENT_DISCONNECTED, 0));
    } else if (id->state == S_CONNECTING || id->state == S_REQ_SENT || id->state == S_REQ_RCVD) {
        id_close_sock(id);
        id->state = S_CLOSED;
    } else {
        r = -ENOTCONN;
    }
    pthread_mutex_unlock(&id->ch->lock);
    return r;
}

uint32_t uiw_cm_log_id(const struct uiw_cm_id *pid)
{
    const struct uiw__cmid *id = (const struct uiw__cmid *)pid;
    return id ? id->log_id : 0;
}

int uiw_cm_query(const struct uiw_cm_id *pid, struct uiw_cm_conn_info *info)
{
    const struct uiw__cmid *id = (const struct uiw__cmid *)pid;
    if (!id || !info)
        return -EINVAL;
    if (!id->info_valid)
        return -ENOTCONN;
    *info = id->info;
    return 0;
}
