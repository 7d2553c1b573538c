/*
 * MPA FPDU framing (RFC 5044 sections 4-6): ULPDU_Length | ULPDU | pad | CRC32c, with a
 * marker every 512 octets of stream when markers are on. See wire.h for the placement
 * rules. No allocation, no copy of payload (except uiw_fpdu_encode/tx_encode/rx_feed,
 * which are the flat conveniences).
 */
#include <errno.h>
#include <string.h>

#include <uiw/wire.h>

#include "common/byteorder.h"
#include "wire/fpdu_fast.h"
#include "common/compiler.h"

#define MI UIW_MPA_MARKER_INTERVAL
#define ML UIW_MPA_MARKER_LEN

UIW__DATAPATH static inline size_t pad_of(size_t ulpdu_len)
{
    return uiw_fpdu_len(ulpdu_len) - 2 - ulpdu_len - 4; /* the formula: uiw_fpdu_len */
}

UIW__DATAPATH static int iov_total(const struct uiw_wire_iov *v, int n, size_t *total)
{
    if (n < 0 || (n > 0 && !v))
        return -EINVAL;
    size_t t = 0;
    for (int i = 0; i < n; i++) {
        if (v[i].len && !v[i].base)
            return -EINVAL;
        if (v[i].len > UIW_FPDU_MAX_ULPDU)
            return -EMSGSIZE;
        t += v[i].len;
        if (t > UIW_FPDU_MAX_ULPDU)
            return -EMSGSIZE;
    }
    *total = t;
    return 0;
}

ssize_t uiw_fpdu_encode(const struct uiw_wire_iov *ulpdu, int n, bool crc, uint8_t *buf, size_t cap)
{
    size_t len;
    int r = iov_total(ulpdu, n, &len);
    if (r < 0)
        return r;
    size_t total = uiw_fpdu_len(len);
    if (!buf || cap < total)
        return -ENOSPC;
    uiw__put_be16(buf, (uint16_t)len);
    size_t off = 2;
    for (int i = 0; i < n; i++) {
        if (ulpdu[i].len)
            memcpy(buf + off, ulpdu[i].base, ulpdu[i].len);
        off += ulpdu[i].len;
    }
    size_t pad = pad_of(len);
    memset(buf + off, 0, pad);
    off += pad;
    uiw__put_le32(buf + off, crc ? uiw_crc32c(0, buf, off) : 0);
    return (ssize_t)(off + 4);
}

/* ---------------------------------------------------------------------------------------
 * Transmit
 * ------------------------------------------------------------------------------------- */

void uiw_fpdu_tx_init(struct uiw_fpdu_tx *tx, bool crc, bool markers)
{
    tx->stream_pos = 0;
    tx->crc = crc;
    tx->markers = markers;
}

/* Upper bound of markers in an FPDU of f bytes (without markers): m <= (f + 512) / 508. */
static size_t max_markers(size_t f)
{
    return (f + MI) / (MI - ML) + 1;
}

size_t uiw_fpdu_tx_scratch(size_t ulpdu_len)
{
    return 2 + 3 + 4 + ML * max_markers(uiw_fpdu_len(ulpdu_len));
}

int uiw_fpdu_tx_iovs(size_t ulpdu_len, int n)
{
    return n + 2 + 2 * (int)max_markers(uiw_fpdu_len(ulpdu_len));
}

/*
 * The builder walks the FPDU's pieces in wire order: framing pieces (bytes it writes into
 * scratch, in wire order, so adjacent ones merge) and payload pieces (the caller's
 * iovecs). Before each byte at a stream position that is a multiple of 512 it inserts a
 * marker. The CRC is accumulated over everything before the CRC field.
 */
struct builder {
    uint64_t pos;     /* stream position of the next octet */
    uint32_t len_pos; /* low bits of the position of the length field */
    bool len_started; /* length field's first octet emitted */
    bool markers;
    bool crc_on;
    bool in_crc_field; /* emitting the CRC field: no more CRC accumulation */
    uint32_t crc;
    uint8_t *scratch; /* next free scratch byte */
    struct uiw_wire_iov *out;
    int n, max;
    bool last_is_scratch;
};

static int emit(struct builder *b, const void *p, size_t k, bool framing)
{
    if (!k)
        return 0;
    if (b->crc_on && !b->in_crc_field)
        b->crc = uiw_crc32c(b->crc, p, k);
    if (framing && b->last_is_scratch && b->n > 0 &&
        (const uint8_t *)b->out[b->n - 1].base + b->out[b->n - 1].len == (const uint8_t *)p) {
        b->out[b->n - 1].len += k;
    } else {
        if (b->n >= b->max)
            return -ENOSPC;
        b->out[b->n].base = p;
        b->out[b->n].len = k;
        b->n++;
    }
    b->last_is_scratch = framing;
    b->pos += k;
    return 0;
}

static int emit_marker(struct builder *b)
{
    uint16_t ptr = b->len_started ? (uint16_t)((uint32_t)b->pos - b->len_pos) : 0;
    uint8_t *m = b->scratch;
    b->scratch += ML;
    uiw__put_be16(m, 0);
    uiw__put_be16(m + 2, ptr);
    return emit(b, m, ML, true);
}

/* Emit k bytes from p (framing bytes must already be in scratch at p), with markers. */
static int put(struct builder *b, const uint8_t *p, size_t k, bool framing)
{
    while (k) {
        if (b->markers && (b->pos % MI) == 0) {
            int r;
            if (framing) {
                /* keep scratch in wire order: move this framing run after the marker */
                uint8_t tmp[8];
                memcpy(tmp, p, k);
                r = emit_marker(b);
                if (r < 0)
                    return r;
                memcpy(b->scratch, tmp, k);
                p = b->scratch;
            } else {
                r = emit_marker(b);
                if (r < 0)
                    return r;
            }
        }
        size_t run = k;
        if (b->markers) {
            size_t room = MI - (size_t)(b->pos % MI);
            if (run > room)
                run = room;
        }
        if (!b->len_started) {
            b->len_started = true;
            b->len_pos = (uint32_t)b->pos;
        }
        int r = emit(b, p, run, framing);
        if (r < 0)
            return r;
        if (framing)
            b->scratch = (uint8_t *)(uintptr_t)(p + run);
        p += run;
        k -= run;
    }
    return 0;
}

/* Framing bytes: write them at the scratch cursor, then put them. */
static int put_framing(struct builder *b, const uint8_t *bytes, size_t k)
{
    memcpy(b->scratch, bytes, k);
    return put(b, b->scratch, k, true);
}

UIW__DATAPATH int uiw__fpdu_tx_seal(struct uiw_fpdu_tx *tx, const struct uiw_wire_iov *ulpdu, int n,
                                    uint8_t len_out[2], uint8_t trailer[7])
{
    size_t len;
    int r = iov_total(ulpdu, n, &len);
    if (r < 0)
        return r;
    if (!tx || tx->markers || !len_out || !trailer)
        return -EINVAL;
    size_t pad = pad_of(len);
    uiw__put_be16(len_out, (uint16_t)len);
    uiw__put_le32(trailer, 0); /* the pad (and a CRC field of 0 without CRC) */
    if (tx->crc) {
        uint32_t crc = uiw_crc32c(0, len_out, 2);
        for (int i = 0; i < n; i++)
            if (ulpdu[i].len)
                crc = uiw_crc32c(crc, ulpdu[i].base, ulpdu[i].len);
        if (pad)
            crc = uiw_crc32c(crc, trailer, pad);
        uiw__put_le32(trailer + pad, crc);
    } else if (pad) {
        uiw__put_le32(trailer + pad, 0);
    }
    tx->stream_pos += 2 + len + pad + 4;
    return (int)(pad + 4);
}

int uiw_fpdu_tx_build(struct uiw_fpdu_tx *tx, const struct uiw_wire_iov *ulpdu, int n,
                      uint8_t *scratch, struct uiw_wire_iov *out, int max)
{
    size_t len;
    int r = iov_total(ulpdu, n, &len);
    if (r < 0)
        return r;
    if (!tx || !scratch || !out || max < 0)
        return -EINVAL;
    if (!tx->markers) {
        /* Without markers the FPDU is the length, the ULPDU as given, and pad plus CRC
         * field: the same iovecs and scratch bytes as the general builder below, built
         * without walking the stream position byte run by byte run. */
        int k = 1;
        for (int i = 0; i < n; i++)
            k += ulpdu[i].len ? 1 : 0;
        if (k + 1 > max)
            return -ENOSPC;
        int t = uiw__fpdu_tx_seal(tx, ulpdu, n, scratch, scratch + 2);
        if (t < 0)
            return t;
        out[0].base = scratch;
        out[0].len = 2;
        k = 1;
        for (int i = 0; i < n; i++)
            if (ulpdu[i].len)
                out[k++] = ulpdu[i];
        out[k].base = scratch + 2;
        out[k].len = (size_t)t;
        return k + 1;
    }
    struct builder b = {
        .pos = tx->stream_pos,
        .markers = tx->markers,
        .crc_on = tx->crc,
        .scratch = scratch,
        .out = out,
        .max = max,
    };
    uint8_t hdr[2];
    uiw__put_be16(hdr, (uint16_t)len);
    if ((r = put_framing(&b, hdr, 2)) < 0)
        return r;
    for (int i = 0; i < n; i++)
        if ((r = put(&b, ulpdu[i].base, ulpdu[i].len, false)) < 0)
            return r;
    static const uint8_t zeros[3];
    size_t pad = pad_of(len);
    if (pad && (r = put_framing(&b, zeros, pad)) < 0)
        return r;
    /* The CRC covers every octet of the FPDU but its own four, markers included: a marker
     * due right before the field is emitted first, one due inside it is folded in ahead. */
    if (b.markers && (b.pos % MI) == 0 && (r = emit_marker(&b)) < 0)
        return r;
    size_t rem = (size_t)(b.pos % MI);
    if (b.crc_on && b.markers && rem > MI - 4) {
        uint8_t m[ML];
        uiw__put_be16(m, 0);
        uiw__put_be16(m + 2, (uint16_t)((uint32_t)(b.pos + (MI - rem)) - b.len_pos));
        b.crc = uiw_crc32c(b.crc, m, ML);
    }
    uint8_t crcb[4];
    uiw__put_le32(crcb, b.crc_on ? b.crc : 0);
    b.in_crc_field = true;
    if ((r = put_framing(&b, crcb, 4)) < 0)
        return r;
    tx->stream_pos = b.pos;
    return b.n;
}

ssize_t uiw_fpdu_tx_encode(struct uiw_fpdu_tx *tx, const struct uiw_wire_iov *ulpdu, int n,
                           uint8_t *buf, size_t cap)
{
    size_t len;
    int r = iov_total(ulpdu, n, &len);
    if (r < 0)
        return r;
    if (!tx || !buf)
        return -EINVAL;
    uint8_t scratch[2 + 3 + 4 + ML * 140];
    struct uiw_wire_iov iov[2 + 2 * 140 + 64];
    struct uiw_fpdu_tx t = *tx;
    if (n > 64)
        return -EINVAL;
    int k;
    k = uiw_fpdu_tx_build(&t, ulpdu, n, scratch, iov, (int)(sizeof iov / sizeof iov[0]));
    if (k < 0)
        return k;
    size_t total = (size_t)(t.stream_pos - tx->stream_pos);
    if (cap < total)
        return -ENOSPC;
    size_t off = 0;
    for (int i = 0; i < k; i++) {
        memcpy(buf + off, iov[i].base, iov[i].len);
        off += iov[i].len;
    }
    *tx = t;
    return (ssize_t)off;
}

/* ---------------------------------------------------------------------------------------
 * Receive
 * ------------------------------------------------------------------------------------- */

enum { RX_LEN = 0, RX_ULPDU = 1, RX_TRAILER = 2 };

static void rx_fpdu_reset(struct uiw_fpdu_rx *rx)
{
    rx->state = RX_LEN;
    rx->crc = 0;
    rx->field = 0;
    rx->field_have = 0;
    rx->ulpdu_done = 0;
    rx->pad = 0;
    /* ulpdu_len keeps the completed FPDU's length until the next length field */
}

void uiw_fpdu_rx_init(struct uiw_fpdu_rx *rx, bool crc, bool markers, uint16_t max_ulpdu)
{
    memset(rx, 0, sizeof *rx);
    rx->crc_on = crc;
    rx->markers = markers;
    rx->max_ulpdu = max_ulpdu ? max_ulpdu : UIW_FPDU_MAX_ULPDU;
    rx_fpdu_reset(rx);
}

/* Length of the current run and its kind, without the marker clamp. */
UIW__DATAPATH static inline size_t rx_run(const struct uiw_fpdu_rx *rx, enum uiw_fpdu_run *kind)
{
    switch (rx->state) {
    case RX_LEN:
        *kind = UIW_FPDU_RUN_FRAMING;
        return 2u - rx->field_have;
    case RX_ULPDU:
        *kind = UIW_FPDU_RUN_ULPDU;
        return (size_t)rx->ulpdu_len - rx->ulpdu_done;
    default:
        *kind = UIW_FPDU_RUN_FRAMING;
        return (size_t)rx->pad + 4u - rx->field_have;
    }
}

UIW__DATAPATH static inline bool rx_in_marker(const struct uiw_fpdu_rx *rx)
{
    return rx->markers && (rx->marker_have || (rx->stream_pos % MI) == 0);
}

UIW__DATAPATH size_t uiw_fpdu_rx_next(const struct uiw_fpdu_rx *rx, enum uiw_fpdu_run *kind,
                                      uint32_t *off)
{
    if (rx->err) {
        *kind = UIW_FPDU_RUN_FRAMING;
        return 1;
    }
    if (rx_in_marker(rx)) {
        *kind = UIW_FPDU_RUN_FRAMING;
        return (size_t)ML - rx->marker_have;
    }
    size_t n = rx_run(rx, kind);
    if (rx->markers) {
        size_t room = MI - (size_t)(rx->stream_pos % MI);
        if (n > room)
            n = room;
    }
    if (*kind == UIW_FPDU_RUN_ULPDU && off)
        *off = rx->ulpdu_done;
    return n;
}

UIW__COLD static int rx_fail(struct uiw_fpdu_rx *rx, int err)
{
    rx->err = err;
    return err;
}

static int rx_marker(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t k)
{
    if (rx->crc_on) /* markers are always covered, even inside the CRC field */
        rx->crc = uiw_crc32c(rx->crc, p, k);
    for (size_t i = 0; i < k; i++)
        rx->marker = (rx->marker << 8) | p[i];
    rx->marker_have = (uint8_t)(rx->marker_have + k);
    rx->stream_pos += k;
    if (rx->marker_have < ML)
        return 0;
    rx->marker_have = 0;
    uint32_t mpos = (uint32_t)(rx->stream_pos - ML);
    bool at_start = rx->state == RX_LEN && rx->field_have == 0;
    uint16_t want = at_start ? 0 : (uint16_t)(mpos - rx->fpdu_start);
    if ((uint16_t)(rx->marker & 0xFFFF) != want)
        return rx_fail(rx, UIW_E_FPDU_MARKER);
    return 0;
}

/* The length field is complete (field and field_have are clear): check it, expect the
 * ULPDU. */
UIW__DATAPATH static int rx_len_done(struct uiw_fpdu_rx *rx, uint16_t len)
{
    rx->ulpdu_len = len;
    if (rx->ulpdu_len > rx->max_ulpdu)
        return rx_fail(rx, UIW_E_FPDU_TOO_LONG);
    if (rx->ulpdu_len < UIW_FPDU_MIN_ULPDU)
        return rx_fail(rx, UIW_E_FPDU_TOO_SHORT);
    rx->pad = (uint8_t)pad_of(rx->ulpdu_len);
    rx->state = RX_ULPDU;
    return 0;
}

UIW__DATAPATH size_t uiw__fpdu_rx_left(const struct uiw_fpdu_rx *rx)
{
    if (rx->err || rx->markers)
        return 0;
    switch (rx->state) {
    case RX_LEN:
        return 2u - rx->field_have;
    case RX_ULPDU:
        return (size_t)rx->ulpdu_len - rx->ulpdu_done + rx->pad + 4u;
    default:
        return (size_t)rx->pad + 4u - rx->field_have;
    }
}

bool uiw__fpdu_rx_partial(const struct uiw_fpdu_rx *rx)
{
    return !rx->err && (rx->state != RX_LEN || rx->field_have || rx->marker_have);
}

UIW__DATAPATH int uiw__fpdu_rx_start(struct uiw_fpdu_rx *rx, const uint8_t *p)
{
    if (rx->err)
        return rx->err;
    if (!p)
        return -EINVAL;
    if (rx->markers || rx->state != RX_LEN || rx->field_have != 0)
        return 1;
    if (rx->crc_on)
        rx->crc = uiw_crc32c(rx->crc, p, 2);
    rx->fpdu_start = (uint32_t)rx->stream_pos;
    rx->stream_pos += 2;
    return rx_len_done(rx, uiw__get_be16(p));
}

int uiw_fpdu_rx_consume(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t k)
{
    if (rx->err)
        return rx->err;
    if (!k)
        return 0;
    enum uiw_fpdu_run kind;
    if (k > uiw_fpdu_rx_next(rx, &kind, NULL) || !p)
        return -EINVAL;
    if (rx_in_marker(rx))
        return rx_marker(rx, p, k);

    if (rx->crc_on && rx->state != RX_TRAILER)
        rx->crc = uiw_crc32c(rx->crc, p, k);

    switch (rx->state) {
    case RX_ULPDU:
        rx->ulpdu_done += (uint32_t)k;
        rx->stream_pos += k;
        if (rx->ulpdu_done == rx->ulpdu_len)
            rx->state = RX_TRAILER;
        return 0;
    case RX_LEN:
        if (rx->field_have == 0)
            rx->fpdu_start = (uint32_t)rx->stream_pos;
        for (size_t i = 0; i < k; i++)
            rx->field = (rx->field << 8) | p[i];
        rx->field_have = (uint8_t)(rx->field_have + k);
        rx->stream_pos += k;
        if (rx->field_have < 2)
            return 0;
        uint16_t len = (uint16_t)rx->field;
        rx->field = 0;
        rx->field_have = 0;
        return rx_len_done(rx, len);
    default:
        break;
    }

    /* trailer: pad bytes (in the CRC), then the CRC field, little-endian */
    if (rx->crc_on && rx->field_have < rx->pad) {
        size_t npad = (size_t)(rx->pad - rx->field_have);
        rx->crc = uiw_crc32c(rx->crc, p, npad < k ? npad : k);
    }
    for (size_t i = 0; i < k; i++) {
        if (rx->field_have >= rx->pad) {
            unsigned sh = 8u * (unsigned)(rx->field_have - rx->pad);
            rx->field |= (uint32_t)p[i] << sh;
        }
        rx->field_have++;
    }
    rx->stream_pos += k;
    if (rx->field_have < rx->pad + 4u)
        return 0;
    if (rx->crc_on && rx->field != rx->crc)
        return rx_fail(rx, UIW_E_FPDU_CRC);
    rx_fpdu_reset(rx);
    return UIW_FPDU_COMPLETE;
}

UIW__DATAPATH int uiw__fpdu_rx_rest(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t k)
{
    if (rx->err)
        return rx->err;
    size_t covered = (size_t)rx->ulpdu_len + rx->pad;
    if (!p || rx->markers || rx->state != RX_ULPDU || rx->ulpdu_done != 0 || k != covered + 4u)
        return -EINVAL;
    rx->stream_pos += k;
    if (rx->crc_on && uiw__get_le32(p + covered) != uiw_crc32c(rx->crc, p, covered))
        return rx_fail(rx, UIW_E_FPDU_CRC);
    rx_fpdu_reset(rx);
    return UIW_FPDU_COMPLETE;
}

UIW__DATAPATH size_t uiw__fpdu_rx_take_whole(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t n)
{
    if (rx->err || rx->markers || rx->state != RX_LEN || rx->field_have != 0 || n < 2 || !p)
        return 0;
    uint16_t len = uiw__get_be16(p);
    if (len > rx->max_ulpdu || len < UIW_FPDU_MIN_ULPDU)
        return 0;
    size_t covered = 2 + (size_t)len + pad_of(len);
    if (covered + 4 > n || (rx->crc_on && uiw__get_le32(p + covered) != uiw_crc32c(0, p, covered)))
        return 0;
    rx->fpdu_start = (uint32_t)rx->stream_pos;
    rx->stream_pos += covered + 4;
    rx->ulpdu_len = len;
    rx_fpdu_reset(rx);
    return covered + 4;
}

ssize_t uiw_fpdu_rx_feed(struct uiw_fpdu_rx *rx, const uint8_t *buf, size_t len, uint8_t *ulpdu,
                         size_t cap, uint16_t *ulpdu_len, bool *done)
{
    size_t used = 0;
    *done = false;
    if (rx->err)
        return rx->err;
    while (used < len) {
        enum uiw_fpdu_run kind;
        uint32_t off = 0;
        size_t n = uiw_fpdu_rx_next(rx, &kind, &off);
        size_t k = len - used < n ? len - used : n;
        if (kind == UIW_FPDU_RUN_ULPDU && ulpdu) {
            if ((size_t)off + k > cap)
                return -ENOSPC;
            memcpy(ulpdu + off, buf + used, k);
        }
        int r = uiw_fpdu_rx_consume(rx, buf + used, k);
        if (r < 0)
            return r;
        used += k;
        if (r == UIW_FPDU_COMPLETE) {
            *done = true;
            *ulpdu_len = rx->ulpdu_len;
            break;
        }
    }
    return (ssize_t)used;
}
