/* Test-only pcap/pcapng reader with TCP reassembly (see pcap_reader.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_reader.h"

static uint16_t rd16(const uint8_t *p, bool swap)
{
    return swap ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t rd32(const uint8_t *p, bool swap)
{
    return swap ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static struct uiw_test_tcp_stream *find_stream(struct uiw_test_pcap *p, bool v6, const uint8_t *src,
                                               const uint8_t *dst, uint16_t sport, uint16_t dport,
                                               bool create)
{
    size_t alen = v6 ? 16 : 4;
    for (int i = 0; i < p->nstreams; i++) {
        struct uiw_test_tcp_stream *s = &p->s[i];
        if (s->v6 == v6 && s->sport == sport && s->dport == dport && !memcmp(s->src, src, alen) &&
            !memcmp(s->dst, dst, alen))
            return s;
    }
    if (!create || p->nstreams == UIW_TEST_PCAP_MAX_STREAMS)
        return NULL;
    struct uiw_test_tcp_stream *s = &p->s[p->nstreams++];
    memset(s, 0, sizeof(*s));
    s->v6 = v6;
    memcpy(s->src, src, alen);
    memcpy(s->dst, dst, alen);
    s->sport = sport;
    s->dport = dport;
    struct uiw_test_tcp_stream *peer = uiw_test_pcap_peer(p, s);
    s->conn = peer ? peer->conn : p->nconns++;
    return s;
}

struct uiw_test_tcp_stream *uiw_test_pcap_peer(struct uiw_test_pcap *p,
                                               const struct uiw_test_tcp_stream *s)
{
    size_t alen = s->v6 ? 16 : 4;
    for (int i = 0; i < p->nstreams; i++) {
        struct uiw_test_tcp_stream *o = &p->s[i];
        if (o != s && o->v6 == s->v6 && o->sport == s->dport && o->dport == s->sport &&
            !memcmp(o->src, s->dst, alen) && !memcmp(o->dst, s->src, alen))
            return o;
    }
    return NULL;
}

static int place(struct uiw_test_tcp_stream *s, uint32_t seq, const uint8_t *d, size_t n)
{
    uint32_t rel = seq - s->base;
    if (rel > (1u << 30)) /* before the base (old retransmission) or absurdly far */
        return 0;
    size_t end = (size_t)rel + n;
    if (end > s->len) {
        uint8_t *nd = realloc(s->data, end);
        if (!nd)
            return -ENOMEM;
        s->data = nd;
        uint8_t *nh = realloc(s->have, end);
        if (!nh)
            return -ENOMEM;
        s->have = nh;
        memset(s->have + s->len, 0, end - s->len);
        s->len = end;
    }
    bool overlap = false;
    for (size_t i = 0; i < n; i++) {
        overlap |= s->have[rel + i] != 0;
        s->data[rel + i] = d[i];
        s->have[rel + i] = 1;
    }
    s->segments++;
    s->retrans += overlap;
    while (s->contig < s->len && s->have[s->contig])
        s->contig++;
    return 0;
}

static int tcp_segment(struct uiw_test_pcap *p, bool v6, const uint8_t *src, const uint8_t *dst,
                       const uint8_t *t, size_t len)
{
    if (len < 20)
        return -EPROTO;
    size_t doff = (size_t)(t[12] >> 4) * 4;
    if (doff < 20 || doff > len)
        return -EPROTO;
    uint16_t sport = be16(t), dport = be16(t + 2);
    uint32_t seq = be32(t + 4);
    bool syn = t[13] & 0x02;
    size_t n = len - doff;
    p->tcp_packets++;
    struct uiw_test_tcp_stream *s = find_stream(p, v6, src, dst, sport, dport, syn || n > 0);
    if (!s)
        return p->nstreams == UIW_TEST_PCAP_MAX_STREAMS ? -ENOSPC : 0;
    if (syn) {
        if (!s->syn_seen && s->len == 0) {
            s->syn_seen = true;
            s->base = seq + 1;
        }
        return 0;
    }
    if (n == 0)
        return 0;
    if (!s->syn_seen && s->segments == 0 && s->len == 0)
        s->base = seq;
    return place(s, seq, t + doff, n);
}

static int ip_packet(struct uiw_test_pcap *p, const uint8_t *d, size_t len)
{
    if (len < 1)
        return -EPROTO;
    unsigned ver = d[0] >> 4;
    if (ver == 4) {
        if (len < 20)
            return -EPROTO;
        size_t ihl = (size_t)(d[0] & 0xF) * 4, tot = be16(d + 2);
        if (ihl < 20 || tot < ihl || tot > len)
            return -EPROTO;
        if (d[9] != 6 || (be16(d + 6) & 0x3FFF)) /* not TCP, or a fragment */
            return 0;
        return tcp_segment(p, false, d + 12, d + 16, d + ihl, tot - ihl);
    }
    if (ver == 6) {
        if (len < 40)
            return -EPROTO;
        size_t pl = be16(d + 4);
        if (40 + pl > len)
            return -EPROTO;
        if (d[6] != 6) /* extension headers are not followed */
            return 0;
        return tcp_segment(p, true, d + 8, d + 24, d + 40, pl);
    }
    return 0;
}

static int link_packet(struct uiw_test_pcap *p, const uint8_t *d, size_t len)
{
    p->packets++;
    uint16_t et;
    switch (p->linktype) {
    case 1: /* Ethernet */
        if (len < 14)
            return -EPROTO;
        et = be16(d + 12);
        d += 14;
        len -= 14;
        while (et == 0x8100 && len >= 4) {
            et = be16(d + 2);
            d += 4;
            len -= 4;
        }
        return et == 0x0800 || et == 0x86DD ? ip_packet(p, d, len) : 0;
    case 113: /* Linux cooked */
        if (len < 16)
            return -EPROTO;
        et = be16(d + 14);
        return et == 0x0800 || et == 0x86DD ? ip_packet(p, d + 16, len - 16) : 0;
    case 0: /* BSD loopback */
        if (len < 4)
            return -EPROTO;
        return ip_packet(p, d + 4, len - 4);
    case 101: /* raw IP */
        return ip_packet(p, d, len);
    default:
        return -ENOTSUP;
    }
}

static int read_pcap(struct uiw_test_pcap *p, const uint8_t *f, size_t n)
{
    uint32_t magic = rd32(f, false);
    bool swap;
    if (magic == 0xA1B2C3D4 || magic == 0xA1B23C4D)
        swap = false;
    else if (magic == 0xD4C3B2A1 || magic == 0x4D3CB2A1)
        swap = true;
    else
        return -EPROTO;
    if (n < 24)
        return -EPROTO;
    p->linktype = rd32(f + 20, swap) & 0xFFFF;
    size_t off = 24;
    while (off < n) {
        if (n - off < 16)
            return -EPROTO;
        uint32_t incl = rd32(f + off + 8, swap);
        off += 16;
        if (incl > n - off)
            return -EPROTO;
        int r = link_packet(p, f + off, incl);
        if (r < 0)
            return r;
        off += incl;
    }
    return 0;
}

static int read_pcapng(struct uiw_test_pcap *p, const uint8_t *f, size_t n)
{
    bool swap = false;
    size_t off = 0;
    p->pcapng = true;
    bool have_if = false;
    while (off < n) {
        if (n - off < 12)
            return -EPROTO;
        uint32_t type = rd32(f + off, swap);
        if (type == 0x0A0D0D0A) { /* section header: fixes the byte order */
            uint32_t bom = rd32(f + off + 8, false);
            if (bom == 0x1A2B3C4D)
                swap = false;
            else if (bom == 0x4D3C2B1A)
                swap = true;
            else
                return -EPROTO;
        }
        uint32_t blen = rd32(f + off + 4, swap);
        if (blen < 12 || blen % 4 || blen > n - off)
            return -EPROTO;
        const uint8_t *b = f + off + 8;
        size_t bl = blen - 12;
        if (type == 1) { /* interface description */
            if (bl < 8)
                return -EPROTO;
            unsigned lt = rd16(b, swap);
            if (have_if && lt != p->linktype)
                return -ENOTSUP;
            p->linktype = lt;
            have_if = true;
        } else if (type == 6) { /* enhanced packet */
            if (bl < 20 || !have_if)
                return -EPROTO;
            uint32_t cap = rd32(b + 12, swap);
            if (cap > bl - 20)
                return -EPROTO;
            int r = link_packet(p, b + 20, cap);
            if (r < 0)
                return r;
        } else if (type == 3) { /* simple packet */
            if (bl < 4 || !have_if)
                return -EPROTO;
            uint32_t orig = rd32(b, swap);
            size_t cap = orig < bl - 4 ? orig : bl - 4;
            int r = link_packet(p, b + 4, cap);
            if (r < 0)
                return r;
        }
        off += blen;
    }
    return 0;
}

int uiw_test_pcap_load(const char *path, struct uiw_test_pcap *p)
{
    memset(p, 0, sizeof(*p));
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -errno;
    uint8_t *f = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *nf = realloc(f, cap);
            if (!nf) {
                free(f);
                fclose(fp);
                return -ENOMEM;
            }
            f = nf;
        }
        size_t k = fread(f + n, 1, cap - n, fp);
        n += k;
        if (k == 0)
            break;
    }
    fclose(fp);
    int r = -EPROTO;
    if (n >= 4)
        r = rd32(f, false) == 0x0A0D0D0A ? read_pcapng(p, f, n) : read_pcap(p, f, n);
    free(f);
    if (r < 0)
        uiw_test_pcap_free(p);
    return r;
}

void uiw_test_pcap_free(struct uiw_test_pcap *p)
{
    for (int i = 0; i < p->nstreams; i++) {
        free(p->s[i].data);
        free(p->s[i].have);
        p->s[i].data = NULL;
        p->s[i].have = NULL;
    }
    p->nstreams = 0;
}
