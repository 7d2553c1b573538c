/* The source of a Read Response is never read after the application deregistered or
 * invalidated it: a queued response is checked again at every segment, a segment built
 * already keeps its region until it went to TCP (LOCAL_INV waits for it; uiw_dereg_mr
 * drops it, or sends the rest of one TCP has begun to take from a copy), and a region gone ends the
 * stream with RDMAP / Remote Protection / Invalid STag. Run under ASan with CRC on (computed over
 * the payload when a segment is built): any read of the freed buffer is a heap-use-after-free. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/byteorder.h"
#include "pair.h"
#include "test.h"

#define LW UIW_ACCESS_LOCAL_WRITE
#define RR (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ)

enum { BIG = 1 << 20, POISON = 0xEE };

struct rsrc {
    struct pair p;
    struct uiw_mr *sink, *src;
    uint8_t *buf; /* src's memory, freed by the case */
    uint32_t rkey;
};

/* Side 0 reads BIG bytes from side 1 (CRC on, Ethernet-sized FPDUs), from a uiw_reg_mr
 * region or (fastreg) a uiw_alloc_mr STag bound by REG_MR; the Read Request has reached
 * side 1, which has built nothing yet. */
static void rsrc_open_ex(struct rsrc *r, bool fastreg)
{
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    o.mulpdu = 1460;
    o.max_chunk = 1 << 16;
    pair_init(&r->p, &o, true);
    r->sink = pair_mr(&r->p, 0, BIG, LW, 0);
    if (fastreg) {
        r->buf = malloc(BIG);
        r->src = uiw_alloc_mr(r->p.s[1].pd, BIG);
        CHECK(r->buf && r->src);
        r->rkey = uiw_inc_rkey(r->src->rkey);
        struct uiw_send_wr reg = {.wr_id = 2, .opcode = UIW_WR_REG_MR};
        reg.wr.reg.mr = r->src;
        reg.wr.reg.key = r->rkey;
        reg.wr.reg.addr = r->buf;
        reg.wr.reg.length = BIG;
        reg.wr.reg.access = RR;
        struct uiw_send_wr *bad = NULL;
        CHECK_EQ(uiw_post_send(r->p.s[1].qp, &reg, &bad), 0);
    } else {
        r->src = pair_mr(&r->p, 1, BIG, RR, 0);
        r->buf = r->src->addr;
        r->rkey = r->src->rkey;
    }
    for (size_t i = 0; i < BIG; i++)
        r->buf[i] = (uint8_t)(i * 13 + 1);
    CHECK_EQ(pair_post(&r->p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, r->sink, 0, BIG,
                       (uintptr_t)r->buf, r->rkey),
             0);
    pair_pump_dir(&r->p, 0, SIZE_MAX);
}

static void rsrc_open(struct rsrc *r)
{
    rsrc_open_ex(r, false);
}

static void poison_free(struct rsrc *r)
{
    memset(r->buf, POISON, BIG);
    free(r->buf);
    r->buf = NULL;
}

/* What side 0 got: a prefix of the source's bytes (the segments that went out before the
 * region went away), nothing after it, nothing poisoned; the Read failed with the remote
 * protection error and side 1 sent RDMAP / Remote Protection / Invalid STag with the
 * Read Request's headers. Returns the prefix length. */
static size_t rsrc_check(struct rsrc *r)
{
    const uint8_t *s = r->sink->addr;
    size_t got = 0;
    while (got < BIG && s[got] == (uint8_t)(got * 13 + 1))
        got++;
    for (size_t i = got; i < BIG; i++)
        if (s[i] != 0)
            uiw_test_fail(__FILE__, __LINE__, "sink byte %zu is %02x", i, s[i]);
    CHECK(got < BIG);
    struct uiw_wc wc = pair_wc(&r->p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_REM_ACCESS_ERR);
    uint8_t ddp[18], body[128];
    size_t n = pair_terminate(&r->p, 1, ddp, body, sizeof(body));
    CHECK_EQ(n, 4 + 2 + 18 + 28);
    CHECK_EQ(body[0], UIW_TERM_LAYER_RDMAP << 4 | UIW_TERM_RDMAP_REMOTE_PROTECTION);
    CHECK_EQ(body[1], UIW_TERM_RP_INVALID_STAG);
    CHECK_EQ(body[2], (UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R) << 5);
    CHECK_EQ(uiw__get_be16(body + 4), 46);
    const uint8_t rq[18] = {0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    CHECK_MEM(body + 6, rq, 18); /* the Read Request's DDP header: QN 1, MSN 1 */
    CHECK_EQ(uiw__get_be32(body + 24), r->sink->lkey);
    CHECK_EQ(uiw__get_be32(body + 36), BIG);
    CHECK_EQ(uiw__get_be32(body + 40), r->rkey);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(r->p.s[0].qp, &a), 0);
    CHECK(a.term_received);
    return got;
}

static void rsrc_close(struct rsrc *r)
{
    pair_nwc(&r->p, 0, true);
    pair_nwc(&r->p, 1, true);
    pair_mr_free(r->sink);
    pair_free(&r->p);
}

/* Deregistered and freed while the Request waits: not a byte of it is read. */
TEST(read_source_deregistered_while_queued)
{
    struct rsrc r;
    rsrc_open(&r);
    CHECK_EQ(uiw_dereg_mr(r.src), 0);
    poison_free(&r);
    pair_pump(&r.p);
    CHECK_EQ(rsrc_check(&r), 0);
    rsrc_close(&r);
}

/* Side 1 builds (and pins) the first segments and sends the first one (side 0 gets it):
 * the others are built but not handed to TCP. */
static void send_first_segment(struct rsrc *r)
{
    struct iovec v[3]; /* without markers: length and header, payload, pad and CRC */
    CHECK_EQ(uiw__qp_tx_next(r->p.s[1].qp, v, 3), 3);
    uint8_t seg[2048];
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(len + v[i].iov_len <= sizeof(seg));
        memcpy(seg + len, v[i].iov_base, v[i].iov_len);
        len += v[i].iov_len;
    }
    uiw__qp_tx_advance(r->p.s[1].qp, len);
    CHECK_EQ(pair_feed(&r->p, 0, seg, len), 0);
}

/* Segments built but not handed to TCP yet are dropped by uiw_dereg_mr, which returns
 * at once. */
TEST(read_source_deregistered_with_segments_built)
{
    struct rsrc r;
    rsrc_open(&r);
    send_first_segment(&r);
    CHECK_EQ(uiw_dereg_mr(r.src), 0);
    poison_free(&r);
    pair_pump(&r.p);
    CHECK_EQ(rsrc_check(&r), 1460 - UIW_DDP_TAGGED_HDR_LEN); /* the first segment's only */
    rsrc_close(&r);
}

struct dereg_arg {
    struct rsrc *r;
    atomic_bool done;
};

static void *dereg_thread(void *arg)
{
    struct dereg_arg *d = arg;
    CHECK_EQ(uiw_dereg_mr(d->r->src), 0);
    poison_free(d->r);
    atomic_store(&d->done, true);
    return NULL;
}

static void poison_free_arg(void *r)
{
    poison_free(r);
}

/* TCP took the first segment's header and part of its payload, then the peer stopped
 * reading: uiw_dereg_mr returns all the same (bounded here: it hung before), and the rest
 * of the segment goes out from a copy, never from the freed region, the Terminate after
 * it. */
TEST(read_source_deregistered_while_peer_stops_reading)
{
    struct rsrc r;
    rsrc_open(&r);
    struct iovec v[3]; /* without markers: length and header, payload, pad and CRC */
    CHECK_EQ(uiw__qp_tx_next(r.p.s[1].qp, v, 3), 3);
    uint8_t seg[2048];
    size_t len = 0, taken = v[0].iov_len + 100;
    for (int i = 0; i < 3; i++) {
        CHECK(len + v[i].iov_len <= sizeof(seg));
        memcpy(seg + len, v[i].iov_base, v[i].iov_len);
        len += v[i].iov_len;
    }
    uiw__qp_tx_advance(r.p.s[1].qp, taken); /* a partial send(); nothing more is taken */
    struct dereg_arg d = {.r = &r};
    atomic_init(&d.done, false);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, dereg_thread, &d), 0);
    for (int i = 0; i < 400 && !atomic_load(&d.done); i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(atomic_load(&d.done)); /* without waiting for the peer */
    CHECK_EQ(pthread_join(t, NULL), 0);
    /* the segment's rest, as TCP takes it now: the same bytes (the Terminate after them) */
    CHECK_EQ(uiw__qp_tx_next(r.p.s[1].qp, v, 3), 3);
    CHECK_EQ(v[0].iov_len + v[1].iov_len, len - taken);
    CHECK_MEM(v[0].iov_base, seg + taken, v[0].iov_len);
    CHECK_MEM(v[1].iov_base, seg + taken + v[0].iov_len, v[1].iov_len);
    uiw__qp_tx_advance(r.p.s[1].qp, len - taken);
    CHECK_EQ(pair_feed(&r.p, 0, seg, len), 0);
    pair_pump(&r.p);
    CHECK_EQ(rsrc_check(&r), 1460 - UIW_DDP_TAGGED_HDR_LEN); /* the first segment's only */
    rsrc_close(&r);
}

/* Segments handed to io (in a send() right now, as far as the engine knows) are waited
 * for: uiw_dereg_mr returns once io gave them back, however long io holds them; nothing
 * after them is built. */
TEST(read_source_deregistered_while_segments_are_sent)
{
    struct rsrc r;
    rsrc_open(&r);
    size_t handed = pair_tx_pending(&r.p, 1);
    CHECK(handed > 0);
    struct pair_dereg d;
    pair_dereg_start(&d, r.src, poison_free_arg, &r);
    pair_dereg_held(&d, UIW__DEREG_WAIT_SEND); /* it waits for what io holds */
    unsigned end = pair_dereg_mark(&d);
    pair_pump(&r.p);
    pair_dereg_join(&d, end);
    pair_pump(&r.p);
    size_t got = rsrc_check(&r);
    CHECK(got > 0);
    rsrc_close(&r);
}

/* LOCAL_INV of a fast-register STag a Read Response is being sent from completes only
 * once the segments built from it went out; later ones are not built. */
TEST(read_source_locally_invalidated)
{
    struct rsrc r;
    rsrc_open_ex(&r, true);
    CHECK(pair_tx_pending(&r.p, 1) > 0); /* segments built */
    struct uiw_send_wr *bad = NULL;
    struct uiw_send_wr inv = {
        .wr_id = 3, .opcode = UIW_WR_LOCAL_INV, .send_flags = UIW_SEND_SIGNALED};
    inv.invalidate_rkey = r.rkey;
    CHECK_EQ(uiw_post_send(r.p.s[1].qp, &inv, &bad), 0);
    CHECK_EQ(pair_nwc(&r.p, 1, true), 0); /* not complete while they wait */
    pair_pump(&r.p);
    struct uiw_wc wc = pair_wc(&r.p, 1, true);
    CHECK_EQ(wc.wr_id, 3);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    poison_free(&r); /* the application may reuse the memory now */
    pair_pump(&r.p);
    CHECK(rsrc_check(&r) > 0);
    CHECK_EQ(uiw_dereg_mr(r.src), 0);
    rsrc_close(&r);
}

/* A peer's Send with Invalidate of an STag a Read Response is being sent from is
 * refused (the application, told of the invalidation, could free what the response still
 * reads): 'STag cannot be invalidated', the receive fails. */
TEST(read_source_remote_invalidate_refused)
{
    struct rsrc r;
    rsrc_open_ex(&r, true);
    struct uiw_mr *rb = pair_mr(&r.p, 1, 64, LW, 0);
    pair_post_recv(&r.p, 1, 9, rb, 0, 64);
    CHECK(pair_tx_pending(&r.p, 1) > 0); /* segments built */
    CHECK_EQ(pair_post(&r.p, 0, 4, UIW_WR_SEND_WITH_INV, 0, NULL, 0, 0, 0, r.rkey), 0);
    pair_pump_dir(&r.p, 0, SIZE_MAX);
    struct uiw_wc wc = pair_wc(&r.p, 1, false);
    CHECK_EQ(wc.wr_id, 9);
    CHECK_EQ(wc.status, UIW_WC_LOC_ACCESS_ERR);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(r.p.s[1].qp, &a), 0);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(a.term_etype, UIW_TERM_RDMAP_REMOTE_OPERATION);
    CHECK_EQ(a.term_code, UIW_TERM_RO_CANT_INVALIDATE);
    pair_pump(&r.p);
    CHECK_EQ(uiw_dereg_mr(r.src), 0);
    free(r.buf);
    pair_mr_free(rb);
    rsrc_close(&r);
}
