/* MPA FPDU framing: known answers, TX framer -> RX parser round trips with markers and
 * CRC on/off under every kind of split, corruption detection, marker placement. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <uiw/wire.h>

#include "test.h"
#include "wire/fpdu_fast.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static size_t flatten(const struct uiw_wire_iov *v, int n, uint8_t *out)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        memcpy(out + off, v[i].base, v[i].len);
        off += v[i].len;
    }
    return off;
}

TEST(fpdu_known_answer_send)
{
    /* zero-length Send, MSN 1; 2 + 18 = 20 is 4-aligned: no pad, the CRC follows at once */
    static const uint8_t ulpdu[18] = {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    static const uint8_t crc[4] = {0x58, 0x7b, 0xe8, 0xc4};
    uint8_t want[24];
    want[0] = 0x00;
    want[1] = 0x12;
    memcpy(want + 2, ulpdu, 18);
    memcpy(want + 20, crc, 4);
    struct uiw_wire_iov v = {ulpdu, sizeof ulpdu};
    uint8_t buf[64];
    CHECK_EQ(uiw_fpdu_len(18), 24);
    CHECK_EQ(uiw_fpdu_encode(&v, 1, true, buf, sizeof buf), 24);
    CHECK_MEM(buf, want, 24);
    /* the TX framer produces the same bytes */
    struct uiw_fpdu_tx tx;
    uiw_fpdu_tx_init(&tx, true, false);
    uint8_t flat[64];
    CHECK_EQ(uiw_fpdu_tx_encode(&tx, &v, 1, flat, sizeof flat), 24);
    CHECK_MEM(flat, want, 24);
    CHECK_EQ(tx.stream_pos, 24);
    /* CRC off: zero CRC field */
    CHECK_EQ(uiw_fpdu_encode(&v, 1, false, buf, sizeof buf), 24);
    CHECK_MEM(buf, want, 20);
    CHECK_EQ(buf[20] | buf[21] | buf[22] | buf[23], 0);
}

TEST(fpdu_known_answer_write)
{
    static const uint8_t ulpdu[14] = {0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t want[20] = {0x00, 0x0e, 0xc1, 0x40, 0, 0, 0,    1,    0,    0,
                                     0,    0,    0,    0,    0, 0, 0xeb, 0xd3, 0x4c, 0x5f};
    /* the ULPDU in two gather pieces */
    struct uiw_wire_iov v[2] = {{ulpdu, 5}, {ulpdu + 5, 9}};
    uint8_t buf[64];
    CHECK_EQ(uiw_fpdu_encode(v, 2, true, buf, sizeof buf), 20);
    CHECK_MEM(buf, want, 20);
    /* and it parses back */
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, true, false, 0);
    uint8_t out[64];
    uint16_t ul = 0;
    bool done = false;
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, want, 20, out, sizeof out, &ul, &done), 20);
    CHECK(done);
    CHECK_EQ(ul, 14);
    CHECK_MEM(out, ulpdu, 14);
}

TEST(fpdu_encode_errors)
{
    static uint8_t big[70000];
    uint8_t buf[32];
    struct uiw_wire_iov v = {big, 14};
    CHECK_EQ(uiw_fpdu_encode(&v, 1, true, buf, 19), -ENOSPC);
    CHECK_EQ(uiw_fpdu_encode(&v, 1, true, buf, 20), 20);
    v.len = 65536;
    CHECK_EQ(uiw_fpdu_encode(&v, 1, true, buf, sizeof buf), -EMSGSIZE);
    struct uiw_wire_iov two[2] = {{big, 40000}, {big, 30000}};
    CHECK_EQ(uiw_fpdu_encode(two, 2, true, buf, sizeof buf), -EMSGSIZE);
    CHECK_EQ(uiw_fpdu_encode(&v, -1, true, buf, sizeof buf), -EINVAL);
    struct uiw_fpdu_tx tx;
    uiw_fpdu_tx_init(&tx, true, true);
    struct uiw_wire_iov out[4];
    uint8_t scratch[64];
    v.len = 14;
    /* too few iovecs: error, stream position unchanged */
    CHECK_EQ(uiw_fpdu_tx_build(&tx, &v, 1, scratch, out, 1), -ENOSPC);
    CHECK_EQ(tx.stream_pos, 0);
    CHECK(uiw_fpdu_tx_build(&tx, &v, 1, scratch, out, 4) > 0);
    CHECK_EQ(tx.stream_pos, 24);
    CHECK_EQ(uiw_fpdu_tx_encode(&tx, two, 2, big, sizeof big), -EMSGSIZE);
    CHECK_EQ(tx.stream_pos, 24);
}

TEST(fpdu_mulpdu)
{
    /* without markers: EMSS - (6 + EMSS mod 4) */
    CHECK_EQ(uiw_mpa_mulpdu(1460, false), 1454);
    CHECK_EQ(uiw_mpa_mulpdu(1461, false), 1454);
    CHECK_EQ(uiw_mpa_mulpdu(1463, false), 1454);
    CHECK_EQ(uiw_mpa_mulpdu(8948, false), 8942);
    /* with markers: EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4) */
    CHECK_EQ(uiw_mpa_mulpdu(1460, true), 1460 - (6 + 12));
    CHECK_EQ(uiw_mpa_mulpdu(1024, true), 1024 - (6 + 8));
    CHECK_EQ(uiw_mpa_mulpdu(1025, true), 1025 - (6 + 12 + 1));
    CHECK_EQ(uiw_mpa_mulpdu(6, false), 0);
    CHECK_EQ(uiw_mpa_mulpdu(0, true), 0);
    CHECK_EQ(uiw_mpa_mulpdu(200000, false), 65535);
    /* an FPDU carrying MULPDU bytes, markers included, fits in EMSS wherever it starts
     * (FPDUs start 4-aligned in the stream) */
    static uint8_t payload[9000], wire[10000];
    for (uint32_t emss = 64; emss <= 9000; emss += 331) {
        uint16_t m = uiw_mpa_mulpdu(emss, true);
        struct uiw_wire_iov v = {payload, m};
        for (uint64_t start = 0; start < 512; start += 4) {
            struct uiw_fpdu_tx tx;
            uiw_fpdu_tx_init(&tx, true, true);
            tx.stream_pos = start;
            ssize_t w = uiw_fpdu_tx_encode(&tx, &v, 1, wire, sizeof wire);
            CHECK(w > 0);
            CHECK((size_t)w <= emss);
        }
        uint16_t m0 = uiw_mpa_mulpdu(emss, false);
        CHECK(uiw_fpdu_len(m0) <= emss);
        CHECK(uiw_fpdu_len(m0 + 1u) > emss); /* and it is the largest that fits */
    }
}

/* ---- round trips ---- */

struct stream {
    uint8_t *wire;
    size_t len;
    uint8_t *payload; /* the ULPDUs back to back */
    size_t plen;
    uint16_t lens[512];
    int count;
};

/* Build a stream of `count` FPDUs of random ULPDU sizes with the TX framer, using random
 * gather splits of the payload. */
static void make_stream(struct stream *s, int count, bool crc, bool markers, size_t maxlen)
{
    static uint8_t wire[1 << 21], payload[1 << 20];
    struct uiw_fpdu_tx tx;
    uiw_fpdu_tx_init(&tx, crc, markers);
    s->wire = wire;
    s->payload = payload;
    s->len = 0;
    s->plen = 0;
    s->count = count;
    for (int i = 0; i < count; i++) {
        size_t len = UIW_FPDU_MIN_ULPDU + rnd() % (maxlen - UIW_FPDU_MIN_ULPDU + 1);
        CHECK(s->plen + len <= sizeof payload);
        uint8_t *p = payload + s->plen;
        for (size_t j = 0; j < len; j++)
            p[j] = (uint8_t)rnd();
        struct uiw_wire_iov in[6];
        int n = 1 + (int)(rnd() % 6);
        size_t off = 0;
        for (int j = 0; j < n; j++) {
            size_t k = j == n - 1 ? len - off : rnd() % (len - off + 1);
            in[j].base = p + off;
            in[j].len = k;
            off += k;
        }
        static uint8_t scratch[1024];
        static struct uiw_wire_iov out[400];
        CHECK(uiw_fpdu_tx_scratch(len) <= sizeof scratch);
        CHECK(uiw_fpdu_tx_iovs(len, n) <= 400);
        uint64_t before = tx.stream_pos;
        int k = uiw_fpdu_tx_build(&tx, in, n, scratch, out, uiw_fpdu_tx_iovs(len, n));
        CHECK(k > 0);
        size_t w = flatten(out, k, wire + s->len);
        CHECK_EQ(w, tx.stream_pos - before);
        size_t nm = w - uiw_fpdu_len(len);
        CHECK_EQ(nm % 4, 0);
        if (!markers)
            CHECK_EQ(nm, 0);
        /* without markers the flat encoder gives the same bytes */
        if (!markers) {
            static uint8_t flat[70000];
            CHECK_EQ(uiw_fpdu_encode(in, n, crc, flat, sizeof flat), w);
            CHECK_MEM(flat, wire + s->len, w);
        }
        s->len += w;
        s->plen += len;
        s->lens[i] = (uint16_t)len;
        CHECK(s->len < sizeof wire - 70000);
    }
}

/* Parse the stream with next/consume; split: 0 = whole runs, 1 = one byte at a time,
 * 2 = random pieces. Checks every ULPDU byte lands at its offset and kind. */
static void parse_stream(const struct stream *s, bool crc, bool markers, int split)
{
    static uint8_t got[1 << 16];
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, crc, markers, 0);
    size_t pos = 0, ppos = 0;
    int fpdus = 0;
    size_t ulpdu_bytes = 0;
    while (pos < s->len) {
        enum uiw_fpdu_run kind;
        uint32_t off = 0xFFFFFFFF;
        size_t n = uiw_fpdu_rx_next(&rx, &kind, &off);
        CHECK(n > 0);
        size_t k = n;
        if (split == 1)
            k = 1;
        else if (split == 2)
            k = 1 + rnd() % n;
        if (k > s->len - pos)
            k = s->len - pos;
        if (kind == UIW_FPDU_RUN_ULPDU) {
            CHECK_EQ(off, ulpdu_bytes);
            CHECK_EQ(uiw_fpdu_rx_ulpdu_len(&rx), s->lens[fpdus]);
            memcpy(got + off, s->wire + pos, k);
            ulpdu_bytes += k;
        }
        int r = uiw_fpdu_rx_consume(&rx, s->wire + pos, k);
        CHECK(r >= 0);
        pos += k;
        if (r == UIW_FPDU_COMPLETE) {
            CHECK(fpdus < s->count);
            CHECK_EQ(ulpdu_bytes, s->lens[fpdus]);
            CHECK_EQ(uiw_fpdu_rx_ulpdu_len(&rx), s->lens[fpdus]);
            CHECK_MEM(got, s->payload + ppos, ulpdu_bytes);
            ppos += ulpdu_bytes;
            ulpdu_bytes = 0;
            fpdus++;
        }
    }
    CHECK_EQ(fpdus, s->count);
    CHECK_EQ(ppos, s->plen);
}

static struct stream S;

TEST(fpdu_roundtrip_all_modes)
{
    for (int mode = 0; mode < 4; mode++) {
        bool crc = mode & 1, markers = mode & 2;
        for (int rep = 0; rep < 6; rep++) {
            size_t maxlen = rep < 2 ? 64 : rep < 4 ? 1500 : 9000;
            make_stream(&S, 60, crc, markers, maxlen);
            for (int split = 0; split < 3; split++)
                parse_stream(&S, crc, markers, split);
        }
    }
}

TEST(fpdu_roundtrip_big_ulpdus)
{
    for (int mode = 0; mode < 4; mode++) {
        bool crc = mode & 1, markers = mode & 2;
        make_stream(&S, 12, crc, markers, 65535);
        parse_stream(&S, crc, markers, 0);
        parse_stream(&S, crc, markers, 2);
    }
}

TEST(fpdu_roundtrip_byte_at_a_time_feed)
{
    /* uiw_fpdu_rx_feed over 1-byte and random slices */
    for (int mode = 0; mode < 4; mode++) {
        bool crc = mode & 1, markers = mode & 2;
        make_stream(&S, 40, crc, markers, 2000);
        for (int pass = 0; pass < 2; pass++) {
            struct uiw_fpdu_rx rx;
            uiw_fpdu_rx_init(&rx, crc, markers, 0);
            static uint8_t ul[65536];
            size_t pos = 0, ppos = 0;
            int fpdus = 0;
            while (pos < S.len) {
                size_t k = pass == 0 ? 1 : 1 + rnd() % 3000;
                if (k > S.len - pos)
                    k = S.len - pos;
                uint16_t ulen = 0;
                bool done = false;
                ssize_t r = uiw_fpdu_rx_feed(&rx, S.wire + pos, k, ul, sizeof ul, &ulen, &done);
                CHECK(r > 0);
                pos += (size_t)r;
                if (done) {
                    CHECK_EQ(ulen, S.lens[fpdus]);
                    CHECK_MEM(ul, S.payload + ppos, ulen);
                    ppos += ulen;
                    fpdus++;
                }
            }
            CHECK_EQ(fpdus, S.count);
        }
    }
}

/* ---- markers ---- */

/* Walk a markers-on stream and check every 512th octet holds a marker whose pointer
 * leads back to the length field of the FPDU it belongs to. */
TEST(fpdu_marker_placement)
{
    make_stream(&S, 80, true, true, 1600);
    /* reconstruct FPDU boundaries by walking the stream with marker skipping */
    size_t pos = 0;
    int fpdus = 0, markers_seen = 0, at_start = 0, in_len = 0, in_ulpdu = 0, in_trailer = 0;
    while (pos < S.len) {
        /* at an FPDU start */
        size_t start = pos;
        size_t ulen = S.lens[fpdus];
        size_t flen = uiw_fpdu_len(ulen);
        size_t len_pos = (size_t)-1;
        size_t i = 0; /* octet index in the FPDU without markers */
        while (i < flen) {
            if (pos % 512 == 0) {
                CHECK_EQ(S.wire[pos], 0);
                CHECK_EQ(S.wire[pos + 1], 0);
                uint16_t ptr = (uint16_t)(S.wire[pos + 2] << 8 | S.wire[pos + 3]);
                if (i == 0) {
                    CHECK_EQ(ptr, 0);
                    at_start++;
                } else {
                    CHECK_EQ(ptr, (uint16_t)(pos - len_pos));
                    if (i < 2)
                        in_len++;
                    else if (i < 2 + ulen)
                        in_ulpdu++;
                    else
                        in_trailer++;
                }
                markers_seen++;
                pos += 4;
                continue;
            }
            if (i == 0)
                len_pos = pos;
            if (i == 0)
                CHECK_EQ((size_t)(S.wire[pos] << 8 | S.wire[pos + 1]), ulen);
            pos++;
            i++;
        }
        (void)start;
        fpdus++;
    }
    CHECK_EQ(pos, S.len);
    CHECK_EQ(markers_seen, (int)((S.len + 511) / 512));
    CHECK(at_start >= 1); /* the first marker opens the stream */
    CHECK_EQ(S.wire[0] | S.wire[1] | S.wire[2] | S.wire[3], 0);
    CHECK(in_ulpdu > 0);
    (void)in_len;
    (void)in_trailer;
}

/* A marker inside the length field, the ULPDU, the pad and the CRC field, and one at the
 * FPDU start: place one FPDU of each kind at the right stream offset, round-trip it with
 * every split, and check a corrupted pointer is caught with UIW_E_FPDU_MARKER. */
static void marker_case(size_t lead_ulpdu, size_t ulen, size_t want_index)
{
    static uint8_t wire[4096], payload[2048];
    struct uiw_fpdu_tx tx;
    uiw_fpdu_tx_init(&tx, true, true);
    size_t w = 0;
    uint16_t lens[2] = {(uint16_t)lead_ulpdu, (uint16_t)ulen};
    size_t poff = 0;
    size_t start2 = 0;
    for (int f = 0; f < 2; f++) {
        for (size_t j = 0; j < lens[f]; j++)
            payload[poff + j] = (uint8_t)rnd();
        struct uiw_wire_iov v = {payload + poff, lens[f]};
        if (f == 1)
            start2 = w;
        ssize_t r = uiw_fpdu_tx_encode(&tx, &v, 1, wire + w, sizeof wire - w);
        CHECK(r > 0);
        w += (size_t)r;
        poff += lens[f];
    }
    /* the marker at 512 must sit at want_index octets (markers excluded) into FPDU 2 */
    CHECK(start2 <= 512);
    size_t mi = 512 - start2; /* wire offset of the marker inside FPDU 2 */
    CHECK_EQ(mi, want_index);
    uint16_t ptr = (uint16_t)(wire[514] << 8 | wire[515]);
    if (want_index == 0)
        CHECK_EQ(ptr, 0);
    else
        CHECK_EQ(ptr, want_index);
    for (int split = 0; split < 3; split++) {
        struct stream s = {.wire = wire, .len = w, .payload = payload, .plen = poff, .count = 2};
        s.lens[0] = lens[0];
        s.lens[1] = lens[1];
        parse_stream(&s, true, true, split);
    }
    /* pointer corruption: any change of the 16-bit pointer is a marker error */
    for (int bit = 0; bit < 16; bit++) {
        uint8_t save = wire[514 + (bit >> 3)];
        wire[514 + (bit >> 3)] ^= (uint8_t)(1u << (bit & 7));
        struct uiw_fpdu_rx rx;
        uiw_fpdu_rx_init(&rx, true, true, 0);
        uint16_t ul;
        bool done;
        size_t pos = 0;
        ssize_t r = 0;
        while (pos < w) {
            r = uiw_fpdu_rx_feed(&rx, wire + pos, w - pos, NULL, 0, &ul, &done);
            if (r < 0)
                break;
            pos += (size_t)r;
        }
        CHECK_EQ(r, UIW_E_FPDU_MARKER);
        /* sticky */
        CHECK_EQ(uiw_fpdu_rx_consume(&rx, wire, 1), UIW_E_FPDU_MARKER);
        wire[514 + (bit >> 3)] = save;
    }
}

TEST(fpdu_marker_positions)
{
    /* FPDU 1 with markers: marker at 0, so FPDU 1 occupies 4 + fpdu_len(L1) octets; pick
     * L1 so that FPDU 2 starts at 512 - want. L1 from 14 to ~490, fpdu_len is 4-aligned */
    for (size_t want = 0; want <= 120; want += 4) {
        /* FPDU 2 starts at 512 - want: FPDU 1 spans 4 (marker) + fpdu_len(L1) */
        size_t f1 = 512 - want - 4;
        size_t l1 = f1 - 6; /* fpdu_len(l1) = l1 + 6 when (l1 + 2) % 4 == 0 */
        CHECK_EQ(uiw_fpdu_len(l1), f1);
        for (size_t ulen = 14; ulen <= 120; ulen++) {
            if (want >= uiw_fpdu_len(ulen))
                continue;
            marker_case(l1, ulen, want);
        }
    }
}

/*
 * With the marker grid starting at the first FPDU, FPDUs and markers are all 4-aligned,
 * so a marker can only sit at an FPDU's start, inside its ULPDU, or right before its CRC
 * field. A receiver must not rely on that: joining a stream at an arbitrary offset (the
 * stream position is a plain field) moves the grid so that markers fall inside the
 * length field, the pad and the CRC field too. Check every location, every split, and
 * pointer corruption at each location.
 */
enum { LOC_START, LOC_LEN, LOC_ULPDU, LOC_PAD, LOC_CRC, LOC_N };

static int walk_markers(const uint8_t *wire, size_t wlen, const uint16_t *lens, uint64_t base,
                        size_t *moff, int *mloc, int maxm)
{
    size_t pos = 0;
    int nm = 0, f = 0;
    while (pos < wlen) {
        size_t ulen = lens[f++], flen = uiw_fpdu_len(ulen), i = 0, len_pos = 0;
        size_t pad = flen - 6 - ulen;
        while (i < flen) {
            if ((base + pos) % 512 == 0) {
                int loc = i == 0               ? LOC_START
                          : i < 2              ? LOC_LEN
                          : i < 2 + ulen       ? LOC_ULPDU
                          : i < 2 + ulen + pad ? LOC_PAD
                                               : LOC_CRC;
                uint16_t ptr = (uint16_t)(wire[pos + 2] << 8 | wire[pos + 3]);
                CHECK_EQ(wire[pos] | wire[pos + 1], 0);
                CHECK_EQ(ptr, i == 0 ? 0 : (uint16_t)(pos - len_pos));
                if (nm < maxm) {
                    moff[nm] = pos;
                    mloc[nm] = loc;
                }
                nm++;
                pos += 4;
                continue;
            }
            if (i == 0)
                len_pos = pos;
            pos++;
            i++;
        }
    }
    CHECK_EQ(pos, wlen);
    return nm;
}

TEST(fpdu_marker_every_location)
{
    static uint8_t wire[8192], payload[4096];
    int hits[LOC_N] = {0}, corrupt_hits[LOC_N] = {0};
    for (int iter = 0; iter < 400; iter++) {
        uint64_t base = iter < 4 ? (uint64_t)iter : rnd() % 2048;
        struct uiw_fpdu_tx tx;
        uiw_fpdu_tx_init(&tx, true, true);
        tx.stream_pos = base;
        struct stream s = {.wire = wire, .payload = payload, .count = 5};
        for (int f = 0; f < s.count; f++) {
            size_t len = 14 + rnd() % 300;
            for (size_t j = 0; j < len; j++)
                payload[s.plen + j] = (uint8_t)rnd();
            struct uiw_wire_iov v = {payload + s.plen, len};
            ssize_t r = uiw_fpdu_tx_encode(&tx, &v, 1, wire + s.len, sizeof wire - s.len);
            CHECK(r > 0);
            s.len += (size_t)r;
            s.plen += len;
            s.lens[f] = (uint16_t)len;
        }
        size_t moff[16];
        int mloc[16];
        int nm = walk_markers(wire, s.len, s.lens, base, moff, mloc, 16);
        CHECK(nm <= 16);
        for (int m = 0; m < nm; m++)
            hits[mloc[m]]++;
        /* every split, with the parser joined at the same offset */
        for (int split = 0; split < 3; split++) {
            struct uiw_fpdu_rx rx;
            uiw_fpdu_rx_init(&rx, true, true, 0);
            rx.stream_pos = base;
            size_t pos = 0, ppos = 0;
            int done_n = 0;
            static uint8_t got[512];
            while (pos < s.len) {
                enum uiw_fpdu_run kind;
                uint32_t off;
                size_t n = uiw_fpdu_rx_next(&rx, &kind, &off);
                size_t k = split == 0 ? n : split == 1 ? 1 : 1 + rnd() % n;
                if (kind == UIW_FPDU_RUN_ULPDU)
                    memcpy(got + off, wire + pos, k);
                int r = uiw_fpdu_rx_consume(&rx, wire + pos, k);
                CHECK(r >= 0);
                pos += k;
                if (r == UIW_FPDU_COMPLETE) {
                    CHECK_MEM(got, payload + ppos, s.lens[done_n]);
                    ppos += s.lens[done_n++];
                }
            }
            CHECK_EQ(done_n, s.count);
        }
        /* a corrupted pointer at any location is a marker error */
        for (int m = 0; m < nm; m++) {
            wire[moff[m] + 3] ^= 4;
            struct uiw_fpdu_rx rx;
            uiw_fpdu_rx_init(&rx, true, true, 0);
            rx.stream_pos = base;
            size_t pos = 0;
            ssize_t r = 0;
            while (pos < s.len) {
                uint16_t ul;
                bool done;
                r = uiw_fpdu_rx_feed(&rx, wire + pos,
                                     1 + rnd() % 64 < s.len - pos ? 1 + rnd() % 64 : s.len - pos,
                                     NULL, 0, &ul, &done);
                if (r < 0)
                    break;
                pos += (size_t)r;
            }
            CHECK_EQ(r, UIW_E_FPDU_MARKER);
            corrupt_hits[mloc[m]]++;
            wire[moff[m] + 3] ^= 4;
        }
    }
    for (int l = 0; l < LOC_N; l++) {
        CHECK(hits[l] > 0);
        CHECK(corrupt_hits[l] > 0);
    }
}

/* The CRC of an FPDU with markers covers every octet of the FPDU but its own four: the
 * length field, ULPDU, pad and all markers (one at the start, and one inside the CRC
 * field too). Recompute it independently from the wire bytes. */
TEST(fpdu_crc_covers_markers)
{
    static uint8_t wire[8192], payload[4096], cov[8192];
    int with_start = 0, with_crc_marker = 0;
    /* every stream offset of the marker grid, for a few lengths */
    for (int iter = 0; iter < 4 * 512; iter++) {
        static const size_t lens[4] = {14, 15, 301, 1499};
        uint64_t base = (uint64_t)(iter % 512);
        struct uiw_fpdu_tx tx;
        uiw_fpdu_tx_init(&tx, true, true);
        tx.stream_pos = base;
        size_t len = lens[iter / 512];
        for (size_t j = 0; j < len; j++)
            payload[j] = (uint8_t)rnd();
        struct uiw_wire_iov v = {payload, len};
        ssize_t w = uiw_fpdu_tx_encode(&tx, &v, 1, wire, sizeof wire);
        CHECK(w > 0);
        size_t flen = uiw_fpdu_len(len), i = 0, pos = 0, nc = 0;
        uint8_t crcb[4];
        int crc_seen = 0, marker_in_crc = 0;
        while (i < flen) {
            if ((base + pos) % 512 == 0) {
                if (i == 0)
                    with_start++;
                if (crc_seen > 0)
                    marker_in_crc = 1;
                memcpy(cov + nc, wire + pos, 4);
                nc += 4;
                pos += 4;
                continue;
            }
            if (i >= flen - 4)
                crcb[crc_seen++] = wire[pos];
            else
                cov[nc++] = wire[pos];
            pos++;
            i++;
        }
        CHECK_EQ(pos, (size_t)w);
        CHECK_EQ(crc_seen, 4);
        with_crc_marker += marker_in_crc;
        uint32_t got = (uint32_t)crcb[0] | (uint32_t)crcb[1] << 8 | (uint32_t)crcb[2] << 16 |
                       (uint32_t)crcb[3] << 24;
        CHECK_EQ(got, uiw_crc32c(0, cov, nc));
    }
    CHECK(with_start > 0);
    CHECK(with_crc_marker > 0);
}

/* From the first FPDU on (the normal case) markers only land 4-aligned: at an FPDU start,
 * in the ULPDU, or right before the CRC field. */
TEST(fpdu_marker_aligned_locations)
{
    make_stream(&S, 200, true, true, 600);
    static size_t moff[4096];
    static int mloc[4096];
    int nm = walk_markers(S.wire, S.len, S.lens, 0, moff, mloc, 4096);
    CHECK(nm <= 4096);
    int hits[LOC_N] = {0};
    for (int m = 0; m < nm; m++)
        hits[mloc[m]]++;
    CHECK(hits[LOC_START] > 0);
    CHECK(hits[LOC_ULPDU] > 0);
    CHECK_EQ(hits[LOC_LEN], 0);
    CHECK_EQ(hits[LOC_PAD], 0);
    CHECK_EQ(moff[0], 0);
    CHECK_EQ(mloc[0], LOC_START);
}

/* ---- corruption ---- */

TEST(fpdu_corruption_every_byte_detected)
{
    for (int markers = 0; markers < 2; markers++) {
        make_stream(&S, 6, true, markers, 700);
        static uint8_t copy[1 << 14];
        CHECK(S.len <= sizeof copy);
        for (size_t i = 0; i < S.len; i++) {
            memcpy(copy, S.wire, S.len);
            copy[i] ^= (uint8_t)(1u << (rnd() % 8));
            struct uiw_fpdu_rx rx;
            uiw_fpdu_rx_init(&rx, true, markers, 0);
            size_t pos = 0;
            ssize_t r = 0;
            int completes = 0;
            while (pos < S.len) {
                uint16_t ul;
                bool done;
                r = uiw_fpdu_rx_feed(&rx, copy + pos, S.len - pos, NULL, 0, &ul, &done);
                if (r <= 0)
                    break;
                pos += (size_t)r;
                completes += done;
            }
            /* either an error, or (a length change) the stream did not end on a boundary */
            if (r >= 0) {
                CHECK(completes < S.count);
                CHECK(pos == S.len);
            } else {
                CHECK(r == UIW_E_FPDU_CRC || r == UIW_E_FPDU_MARKER || r == UIW_E_FPDU_TOO_LONG ||
                      r == UIW_E_FPDU_TOO_SHORT);
            }
        }
    }
}

TEST(fpdu_crc_error_code_and_crc_off_ignores_it)
{
    static const uint8_t ulpdu[14] = {0xc1, 0x40, 0, 0, 0, 1};
    struct uiw_wire_iov v = {ulpdu, 14};
    uint8_t buf[32];
    CHECK_EQ(uiw_fpdu_encode(&v, 1, true, buf, sizeof buf), 20);
    buf[19] ^= 0x80; /* CRC byte */
    struct uiw_fpdu_rx rx;
    uint16_t ul;
    bool done;
    uiw_fpdu_rx_init(&rx, true, false, 0);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 20, NULL, 0, &ul, &done), UIW_E_FPDU_CRC);
    CHECK(uiw_error_is_fatal(UIW_E_FPDU_CRC));
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 20, NULL, 0, &ul, &done), UIW_E_FPDU_CRC);
    uiw_fpdu_rx_init(&rx, false, false, 0);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 20, NULL, 0, &ul, &done), 20);
    CHECK(done);
}

TEST(fpdu_impossible_lengths)
{
    uint8_t buf[8] = {0x00, 0x0d};
    struct uiw_fpdu_rx rx;
    uint16_t ul;
    bool done;
    uiw_fpdu_rx_init(&rx, true, false, 0);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 2, NULL, 0, &ul, &done), UIW_E_FPDU_TOO_SHORT);
    buf[1] = 0;
    uiw_fpdu_rx_init(&rx, true, false, 0);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 2, NULL, 0, &ul, &done), UIW_E_FPDU_TOO_SHORT);
    buf[0] = 0x10;
    buf[1] = 0x01;
    uiw_fpdu_rx_init(&rx, true, false, 0x1000);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 1, NULL, 0, &ul, &done), 1);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf + 1, 1, NULL, 0, &ul, &done), UIW_E_FPDU_TOO_LONG);
    buf[1] = 0x00; /* exactly the maximum is fine */
    uiw_fpdu_rx_init(&rx, true, false, 0x1000);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 2, NULL, 0, &ul, &done), 2);
    CHECK(!done);
    CHECK_EQ(uiw_fpdu_rx_ulpdu_len(&rx), 0x1000);
}

TEST(fpdu_rx_contract)
{
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, true, true, 0);
    enum uiw_fpdu_run kind;
    uint32_t off;
    /* the stream opens with a marker */
    CHECK_EQ(uiw_fpdu_rx_next(&rx, &kind, &off), 4);
    CHECK_EQ(kind, UIW_FPDU_RUN_FRAMING);
    uint8_t z[8] = {0};
    CHECK_EQ(uiw_fpdu_rx_consume(&rx, z, 0), 0);
    CHECK_EQ(uiw_fpdu_rx_consume(&rx, z, 5), -EINVAL); /* longer than the run */
    CHECK_EQ(uiw_fpdu_rx_consume(&rx, z, 4), 0);
    CHECK_EQ(uiw_fpdu_rx_next(&rx, &kind, &off), 2);
    /* ULPDU run size clamps at the next marker */
    uint8_t len[2] = {0x03, 0x00}; /* 768 */
    CHECK_EQ(uiw_fpdu_rx_consume(&rx, len, 2), 0);
    CHECK_EQ(uiw_fpdu_rx_next(&rx, &kind, &off), 512 - 6);
    CHECK_EQ(kind, UIW_FPDU_RUN_ULPDU);
    CHECK_EQ(off, 0);
    /* ULPDU bytes to the zeroed buffer: the parser never needs them contiguous */
    static uint8_t junk[1024];
    CHECK_EQ(uiw_fpdu_rx_consume(&rx, junk, 506), 0);
    CHECK_EQ(uiw_fpdu_rx_next(&rx, &kind, &off), 4); /* marker at 512 */
    CHECK_EQ(kind, UIW_FPDU_RUN_FRAMING);
}

TEST(fpdu_feed_small_buffer_and_sticky_error)
{
    static uint8_t ul[100];
    uint8_t buf[256];
    memset(ul, 0x5A, sizeof ul);
    struct uiw_wire_iov v = {ul, 100};
    CHECK_EQ(uiw_fpdu_encode(&v, 1, true, buf, sizeof buf), 108);
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, true, false, 0);
    uint8_t out[50];
    uint16_t n = 0;
    bool done = true;
    /* the ULPDU does not fit: -ENOSPC, not a protocol failure */
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 108, out, sizeof out, &n, &done), -ENOSPC);
    CHECK(!done);
    CHECK(!uiw_error_is_fatal(-ENOSPC));
    /* a failed parser keeps failing, and next() still returns a nonzero run */
    uiw_fpdu_rx_init(&rx, true, false, 0);
    buf[50] ^= 1;
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 108, NULL, 0, &n, &done), UIW_E_FPDU_CRC);
    enum uiw_fpdu_run kind;
    uint32_t off;
    CHECK(uiw_fpdu_rx_next(&rx, &kind, &off) > 0);
    CHECK_EQ(uiw_fpdu_rx_consume(&rx, buf, 1), UIW_E_FPDU_CRC);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 108, NULL, 0, &n, &done), UIW_E_FPDU_CRC);
    /* two FPDUs in one buffer: feed stops after the first */
    buf[50] ^= 1;
    memcpy(buf + 108, buf, 108);
    uiw_fpdu_rx_init(&rx, true, false, 0);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf, 216, NULL, 0, &n, &done), 108);
    CHECK(done);
    CHECK_EQ(n, 100);
    CHECK_EQ(uiw_fpdu_rx_feed(&rx, buf + 108, 108, NULL, 0, &n, &done), 108);
    CHECK(done);
}

/* A random ULPDU of 14 to cap bytes in ul, split into 1 to maxp pieces (empty ones too).
 * Returns the piece count; *len is the ULPDU's length. */
static int random_ulpdu(uint8_t *ul, size_t cap, struct uiw_wire_iov *parts, int maxp, size_t *len)
{
    *len = 14 + rnd() % (cap - 14);
    for (size_t i = 0; i < *len; i++)
        ul[i] = (uint8_t)rnd();
    int np = 1 + (int)(rnd() % (unsigned)maxp);
    size_t off = 0;
    for (int i = 0; i < np; i++) {
        size_t k = i == np - 1 ? *len - off : rnd() % (*len - off + 1);
        parts[i].base = ul + off;
        parts[i].len = k;
        off += k;
    }
    return np;
}

/* random_ulpdu, the FPDU uiw_fpdu_encode makes of it in want (*wl bytes), and a
 * marker-free framer at a random stream position (no markers: the position makes no
 * difference to the bytes). Returns the piece count. */
static int random_tx_case(bool crc, uint8_t *ul, size_t cap, struct uiw_wire_iov *parts, int maxp,
                          size_t *len, uint8_t *want, size_t wcap, ssize_t *wl,
                          struct uiw_fpdu_tx *tx)
{
    int np = random_ulpdu(ul, cap, parts, maxp, len);
    *wl = uiw_fpdu_encode(parts, np, crc, want, wcap);
    CHECK(*wl > 0);
    uiw_fpdu_tx_init(tx, crc, false);
    tx->stream_pos = rnd();
    return np;
}

/* Without markers the transmit framer takes a shortcut: it must still give the bytes
 * uiw_fpdu_encode gives, for any ULPDU split (empty pieces included), CRC on and off, and
 * advance the stream by the FPDU's length; too few iovecs is -ENOSPC with nothing moved. */
TEST(fpdu_tx_build_no_markers_matches_encode)
{
    static uint8_t ul[3000], want[3100], got[3100], scratch[64];
    for (int iter = 0; iter < 2000; iter++) {
        bool crc = iter & 1;
        size_t len;
        ssize_t wl;
        struct uiw_wire_iov parts[6];
        struct uiw_fpdu_tx tx;
        int np = random_tx_case(crc, ul, sizeof ul, parts, 6, &len, want, sizeof want, &wl, &tx);
        uint64_t pos0 = tx.stream_pos;
        struct uiw_wire_iov out[8];
        int nonempty = 0;
        for (int i = 0; i < np; i++)
            nonempty += parts[i].len != 0;
        CHECK_EQ(uiw_fpdu_tx_build(&tx, parts, np, scratch, out, nonempty + 1), -ENOSPC);
        CHECK_EQ(tx.stream_pos, pos0);
        int n = uiw_fpdu_tx_build(&tx, parts, np, scratch, out, 8);
        CHECK_EQ(n, nonempty + 2);
        CHECK_EQ(flatten(out, n, got), (size_t)wl);
        CHECK(memcmp(got, want, (size_t)wl) == 0);
        CHECK_EQ(tx.stream_pos - pos0, (uint64_t)wl);
        CHECK_EQ(out[0].len, 2); /* the length alone first (the engine relies on it) */
    }
}

/* A random FPDU (a ULPDU of 14 to 1999 bytes) in fp (2100 bytes), every third one with a
 * bit flipped after its length field: its length, *len its ULPDU's, *corrupt the flip. */
static size_t random_fpdu(int iter, bool crc, uint8_t *fp, size_t *len, bool *corrupt)
{
    static uint8_t ul[2000];
    *len = 14 + rnd() % (sizeof ul - 14);
    for (size_t i = 0; i < *len; i++)
        ul[i] = (uint8_t)rnd();
    struct uiw_wire_iov v = {ul, *len};
    ssize_t wl = uiw_fpdu_encode(&v, 1, crc, fp, 2100);
    CHECK(wl > 0);
    *corrupt = (iter % 3) == 0;
    if (*corrupt) /* any byte but the length field */
        fp[2 + rnd() % ((size_t)wl - 2)] ^= (uint8_t)(1u << (rnd() % 8));
    return (size_t)wl;
}

/* Consume fp[pos..wl) run by run until the FPDU completes or fails: the last result. */
static int consume_runs(struct uiw_fpdu_rx *b, const uint8_t *fp, size_t pos, size_t wl)
{
    int rb = 0;
    while (pos < wl && rb >= 0 && rb != UIW_FPDU_COMPLETE) {
        enum uiw_fpdu_run kind;
        uint32_t off;
        size_t run = uiw_fpdu_rx_next(b, &kind, &off);
        rb = uiw_fpdu_rx_consume(b, fp + pos, run);
        pos += run;
    }
    return rb;
}

/* uiw__fpdu_rx_rest takes an FPDU's ULPDU, pad and CRC in one call exactly as consuming
 * them run by run would, and refuses what it cannot do without changing anything. */
TEST(fpdu_rx_rest_matches_runs)
{
    static uint8_t fp[2100];
    for (int iter = 0; iter < 1000; iter++) {
        bool crc = iter & 1, corrupt;
        size_t len;
        ssize_t wl = (ssize_t)random_fpdu(iter, crc, fp, &len, &corrupt);
        struct uiw_fpdu_rx a, b;
        uiw_fpdu_rx_init(&a, crc, false, 0);
        uiw_fpdu_rx_init(&b, crc, false, 0);
        /* before the length field: refused */
        CHECK_EQ(uiw__fpdu_rx_rest(&a, fp + 2, (size_t)wl - 2), -EINVAL);
        CHECK_EQ(uiw_fpdu_rx_consume(&a, fp, 2), 0);
        CHECK_EQ(uiw_fpdu_rx_consume(&b, fp, 2), 0);
        /* the wrong length: refused, nothing consumed */
        CHECK_EQ(uiw__fpdu_rx_rest(&a, fp + 2, (size_t)wl - 3), -EINVAL);
        int ra = uiw__fpdu_rx_rest(&a, fp + 2, (size_t)wl - 2);
        int rb = consume_runs(&b, fp, 2, (size_t)wl);
        CHECK_EQ(ra, rb);
        if (crc && corrupt)
            CHECK_EQ(ra, UIW_E_FPDU_CRC);
        else
            CHECK_EQ(ra, UIW_FPDU_COMPLETE);
        if (ra == UIW_FPDU_COMPLETE) { /* both ready for the next FPDU */
            enum uiw_fpdu_run ka, kb;
            uint32_t oa = 0, ob = 0;
            CHECK_EQ(uiw_fpdu_rx_next(&a, &ka, &oa), uiw_fpdu_rx_next(&b, &kb, &ob));
            CHECK_EQ(ka, kb);
        } else { /* sticky */
            CHECK_EQ(uiw__fpdu_rx_rest(&a, fp + 2, (size_t)wl - 2), UIW_E_FPDU_CRC);
        }
    }
    /* with markers: refused */
    struct uiw_fpdu_rx m;
    uiw_fpdu_rx_init(&m, false, true, 0);
    uint8_t z[64] = {0};
    CHECK_EQ(uiw_fpdu_rx_consume(&m, z, 4), 0); /* the stream's first marker */
    z[1] = 18;
    CHECK_EQ(uiw_fpdu_rx_consume(&m, z, 2), 0);
    CHECK_EQ(uiw__fpdu_rx_rest(&m, z + 2, 18 + 2 + 4), -EINVAL);
}

/* uiw__fpdu_rx_start takes an FPDU's length field as consuming its two bytes would: the
 * same result, the same state after (the CRC included), and it leaves alone what it
 * cannot take (inside an FPDU, markers on). */
TEST(fpdu_rx_start_matches_consume)
{
    static const uint16_t lens[] = {0, 1, 13, 14, 15, 100, 1000, 2000, 2001, 65535};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (int crc = 0; crc < 2; crc++) {
            uint8_t f[2] = {(uint8_t)(lens[i] >> 8), (uint8_t)lens[i]};
            struct uiw_fpdu_rx a, b;
            uiw_fpdu_rx_init(&a, crc, false, 2000);
            uiw_fpdu_rx_init(&b, crc, false, 2000);
            int ra = uiw__fpdu_rx_start(&a, f);
            int rb = uiw_fpdu_rx_consume(&b, f, 2);
            CHECK_EQ(ra, rb);
            if (lens[i] > 2000)
                CHECK_EQ(ra, UIW_E_FPDU_TOO_LONG);
            else if (lens[i] < 14)
                CHECK_EQ(ra, UIW_E_FPDU_TOO_SHORT);
            else
                CHECK_EQ(ra, 0);
            if (ra < 0) { /* sticky, as the run-by-run parser's */
                CHECK_EQ(uiw__fpdu_rx_start(&a, f), ra);
                continue;
            }
            CHECK(memcmp(&a, &b, sizeof a) == 0);
            /* inside the FPDU now: nothing taken, nothing changed */
            CHECK_EQ(uiw__fpdu_rx_start(&a, f), 1);
            CHECK(memcmp(&a, &b, sizeof a) == 0);
        }
    }
    /* half a length field in: refused */
    struct uiw_fpdu_rx h;
    uiw_fpdu_rx_init(&h, false, false, 0);
    uint8_t f[2] = {0, 20};
    CHECK_EQ(uiw_fpdu_rx_consume(&h, f, 1), 0);
    CHECK_EQ(uiw__fpdu_rx_start(&h, f + 1), 1);
    CHECK_EQ(uiw_fpdu_rx_consume(&h, f + 1, 1), 0);
    /* with markers: refused */
    struct uiw_fpdu_rx m;
    uiw_fpdu_rx_init(&m, false, true, 0);
    uint8_t z[4] = {0};
    CHECK_EQ(uiw_fpdu_rx_consume(&m, z, 4), 0); /* the stream's first marker */
    CHECK_EQ(uiw__fpdu_rx_start(&m, f), 1);
    CHECK_EQ(uiw__fpdu_rx_start(&m, NULL), -EINVAL);
}

/* uiw__fpdu_tx_seal gives the length field and the trailer that uiw_fpdu_encode puts
 * around the ULPDU, CRC on and off, for any split; it refuses markers and bad iovecs
 * without moving the stream. */
TEST(fpdu_tx_seal_matches_encode)
{
    static uint8_t ul[3000], want[3100];
    for (int iter = 0; iter < 2000; iter++) {
        bool crc = iter & 1;
        size_t len;
        ssize_t wl;
        struct uiw_wire_iov parts[4];
        struct uiw_fpdu_tx tx;
        int np = random_tx_case(crc, ul, sizeof ul, parts, 4, &len, want, sizeof want, &wl, &tx);
        uint64_t pos0 = tx.stream_pos;
        uint8_t lenb[2], trailer[7];
        int t = uiw__fpdu_tx_seal(&tx, parts, np, lenb, trailer);
        CHECK_EQ((size_t)t, (size_t)wl - 2 - len);
        CHECK(memcmp(lenb, want, 2) == 0);
        CHECK(memcmp(trailer, want + 2 + len, (size_t)t) == 0);
        CHECK_EQ(tx.stream_pos - pos0, (uint64_t)wl);
    }
    struct uiw_fpdu_tx m;
    uiw_fpdu_tx_init(&m, true, true);
    uint8_t lenb[2], trailer[7];
    struct uiw_wire_iov v = {ul, 20};
    CHECK_EQ(uiw__fpdu_tx_seal(&m, &v, 1, lenb, trailer), -EINVAL);
    CHECK_EQ(m.stream_pos, 0);
    struct uiw_fpdu_tx p;
    uiw_fpdu_tx_init(&p, false, false);
    struct uiw_wire_iov bad = {NULL, 20};
    CHECK_EQ(uiw__fpdu_tx_seal(&p, &bad, 1, lenb, trailer), -EINVAL);
    struct uiw_wire_iov big[2] = {{ul, 40000}, {ul, 40000}};
    CHECK_EQ(uiw__fpdu_tx_seal(&p, big, 2, lenb, trailer), -EMSGSIZE);
    CHECK_EQ(p.stream_pos, 0);
}

/* uiw__fpdu_rx_take_whole takes a whole good FPDU in one call, leaving the parser as
 * consuming it run by run would; anything it cannot take whole (a corrupt CRC, too few
 * bytes, an impossible length, not at an FPDU's start, markers on, a sticky error) it
 * leaves alone, so that the run-by-run parser finds the error. */
TEST(fpdu_rx_take_whole_matches_runs)
{
    static uint8_t fp[2100];
    for (int iter = 0; iter < 1000; iter++) {
        bool crc = iter & 1, corrupt;
        size_t len;
        size_t wl = random_fpdu(iter, crc, fp, &len, &corrupt);
        struct uiw_fpdu_rx a, b;
        uiw_fpdu_rx_init(&a, crc, false, 0);
        uiw_fpdu_rx_init(&b, crc, false, 0);
        a.stream_pos = b.stream_pos = rnd();
        struct uiw_fpdu_rx a0 = a;
        CHECK_EQ(uiw__fpdu_rx_take_whole(&a, fp, wl - 1), 0); /* not all of it */
        CHECK(memcmp(&a, &a0, sizeof a) == 0);
        size_t took = uiw__fpdu_rx_take_whole(&a, fp, wl + (rnd() % 8));
        int rb = consume_runs(&b, fp, 0, wl);
        if (crc && corrupt) {
            CHECK_EQ(took, 0);
            CHECK(memcmp(&a, &a0, sizeof a) == 0);
            CHECK_EQ(rb, UIW_E_FPDU_CRC);
            continue;
        }
        CHECK_EQ(took, wl);
        CHECK_EQ(rb, UIW_FPDU_COMPLETE);
        CHECK_EQ(uiw_fpdu_rx_ulpdu_len(&a), len);
        CHECK(memcmp(&a, &b, sizeof a) == 0);
        /* inside an FPDU: refused */
        CHECK_EQ(uiw_fpdu_rx_consume(&a, fp, 1), 0);
        a0 = a;
        CHECK_EQ(uiw__fpdu_rx_take_whole(&a, fp, wl), 0);
        CHECK(memcmp(&a, &a0, sizeof a) == 0);
    }
    /* lengths no ULPDU can have: refused, and consume reports them */
    static const uint16_t bad[] = {0, 13, 2001};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t f[2100] = {(uint8_t)(bad[i] >> 8), (uint8_t)bad[i]};
        struct uiw_fpdu_rx r;
        uiw_fpdu_rx_init(&r, false, false, 2000);
        CHECK_EQ(uiw__fpdu_rx_take_whole(&r, f, sizeof f), 0);
        CHECK(uiw_fpdu_rx_consume(&r, f, 2) < 0);
        CHECK_EQ(uiw__fpdu_rx_take_whole(&r, f, sizeof f), 0); /* sticky error */
    }
    /* with markers: refused */
    struct uiw_fpdu_rx m;
    uiw_fpdu_rx_init(&m, false, true, 0);
    uint8_t z[64] = {0};
    z[1] = 18;
    CHECK_EQ(uiw__fpdu_rx_take_whole(&m, z, sizeof z), 0);
    CHECK_EQ(uiw__fpdu_rx_take_whole(&m, NULL, 0), 0);
}
