/* RPC-over-RDMA header codec: known answers, errors, caps, properties, helpers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/rpcrdma.h>

#include "rnd.h"
#include "test.h"

static struct uiw_rpcrdma_space_default st;
static struct uiw_rpcrdma_space sp;

static void space(void)
{
    uiw_rpcrdma_space_init(&sp, &st);
}

/* Decode from an exact-size heap copy, so that ASan sees any read past the end. The copy
 * lives until the next call (decoded pointers point into it). */
static uint8_t *last_copy;

static int decode_exact(const uint8_t *buf, size_t len, struct uiw_rpcrdma_hdr *h)
{
    free(last_copy);
    last_copy = malloc(len ? len : 1);
    CHECK(last_copy != NULL);
    if (len)
        memcpy(last_copy, buf, len);
    return uiw_rpcrdma_decode(last_copy, len, h, &sp);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Build a message from 32-bit words. */
static size_t words(uint8_t *buf, const uint32_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put32(buf + 4 * i, w[i]);
    return 4 * n;
}

TEST(v1_msg_known_answer)
{
    struct uiw_rpcrdma_read_segment rs = {.position = 0,
                                          .target = {0x1234, 0x100000, 0x7fff00000000ull}};
    struct uiw_rpcrdma_hdr h = {.xid = 0xdeadbeef, .vers = 1, .credit = 32, .proc = UIW_RDMA_NOMSG};
    h.u.chunks.nreads = 1;
    h.u.chunks.reads = &rs;
    static const uint32_t want[] = {0xdeadbeef, 1, 32,     1, /* fixed */
                                    1,          0, 0x1234, 0x100000,
                                    0x7fff,     0, 0, /* end of read list */
                                    0,                /* no write list */
                                    0 /* no reply chunk */};
    uint8_t buf[128], exp[128];
    size_t n = words(exp, want, sizeof(want) / 4);
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), n);
    CHECK_MEM(buf, exp, n);

    struct uiw_rpcrdma_hdr d;
    space();
    CHECK_EQ(decode_exact(exp, n, &d), n);
    CHECK_EQ(d.xid, 0xdeadbeef);
    CHECK_EQ(d.vers, 1);
    CHECK_EQ(d.credit, 32);
    CHECK_EQ(d.proc, UIW_RDMA_NOMSG);
    CHECK_EQ(d.nfixed, 4);
    CHECK_EQ(d.u.chunks.nreads, 1);
    CHECK_EQ(d.u.chunks.reads[0].target.handle, 0x1234);
    CHECK_EQ(d.u.chunks.reads[0].target.length, 0x100000);
    CHECK_EQ(d.u.chunks.reads[0].target.offset, 0x7fff00000000ull);
    CHECK_EQ(d.u.chunks.nwrites, 0);
    CHECK(!d.u.chunks.has_reply);
}

TEST(v2_msg_known_answer)
{
    struct uiw_rpcrdma_segment segs[3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    struct uiw_rpcrdma_write_chunk wc = {2, segs};
    struct uiw_rpcrdma_hdr h = {.xid = 1, .vers = 2, .credit = 32, .proc = UIW_RDMA_MSG};
    h.u.chunks.direction = UIW_RPCRDMA_REPLY;
    h.u.chunks.inv_handle = 0x44;
    h.u.chunks.nwrites = 1;
    h.u.chunks.writes = &wc;
    h.u.chunks.has_reply = true;
    h.u.chunks.reply = (struct uiw_rpcrdma_write_chunk){1, &segs[2]};
    static const uint32_t want[] = {1,     2,    32, 0, /* fixed */
                                    1,     0x44,        /* direction REPLY, inv_handle */
                                    0,                  /* empty read list */
                                    1,     2,    1,  2, 0, 3, 4, 5, 0, 6, 0, /* one write chunk */
                                    1,     1,    7,  8, 0, 9,                /* reply chunk */
                                    0xCAFE /* payload */};
    uint8_t buf[256], exp[256];
    size_t n = words(exp, want, sizeof(want) / 4);
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), n - 4);
    CHECK_MEM(buf, exp, n - 4);

    struct uiw_rpcrdma_hdr d;
    space();
    CHECK_EQ(decode_exact(exp, n, &d), n - 4); /* the payload starts after the header */
    CHECK_EQ(d.u.chunks.direction, UIW_RPCRDMA_REPLY);
    CHECK_EQ(d.u.chunks.inv_handle, 0x44);
    CHECK_EQ(d.u.chunks.nwrites, 1);
    CHECK_EQ(d.u.chunks.writes[0].nsegs, 2);
    CHECK_EQ(d.u.chunks.writes[0].segs[1].offset, 6);
    CHECK(d.u.chunks.has_reply);
    CHECK_EQ(d.u.chunks.reply.segs[0].handle, 7);
}

TEST(v2_error_every_code)
{
    uint8_t buf[64];
    struct uiw_rpcrdma_hdr d;
    space();
    for (uint32_t code = 1; code <= 6; code++) {
        struct uiw_rpcrdma_error e = {.errcode = code,
                                      .vers_low = 1,
                                      .vers_high = 2,
                                      .segment_index = 3,
                                      .length_needed = 4096};
        int n = uiw_rpcrdma_encode_error(buf, sizeof(buf), 77, 2, 5, &e);
        CHECK_EQ(n, code == 1 || code == 3 ? 28 : 20);
        CHECK_EQ(decode_exact(buf, (size_t)n, &d), n);
        CHECK_EQ(d.proc, UIW_RDMA_ERROR);
        CHECK_EQ(d.xid, 77);
        CHECK_EQ(d.credit, 5);
        CHECK_EQ(d.u.error.errcode, code);
        if (code == 1)
            CHECK(d.u.error.vers_low == 1 && d.u.error.vers_high == 2);
        if (code == 3)
            CHECK(d.u.error.segment_index == 3 && d.u.error.length_needed == 4096);
        CHECK(uiw_rpcrdma_errcode_name(code, 2) != NULL);
    }
    /* undefined error codes */
    static const uint32_t bad7[] = {77, 2, 5, 4, 7};
    CHECK_EQ(decode_exact(buf, words(buf, bad7, 5), &d), UIW_E_RPCRDMA_BAD_ERRCODE);
    struct uiw_rpcrdma_error e7 = {.errcode = 7};
    CHECK_EQ(uiw_rpcrdma_encode_error(buf, sizeof(buf), 1, 2, 1, &e7), -EINVAL);
}

TEST(v1_error_and_refused_procs)
{
    uint8_t buf[64];
    struct uiw_rpcrdma_hdr d;
    space();
    struct uiw_rpcrdma_error ev = {.errcode = UIW_RDMA_ERR_VERS, .vers_low = 1, .vers_high = 1};
    CHECK_EQ(uiw_rpcrdma_encode_error(buf, sizeof(buf), 9, 1, 1, &ev), 28);
    CHECK_EQ(decode_exact(buf, 28, &d), 28);
    CHECK_EQ(d.u.error.errcode, UIW_RDMA_ERR_VERS);
    struct uiw_rpcrdma_error ec = {.errcode = UIW_RDMA_ERR_CHUNK};
    CHECK_EQ(uiw_rpcrdma_encode_error(buf, sizeof(buf), 9, 1, 1, &ec), 20);
    CHECK_EQ(decode_exact(buf, 20, &d), 20);
    CHECK_EQ(d.u.error.errcode, UIW_RDMA_ERR_CHUNK);
    /* Version One has no code 3..6 */
    struct uiw_rpcrdma_error e3 = {.errcode = 3};
    CHECK_EQ(uiw_rpcrdma_encode_error(buf, sizeof(buf), 9, 1, 1, &e3), -EINVAL);
    static const uint32_t bad3[] = {9, 1, 1, 4, 3, 0, 0};
    CHECK_EQ(decode_exact(buf, words(buf, bad3, 7), &d), UIW_E_RPCRDMA_BAD_ERRCODE);
    CHECK_EQ(uiw_rpcrdma_wire_error(UIW_E_RPCRDMA_BAD_ERRCODE, 1), UIW_RDMA_ERR_CHUNK);

    /* MSGP and DONE are recognised and refused; 5 and above are unknown */
    static const uint32_t procs[] = {2, 3, 5, 6, 100};
    for (size_t i = 0; i < 5; i++) {
        uint32_t proc = procs[i];
        uint32_t w[] = {9, 1, 1, proc, 0, 0, 0, 0, 0};
        int rc = decode_exact(buf, words(buf, w, 9), &d);
        CHECK_EQ(rc, proc <= 3 ? UIW_E_RPCRDMA_V1_REFUSED_PROC : UIW_E_RPCRDMA_V1_BAD_PROC);
        CHECK_EQ(uiw_rpcrdma_wire_error(rc, 1), UIW_RDMA_ERR_CHUNK);
        CHECK_EQ(d.nfixed, 4);
        CHECK_EQ(d.proc, proc);
    }
    struct uiw_rpcrdma_hdr h = {.xid = 1, .vers = 1, .proc = UIW_RDMA_MSGP};
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), -EINVAL);
    h.proc = UIW_RDMA_DONE;
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), -EINVAL);
    h.proc = UIW_RDMA2_OPTIONAL; /* a v2 procedure in a v1 header */
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), -EINVAL);
}

TEST(v2_inval_proc_and_reply)
{
    uint8_t buf[64], out[64];
    struct uiw_rpcrdma_hdr d;
    space();
    static const uint32_t procs[] = {2, 3, 10, 0xFFFFFFFF};
    for (size_t i = 0; i < 4; i++) {
        uint32_t w[] = {0xabcd, 2, 8, procs[i], 0, 0, 0, 0};
        int rc = decode_exact(buf, words(buf, w, 8), &d);
        CHECK_EQ(rc, UIW_E_RPCRDMA_INVAL_PROC);
        CHECK_EQ(uiw_rpcrdma_wire_error(rc, 2), UIW_RDMA2_ERR_INVAL_PROC);
        int n = uiw_rpcrdma_encode_error_reply(out, sizeof(out), &d, rc, 3);
        CHECK_EQ(n, 20);
        static const uint32_t want[] = {0xabcd, 2, 3, 4, 4};
        uint8_t exp[20];
        words(exp, want, 5);
        CHECK_MEM(out, exp, 20);
    }
    /* v1 message given to the v2-only decoder */
    static const uint32_t v1[] = {1, 1, 1, 0, 0, 0, 0};
    CHECK_EQ(uiw_rpcrdma2_decode(buf, words(buf, v1, 7), &d, &sp), UIW_E_RPCRDMA_VERS);
    CHECK_EQ(uiw_rpcrdma1_decode(buf, 28, &d, &sp), 28);
}

TEST(unknown_version)
{
    uint8_t buf[64], out[64];
    struct uiw_rpcrdma_hdr d;
    space();
    static const uint32_t v3[] = {0x1111, 3, 1, 0, 0, 0, 0};
    int rc = decode_exact(buf, words(buf, v3, 7), &d);
    CHECK_EQ(rc, UIW_E_RPCRDMA_VERS);
    CHECK_EQ(uiw_rpcrdma_wire_error(rc, 3), UIW_RDMA_ERR_VERS);
    int n = uiw_rpcrdma_encode_error_reply(out, sizeof(out), &d, rc, 1);
    static const uint32_t want[] = {0x1111, 3, 1, 4, 1, 1, 2};
    uint8_t exp[28];
    words(exp, want, 7);
    CHECK_EQ(n, 28);
    CHECK_MEM(out, exp, 28);
    /* a short header with an unknown version still reports the version */
    CHECK_EQ(decode_exact(buf, 8, &d), UIW_E_RPCRDMA_VERS);
    CHECK_EQ(d.nfixed, 2);
    CHECK_EQ(decode_exact(buf, 7, &d), UIW_E_RPCRDMA_TRUNCATED);
    CHECK_EQ(uiw_rpcrdma_encode_error_reply(out, sizeof(out), &d, UIW_E_RPCRDMA_TRUNCATED, 1),
             -EINVAL);
    /* ERR_VERS is understood whatever rdma_vers says (its layout is fixed) */
    CHECK_EQ(decode_exact(out, 28, &d), 28);
    CHECK_EQ(d.vers, 3);
    CHECK_EQ(d.u.error.errcode, UIW_RDMA_ERR_VERS);
    CHECK_EQ(d.u.error.vers_high, 2);
    CHECK_EQ(uiw_rpcrdma1_decode(out, 28, &d, &sp), 28);
    CHECK_EQ(uiw_rpcrdma2_decode(out, 28, &d, &sp), 28);
    /* but no other error code of an unknown version, not even a v2 one */
    static const uint32_t e4[] = {0x1111, 3, 1, 4, 4};
    CHECK_EQ(decode_exact(buf, words(buf, e4, 5), &d), UIW_E_RPCRDMA_VERS);
    /* the v1-only decoder treats a v2 error other than ERR_VERS as a version problem */
    static const uint32_t e2[] = {0x1111, 2, 1, 4, 4};
    CHECK_EQ(uiw_rpcrdma1_decode(buf, words(buf, e2, 5), &d, &sp), UIW_E_RPCRDMA_VERS);
    /* encoding: only versions 1 and 2 */
    struct uiw_rpcrdma_hdr h = {.vers = 3};
    CHECK_EQ(uiw_rpcrdma_encode(out, sizeof(out), &h), -EINVAL);
}

/* Every proper prefix of a valid header fails (TRUNCATED), every too-small encode buffer
 * gives NOSPC; exact-size buffers everywhere. */
TEST(truncation_and_nospc_every_length)
{
    static struct rnd_msg m;
    uint8_t buf[8192];
    struct uiw_rpcrdma_hdr d;
    uint64_t seed = 42;
    space();
    for (int run = 0; run < 600; run++) {
        uint32_t vers = 1 + (uint32_t)(run % 2);
        rnd_msg(&m, &seed, vers, -1, false);
        int n = uiw_rpcrdma_encode(buf, sizeof(buf), &m.h);
        CHECK(n >= UIW_RPCRDMA_FIXED_LEN);
        for (int len = 0; len < n; len++) {
            int rc = decode_exact(buf, (size_t)len, &d);
            CHECK_EQ(rc, UIW_E_RPCRDMA_TRUNCATED);
            CHECK_EQ(uiw_rpcrdma_wire_error(rc, vers), 2);
            CHECK_EQ(d.nfixed, (uint32_t)(len / 4 < 4 ? len / 4 : 4));
        }
        CHECK_EQ(decode_exact(buf, (size_t)n, &d), n);
        CHECK(rnd_hdr_equal(&m.h, &d));
        for (int cap = 0; cap <= n; cap++) {
            uint8_t *out = malloc(cap ? (size_t)cap : 1);
            CHECK(out != NULL);
            CHECK_EQ(uiw_rpcrdma_encode(out, (size_t)cap, &m.h), cap < n ? UIW_E_RPCRDMA_NOSPC : n);
            if (cap == n)
                CHECK_MEM(out, buf, (size_t)n);
            free(out);
        }
    }
}

TEST(caps_default_and_configured)
{
    static struct uiw_rpcrdma_read_segment reads[17];
    static struct uiw_rpcrdma_write_chunk writes[17];
    static struct uiw_rpcrdma_segment segs[17];
    static struct uiw_rpcrdma_prop props[17];
    static uint8_t buf[8192];
    struct uiw_rpcrdma_hdr h = {.xid = 5, .vers = 2, .credit = 1, .proc = UIW_RDMA_MSG};
    struct uiw_rpcrdma_hdr d;
    space();

    /* 16 of each fit the default caps, 17 do not */
    for (uint32_t n = 16; n <= 17; n++) {
        memset(&h.u, 0, sizeof(h.u));
        h.proc = UIW_RDMA_MSG;
        h.u.chunks.nreads = n;
        h.u.chunks.reads = reads;
        int len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
        CHECK_EQ(decode_exact(buf, (size_t)len, &d), n == 16 ? len : UIW_E_RPCRDMA_CAP_READS);

        h.u.chunks.nreads = 0;
        h.u.chunks.nwrites = n;
        h.u.chunks.writes = writes;
        len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
        CHECK_EQ(decode_exact(buf, (size_t)len, &d), n == 16 ? len : UIW_E_RPCRDMA_CAP_WRITES);

        h.u.chunks.nwrites = 1;
        writes[0] = (struct uiw_rpcrdma_write_chunk){n, segs};
        len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
        CHECK_EQ(decode_exact(buf, (size_t)len, &d), n == 16 ? len : UIW_E_RPCRDMA_CAP_SEGS);
        writes[0].nsegs = 0;

        memset(&h.u, 0, sizeof(h.u));
        h.proc = UIW_RDMA2_UPDPROP;
        for (uint32_t i = 0; i < n; i++)
            props[i] = (struct uiw_rpcrdma_prop){.which = 100 + i};
        h.u.updprop.now = (struct uiw_rpcrdma_propset){n, props};
        len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
        int rc = decode_exact(buf, (size_t)len, &d);
        CHECK_EQ(rc, n == 16 ? len : UIW_E_RPCRDMA_CAP_PROPS);
        if (rc < 0) {
            CHECK_EQ(uiw_rpcrdma_wire_error(rc, 2), UIW_RDMA2_ERR_BAD_XDR);
            CHECK_EQ(uiw_rpcrdma_wire_error(rc, 1), UIW_RDMA_ERR_CHUNK);
        }
    }

    /* configured: 2 reads, 3 writes, 4 segments in all, 2 per chunk, 1 property */
    struct uiw_rpcrdma_read_segment r2[2];
    struct uiw_rpcrdma_write_chunk w3[3];
    struct uiw_rpcrdma_segment s4[4];
    struct uiw_rpcrdma_prop p1[1];
    struct uiw_rpcrdma_space small = {r2, 2, w3, 3, s4, 4, 2, p1, 1};
    memset(&h.u, 0, sizeof(h.u));
    h.proc = UIW_RDMA_NOMSG;
    h.u.chunks.nreads = 3;
    h.u.chunks.reads = reads;
    int len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, &small), UIW_E_RPCRDMA_CAP_READS);
    h.u.chunks.nreads = 2;
    len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, &small), len);
    CHECK(d.u.chunks.reads == r2);
    /* 3 segments in one chunk > 2 per chunk */
    h.u.chunks.nwrites = 1;
    h.u.chunks.writes = writes;
    writes[0] = (struct uiw_rpcrdma_write_chunk){3, segs};
    len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, &small), UIW_E_RPCRDMA_CAP_SEGS);
    /* 2 + 2 fits the pool of 4, a reply chunk of 1 more does not */
    h.u.chunks.nwrites = 2;
    writes[0].nsegs = 2;
    writes[1] = (struct uiw_rpcrdma_write_chunk){2, segs};
    len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, &small), len);
    CHECK(d.u.chunks.writes[1].segs == s4 + 2);
    h.u.chunks.has_reply = true;
    h.u.chunks.reply = (struct uiw_rpcrdma_write_chunk){1, segs};
    len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, &small), UIW_E_RPCRDMA_CAP_SEGS);
    /* no space at all: only chunk-free messages decode */
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, NULL), UIW_E_RPCRDMA_CAP_READS);
    memset(&h.u, 0, sizeof(h.u));
    len = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(len, 36);
    CHECK_EQ(uiw_rpcrdma_decode(buf, (size_t)len, &d, NULL), len);
}

TEST(properties_checked_and_unknown_kept)
{
    uint8_t buf[256];
    struct uiw_rpcrdma_hdr d;
    space();
    /* CONNPROP: RBSIZ 8192, BRS default (empty), unknown 0x77 with 5 bytes; nochg {1,2} */
    static const uint32_t ok[] = {3, 2, 1,    6, 3,          1,          4, 8192,
                                  2, 0, 0x77, 5, 0x01020304, 0x05000000, 1, 6};
    int n = decode_exact(buf, words(buf, ok, 16), &d);
    CHECK_EQ(n, 64);
    CHECK_EQ(d.u.connprop.start.n, 3);
    const struct uiw_rpcrdma_prop *p = uiw_rpcrdma_propset_find(&d.u.connprop.start, 1);
    CHECK(p != NULL);
    CHECK_EQ(p->value, 8192);
    p = uiw_rpcrdma_propset_find(&d.u.connprop.start, UIW_RPCRDMA_PROP_BRS);
    CHECK(p != NULL);
    CHECK_EQ(p->len, 0);
    CHECK_EQ(p->value, UIW_RDMA2_BKREQSUP_INLINE); /* the default */
    p = uiw_rpcrdma_propset_find(&d.u.connprop.start, 0x77);
    CHECK(p != NULL);
    CHECK_EQ(p->len, 5);
    CHECK(p->data == last_copy + 48); /* points into the input */
    CHECK_EQ(p->data[4], 5);
    CHECK(uiw_rpcrdma_propset_find(&d.u.connprop.start, 3) == NULL);
    CHECK(uiw_rpcrdma_subset_has(&d.u.connprop.nochg, 1));
    CHECK(uiw_rpcrdma_subset_has(&d.u.connprop.nochg, 2));
    CHECK(!uiw_rpcrdma_subset_has(&d.u.connprop.nochg, 0));
    CHECK(!uiw_rpcrdma_subset_has(&d.u.connprop.nochg, 34));

    /* invalid values of known properties; nonzero pad; overrun */
    static const uint32_t small_rbsiz[] = {3, 2, 1, 9, 1, 1, 4, 512};
    CHECK_EQ(decode_exact(buf, words(buf, small_rbsiz, 8), &d), UIW_E_RPCRDMA_BAD_PROP);
    static const uint32_t rbsiz_len3[] = {3, 2, 1, 9, 1, 1, 3, 0x00100000};
    CHECK_EQ(decode_exact(buf, words(buf, rbsiz_len3, 8), &d), UIW_E_RPCRDMA_BAD_PROP);
    static const uint32_t brs3[] = {3, 2, 1, 7, 1, 2, 4, 3};
    CHECK_EQ(decode_exact(buf, words(buf, brs3, 8), &d), UIW_E_RPCRDMA_BAD_PROP);
    static const uint32_t brs_long[] = {3, 2, 1, 7, 1, 2, 8, 1, 0};
    CHECK_EQ(decode_exact(buf, words(buf, brs_long, 9), &d), UIW_E_RPCRDMA_BAD_PROP);
    CHECK_EQ(uiw_rpcrdma_wire_error(UIW_E_RPCRDMA_BAD_PROP, 2), UIW_RDMA2_ERR_BAD_XDR);
    static const uint32_t pad[] = {3, 2, 1, 7, 1, 0x77, 1, 0x01000001};
    CHECK_EQ(decode_exact(buf, words(buf, pad, 8), &d), UIW_E_RPCRDMA_BAD_PAD);
    static const uint32_t overrun[] = {3, 2, 1, 7, 1, 0x77, 9, 1, 2};
    CHECK_EQ(decode_exact(buf, words(buf, overrun, 9), &d), UIW_E_RPCRDMA_TRUNCATED);

    /* the encoder refuses what the decoder would refuse, writes values and defaults */
    struct uiw_rpcrdma_prop pr[2] = {{.which = 1, .len = 4, .value = 100},
                                     {.which = 2, .len = 4, .value = 2}};
    struct uiw_rpcrdma_hdr h = {.xid = 3, .vers = 2, .credit = 1, .proc = UIW_RDMA2_REQPROP};
    h.u.reqprop.want = (struct uiw_rpcrdma_propset){2, pr};
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), UIW_E_RPCRDMA_BAD_PROP);
    CHECK_EQ(uiw_rpcrdma_prop_check(&pr[0]), UIW_E_RPCRDMA_BAD_PROP);
    pr[0].value = 65536;
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), 44);
    static const uint32_t want[] = {3, 2, 1, 7, 2, 1, 4, 65536, 2, 4, 2};
    uint8_t exp[44];
    words(exp, want, 11);
    CHECK_MEM(buf, exp, 44);
    pr[1].len = 3; /* by value, but not 0 or 4 bytes */
    CHECK_EQ(uiw_rpcrdma_encode(buf, sizeof(buf), &h), -EINVAL);
}

TEST(subset_helpers)
{
    uint8_t wire[16];
    struct uiw_rpcrdma_propsubset s;
    static const uint32_t ids[] = {1, 2, 33, 95};
    CHECK_EQ(uiw_rpcrdma_subset_build(&s, wire, sizeof(wire), ids, 4), 3);
    CHECK_EQ(uiw_rpcrdma_subset_word(&s, 0), 0x6);
    CHECK_EQ(uiw_rpcrdma_subset_word(&s, 1), 0x2);
    CHECK_EQ(uiw_rpcrdma_subset_word(&s, 2), 0x80000000u);
    CHECK_EQ(uiw_rpcrdma_subset_word(&s, 3), 0); /* not sent: zero */
    CHECK_EQ(uiw_rpcrdma_subset_word(&s, 0xFFFFFFFFu), 0);
    for (uint32_t id = 0; id < 200; id++)
        CHECK_EQ(uiw_rpcrdma_subset_has(&s, id), id == 1 || id == 2 || id == 33 || id == 95);
    CHECK(!uiw_rpcrdma_subset_has(&s, 0xFFFFFFFFu));
    CHECK_EQ(uiw_rpcrdma_subset_build(&s, wire, 8, ids, 4), UIW_E_RPCRDMA_NOSPC);
    CHECK_EQ(uiw_rpcrdma_subset_build(&s, wire, sizeof(wire), ids, 0), 0);
    CHECK_EQ(s.nwords, 0);
    CHECK(!uiw_rpcrdma_subset_has(&s, 1));

    /* a RESPROP carrying built subsets round-trips */
    uint8_t w2[8], buf[128];
    struct uiw_rpcrdma_hdr h = {.xid = 8, .vers = 2, .credit = 1, .proc = UIW_RDMA2_RESPROP}, d;
    static const uint32_t done[] = {1}, rejected[] = {2, 40};
    uiw_rpcrdma_subset_build(&h.u.resprop.done, wire, sizeof(wire), done, 1);
    uiw_rpcrdma_subset_build(&h.u.resprop.rejected, w2, sizeof(w2), rejected, 2);
    int n = uiw_rpcrdma_encode(buf, sizeof(buf), &h);
    CHECK_EQ(n, 16 + 8 + 12 + 4);
    space();
    CHECK_EQ(decode_exact(buf, (size_t)n, &d), n);
    CHECK(uiw_rpcrdma_subset_has(&d.u.resprop.done, 1));
    CHECK(uiw_rpcrdma_subset_has(&d.u.resprop.rejected, 40));
    CHECK(!uiw_rpcrdma_subset_has(&d.u.resprop.rejected, 1));
    CHECK_EQ(d.u.resprop.other.n, 0);
}

TEST(strict_bools_enums_and_optional)
{
    uint8_t buf[128];
    struct uiw_rpcrdma_hdr d;
    space();
    static const uint32_t bool2[] = {1, 1, 1, 0, 2, 0, 0};
    CHECK_EQ(decode_exact(buf, words(buf, bool2, 7), &d), UIW_E_RPCRDMA_BAD_BOOL);
    static const uint32_t reply_bool[] = {1, 1, 1, 0, 0, 0, 0xFFFFFFFF};
    CHECK_EQ(decode_exact(buf, words(buf, reply_bool, 7), &d), UIW_E_RPCRDMA_BAD_BOOL);
    static const uint32_t dir2[] = {1, 2, 1, 0, 2, 0, 0, 0, 0};
    CHECK_EQ(decode_exact(buf, words(buf, dir2, 9), &d), UIW_E_RPCRDMA_BAD_ENUM);
    static const uint32_t optdir[] = {1, 2, 1, 5, 7, 1, 0};
    CHECK_EQ(decode_exact(buf, words(buf, optdir, 7), &d), UIW_E_RPCRDMA_BAD_ENUM);
    CHECK_EQ(uiw_rpcrdma_wire_error(UIW_E_RPCRDMA_BAD_ENUM, 2), UIW_RDMA2_ERR_BAD_XDR);

    /* OPTIONAL with 6 bytes of optinfo, then a payload */
    static const uint32_t opt[] = {1, 2, 1, 5, 1, 0x99, 6, 0x61626364, 0x65660000, 0xFEED};
    int n = decode_exact(buf, words(buf, opt, 10), &d);
    CHECK_EQ(n, 36);
    CHECK_EQ(d.u.optional.optdir, UIW_RPCRDMA_REPLY);
    CHECK_EQ(d.u.optional.opttype, 0x99);
    CHECK_EQ(d.u.optional.optinfo_len, 6);
    CHECK(memcmp(d.u.optional.optinfo, "abcdef", 6) == 0);
    uint8_t out[64];
    CHECK_EQ(uiw_rpcrdma_encode(out, sizeof(out), &d), 36);
    CHECK_MEM(out, buf, 36);
    /* a nonzero pad byte */
    buf[35] = 1;
    CHECK_EQ(decode_exact(buf, 40, &d), UIW_E_RPCRDMA_BAD_PAD);
    /* huge opaque length */
    static const uint32_t huge[] = {1, 2, 1, 5, 1, 0x99, 0xFFFFFFFF, 0};
    CHECK_EQ(decode_exact(buf, words(buf, huge, 8), &d), UIW_E_RPCRDMA_TRUNCATED);
    /* encoder argument checks */
    struct uiw_rpcrdma_hdr h = {.vers = 2, .proc = UIW_RDMA_MSG};
    h.u.chunks.direction = 2;
    CHECK_EQ(uiw_rpcrdma_encode(out, sizeof(out), &h), -EINVAL);
    h.u.chunks.direction = 0;
    h.u.chunks.nreads = 1;
    CHECK_EQ(uiw_rpcrdma_encode(out, sizeof(out), &h), -EINVAL);
}

TEST(names)
{
    CHECK_STR(uiw_rpcrdma_proc_name(0, 1), "RDMA_MSG");
    CHECK_STR(uiw_rpcrdma_proc_name(3, 1), "RDMA_DONE");
    CHECK(uiw_rpcrdma_proc_name(5, 1) == NULL);
    CHECK_STR(uiw_rpcrdma_proc_name(9, 2), "RDMA2_UPDPROP");
    CHECK(uiw_rpcrdma_proc_name(2, 2) == NULL);
    CHECK(uiw_rpcrdma_proc_name(0, 3) == NULL);
    CHECK_STR(uiw_rpcrdma_errcode_name(2, 1), "ERR_CHUNK");
    CHECK_STR(uiw_rpcrdma_errcode_name(2, 2), "RDMA2_ERR_BAD_XDR");
    CHECK(uiw_rpcrdma_errcode_name(3, 1) == NULL);
    CHECK_STR(uiw_rpcrdma_dir_name(1), "REPLY");
    CHECK(uiw_rpcrdma_dir_name(2) == NULL);
    CHECK_STR(uiw_rpcrdma_bkreqsup_name(2), "RDMA2_BKREQSUP_GENL");
    for (uint32_t v = 1; v <= 2; v++)
        for (uint32_t p = 0; p < 12; p++) {
            const char *name = uiw_rpcrdma_proc_name(p, v);
            CHECK_EQ(uiw_rpcrdma_proc_from_name(name, v), name ? (int)p : -1);
        }
    CHECK_EQ(uiw_rpcrdma_errcode_from_name("RDMA2_ERR_SYSTEM", 2), 6);
    CHECK_EQ(uiw_rpcrdma_errcode_from_name("RDMA2_ERR_SYSTEM", 1), -1);
    CHECK_EQ(uiw_rpcrdma_dir_from_name("CALL"), 0);
    CHECK_EQ(uiw_rpcrdma_dir_from_name("call"), -1);
    CHECK_STR(uiw_errname(UIW_E_RPCRDMA_CAP_SEGS), "UIW_E_RPCRDMA_CAP_SEGS");
    CHECK(!uiw_error_is_fatal(UIW_E_RPCRDMA_TRUNCATED));
    CHECK_EQ(uiw_rpcrdma_wire_error(0, 2), 0);
    CHECK_EQ(uiw_rpcrdma_wire_error(-EINVAL, 2), 0);
    CHECK_EQ(uiw_rpcrdma_wire_error(UIW_E_RPCRDMA_NOSPC, 2), 0);
    CHECK_EQ(uiw_rpcrdma_wire_error(UIW_E_RPCRDMA_INVAL_PROC, 1), UIW_RDMA_ERR_CHUNK);
}
