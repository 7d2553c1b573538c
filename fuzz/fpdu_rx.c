/*
 * libFuzzer target: the resumable FPDU RX parser.
 * Input: byte 0 = mode (bit 0 CRC, bit 1 markers, bit 2 round-trip mode, bits 3-4 max
 * ULPDU choice), byte 1 = split seed, bytes 2-3 = initial stream offset (for markers).
 *  - parse mode: the rest is a raw stream, fed through next/consume in pseudo-random
 *    pieces; checks the run contract (never 0, ULPDU offsets contiguous) and that the same
 *    stream fed whole with uiw_fpdu_rx_feed gives the same verdict.
 *  - round-trip mode: the rest is cut into ULPDUs, framed by the TX framer and parsed
 *    back: every ULPDU must come back intact.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/wire.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t next_rand(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static uint8_t ulpdu_buf[65536];

/* Parse stream[0..len) in pieces; returns the final code (last consume result or error)
 * and the number of FPDUs completed. */
static int parse_pieces(bool crc, bool markers, uint16_t max, uint64_t base, uint32_t seed,
                        const uint8_t *s, size_t len, int *completes)
{
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, crc, markers, max);
    rx.stream_pos = base;
    size_t pos = 0;
    uint32_t expect_off = 0;
    *completes = 0;
    while (pos < len) {
        enum uiw_fpdu_run kind;
        uint32_t off = 0;
        size_t n = uiw_fpdu_rx_next(&rx, &kind, &off);
        if (n == 0)
            abort();
        size_t k = 1 + next_rand(&seed) % n;
        if (k > len - pos)
            k = len - pos;
        if (kind == UIW_FPDU_RUN_ULPDU) {
            if (off != expect_off || off + k > 65536)
                abort();
            memcpy(ulpdu_buf + off, s + pos, k);
            expect_off += (uint32_t)k;
        }
        int r = uiw_fpdu_rx_consume(&rx, s + pos, k);
        if (r < 0)
            return r;
        pos += k;
        if (r == UIW_FPDU_COMPLETE) {
            if (expect_off != uiw_fpdu_rx_ulpdu_len(&rx))
                abort();
            expect_off = 0;
            (*completes)++;
        }
    }
    return 0;
}

static int parse_feed(bool crc, bool markers, uint16_t max, uint64_t base, const uint8_t *s,
                      size_t len, int *completes)
{
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, crc, markers, max);
    rx.stream_pos = base;
    size_t pos = 0;
    *completes = 0;
    while (pos < len) {
        uint16_t ul;
        bool done;
        ssize_t r = uiw_fpdu_rx_feed(&rx, s + pos, len - pos, NULL, 0, &ul, &done);
        if (r < 0)
            return (int)r;
        if (r == 0)
            abort();
        pos += (size_t)r;
        *completes += done;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    bool crc = data[0] & 1, markers = data[0] & 2, roundtrip = data[0] & 4;
    static const uint16_t maxes[4] = {0, 14, 512, 9000};
    uint16_t max = maxes[(data[0] >> 3) & 3];
    uint32_t seed = data[1];
    uint64_t base = markers ? (uint64_t)(data[2] | data[3] << 8) : 0;
    const uint8_t *s = data + 4;
    size_t len = size - 4;

    if (!roundtrip) {
        int c1, c2;
        int r1 = parse_pieces(crc, markers, max, base, seed, s, len, &c1);
        int r2 = parse_feed(crc, markers, max, base, s, len, &c2);
        if (r1 != r2 || c1 != c2)
            abort();
        if (r1 < 0 && !uiw_error_is_fatal(r1))
            abort();
        return 0;
    }

    /* round trip: ULPDU lengths from the data itself */
    static uint8_t wire[1 << 18];
    static uint16_t lens[4096];
    static size_t offs[4096];
    struct uiw_fpdu_tx tx;
    uiw_fpdu_tx_init(&tx, crc, markers);
    tx.stream_pos = base;
    size_t w = 0, pos = 0;
    int count = 0;
    while (pos < len && count < 4096) {
        size_t ulen = UIW_FPDU_MIN_ULPDU + (s[pos] % 200) * 7;
        if (ulen > len - pos)
            ulen = len - pos;
        if (ulen < UIW_FPDU_MIN_ULPDU)
            break;
        struct uiw_wire_iov v[2] = {{s + pos, ulen / 2}, {s + pos + ulen / 2, ulen - ulen / 2}};
        ssize_t r = uiw_fpdu_tx_encode(&tx, v, 2, wire + w, sizeof wire - w);
        if (r < 0)
            break;
        lens[count] = (uint16_t)ulen;
        offs[count] = pos;
        count++;
        w += (size_t)r;
        pos += ulen;
    }
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, crc, markers, 0);
    rx.stream_pos = base;
    size_t p = 0;
    int done_n = 0;
    while (p < w) {
        enum uiw_fpdu_run kind;
        uint32_t off = 0;
        size_t n = uiw_fpdu_rx_next(&rx, &kind, &off);
        size_t k = 1 + next_rand(&seed) % n;
        if (k > w - p)
            k = w - p;
        if (kind == UIW_FPDU_RUN_ULPDU)
            memcpy(ulpdu_buf + off, wire + p, k);
        int r = uiw_fpdu_rx_consume(&rx, wire + p, k);
        if (r < 0)
            abort();
        p += k;
        if (r == UIW_FPDU_COMPLETE) {
            if (done_n >= count || uiw_fpdu_rx_ulpdu_len(&rx) != lens[done_n] ||
                memcmp(ulpdu_buf, s + offs[done_n], lens[done_n]) != 0)
                abort();
            done_n++;
        }
    }
    if (done_n != count)
        abort();
    return 0;
}
