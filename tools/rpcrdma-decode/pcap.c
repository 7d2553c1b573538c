/*
 * --pcap: the RDMA Send messages of the iWARP connections in a pcap capture, each decoded
 * as rd_decode_message does, in the order their last byte was captured.
 *
 * Every TCP direction is followed from its start: its first bytes must be an MPA Request
 * or Reply (RFC 5044 section 7.1; others are not iWARP and are left alone), after which
 * the project's FPDU parser (<uiw/wire.h>: CRC checked when the connection negotiated
 * it, markers removed) yields the DDP segments; untagged segments on queue 0 with a Send
 * opcode are joined by MO into messages. Segments are taken in capture order: a
 * retransmitted byte is dropped, a missing one (a gap in the sequence numbers, a packet
 * cut by the snapshot length) ends the direction with an error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/error.h>
#include <uiw/wire.h>

#include "rpcrdma.h"

/* Directions followed at once (a connection is two). */
#define MAX_DIRS 256
/* Largest capture record read. */
#define MAX_RECORD (1u << 20)
/* Bytes held for a direction whose peer's MPA frame has not come. */
#define MAX_STAGE (1u << 24)

enum dstate {
    D_MPA,   /* before and in the MPA Request / Reply */
    D_WAIT,  /* MPA frame done, the peer's not yet seen */
    D_FPDU,  /* FPDUs */
    D_IGNORE /* not iWARP, or failed */
};

struct dir {
    int family;
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    bool have_seq;
    uint32_t next_seq;
    enum dstate st;
    uint8_t mpa_flags; /* the flags of this direction's MPA frame */
    bool requester;    /* this direction's MPA frame is the Request (the RPC client's) */
    struct dir *peer;
    struct rd_buf stage; /* bytes not yet parsed (MPA frame, or FPDUs waiting for D_FPDU) */
    struct uiw_fpdu_rx rx;
    uint8_t *ulpdu; /* UIW_FPDU_MAX_ULPDU bytes */
    struct rd_buf msg;
    bool in_msg;
    uint32_t msn;
};

struct cap {
    struct dir *dirs[MAX_DIRS];
    size_t ndirs;
    int opts;
    FILE *out, *err;
    unsigned long frame;
    int status;
    bool full;          /* MAX_DIRS reached (said once) */
    struct rd_buf line; /* the JSON of one message */
};

static void endpoint(char *buf, size_t cap, int family, const uint8_t *a, uint16_t port)
{
    char t[INET6_ADDRSTRLEN];
    inet_ntop(family, a, t, sizeof(t));
    snprintf(buf, cap, family == AF_INET6 ? "[%s]:%u" : "%s:%u", t, port);
}

static void dir_name(const struct dir *d, char *buf, size_t cap)
{
    char a[64], b[64];
    endpoint(a, sizeof(a), d->family, d->src, d->sport);
    endpoint(b, sizeof(b), d->family, d->dst, d->dport);
    snprintf(buf, cap, "%s > %s", a, b);
}

static void dir_fail(struct cap *c, struct dir *d, const char *why)
{
    char n[160];
    dir_name(d, n, sizeof(n));
    fprintf(c->err, "rpcrdma-decode: frame %lu: %s: %s\n", c->frame, n, why);
    d->st = D_IGNORE;
    c->status = 1;
}

/* Whether a message is an RPC call (1), a reply (0), or neither is known (-1): from
 * Version Two's rdma_direction, else from the RPC message's msg_type after RDMA_MSG. */
static int is_call(const uint8_t *m, size_t len)
{
    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h;
    uiw_rpcrdma_space_init(&sp, &st);
    int hl = uiw_rpcrdma_decode(m, len, &h, &sp);
    if (hl < 0)
        return -1;
    if (h.vers == UIW_RPCRDMA_VERS2 && (h.proc == UIW_RDMA_MSG || h.proc == UIW_RDMA_NOMSG))
        return h.u.chunks.direction == UIW_RPCRDMA_CALL;
    if (h.proc != UIW_RDMA_MSG || len - (size_t)hl < 8)
        return -1;
    uint32_t mtype = (uint32_t)m[hl + 4] << 24 | (uint32_t)m[hl + 5] << 16 |
                     (uint32_t)m[hl + 6] << 8 | m[hl + 7];
    return mtype <= 1 ? mtype == 0 : -1;
}

/* One whole Send message: its JSON line, with the frame, the endpoints and whether it
 * goes in the backward direction (a call from the MPA responder, the RPC server, or a
 * reply from the requester). */
static int emit_message(struct cap *c, struct dir *d)
{
    struct rd_buf *o = &c->line;
    o->len = 0;
    int r = rd_decode_message(d->msg.p ? d->msg.p : (const uint8_t *)"", d->msg.len, c->opts, o);
    if (r < 0)
        return r;
    if (r > 0)
        c->status = 1;
    char a[64], b[64], line[200];
    endpoint(a, sizeof(a), d->family, d->src, d->sport);
    endpoint(b, sizeof(b), d->family, d->dst, d->dport);
    int call = is_call(d->msg.p, d->msg.len);
    int n = snprintf(line, sizeof(line), ",\"frame\":%lu,\"src\":\"%s\",\"dst\":\"%s\"%s}\n",
                     c->frame, a, b,
                     call < 0                ? ""
                     : call == !d->requester ? ",\"backward\":true"
                                             : ",\"backward\":false");
    o->len--; /* reopen the object */
    rd_buf_put(o, line, (size_t)n);
    if (o->oom)
        return -ENOMEM;
    return fwrite(o->p, 1, o->len, c->out) == o->len ? 0 : -EIO;
}

/* One DDP segment (a whole ULPDU). */
static int ddp_segment(struct cap *c, struct dir *d, const uint8_t *u, size_t len)
{
    struct uiw_ddp_hdr h;
    ssize_t hl = uiw_ddp_hdr_parse(u, len, &h);
    if (hl < 0) {
        dir_fail(c, d, "not a DDP segment");
        return 0;
    }
    unsigned op = uiw_rdmap_ctrl_opcode(h.rdmap_ctrl);
    if (h.tagged || h.qn != UIW_DDP_QN_SEND || op < UIW_RDMAP_SEND || op > UIW_RDMAP_SEND_SE_INV)
        return 0; /* RDMA Write / Read traffic, Terminate: not a Send */
    if (h.mo == 0) {
        if (d->in_msg) {
            dir_fail(c, d, "a Send starts before the previous one ended");
            return 0;
        }
        d->in_msg = true;
        d->msn = h.msn;
        d->msg.len = 0;
    } else if (!d->in_msg || h.msn != d->msn || h.mo != d->msg.len) {
        dir_fail(c, d, "a Send's segment out of order");
        return 0;
    }
    rd_buf_put(&d->msg, u + hl, len - (size_t)hl);
    if (d->msg.oom)
        return -ENOMEM;
    if (!h.last)
        return 0;
    d->in_msg = false;
    /* a zero-length Send is MPA's ready-to-send marker (RFC 6581), not a message */
    return d->msg.len ? emit_message(c, d) : 0;
}

static int fpdus(struct cap *c, struct dir *d, const uint8_t *p, size_t n)
{
    while (n && d->st == D_FPDU) {
        uint16_t ulen = 0;
        bool done = false;
        ssize_t k = uiw_fpdu_rx_feed(&d->rx, p, n, d->ulpdu, UIW_FPDU_MAX_ULPDU, &ulen, &done);
        if (k < 0) {
            dir_fail(c, d, k == UIW_E_FPDU_CRC ? "MPA CRC error" : "bad MPA framing");
            return 0;
        }
        p += k;
        n -= (size_t)k;
        if (done) {
            int r = ddp_segment(c, d, d->ulpdu, ulen);
            if (r < 0)
                return r;
        } else if (k == 0) {
            break; /* cannot happen: the parser takes every byte it is given */
        }
    }
    return 0;
}

/* Both MPA frames seen: d's FPDUs can be parsed (CRC if either side asked for it, markers
 * if the receiver did), starting with what was staged. */
static int start_fpdus(struct cap *c, struct dir *d)
{
    const struct dir *q = d->peer;
    bool crc = ((d->mpa_flags | q->mpa_flags) & UIW_MPA_FLAG_CRC) != 0;
    uiw_fpdu_rx_init(&d->rx, crc, (q->mpa_flags & UIW_MPA_FLAG_MARKERS) != 0, 0);
    if (!d->ulpdu)
        d->ulpdu = malloc(UIW_FPDU_MAX_ULPDU);
    if (!d->ulpdu)
        return -ENOMEM;
    d->st = D_FPDU;
    struct rd_buf s = d->stage;
    memset(&d->stage, 0, sizeof(d->stage));
    int r = fpdus(c, d, s.p, s.len);
    rd_buf_free(&s);
    return r;
}

static const char req_key[] = "MPA ID Req Frame", rep_key[] = "MPA ID Rep Frame";

static int stream_bytes(struct cap *c, struct dir *d, const uint8_t *p, size_t n)
{
    if (d->st == D_FPDU)
        return fpdus(c, d, p, n);
    if (d->st == D_IGNORE)
        return 0;
    if (d->stage.len + n > MAX_STAGE) {
        dir_fail(c, d, "no MPA frame from the peer");
        return 0;
    }
    rd_buf_put(&d->stage, p, n);
    if (d->stage.oom)
        return -ENOMEM;
    if (d->st == D_WAIT)
        return 0;
    const uint8_t *s = d->stage.p;
    size_t have = d->stage.len, k = have < UIW_MPA_KEY_LEN ? have : UIW_MPA_KEY_LEN;
    bool req = memcmp(s, req_key, k) == 0;
    if (!req && memcmp(s, rep_key, k) != 0) {
        d->st = D_IGNORE; /* not an iWARP connection */
        return 0;
    }
    if (have < UIW_MPA_KEY_LEN)
        return 0;
    struct uiw_mpa_frame f;
    ssize_t fl =
        uiw_mpa_frame_parse(req ? UIW_MPA_REQUEST : UIW_MPA_REPLY, s, have, UIW_MPA_PD_MAX, &f);
    if (fl == UIW_E_MPA_TRUNCATED)
        return 0;
    if (fl < 0) {
        dir_fail(c, d, "a bad MPA frame");
        return 0;
    }
    d->mpa_flags = f.flags;
    d->requester = req;
    memmove(d->stage.p, s + fl, have - (size_t)fl);
    d->stage.len = have - (size_t)fl;
    d->st = D_WAIT;
    if (d->peer->st != D_WAIT)
        return 0;
    int r = start_fpdus(c, d);
    if (r == 0 && d->peer->st == D_WAIT)
        r = start_fpdus(c, d->peer);
    return r;
}

static struct dir *find_dir(struct cap *c, int family, const uint8_t *src, const uint8_t *dst,
                            uint16_t sport, uint16_t dport)
{
    size_t al = family == AF_INET ? 4 : 16;
    for (size_t i = 0; i < c->ndirs; i++) {
        struct dir *d = c->dirs[i];
        if (d->family == family && d->sport == sport && d->dport == dport &&
            memcmp(d->src, src, al) == 0 && memcmp(d->dst, dst, al) == 0)
            return d;
    }
    return NULL;
}

static struct dir *new_dir(int family, const uint8_t *src, const uint8_t *dst, uint16_t sport,
                           uint16_t dport)
{
    struct dir *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->family = family;
    memcpy(d->src, src, family == AF_INET ? 4 : 16);
    memcpy(d->dst, dst, family == AF_INET ? 4 : 16);
    d->sport = sport;
    d->dport = dport;
    return d;
}

/* The two directions of a connection, created together on its first packet. */
static struct dir *lookup(struct cap *c, int family, const uint8_t *src, const uint8_t *dst,
                          uint16_t sport, uint16_t dport)
{
    struct dir *d = find_dir(c, family, src, dst, sport, dport);
    if (d)
        return d;
    if (c->ndirs + 2 > MAX_DIRS) {
        if (!c->full)
            fprintf(c->err,
                    "rpcrdma-decode: frame %lu: more than %d TCP connections, the others "
                    "left out\n",
                    c->frame, MAX_DIRS / 2);
        c->full = true;
        c->status = 1;
        return NULL;
    }
    d = new_dir(family, src, dst, sport, dport);
    struct dir *q = new_dir(family, dst, src, dport, sport);
    if (!d || !q) {
        free(d);
        free(q);
        return NULL;
    }
    d->peer = q;
    q->peer = d;
    c->dirs[c->ndirs++] = d;
    c->dirs[c->ndirs++] = q;
    return d;
}

/* A direction as before its connection's first byte. */
static void restart(struct dir *d)
{
    d->have_seq = false;
    d->st = D_MPA;
    d->mpa_flags = 0;
    d->requester = false;
    d->stage.len = 0;
    d->msg.len = 0;
    d->in_msg = false;
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One IP packet (cut: the record lost bytes to the snapshot length). */
static int ip_packet(struct cap *c, const uint8_t *p, size_t n, bool cut)
{
    int family;
    const uint8_t *src, *dst;
    size_t hl, total;
    if (n >= 20 && p[0] >> 4 == 4) {
        family = AF_INET;
        hl = (size_t)(p[0] & 15) * 4;
        total = be16(p + 2);
        if (p[9] != 6 || hl < 20 || (be16(p + 6) & 0x3FFF) != 0)
            return 0; /* not TCP, or a fragment */
        src = p + 12;
        dst = p + 16;
    } else if (n >= 40 && p[0] >> 4 == 6) {
        family = AF_INET6;
        hl = 40;
        total = 40 + (size_t)be16(p + 4);
        if (p[6] != 6)
            return 0; /* not TCP (or behind extension headers) */
        src = p + 8;
        dst = p + 24;
    } else {
        return 0;
    }
    if (total < n)
        n = total; /* Ethernet padding */
    else if (total > n)
        cut = true;
    if (n < hl + 20)
        return 0;
    const uint8_t *t = p + hl;
    size_t thl = (size_t)(t[12] >> 4) * 4;
    if (thl < 20 || n < hl + thl)
        return 0;
    uint8_t flags = t[13];
    uint32_t seq = be32(t + 4);
    struct dir *d = lookup(c, family, src, dst, be16(t), be16(t + 2));
    if (!d)
        return c->full ? 0 : -ENOMEM;
    const uint8_t *data = t + thl;
    size_t len = n - hl - thl;
    if (flags & 0x02) {                              /* SYN: the stream starts after it */
        if (d->have_seq && d->next_seq != seq + 1) { /* a new connection, same addresses */
            restart(d);
            restart(d->peer);
        }
        d->have_seq = true;
        d->next_seq = seq + 1;
        return 0;
    }
    if (d->st == D_IGNORE || (len == 0 && !cut))
        return 0;
    if (!d->have_seq) {
        d->have_seq = true;
        d->next_seq = seq;
    }
    int32_t ahead = (int32_t)(seq - d->next_seq);
    if (ahead > 0) {
        dir_fail(c, d, "bytes missing (a gap in the TCP sequence)");
        return 0;
    }
    size_t old = (size_t) - (int64_t)ahead;
    if (old >= len)
        return 0; /* a retransmission of bytes already seen */
    if (cut) {
        dir_fail(c, d, "a packet cut by the snapshot length");
        return 0;
    }
    d->next_seq += (uint32_t)(len - old);
    return stream_bytes(c, d, data + old, len - old);
}

/* The IP packet in a record of link type lt, or NULL. */
static const uint8_t *link_payload(uint32_t lt, const uint8_t *p, size_t *n)
{
    size_t off;
    uint16_t proto;
    switch (lt) {
    case 1: /* Ethernet */
        if (*n < 14)
            return NULL;
        off = 14;
        proto = be16(p + 12);
        while ((proto == 0x8100 || proto == 0x88A8) && *n >= off + 4) {
            proto = be16(p + off + 2);
            off += 4;
        }
        break;
    case 113: /* Linux cooked (SLL) */
        if (*n < 16)
            return NULL;
        off = 16;
        proto = be16(p + 14);
        break;
    case 276: /* Linux cooked v2 (SLL2) */
        if (*n < 20)
            return NULL;
        off = 20;
        proto = be16(p);
        break;
    case 101: /* raw IP */
        off = 0;
        proto = 0x0800;
        break;
    default:
        return NULL;
    }
    if (proto != 0x0800 && proto != 0x86DD)
        return NULL;
    *n -= off;
    return p + off;
}

static uint32_t get32(const uint8_t *p, bool swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

int rd_decode_pcap(FILE *in, int opts, FILE *out, FILE *err)
{
    struct cap *c = calloc(1, sizeof(*c));
    struct rd_buf rec = {0}; /* the record being read, grown to the largest */
    if (!c)
        return -ENOMEM;
    c->opts = opts;
    c->out = out;
    c->err = err;
    uint8_t gh[24];
    int r = 0;
    bool swap = false;
    uint32_t lt = 0;
    if (fread(gh, 1, sizeof(gh), in) != sizeof(gh)) {
        fprintf(c->err, "rpcrdma-decode: not a pcap file (too short)\n");
        c->status = 1;
        goto out;
    }
    uint32_t magic = get32(gh, false);
    if (magic == 0xD4C3B2A1u || magic == 0x4D3CB2A1u)
        swap = true;
    else if (magic != 0xA1B2C3D4u && magic != 0xA1B23C4Du) {
        fprintf(c->err, "rpcrdma-decode: not a pcap file (pcapng? convert it with "
                        "editcap -F pcap)\n");
        c->status = 1;
        goto out;
    }
    lt = get32(gh + 20, swap) & 0x0FFFFFFF;
    if (lt != 1 && lt != 113 && lt != 276 && lt != 101) {
        fprintf(c->err, "rpcrdma-decode: link type %u not supported\n", lt);
        c->status = 1;
        goto out;
    }
    uint8_t rh[16];
    size_t got;
    while ((got = fread(rh, 1, sizeof(rh), in)) == sizeof(rh)) {
        c->frame++;
        uint32_t incl = get32(rh + 8, swap), orig = get32(rh + 12, swap);
        if (incl > MAX_RECORD) {
            fprintf(c->err, "rpcrdma-decode: frame %lu: a record of %u bytes\n", c->frame, incl);
            c->status = 1;
            goto out;
        }
        rec.len = 0;
        uint8_t *p = rd_buf_reserve(&rec, incl ? incl : 1);
        if (!p) {
            r = -ENOMEM;
            goto out;
        }
        if (fread(p, 1, incl, in) != incl) {
            got = 1;
            break;
        }
        size_t n = incl;
        const uint8_t *ip = link_payload(lt, p, &n);
        if (ip && (r = ip_packet(c, ip, n, orig > incl)) < 0)
            goto out;
    }
    if (got != 0 || ferror(in)) {
        fprintf(c->err, "rpcrdma-decode: frame %lu: the capture ends inside a record\n",
                c->frame + 1);
        c->status = 1;
    }
out:
    for (size_t i = 0; i < c->ndirs; i++) {
        rd_buf_free(&c->dirs[i]->stage);
        rd_buf_free(&c->dirs[i]->msg);
        free(c->dirs[i]->ulpdu);
        free(c->dirs[i]);
    }
    rd_buf_free(&c->line);
    int st = r < 0 ? r : c->status;
    free(c);
    rd_buf_free(&rec);
    return st;
}
