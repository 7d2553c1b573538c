#include "pair.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "test.h"

void pair_opts_default(struct pair_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->mulpdu = 1460;
    o->ird[0] = o->ird[1] = 8;
    o->ord[0] = o->ord[1] = 8;
    o->sq = 64;
    o->rq = 64;
    o->seed = 12345;
    o->max_chunk = 3000;
    o->mode = PAIR_MIXED;
    o->cqe = 256;
}

uint64_t pair_rand(struct pair *p)
{
    uint64_t x = p->rnd;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p->rnd = x;
    return x;
}

void pair_init(struct pair *p, const struct pair_opts *o, bool start)
{
    memset(p, 0, sizeof(*p));
    p->o = *o;
    p->rnd = o->seed ? o->seed : 1;
    p->tmp = malloc(o->max_chunk);
    CHECK(p->tmp);
    for (int d = 0; d < 2; d++) {
        struct side *s = &p->s[d];
        if (d == 1 && o->srq1_ctx) {
            s->shared = true;
            s->ctx = o->srq1_ctx;
            s->pd = o->srq1_pd;
            s->srq = o->srq1;
        } else {
            struct uiw_context_attr a;
            uiw_context_attr_init(&a);
            a.progress_thread = false;
            s->ctx = uiw__context_alloc(&a);
            CHECK(s->ctx);
            s->pd = uiw_alloc_pd(s->ctx);
            CHECK(s->pd);
        }
        if (d == 1 && o->srq1_wr && !o->srq1_ctx) {
            struct uiw_srq_init_attr sa = {.attr = {.max_wr = o->srq1_wr, .max_sge = 4}};
            s->srq = uiw_create_srq(s->pd, &sa);
            CHECK(s->srq);
        }
        if (o->channel) {
            s->ch = uiw_create_comp_channel(s->ctx);
            CHECK(s->ch);
        }
        s->scq = uiw_create_cq(s->ctx, o->cqe, (void *)"send", s->ch, 0);
        s->rcq = uiw_create_cq(s->ctx, o->cqe, (void *)"recv", s->ch, 0);
        CHECK(s->scq && s->rcq);
        struct uiw_qp_init_attr qa = {
            .send_cq = s->scq,
            .recv_cq = s->rcq,
            .cap = {.max_send_wr = o->sq,
                    .max_recv_wr = o->rq,
                    .max_send_sge = 4,
                    .max_recv_sge = 4,
                    .max_inline_data = 128},
            .srq = s->srq,
            .sq_sig_all = o->sig_all,
            .max_ird = o->ird[d],
            .max_ord = o->ord[d],
        };
        s->qp = uiw_create_qp(s->pd, &qa);
        CHECK(s->qp);
        s->cap_size = 1 << 16;
        s->cap = malloc(s->cap_size);
        CHECK(s->cap);
    }
    if (start)
        pair_start(p);
}

void pair_start(struct pair *p)
{
    for (int d = 0; d < 2; d++) {
        struct uiw__conn_params cp = {
            .mpa_rev = 2,
            .crc = p->o.crc,
            .markers_tx = p->o.markers,
            .markers_rx = p->o.markers,
            .mulpdu = p->o.mulpdu,
            .ird = p->o.ird[d],
            .ord = p->o.ord[d],
            .rtr = p->o.rtr,
            .initiator = d == 0,
        };
        CHECK_EQ(uiw__qp_start(p->s[d].qp, &cp), 0);
        struct uiw_async_event ev;
        CHECK(pair_event(p, d, UIW_EVENT_COMM_EST, &ev));
    }
}

void pair_first_fpdu(struct pair *p)
{
    struct uiw_send_wr w = {.wr_id = UINT64_MAX, .opcode = UIW_WR_RDMA_WRITE};
    w.wr.rdma.rkey = 1;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(p->s[0].qp, &w, &bad), 0);
    pair_pump_dir(p, 0, SIZE_MAX);
}

void pair_free(struct pair *p)
{
    for (int d = 0; d < 2; d++) {
        struct side *s = &p->s[d];
        if (s->qp)
            CHECK_EQ(uiw_destroy_qp(s->qp), 0);
        CHECK_EQ(uiw_destroy_cq(s->scq), 0);
        CHECK_EQ(uiw_destroy_cq(s->rcq), 0);
        if (s->ch)
            CHECK_EQ(uiw_destroy_comp_channel(s->ch), 0);
        free(s->cap);
        if (s->shared)
            continue;
        if (s->srq)
            CHECK_EQ(uiw_destroy_srq(s->srq), 0);
        /* MRs are freed by the tests; a leftover one keeps the PD busy */
        CHECK_EQ(uiw_dealloc_pd(s->pd), 0);
        CHECK_EQ(uiw__context_free(s->ctx), 0);
    }
    free(p->tmp);
}

static void capture(struct side *s, const uint8_t *b, size_t n)
{
    if (s->cap_len + n > s->cap_size) {
        while (s->cap_len + n > s->cap_size)
            s->cap_size *= 2;
        s->cap = realloc(s->cap, s->cap_size);
        CHECK(s->cap);
    }
    memcpy(s->cap + s->cap_len, b, n);
    s->cap_len += n;
}

int pair_feed(struct pair *p, int d, const uint8_t *buf, size_t len)
{
    struct uiw_qp *qp = p->s[d].qp;
    int first = 0;
    while (len) {
        bool staged = p->o.mode == PAIR_STAGED || p->o.mode == PAIR_IO || p->o.mode == PAIR_PEEK ||
                      (p->o.mode == PAIR_MIXED && (pair_rand(p) & 1));
        size_t want = p->o.mode >= PAIR_IO ? len : 1 + pair_rand(p) % len;
        p->rx_calls[d]++;
        int r;
        if (staged) {
            uint8_t *b;
            size_t cap;
            r = uiw__qp_rx_stage(qp, &b, &cap);
            /* r < 0, not accepting: as io, uiw__qp_rx_next says whether bytes still go in */
            if (r == UIW__RX_PEEK && p->o.mode == PAIR_PEEK) {
                size_t m = want < cap ? want : cap;
                memcpy(b, buf, m); /* recv(MSG_PEEK) */
                p->peeked[d] += m;
                r = uiw__qp_rx_take(qp, m, NULL, NULL);
                CHECK(r != -EINVAL && r <= (int)m);
                if (r < 0 && r != -EPIPE) {
                    if (!first)
                        first = r;
                    return first; /* the stream failed: the rest is dropped */
                }
                if (r > 0) {
                    p->rx_calls[d]++;
                    m = (size_t)r; /* recv(MSG_TRUNC) of m bytes */
                    buf += m;
                    len -= m;
                    continue;
                }
            } else if (r == UIW__RX_PEEK || r == UIW__RX_READ || r == UIW__RX_EXACT) {
                size_t m = want < cap ? want : cap; /* read() */
                memcpy(b, buf, m);
                r = uiw__qp_rx_staged(qp, m, NULL, NULL);
                if (r && !first)
                    first = r;
                buf += m;
                len -= m;
                continue;
            }
        }
        struct iovec iov[8];
        int n = uiw__qp_rx_next(qp, iov, 8);
        CHECK(n >= 0);
        if (n == 0)
            return first;
        size_t m = 0;
        for (int i = 0; i < n && m < want; i++) {
            size_t k = iov[i].iov_len < want - m ? iov[i].iov_len : want - m;
            memcpy(iov[i].iov_base, buf + m, k);
            m += k;
        }
        r = uiw__qp_rx_advance(qp, m);
        if (r && !first)
            first = r;
        buf += m;
        len -= m;
    }
    return first;
}

size_t pair_tx_pending(struct pair *p, int d)
{
    struct iovec iov[256];
    int n = uiw__qp_tx_next(p->s[d].qp, iov, 256);
    CHECK(n >= 0);
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

size_t pair_pump_dir(struct pair *p, int d, size_t limit)
{
    struct side *s = &p->s[d];
    size_t moved = 0;
    while (moved < limit) {
        struct iovec iov[64];
        int n = uiw__qp_tx_next(s->qp, iov, 64);
        CHECK(n >= 0);
        if (n == 0)
            break;
        size_t total = 0;
        for (int i = 0; i < n; i++)
            total += iov[i].iov_len;
        size_t k = total < p->o.max_chunk ? total : p->o.max_chunk;
        if (k > limit - moved)
            k = limit - moved;
        if (!p->o.whole)
            k = 1 + pair_rand(p) % k;
        size_t m = 0;
        int fd;
        uint64_t off;
        if (iov[0].iov_base == uiw__tx_file_mark) {
            /* a file region's payload, handed alone: what sendfile would send */
            CHECK_EQ(n, 1);
            CHECK_EQ(uiw__qp_tx_file(s->qp, &fd, &off), 0);
            ssize_t r = pread(fd, p->tmp, k, (off_t)off);
            CHECK(r >= 0);
            memset(p->tmp + r, 0, k - (size_t)r);
            m = k;
        }
        for (int i = 0; i < n && m < k; i++) {
            size_t c = iov[i].iov_len < k - m ? iov[i].iov_len : k - m;
            memcpy(p->tmp + m, iov[i].iov_base, c);
            m += c;
        }
        uiw__qp_tx_advance(s->qp, k);
        capture(s, p->tmp, k);
        p->chunks[d]++;
        pair_feed(p, 1 - d, p->tmp, k);
        moved += k;
    }
    return moved;
}

size_t pair_discard_tx(struct pair *p, int d)
{
    size_t total = 0;
    for (;;) {
        size_t n = pair_tx_pending(p, d);
        if (!n)
            return total;
        uiw__qp_tx_advance(p->s[d].qp, n);
        total += n;
    }
}

size_t pair_pump(struct pair *p)
{
    size_t total = 0;
    for (int round = 0; round < 1000000; round++) {
        size_t m = pair_pump_dir(p, 0, SIZE_MAX) + pair_pump_dir(p, 1, SIZE_MAX);
        total += m;
        if (m == 0)
            return total;
    }
    CHECK(!"pump did not settle");
    return total;
}

struct uiw_wc pair_wc(struct pair *p, int d, bool send)
{
    struct uiw_wc wc;
    memset(&wc, 0, sizeof(wc));
    int n = uiw_poll_cq(send ? p->s[d].scq : p->s[d].rcq, 1, &wc);
    if (n != 1)
        uiw_test_fail(__FILE__, __LINE__, "side %d: no %s completion", d, send ? "send" : "recv");
    return wc;
}

int pair_nwc(struct pair *p, int d, bool send)
{
    struct uiw_wc wc[16];
    int total = 0, n;
    while ((n = uiw_poll_cq(send ? p->s[d].scq : p->s[d].rcq, 16, wc)) > 0)
        total += n;
    return total;
}

bool pair_event(struct pair *p, int d, enum uiw_event_type t, struct uiw_async_event *ev)
{
    struct uiw_async_event e;
    while (uiw_get_async_event(p->s[d].ctx, &e) == 0) {
        uiw_ack_async_event(&e);
        if (e.event_type == t) {
            if (ev)
                *ev = e;
            return true;
        }
    }
    return false;
}

const uint8_t *pair_find_ulpdu(struct pair *p, int d, bool (*match)(const uint8_t *, size_t),
                               size_t *len)
{
    struct side *s = &p->s[d];
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, p->o.crc, p->o.markers, 0);
    static uint8_t ul[65536];
    size_t off = 0;
    while (off < s->cap_len) {
        uint16_t ulen = 0;
        bool done = false;
        ssize_t r =
            uiw_fpdu_rx_feed(&rx, s->cap + off, s->cap_len - off, ul, sizeof(ul), &ulen, &done);
        CHECK(r >= 0);
        off += (size_t)r;
        if (done && match(ul, ulen)) {
            *len = ulen;
            return ul;
        }
    }
    return NULL;
}

static bool is_terminate(const uint8_t *ul, size_t n)
{
    return n >= UIW_DDP_UNTAGGED_HDR_LEN && !(ul[0] & UIW_DDP_FLAG_TAGGED) && ul[9] == 2 &&
           (ul[1] & 0x0F) == UIW_RDMAP_TERMINATE;
}

size_t pair_terminate(struct pair *p, int d, uint8_t *ddp, uint8_t *body, size_t cap)
{
    size_t ulen = 0;
    const uint8_t *ul = pair_find_ulpdu(p, d, is_terminate, &ulen);
    if (!ul)
        return 0;
    memcpy(ddp, ul, UIW_DDP_UNTAGGED_HDR_LEN);
    size_t n = ulen - UIW_DDP_UNTAGGED_HDR_LEN;
    CHECK(n <= cap);
    memcpy(body, ul + UIW_DDP_UNTAGGED_HDR_LEN, n);
    return n;
}

struct uiw_mr *pair_mr(struct pair *p, int d, size_t len, unsigned access, uint8_t fill)
{
    uint8_t *b = malloc(len ? len : 1);
    CHECK(b);
    memset(b, fill, len);
    struct uiw_mr *mr = uiw_reg_mr(p->s[d].pd, b, len, access);
    CHECK(mr);
    return mr;
}

void pair_mr_free(struct uiw_mr *mr)
{
    void *b = mr->addr;
    CHECK_EQ(uiw_dereg_mr(mr), 0);
    free(b);
}

struct uiw_send_wr pair_reg_wr(uint64_t id, struct uiw_mr *mr, uint32_t key, void *addr, size_t len,
                               unsigned access)
{
    struct uiw_send_wr w = {.wr_id = id, .opcode = UIW_WR_REG_MR};
    w.wr.reg.mr = mr;
    w.wr.reg.key = key;
    w.wr.reg.addr = addr;
    w.wr.reg.length = len;
    w.wr.reg.access = access;
    return w;
}

void pair_post_recv(struct pair *p, int d, uint64_t id, struct uiw_mr *mr, size_t off, uint32_t len)
{
    struct uiw_sge sge = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
    struct uiw_recv_wr *bad = NULL;
    if (p->s[d].srq)
        CHECK_EQ(uiw_post_srq_recv(p->s[d].srq, &wr, &bad), 0);
    else
        CHECK_EQ(uiw_post_recv(p->s[d].qp, &wr, &bad), 0);
}

int pair_post(struct pair *p, int d, uint64_t id, enum uiw_wr_opcode op, unsigned flags,
              struct uiw_mr *mr, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct uiw_sge sge = {0};
    if (mr)
        sge = (struct uiw_sge){.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
    struct uiw_send_wr wr = {
        .wr_id = id, .sg_list = &sge, .num_sge = mr ? 1 : 0, .opcode = op, .send_flags = flags};
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    wr.invalidate_rkey = rkey;
    struct uiw_send_wr *bad = NULL;
    return uiw_post_send(p->s[d].qp, &wr, &bad);
}

static struct pair_dereg *watched;

static void dereg_waits(struct uiw_context *ctx, enum uiw__dereg_wait what)
{
    (void)ctx;
    struct pair_dereg *d = watched;
    int none = -1;
    if (atomic_compare_exchange_strong(&d->what, &none, (int)what)) {
        atomic_store(&d->waited_at, atomic_fetch_add(&d->seq, 1));
        sem_post(&d->waits);
    }
}

static void *dereg_run(void *arg)
{
    struct pair_dereg *d = arg;
    CHECK_EQ(uiw_dereg_mr(d->mr), 0);
    atomic_store(&d->returned_at, atomic_fetch_add(&d->seq, 1));
    if (d->after)
        d->after(d->arg);
    sem_post(&d->returned);
    return NULL;
}

void pair_dereg_start(struct pair_dereg *d, struct uiw_mr *mr, void (*after)(void *), void *arg)
{
    memset(d, 0, sizeof(*d));
    d->mr = mr;
    d->after = after;
    d->arg = arg;
    CHECK_EQ(sem_init(&d->waits, 0, 0), 0);
    CHECK_EQ(sem_init(&d->returned, 0, 0), 0);
    atomic_init(&d->seq, 1);
    atomic_init(&d->what, -1);
    atomic_init(&d->waited_at, 0);
    atomic_init(&d->returned_at, 0);
    watched = d;
    uiw__dereg_wait_hook = dereg_waits;
    CHECK_EQ(pthread_create(&d->th, NULL, dereg_run, d), 0);
}

/* sem_timedwait for ms milliseconds: 0, or -ETIMEDOUT. */
static int sem_wait_ms(sem_t *s, long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    while (sem_timedwait(s, &t) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

void pair_dereg_held(struct pair_dereg *d, enum uiw__dereg_wait what)
{
    CHECK_EQ(sem_wait_ms(&d->waits, 30000), 0); /* the call waits */
    CHECK_EQ(atomic_load(&d->what), what);
    /* what it waits for is held: it does not return */
    int r = sem_wait_ms(&d->returned, PAIR_HOLD_MS);
    if (r == 0)
        uiw_test_fail(__FILE__, __LINE__,
                      "uiw_dereg_mr returned while what it waits for was held (wait %u, "
                      "return %u)",
                      atomic_load(&d->waited_at), atomic_load(&d->returned_at));
    CHECK_EQ(r, -ETIMEDOUT);
}

unsigned pair_dereg_mark(struct pair_dereg *d)
{
    return atomic_fetch_add(&d->seq, 1);
}

void pair_dereg_join(struct pair_dereg *d, unsigned end)
{
    CHECK_EQ(sem_wait_ms(&d->returned, 30000), 0);
    CHECK_EQ(pthread_join(d->th, NULL), 0);
    uiw__dereg_wait_hook = NULL;
    watched = NULL;
    unsigned w = atomic_load(&d->waited_at), ret = atomic_load(&d->returned_at);
    if (!(w != 0 && w < end && end < ret))
        uiw_test_fail(__FILE__, __LINE__,
                      "out of order: the wait started at %u, what it waited for ended at %u, "
                      "uiw_dereg_mr returned at %u",
                      w, end, ret);
    sem_destroy(&d->waits);
    sem_destroy(&d->returned);
}
