/*
 * The FPDU framer's and parser's one-call fast paths, for the RNIC engine's data path
 * (src/rnic): each does in one call what the public step-by-step calls of <uiw/wire.h>
 * do, under preconditions the engine guarantees, and gives the same results.
 */
#ifndef UIW_WIRE_FPDU_FAST_H
#define UIW_WIRE_FPDU_FAST_H

#include <stddef.h>
#include <stdint.h>

#include <uiw/wire.h>

#include "common/byteorder.h"

/* Without markers, the framing of one FPDU carrying `ulpdu` (n entries, total length
 * <= 65535) when the caller lays out the iovecs itself: the length field into len_out
 * (2 bytes), the pad and CRC field into trailer (returns their count, 4 to 7 bytes).
 * On the wire: len_out, the ULPDU, then the trailer. Advances the stream position.
 * -EINVAL with markers on (use uiw_fpdu_tx_build) or a bad iovec, -EMSGSIZE when too long;
 * errors leave the stream position unchanged. */
int uiw__fpdu_tx_seal(struct uiw_fpdu_tx *tx, const struct uiw_wire_iov *ulpdu, int n,
                      uint8_t len_out[2], uint8_t trailer[7]);

/* Without markers, the framing of one FPDU laid out whole in one buffer: p holds its
 * length field (2 bytes, written here), the ULPDU (len bytes, at most 65535), then room
 * for the pad and CRC field (7 bytes). Writes the same bytes as uiw__fpdu_tx_seal and
 * advances the stream position as it does; returns the FPDU's length on the wire. */
static inline size_t uiw__fpdu_tx_seal_whole(struct uiw_fpdu_tx *tx, uint8_t *p, size_t len)
{
    size_t total = uiw_fpdu_len(len);
    size_t pad = total - 2 - len - 4;
    uint8_t *trailer = p + 2 + len;
    uiw__put_be16(p, (uint16_t)len);
    uiw__put_le32(trailer, 0); /* the pad */
    uiw__put_le32(trailer + pad, tx->crc ? uiw_crc32c(0, p, 2 + len + pad) : 0);
    tx->stream_pos += total;
    return total;
}

/* The length field of an FPDU in one call, for a receiver holding it at p (2 bytes):
 * when the parser is at the start of an FPDU and markers are off, checks and consumes it
 * as uiw_fpdu_rx_consume would and returns the same (0, or UIW_E_FPDU_TOO_LONG /
 * UIW_E_FPDU_TOO_SHORT, fatal). Returns 1 (nothing consumed) when not at the start of an
 * FPDU or with markers on: use uiw_fpdu_rx_consume. The parser's sticky error if it
 * failed before; -EINVAL for a NULL p. */
int uiw__fpdu_rx_start(struct uiw_fpdu_rx *rx, const uint8_t *p);

/* Without markers and while healthy, the stream bytes the parser still expects of the
 * current FPDU as far as it knows them: at its start (or within its length field) the
 * rest of the length field, then the rest of its ULPDU, pad and CRC field. 0 with markers
 * on or after an error. */
size_t uiw__fpdu_rx_left(const struct uiw_fpdu_rx *rx);

/* Whether the parser is within an FPDU: it consumed some of its bytes (or of a marker
 * before it), not all. False at an FPDU boundary and after an error. */
bool uiw__fpdu_rx_partial(const struct uiw_fpdu_rx *rx);

/* The rest of an FPDU in one call, for a receiver holding all of it in one buffer: right
 * after its length field was consumed (no byte of the ULPDU yet) and without markers, p
 * holds the ULPDU, pad and CRC field, k bytes (exactly uiw_fpdu_rx_ulpdu_len + pad + 4).
 * Checks what consuming them run by run would (the CRC) and returns the same:
 * UIW_FPDU_COMPLETE or UIW_E_FPDU_CRC (fatal); -EINVAL (nothing consumed) when the
 * preconditions do not hold; the parser's sticky error if it failed before. */
int uiw__fpdu_rx_rest(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t k);

/* A whole FPDU in one call, for a receiver that holds it at p within n bytes and takes it
 * only if nothing is wrong with it: when the parser is at the start of an FPDU, markers
 * are off and no error is sticky, and p holds the FPDU whole (length field, ULPDU, pad
 * and CRC field) with a length uiw_fpdu_rx_consume accepts and (CRC on) a good CRC, it is
 * consumed and its total length returned (uiw_fpdu_rx_ulpdu_len then gives its ULPDU's).
 * Otherwise 0, with nothing consumed: uiw__fpdu_rx_start / _consume then take it and find
 * whatever is wrong, with their exact error. */
size_t uiw__fpdu_rx_take_whole(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t n);

#endif
