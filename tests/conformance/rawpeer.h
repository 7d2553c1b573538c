/*
 * A raw iWARP peer for conformance tests: it speaks the MPA handshake itself on a plain
 * TCP socket (as initiator against a uiw listener, or as responder to a uiw connect),
 * builds any FPDU it likes (including malformed ones) with the wire codecs, and reads the
 * stack's answer back FPDU by FPDU, decoding the Terminate it expects.
 *
 * Every read is bounded by a timeout (poll), so no test using it can hang. All functions
 * return 0 (or a count) or a negative errno / UIW_E_* code; none of them calls the test
 * harness, so the peer can be tested against itself.
 */
#ifndef UIW_TESTS_CONFORMANCE_RAWPEER_H
#define UIW_TESTS_CONFORMANCE_RAWPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uiw/wire.h>

#define RAWPEER_BUF 8192

struct rawpeer {
    int fd;
    bool started;    /* FPDU mode (after the handshake) */
    bool crc;        /* CRC32c in both directions */
    bool markers_tx; /* we insert markers (the stack asked for them) */
    bool markers_rx; /* the stack inserts markers (we asked for them) */
    struct uiw_fpdu_tx tx;
    struct uiw_fpdu_rx rx;
    uint32_t msn[3];         /* next MSN we send, per QN */
    uint8_t in[RAWPEER_BUF]; /* stream bytes read but not parsed yet */
    size_t in_off, in_have;  /* unparsed bytes are in[in_off .. in_have) */
};

/* Plain TCP on loopback (family AF_INET or AF_INET6). Return an fd or -errno. */
int rawpeer_tcp_listen(int family, uint16_t *port);
int rawpeer_tcp_connect(int family, uint16_t port);
int rawpeer_tcp_accept(int lfd, int timeout_ms);

/* Wrap a connected socket (made non-blocking). */
void rawpeer_init(struct rawpeer *p, int fd);
/* Close the socket; with reset, abortively (SO_LINGER 0: the stack sees a TCP RST). */
void rawpeer_close(struct rawpeer *p, bool reset);

/* Write all bytes (bounded by a 5 s wait for socket room). 0 or -errno. */
int rawpeer_write(struct rawpeer *p, const void *buf, size_t n);
/* Read exactly n bytes of the stream within timeout_ms (buffered bytes first). Returns n,
 * or -ETIMEDOUT, or -EPIPE (EOF before n bytes), -ECONNRESET. */
ssize_t rawpeer_read(struct rawpeer *p, void *buf, size_t n, int timeout_ms);

/* MPA handshake frames. send: encode and write. recv: read one whole frame of the given
 * kind (header, then its PD_Length of private data) into store[0..cap) and parse it with
 * pd_cap 512; returns the frame length or a negative code (parse error, -ETIMEDOUT,
 * -EPIPE, -ENOSPC). The parsed frame points into store. */
int rawpeer_send_frame(struct rawpeer *p, const struct uiw_mpa_frame *f);
ssize_t rawpeer_recv_frame(struct rawpeer *p, enum uiw_mpa_frame_kind kind, struct uiw_mpa_frame *f,
                           uint8_t *store, size_t cap, int timeout_ms);

/* Enter FPDU mode (after the Reply): framing state for both directions, MSNs at 1. */
void rawpeer_start(struct rawpeer *p, bool crc, bool markers_tx, bool markers_rx);

/* Frame a ULPDU (gather list) as the next FPDU of our stream into out[0..cap); returns
 * its length (markers included) or a negative code. The stream position advances. */
ssize_t rawpeer_frame(struct rawpeer *p, const struct uiw_wire_iov *ulpdu, int n, uint8_t *out,
                      size_t cap);
/* Frame and send one FPDU. 0 or a negative code. */
int rawpeer_send_ulpdu(struct rawpeer *p, const struct uiw_wire_iov *ulpdu, int n);

/* DDP headers, well formed (patch bytes afterwards for malformed ones). */
void rawpeer_tagged_hdr(uint8_t out[UIW_DDP_TAGGED_HDR_LEN], uint8_t rdmap_ctrl, bool last,
                        uint32_t stag, uint64_t to);
void rawpeer_untagged_hdr(uint8_t out[UIW_DDP_UNTAGGED_HDR_LEN], uint8_t rdmap_ctrl, bool last,
                          uint32_t inv_stag, uint32_t qn, uint32_t msn, uint32_t mo);

/* Whole messages as one FPDU each (the MSN of the QN advances). */
int rawpeer_send_write(struct rawpeer *p, uint32_t stag, uint64_t to, const void *data, size_t len);
int rawpeer_send_send(struct rawpeer *p, enum uiw_rdmap_opcode op, uint32_t inv_stag,
                      const void *data, size_t len);
int rawpeer_send_read_req(struct rawpeer *p, const struct uiw_rdmap_read_req *rr);

/* Read the next FPDU of the stack's stream; its ULPDU goes to ulpdu[0..cap) (*len set).
 * Returns 1, 0 on a clean EOF between FPDUs, or a negative code: -ETIMEDOUT, -EPIPE (EOF
 * inside an FPDU), -ECONNRESET, -ENOSPC, or the framing error (bad CRC, marker...). */
int rawpeer_recv_fpdu(struct rawpeer *p, uint8_t *ulpdu, size_t cap, uint16_t *len, int timeout_ms);

/* A Terminate as seen on the wire. */
struct rawpeer_term {
    struct uiw_ddp_hdr ddp; /* the Terminate's own DDP header */
    uint8_t raw[128];       /* its ULPDU (a Terminate is at most 90 bytes) */
    uint16_t raw_len;
    struct uiw_terminate t; /* its parsed body */
    unsigned fpdus_before;  /* FPDUs of other kinds read before it */
};

/* Read FPDUs until a Terminate arrives (others are counted and skipped). Returns 0, or
 * -EPROTO when the ULPDU is not a well-formed Terminate (DDP header untagged, last, QN 2,
 * MO 0, RDMAP version 1 opcode Terminate) or its body does not parse, or a code from
 * rawpeer_recv_fpdu (0 from it becomes -ENODATA). */
int rawpeer_expect_terminate(struct rawpeer *p, struct rawpeer_term *term, int timeout_ms);

/* Wait for the stack to close the stream: 1 when EOF or reset arrives within timeout_ms
 * and no more stream bytes came before it, -EPROTO when bytes came first (their count is
 * returned in *extra if not NULL), 0 on timeout. */
int rawpeer_wait_eof(struct rawpeer *p, int timeout_ms, size_t *extra);

#endif
