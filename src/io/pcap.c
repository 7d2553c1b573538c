/*
 * pcap writer for a connection's byte stream (see pcap.h): synthetic Ethernet, IPv4/IPv6
 * and TCP headers around the real stream bytes.
 */
#include "io/pcap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uiw/wire.h>

#define ETH_LEN  14
#define IP4_LEN  20
#define IP6_LEN  40
#define TCP_LEN  20
#define HDR_MAX  (ETH_LEN + IP6_LEN + TCP_LEN)
#define SNAPLEN  262144u
#define TCP_FIN  0x01
#define TCP_SYN  0x02
#define TCP_PSH  0x08
#define TCP_ACK  0x10
#define IO_BUFSZ (256u * 1024u)
#define MPA_HDR  20
#define HS_MAX   (MPA_HDR + 512) /* MPA frame header + the largest PD_Length (RFC 5044) */
#define PART_MAX (70u * 1024u)   /* largest FPDU (65542) with its markers */
#define MAX_SEG  UIW__PCAP_MAX_SEG

/* Direction index: 0 = local -> remote, 1 = remote -> local. */
struct endpoint {
    uint8_t addr[16]; /* IPv4 in the first 4 bytes */
    uint16_t port;    /* host order */
    uint8_t mac[6];
};

/*
 * Packets follow the stream's framing, not the socket calls, because Wireshark's MPA
 * dissector only finds a frame that starts a TCP segment: the first frame of each
 * direction (the MPA Request / Reply) becomes one packet, and afterwards each packet
 * starts at an FPDU boundary and carries whole FPDUs (one FPDU larger than MAX_SEG
 * spans several packets; with markers, one FPDU per packet, as Wireshark needs).
 * Bytes of an FPDU not yet complete wait in `part`. A direction whose first bytes are not
 * an MPA frame is written as it comes.
 */
enum { DIR_FIRST = 0, DIR_FPDU = 1, DIR_RAW = 2 };

struct dir {
    int mode;
    uint8_t *part; /* PART_MAX bytes */
    size_t part_len;
    /* FPDU walker */
    int markers;
    uint64_t spos;     /* stream position since the first FPDU (marker placement) */
    unsigned mk_left;  /* marker bytes still to skip */
    unsigned hdr_have; /* length-field bytes seen */
    unsigned len;      /* ULPDU length */
    size_t body_left;  /* bytes of the FPDU after the length field still to come */
};

struct uiw__pcap {
    pthread_mutex_t lock;
    FILE *f;
    int v6;
    int failed;
    int started; /* handshake written */
    struct endpoint ep[2];
    uint32_t seq[2]; /* next sequence number sent by ep[d] */
    uint16_t ip_id;
    uint8_t *mem; /* stdio buffer, then the two part buffers */
    struct dir dir[2];
};

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* One's-complement sum helper that accepts byte runs of any length and alignment. */
struct csum {
    uint64_t sum;
    int odd; /* a byte is pending in the high half of a 16-bit word */
};

static void csum_add(struct csum *c, const uint8_t *p, size_t n)
{
    if (n && c->odd) {
        c->sum += *p++;
        n--;
        c->odd = 0;
    }
    for (; n >= 2; n -= 2, p += 2)
        c->sum += (uint32_t)((p[0] << 8) | p[1]);
    if (n) {
        c->sum += (uint32_t)p[0] << 8;
        c->odd = 1;
    }
}

static uint16_t csum_fold(const struct csum *c)
{
    uint64_t s = c->sum;
    while (s >> 16)
        s = (s & 0xFFFF) + (s >> 16);
    return (uint16_t)~s;
}

static int ep_from_sockaddr(struct endpoint *e, const struct sockaddr *sa, int *is_v6)
{
    memset(e, 0, sizeof(*e));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        memcpy(e->addr, &s4->sin_addr, 4);
        e->port = ntohs(s4->sin_port);
        *is_v6 = 0;
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        memcpy(e->addr, &s6->sin6_addr, 16);
        e->port = ntohs(s6->sin6_port);
        *is_v6 = 1;
        return 0;
    }
    return -EAFNOSUPPORT;
}

/* An IPv4 endpoint as the IPv4-mapped IPv6 address. */
static void ep_map6(struct endpoint *e)
{
    uint8_t a4[4];
    memcpy(a4, e->addr, 4);
    memset(e->addr, 0, 16);
    e->addr[10] = 0xFF;
    e->addr[11] = 0xFF;
    memcpy(e->addr + 12, a4, 4);
}

static void wr(struct uiw__pcap *p, const void *b, size_t n)
{
    if (!p->failed && n && fwrite(b, 1, n, p->f) != n)
        p->failed = 1;
}

/* A cursor over the first nbytes of an iovec array. */
struct cursor {
    const struct iovec *iov;
    int n;
    int i;
    size_t off;
};

/* Visit `len` bytes from a copy of the cursor, feeding the checksum. */
static void cursor_csum(struct cursor c, size_t len, struct csum *cs)
{
    while (len && c.i < c.n) {
        size_t avail = c.iov[c.i].iov_len - c.off;
        size_t k = avail < len ? avail : len;
        csum_add(cs, (const uint8_t *)c.iov[c.i].iov_base + c.off, k);
        len -= k;
        c.off += k;
        if (c.off == c.iov[c.i].iov_len) {
            c.i++;
            c.off = 0;
        }
    }
}

static void cursor_write(struct uiw__pcap *p, struct cursor *c, size_t len)
{
    while (len && c->i < c->n) {
        size_t avail = c->iov[c->i].iov_len - c->off;
        size_t k = avail < len ? avail : len;
        wr(p, (const uint8_t *)c->iov[c->i].iov_base + c->off, k);
        len -= k;
        c->off += k;
        if (c->off == c->iov[c->i].iov_len) {
            c->i++;
            c->off = 0;
        }
    }
}

/* Write one packet from ep[d] with the given flags and `len` payload bytes at *c. */
static void packet(struct uiw__pcap *p, int d, uint8_t flags, struct cursor *c, size_t len)
{
    uint8_t h[HDR_MAX];
    const struct endpoint *src = &p->ep[d], *dst = &p->ep[1 - d];
    size_t ip_len = p->v6 ? IP6_LEN : IP4_LEN;
    size_t hl = ETH_LEN + ip_len + TCP_LEN;
    uint8_t *ip = h + ETH_LEN, *tcp = ip + ip_len;
    struct csum cs = {0, 0};
    struct timespec ts;
    uint32_t rec[4];

    memcpy(h, dst->mac, 6);
    memcpy(h + 6, src->mac, 6);
    put16(h + 12, p->v6 ? 0x86DD : 0x0800);

    if (p->v6) {
        put32(ip, 0x60000000u);
        put16(ip + 4, (uint16_t)(TCP_LEN + len));
        ip[6] = 6;  /* TCP */
        ip[7] = 64; /* hop limit */
        memcpy(ip + 8, src->addr, 16);
        memcpy(ip + 24, dst->addr, 16);
        csum_add(&cs, ip + 8, 32);
        uint8_t ph[8] = {0};
        put32(ph, (uint32_t)(TCP_LEN + len));
        ph[7] = 6;
        csum_add(&cs, ph, 8);
    } else {
        struct csum ic = {0, 0};
        ip[0] = 0x45;
        ip[1] = 0;
        put16(ip + 2, (uint16_t)(IP4_LEN + TCP_LEN + len));
        put16(ip + 4, p->ip_id++);
        put16(ip + 6, 0x4000); /* DF */
        ip[8] = 64;
        ip[9] = 6;
        put16(ip + 10, 0);
        memcpy(ip + 12, src->addr, 4);
        memcpy(ip + 16, dst->addr, 4);
        csum_add(&ic, ip, IP4_LEN);
        put16(ip + 10, csum_fold(&ic));
        csum_add(&cs, ip + 12, 8);
        uint8_t ph[4] = {0, 6, 0, 0};
        put16(ph + 2, (uint16_t)(TCP_LEN + len));
        csum_add(&cs, ph, 4);
    }

    put16(tcp, src->port);
    put16(tcp + 2, dst->port);
    put32(tcp + 4, p->seq[d]);
    put32(tcp + 8, (flags & TCP_ACK) ? p->seq[1 - d] : 0);
    tcp[12] = (TCP_LEN / 4) << 4;
    tcp[13] = flags;
    put16(tcp + 14, 0xFFFF); /* window */
    put16(tcp + 16, 0);
    put16(tcp + 18, 0);
    csum_add(&cs, tcp, TCP_LEN);
    if (len)
        cursor_csum(*c, len, &cs);
    put16(tcp + 16, csum_fold(&cs));

    clock_gettime(CLOCK_REALTIME, &ts);
    rec[0] = (uint32_t)ts.tv_sec;
    rec[1] = (uint32_t)(ts.tv_nsec / 1000);
    rec[2] = rec[3] = (uint32_t)(hl + len);
    wr(p, rec, sizeof(rec));
    wr(p, h, hl);
    if (len)
        cursor_write(p, c, len);

    p->seq[d] += (uint32_t)len + ((flags & (TCP_SYN | TCP_FIN)) ? 1u : 0u);
}

static void handshake(struct uiw__pcap *p, int client)
{
    packet(p, client, TCP_SYN, NULL, 0);
    packet(p, 1 - client, TCP_SYN | TCP_ACK, NULL, 0);
    packet(p, client, TCP_ACK, NULL, 0);
    p->started = 1;
}

/* Packets of at most MAX_SEG bytes from the cursor. */
static void emit(struct uiw__pcap *p, int d, struct cursor *c, size_t len)
{
    while (len && !p->failed) {
        size_t k = len < MAX_SEG ? len : MAX_SEG;
        packet(p, d, TCP_ACK | TCP_PSH, c, k);
        len -= k;
    }
}

static void emit_part(struct uiw__pcap *p, int d)
{
    struct dir *dr = &p->dir[d];
    struct iovec v = {dr->part, dr->part_len};
    struct cursor c = {&v, 1, 0, 0};
    emit(p, d, &c, dr->part_len);
    dr->part_len = 0;
}

static void cursor_skip(struct cursor *c, size_t len)
{
    while (len && c->i < c->n) {
        size_t avail = c->iov[c->i].iov_len - c->off;
        size_t k = avail < len ? avail : len;
        len -= k;
        c->off += k;
        if (c->off == c->iov[c->i].iov_len) {
            c->i++;
            c->off = 0;
        }
    }
}

static void cursor_copy(struct cursor *c, uint8_t *dst, size_t len)
{
    while (len && c->i < c->n) {
        size_t avail = c->iov[c->i].iov_len - c->off;
        size_t k = avail < len ? avail : len;
        memcpy(dst, (const uint8_t *)c->iov[c->i].iov_base + c->off, k);
        dst += k;
        len -= k;
        c->off += k;
        if (c->off == c->iov[c->i].iov_len) {
            c->i++;
            c->off = 0;
        }
    }
}

static uint8_t cursor_byte(const struct cursor *c)
{
    return ((const uint8_t *)c->iov[c->i].iov_base)[c->off];
}

/* Walk the current FPDU over at most `avail` bytes at *sc (advanced). Returns the bytes
 * walked; *complete is set when they end the FPDU. */
static size_t walk(struct dir *w, struct cursor *sc, size_t avail, int *complete)
{
    size_t used = 0;
    *complete = 0;
    while (used < avail && sc->i < sc->n) {
        size_t k, limit = SIZE_MAX;
        if (w->markers) {
            if (w->mk_left == 0 && w->spos % 512 == 0)
                w->mk_left = 4;
            if (w->mk_left) {
                k = avail - used < w->mk_left ? avail - used : w->mk_left;
                cursor_skip(sc, k);
                w->mk_left -= (unsigned)k;
                w->spos += k;
                used += k;
                continue;
            }
            limit = 512 - (size_t)(w->spos % 512);
        }
        if (w->hdr_have < 2) {
            w->len = (w->len << 8) | cursor_byte(sc);
            cursor_skip(sc, 1);
            w->spos++;
            used++;
            if (++w->hdr_have == 2)
                w->body_left = uiw_fpdu_len(w->len) - 2;
            continue;
        }
        k = avail - used;
        if (k > w->body_left)
            k = w->body_left;
        if (k > limit)
            k = limit;
        cursor_skip(sc, k);
        w->body_left -= k;
        w->spos += k;
        used += k;
        if (w->body_left == 0) {
            w->hdr_have = 0;
            w->len = 0;
            *complete = 1;
            break;
        }
    }
    return used;
}

/* Bytes the first frame of direction d still needs (0: it is complete or not MPA). */
static size_t first_need(const struct dir *dr)
{
    const uint8_t *b = dr->part;
    if (dr->part_len < MPA_HDR)
        return MPA_HDR - dr->part_len;
    if (memcmp(b, "MPA ID Req Frame", 16) != 0 && memcmp(b, "MPA ID Rep Frame", 16) != 0)
        return 0;
    size_t want = MPA_HDR + (size_t)((b[18] << 8) | b[19]);
    if (want > HS_MAX)
        want = HS_MAX;
    return want > dr->part_len ? want - dr->part_len : 0;
}

static void dir_data(struct uiw__pcap *p, int d, struct cursor *c, size_t nbytes)
{
    struct dir *dr = &p->dir[d];
    int complete;

    while (nbytes && c->i < c->n && !p->failed) {
        if (dr->mode == DIR_RAW) {
            emit(p, d, c, nbytes);
            return;
        }
        if (dr->mode == DIR_FIRST) {
            size_t need = first_need(dr);
            if (need) {
                size_t k = need < nbytes ? need : nbytes;
                cursor_copy(c, dr->part + dr->part_len, k);
                dr->part_len += k;
                nbytes -= k;
                need = first_need(dr);
            }
            if (need == 0) {
                if (memcmp(dr->part, "MPA ID Re", 9) == 0) {
                    dr->mode = DIR_FPDU;
                    /* M in a frame asks the peer to send markers to its sender */
                    p->dir[1 - d].markers = (dr->part[16] & 0x80) != 0;
                } else {
                    dr->mode = DIR_RAW;
                }
                emit_part(p, d);
            }
            continue;
        }
        /* DIR_FPDU */
        if (dr->part_len) {
            struct cursor sc = *c;
            size_t k = walk(dr, &sc, nbytes, &complete);
            if (dr->part_len + k > PART_MAX) { /* cannot happen with a valid walker */
                emit_part(p, d);
                dr->mode = DIR_RAW;
                continue;
            }
            cursor_copy(c, dr->part + dr->part_len, k);
            dr->part_len += k;
            nbytes -= k;
            if (complete)
                emit_part(p, d);
            continue;
        }
        /* at an FPDU boundary: runs of whole FPDUs go straight from the caller's iovecs */
        struct cursor sc = *c;
        size_t run = 0;
        for (;;) {
            size_t k = walk(dr, &sc, nbytes - run, &complete);
            if (!complete) {
                emit(p, d, c, run);
                nbytes -= run;
                cursor_copy(c, dr->part, k);
                dr->part_len = k;
                nbytes -= k;
                break;
            }
            /* Wireshark decodes one FPDU per segment only when markers are on */
            if (run && (run + k > MAX_SEG || dr->markers)) {
                emit(p, d, c, run);
                nbytes -= run;
                run = 0;
            }
            run += k;
            if (run >= MAX_SEG || run == nbytes) {
                emit(p, d, c, run);
                nbytes -= run;
                break;
            }
        }
    }
}

struct uiw__pcap *uiw__pcap_open(const char *path, const struct sockaddr *local,
                                 const struct sockaddr *remote)
{
    struct uiw__pcap *p;
    int v6l, v6r, e;
    struct {
        uint32_t magic;
        uint16_t major, minor;
        int32_t zone;
        uint32_t sigfigs, snaplen, linktype;
    } gh = {0xA1B2C3D4u, 2, 4, 0, 0, SNAPLEN, 1 /* Ethernet */};

    if (!path || !local || !remote) {
        errno = EINVAL;
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    if (ep_from_sockaddr(&p->ep[0], local, &v6l) < 0 ||
        ep_from_sockaddr(&p->ep[1], remote, &v6r) < 0) {
        free(p);
        errno = EAFNOSUPPORT;
        return NULL;
    }
    p->v6 = v6l || v6r;
    if (p->v6 && !v6l)
        ep_map6(&p->ep[0]);
    if (p->v6 && !v6r)
        ep_map6(&p->ep[1]);
    /* Locally administered MACs, one per side. */
    static const uint8_t mac0[6] = {0x02, 0x75, 0x69, 0x77, 0x00, 0x01};
    static const uint8_t mac1[6] = {0x02, 0x75, 0x69, 0x77, 0x00, 0x02};
    memcpy(p->ep[0].mac, mac0, 6);
    memcpy(p->ep[1].mac, mac1, 6);
    /* Deterministic but distinct initial sequence numbers. */
    p->seq[0] = 0x10000000u ^ ((uint32_t)p->ep[0].port << 8);
    p->seq[1] = 0x20000000u ^ ((uint32_t)p->ep[1].port << 8);

    p->mem = malloc(IO_BUFSZ + 2 * (size_t)PART_MAX);
    if (!p->mem || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->mem);
        free(p);
        errno = ENOMEM;
        return NULL;
    }
    p->dir[0].part = p->mem + IO_BUFSZ;
    p->dir[1].part = p->mem + IO_BUFSZ + PART_MAX;
    p->f = fopen(path, "wbe");
    if (p->f) {
        setvbuf(p->f, (char *)p->mem, _IOFBF, IO_BUFSZ);
        if (fwrite(&gh, sizeof(gh), 1, p->f) == 1 && fflush(p->f) == 0)
            return p;
        e = errno ? errno : EIO;
        fclose(p->f);
    } else {
        e = errno;
    }
    pthread_mutex_destroy(&p->lock);
    free(p->mem);
    free(p);
    errno = e;
    return NULL;
}

void uiw__pcap_data(struct uiw__pcap *p, int outbound, const struct iovec *iov, int n,
                    size_t nbytes)
{
    int d = outbound ? 0 : 1;
    struct cursor c = {iov, n, 0, 0};
    size_t have = 0;

    if (!p || !iov || n <= 0 || nbytes == 0)
        return;
    for (int i = 0; i < n && have < nbytes; i++)
        have += iov[i].iov_len;
    if (have < nbytes)
        nbytes = have; /* never claim more bytes than the iovecs hold */
    pthread_mutex_lock(&p->lock);
    if (!p->started)
        handshake(p, d); /* the first speaker is the initiator */
    dir_data(p, d, &c, nbytes);
    pthread_mutex_unlock(&p->lock);
}

int uiw__pcap_failed(const struct uiw__pcap *p)
{
    return p ? p->failed : 0;
}

void uiw__pcap_close(struct uiw__pcap *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    for (int d = 0; d < 2; d++)
        if (p->dir[d].part_len)
            emit_part(p, d);
    if (p->started) {
        packet(p, 0, TCP_FIN | TCP_ACK, NULL, 0);
        packet(p, 1, TCP_FIN | TCP_ACK, NULL, 0);
        packet(p, 0, TCP_ACK, NULL, 0);
    }
    pthread_mutex_unlock(&p->lock);
    fclose(p->f);
    pthread_mutex_destroy(&p->lock);
    free(p->mem);
    free(p);
}

static int addr_text(const struct sockaddr *sa, char *buf, size_t cap, unsigned *port)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        *port = ntohs(s4->sin_port);
        return inet_ntop(AF_INET, &s4->sin_addr, buf, (socklen_t)cap) ? 0 : -EAFNOSUPPORT;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        *port = ntohs(s6->sin6_port);
        return inet_ntop(AF_INET6, &s6->sin6_addr, buf, (socklen_t)cap) ? 0 : -EAFNOSUPPORT;
    }
    return -EAFNOSUPPORT;
}

int uiw__pcap_name(char *buf, size_t cap, const char *dir, const struct sockaddr *local,
                   const struct sockaddr *remote)
{
    static atomic_uint counter;
    char la[INET6_ADDRSTRLEN], ra[INET6_ADDRSTRLEN];
    unsigned lp, rp;
    int n;

    if (addr_text(local, la, sizeof(la), &lp) < 0 || addr_text(remote, ra, sizeof(ra), &rp) < 0)
        return -EAFNOSUPPORT;
    n = snprintf(buf, cap, "%s/uiw-%ld-%u-%s_%u-%s_%u.pcap", dir, (long)getpid(),
                 atomic_fetch_add(&counter, 1), la, lp, ra, rp);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    return n;
}

struct uiw__pcap *uiw__pcap_open_env(const struct sockaddr *local, const struct sockaddr *remote)
{
    static atomic_int warned;
    const char *dir = getenv("UIW_PCAP_DIR");
    char path[4096];
    struct uiw__pcap *p;
    int r;

    if (!dir || !*dir)
        return NULL;
    r = uiw__pcap_name(path, sizeof(path), dir, local, remote);
    if (r < 0) {
        errno = -r;
        p = NULL;
    } else {
        p = uiw__pcap_open(path, local, remote);
    }
    if (!p && !atomic_exchange(&warned, 1))
        fprintf(stderr, "uiw: UIW_PCAP_DIR=%s: cannot write capture: %s\n", dir, strerror(errno));
    return p;
}
