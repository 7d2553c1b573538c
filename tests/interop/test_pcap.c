/*
 * The pcap writer (src/io/pcap.c) checked with tshark: a synthetic iWARP conversation
 * (built here by hand, independently of the stack's codecs) is recorded through
 * uiw__pcap_data in awkward splits, then Wireshark must find the TCP handshake, the MPA
 * Request and Reply, every FPDU with a good CRC, the opcodes and the Terminate fields.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "interop.h"
#include "io/pcap.h"
#include "test.h"

enum { STREAM_CAP = 1 << 20 };

struct convo {
    uint8_t *c2s, *s2c; /* whole streams per direction */
    size_t c2s_len, s2c_len;
    /* boundaries: the order in which bursts alternate */
    size_t cut_c2s[8], cut_s2c[8];
    int ncut;
    int fpdus, sends, writes, rreq, rresp, terms;
};

/* Build: Req, Rep, Send(100), Read Request, Read Response (40000 in MULPDU segments),
 * Write (60000 in one FPDU... limited to 65535), Send with Invalidate, Send with SE,
 * Terminate (RDMAP / Remote Protection / Invalid STag with M and D). */
static void build(struct convo *cv, int crc)
{
    uint8_t h[64], pay[65536];
    size_t p;
    memset(cv, 0, sizeof(*cv));
    cv->c2s = calloc(1, STREAM_CAP);
    cv->s2c = calloc(1, STREAM_CAP);
    CHECK(cv->c2s && cv->s2c);
    for (size_t i = 0; i < sizeof(pay); i++)
        pay[i] = (uint8_t)(i * 7 + 3);

    uint8_t fl = (uint8_t)((crc ? 0x40 : 0) | 0x10);
    cv->c2s_len = it_mpa_frame(cv->c2s, 0, fl, 2, 1, 1, "hello", 5);
    cv->s2c_len = it_mpa_frame(cv->s2c, 1, fl, 2, 1, 1, NULL, 0);
    cv->cut_c2s[0] = cv->c2s_len;
    cv->cut_s2c[0] = cv->s2c_len;

    /* burst 1: client Send(100) */
    p = cv->c2s_len;
    it_fpdu(cv->c2s, STREAM_CAP, &p, h, it_untagged_hdr(h, 1, 3, 0, 0, 1, 0), pay, 100, crc);
    cv->c2s_len = p;
    cv->sends++;
    cv->fpdus++;
    /* server: Read Request */
    p = cv->s2c_len;
    size_t hl = it_untagged_hdr(h, 1, 1, 0, 1, 1, 0);
    it_put32(h + hl, 0x00123401);
    it_put64(h + hl + 4, 0x1000);
    it_put32(h + hl + 12, 40000);
    it_put32(h + hl + 16, 0x00567802);
    it_put64(h + hl + 20, 0x2000);
    it_fpdu(cv->s2c, STREAM_CAP, &p, h, hl + 28, NULL, 0, crc);
    cv->s2c_len = p;
    cv->rreq++;
    cv->fpdus++;
    cv->cut_c2s[1] = cv->c2s_len;
    cv->cut_s2c[1] = cv->s2c_len;

    /* client: Read Response in 1448-byte FPDUs, then a 60000-byte Write */
    p = cv->c2s_len;
    for (uint32_t off = 0; off < 40000;) {
        uint32_t k = 40000 - off < 1400 ? 40000 - off : 1400;
        it_fpdu(cv->c2s, STREAM_CAP, &p, h,
                it_tagged_hdr(h, off + k == 40000, 2, 0x00123401, 0x1000 + off), pay + off, k, crc);
        off += k;
        cv->rresp++;
        cv->fpdus++;
    }
    it_fpdu(cv->c2s, STREAM_CAP, &p, h, it_tagged_hdr(h, 1, 0, 0x00ABCD05, 0), pay, 60000, crc);
    cv->writes++;
    cv->fpdus++;
    cv->c2s_len = p;
    /* server: Send with Invalidate, Send with SE */
    p = cv->s2c_len;
    it_fpdu(cv->s2c, STREAM_CAP, &p, h, it_untagged_hdr(h, 1, 4, 0x00ABCD05, 0, 1, 0), pay, 33,
            crc);
    it_fpdu(cv->s2c, STREAM_CAP, &p, h, it_untagged_hdr(h, 1, 5, 0, 0, 2, 0), pay, 1, crc);
    cv->sends += 2;
    cv->fpdus += 2;
    cv->s2c_len = p;
    cv->cut_c2s[2] = cv->c2s_len;
    cv->cut_s2c[2] = cv->s2c_len;

    /* client: Terminate RDMAP(0)/Remote Protection(1)/Invalid STag(0), M and D set,
     * carrying the offending tagged DDP header. */
    p = cv->c2s_len;
    uint8_t t[64];
    size_t tl = it_untagged_hdr(t, 1, 7, 0, 2, 1, 0);
    it_put32(t + tl, (0u << 28) | (1u << 24) | (0u << 16) | (1u << 15) | (1u << 14));
    tl += 4;
    it_put16(t + tl, 14 + 64);
    tl += 2;
    tl += it_tagged_hdr(t + tl, 1, 0, 0x00DEAD07, 0x40);
    it_fpdu(cv->c2s, STREAM_CAP, &p, t, tl, NULL, 0, crc);
    cv->terms++;
    cv->fpdus++;
    cv->c2s_len = p;
    cv->cut_c2s[3] = cv->c2s_len;
    cv->cut_s2c[3] = cv->s2c_len;
    cv->ncut = 4;
}

/* Record a byte range as several uiw__pcap_data calls with odd splits and scattered
 * iovecs (3 iovecs per call, call sizes 1, 7, 1000, 3333, ...). */
static void record(struct uiw__pcap *pc, int outbound, const uint8_t *b, size_t len)
{
    static const size_t sizes[] = {1, 7, 1000, 3333, 17, 65536 + 5, 4, 20000};
    size_t o = 0;
    for (int i = 0; o < len; i++) {
        size_t k = sizes[i % 8];
        if (k > len - o)
            k = len - o;
        struct iovec iov[4];
        size_t a = k / 3, bb = a;
        iov[0] = (struct iovec){(void *)(b + o), a};
        iov[1] = (struct iovec){(void *)(b + o + a), bb};
        iov[2] = (struct iovec){(void *)(b + o + a + bb), k - a - bb};
        iov[3] = (struct iovec){(void *)b, 999}; /* beyond nbytes: must be ignored */
        uiw__pcap_data(pc, outbound, iov, 4, k);
        o += k;
    }
}

static void write_convo(const char *path, const struct convo *cv, const struct sockaddr *cl,
                        const struct sockaddr *sv, int local_is_client)
{
    const struct sockaddr *local = local_is_client ? cl : sv, *remote = local_is_client ? sv : cl;
    struct uiw__pcap *pc = uiw__pcap_open(path, local, remote);
    CHECK(pc != NULL);
    size_t pc2s = 0, ps2c = 0;
    for (int i = 0; i < cv->ncut; i++) {
        record(pc, local_is_client, cv->c2s + pc2s, cv->cut_c2s[i] - pc2s);
        record(pc, !local_is_client, cv->s2c + ps2c, cv->cut_s2c[i] - ps2c);
        pc2s = cv->cut_c2s[i];
        ps2c = cv->cut_s2c[i];
    }
    CHECK(!uiw__pcap_failed(pc));
    uiw__pcap_close(pc);
}

static void free_convo(struct convo *cv)
{
    free(cv->c2s);
    free(cv->s2c);
}

/* Field i (0-based, '|'-separated) of a line, copied into out. */
static const char *field(const char *line, int i, char *out, size_t cap)
{
    const char *p = line;
    for (int k = 0; k < i && p; k++) {
        p = strpbrk(p, "|\n");
        if (p && *p == '|')
            p++;
        else
            p = NULL;
    }
    size_t n = p ? strcspn(p, "|\n") : 0;
    if (n >= cap)
        n = cap - 1;
    if (p)
        memcpy(out, p, n);
    out[n] = 0;
    return out;
}

/* Count comma-separated values equal to want in a field ("a,b,c"). */
static int count_vals(const char *f, const char *want)
{
    int n = 0;
    size_t wl = strlen(want);
    while (*f) {
        size_t l = strcspn(f, ",");
        if (l == wl && strncmp(f, want, l) == 0)
            n++;
        f += l;
        if (*f == ',')
            f++;
    }
    return n;
}

enum {
    F_SYN,
    F_ACK,
    F_FIN,
    F_TCPCK,
    F_IPCK,
    F_ANALYSIS,
    F_MALFORMED,
    F_EXPERT,
    F_SRC,
    F_DST,
    F_REQ,
    F_REP,
    F_CRCFLAG,
    F_REV,
    F_ULPDULEN,
    F_OPCODE,
    F_SINK,
    F_RDSZ,
    F_SRCSTAG,
    F_TLAYER,
    F_TETYPE,
    F_TCODE,
    F_TM,
    F_TD,
    F_TR,
};

static void check_capture(const char *path, const struct convo *cv, int crc, int v6,
                          const char *client_ip, const char *server_ip)
{
    char fields[1024], f[512], g[512];
    snprintf(fields, sizeof(fields),
             "tcp.flags.syn tcp.flags.ack tcp.flags.fin tcp.checksum.status %s "
             "tcp.analysis.flags _ws.malformed _ws.expert.severity %s %s iwarp_mpa.key.req "
             "iwarp_mpa.key.rep iwarp_mpa.crc_flag iwarp_mpa.rev iwarp_mpa.ulpdulength "
             "iwarp_rdma.opcode iwarp_rdma.sinkstag iwarp_rdma.rdmardsz iwarp_rdma.srcstag "
             "iwarp_rdma.term_layer iwarp_rdma.term_etype_rdma iwarp_rdma.term_errcode_rdma "
             "iwarp_rdma.term_hdrct_m iwarp_rdma.hdrct_d iwarp_rdma.hdrct_r",
             v6 ? "ipv6.version" : "ip.checksum.status", v6 ? "ipv6.src" : "ip.src",
             v6 ? "ipv6.dst" : "ip.dst");
    char *out = it_tshark_fields(path, NULL, fields);
    int syn = 0, synack = 0, fin = 0, req = 0, rep = 0, fpdus = 0, rr = 0, term = 0;
    int cnt[16] = {0};
    for (const char *line = out; *line; line = strchr(line, '\n') + 1) {
        if (strcmp(field(line, F_SYN, f, sizeof(f)), "1") == 0) {
            if (strcmp(field(line, F_ACK, g, sizeof(g)), "1") == 0) {
                synack++;
            } else {
                char want[256], got[1040];
                syn++;
                snprintf(want, sizeof(want), "%s|%s", client_ip, server_ip);
                snprintf(got, sizeof(got), "%s|%s", field(line, F_SRC, f, sizeof(f)),
                         field(line, F_DST, g, sizeof(g)));
                CHECK_STR(got, want);
            }
        }
        if (strcmp(field(line, F_FIN, f, sizeof(f)), "1") == 0)
            fin++;
        CHECK_STR(field(line, F_TCPCK, f, sizeof(f)), "1"); /* Good */
        if (!v6)
            CHECK_STR(field(line, F_IPCK, f, sizeof(f)), "1");
        CHECK_STR(field(line, F_ANALYSIS, f, sizeof(f)), "");
        CHECK_STR(field(line, F_MALFORMED, f, sizeof(f)), "");
        field(line, F_EXPERT, f, sizeof(f));
        /* error-level expert info: 8388608 (PI_ERROR) */
        CHECK(strstr(f, "8388608") == NULL);
        if (*field(line, F_REQ, f, sizeof(f))) {
            req++;
            CHECK_STR(field(line, F_CRCFLAG, g, sizeof(g)), crc ? "1" : "0");
            CHECK_STR(field(line, F_REV, g, sizeof(g)), "2");
        }
        if (*field(line, F_REP, f, sizeof(f))) {
            rep++;
            CHECK_STR(field(line, F_CRCFLAG, g, sizeof(g)), crc ? "1" : "0");
        }
        field(line, F_ULPDULEN, f, sizeof(f));
        if (*f) {
            fpdus++;
            for (const char *c = f; *c; c++)
                fpdus += *c == ',';
        }
        field(line, F_OPCODE, f, sizeof(f));
        for (int op = 0; op < 16; op++) {
            char v[8];
            snprintf(v, sizeof(v), "0x%02x", op);
            cnt[op] += count_vals(f, v);
        }
        if (strcmp(field(line, F_SINK, f, sizeof(f)), "0x00123401") == 0) {
            CHECK_STR(field(line, F_RDSZ, g, sizeof(g)), "40000");
            CHECK_STR(field(line, F_SRCSTAG, g, sizeof(g)), "0x00567802");
            rr++;
        }
        if (*field(line, F_TLAYER, f, sizeof(f))) {
            /* RDMAP / Remote Protection / Invalid STag, M and D set, R clear */
            CHECK_STR(f, "0x00");
            CHECK_STR(field(line, F_TETYPE, g, sizeof(g)), "0x01");
            CHECK_STR(field(line, F_TCODE, g, sizeof(g)), "0x00");
            CHECK_STR(field(line, F_TM, g, sizeof(g)), "1");
            CHECK_STR(field(line, F_TD, g, sizeof(g)), "1");
            CHECK_STR(field(line, F_TR, g, sizeof(g)), "0");
            term++;
        }
    }
    free(out);
    CHECK_EQ(syn, 1);
    CHECK_EQ(synack, 1);
    CHECK_EQ(fin, 2);
    CHECK_EQ(req, 1);
    CHECK_EQ(rep, 1);
    CHECK_EQ(fpdus, cv->fpdus);
    CHECK_EQ(rr, 1);
    CHECK_EQ(term, 1);
    CHECK_EQ(cnt[0], cv->writes);
    CHECK_EQ(cnt[1], cv->rreq);
    CHECK_EQ(cnt[2], cv->rresp);
    CHECK_EQ(cnt[3] + cnt[4] + cnt[5], cv->sends);
    CHECK_EQ(cnt[4], 1);
    CHECK_EQ(cnt[5], 1);
    CHECK_EQ(cnt[7], cv->terms);

    if (crc) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "%s -n -r '%s' -V 2>/dev/null", it_tshark(), path);
        CHECK_EQ(it_run(cmd, 0, 120, &out), 0);
        CHECK_EQ(it_count(out, "Good CRC32"), cv->fpdus);
        CHECK_EQ(it_count(out, "Bad CRC32"), 0);
        free(out);
    }
}

static void sin4(struct sockaddr_in *s, const char *a, uint16_t port)
{
    memset(s, 0, sizeof(*s));
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    CHECK_EQ(inet_pton(AF_INET, a, &s->sin_addr), 1);
}

static void sin6(struct sockaddr_in6 *s, const char *a, uint16_t port)
{
    memset(s, 0, sizeof(*s));
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    CHECK_EQ(inet_pton(AF_INET6, a, &s->sin6_addr), 1);
}

static void run_case(int crc, int v6, int local_is_client)
{
    char dir[512], path[600];
    struct convo cv;
    struct sockaddr_in c4, s4;
    struct sockaddr_in6 c6, s6;
    if (!it_tshark())
        SKIP("tshark not installed");
    it_tmpdir(dir, sizeof(dir), "pcap");
    snprintf(path, sizeof(path), "%s/t.pcap", dir);
    build(&cv, crc);
    if (v6) {
        sin6(&c6, "fd00::1", 40001);
        sin6(&s6, "fd00::2", 5001);
        write_convo(path, &cv, (struct sockaddr *)&c6, (struct sockaddr *)&s6, local_is_client);
        check_capture(path, &cv, crc, 1, "fd00::1", "fd00::2");
    } else {
        sin4(&c4, "127.0.0.1", 40001);
        sin4(&s4, "127.0.0.2", 5001);
        write_convo(path, &cv, (struct sockaddr *)&c4, (struct sockaddr *)&s4, local_is_client);
        check_capture(path, &cv, crc, 0, "127.0.0.1", "127.0.0.2");
    }
    free_convo(&cv);
    it_rmtree(dir);
}

TEST(pcap_tshark_ipv4_crc)
{
    run_case(1, 0, 1);
}

TEST(pcap_tshark_ipv4_nocrc_server_side)
{
    run_case(0, 0, 0);
}

TEST(pcap_tshark_ipv6_crc)
{
    run_case(1, 1, 0);
}

TEST(pcap_open_errors_and_names)
{
    struct sockaddr_in a;
    struct sockaddr_in6 b;
    struct sockaddr un = {.sa_family = AF_UNIX};
    char dir[512], name[1024], path[600];
    sin4(&a, "10.1.2.3", 7174);
    sin6(&b, "::1", 9);
    errno = 0;
    CHECK(uiw__pcap_open("/nonexistent-dir/x.pcap", (struct sockaddr *)&a, (struct sockaddr *)&a) ==
          NULL);
    CHECK_EQ(errno, ENOENT);
    it_tmpdir(dir, sizeof(dir), "pcapn");
    snprintf(path, sizeof(path), "%s/x.pcap", dir);
    errno = 0;
    CHECK(uiw__pcap_open(path, &un, (struct sockaddr *)&a) == NULL);
    CHECK_EQ(errno, EAFNOSUPPORT);
    int n = uiw__pcap_name(name, sizeof(name), "/d", (struct sockaddr *)&a, (struct sockaddr *)&b);
    CHECK(n > 0);
    CHECK(strstr(name, "/d/uiw-") == name);
    CHECK(strstr(name, "-10.1.2.3_7174-::1_9.pcap") != NULL);
    CHECK_EQ(uiw__pcap_name(name, 10, "/d", (struct sockaddr *)&a, (struct sockaddr *)&b),
             -ENAMETOOLONG);

    /* no data: a valid empty capture (header only), no handshake invented */
    struct uiw__pcap *pc = uiw__pcap_open(path, (struct sockaddr *)&a, (struct sockaddr *)&b);
    CHECK(pc != NULL);
    uiw__pcap_data(pc, 1, NULL, 0, 10);
    uiw__pcap_close(pc);
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    CHECK_EQ(st.st_size, 24);
    uiw__pcap_close(NULL);

    /* environment: unset -> NULL; set -> a file appears in that directory */
    unsetenv("UIW_PCAP_DIR");
    CHECK(uiw__pcap_open_env((struct sockaddr *)&a, (struct sockaddr *)&a) == NULL);
    setenv("UIW_PCAP_DIR", dir, 1);
    pc = uiw__pcap_open_env((struct sockaddr *)&a, (struct sockaddr *)&a);
    CHECK(pc != NULL);
    uiw__pcap_close(pc);
    unsetenv("UIW_PCAP_DIR");
    char *out = NULL;
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^uiw-.*-10.1.2.3_7174-10.1.2.3_7174.pcap$'",
             dir);
    CHECK_EQ(it_run(cmd, 0, 10, &out), 0);
    CHECK_STR(out, "1\n");
    free(out);
    it_rmtree(dir);
}
