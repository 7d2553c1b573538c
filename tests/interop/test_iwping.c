/*
 * iwping against iwping on loopback: rping's protocol end to end through the whole stack
 * (CM handshake, Sends, RDMA Read, RDMA Write), each side checking the data (-V), over
 * IPv4 and IPv6, MPA Rev 2 and Rev 1, CRC on and off, rping's sizes from its minimum to
 * its maximum; and the pcap of such a run decoded by tshark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop.h"
#include "test.h"

struct pair {
    char dir[512];
    char srv_out[600], cli_out[600];
    int port;
    int srv_pid;
};

static void start_server_env(struct pair *p, const char *env, const char *extra);

static void start_server(struct pair *p, const char *extra)
{
    start_server_env(p, "", extra);
}

static void start_server_env(struct pair *p, const char *env, const char *extra)
{
    char cmd[2048];
    it_tmpdir(p->dir, sizeof(p->dir), "iwping");
    snprintf(p->srv_out, sizeof(p->srv_out), "%s/server.txt", p->dir);
    snprintf(p->cli_out, sizeof(p->cli_out), "%s/client.txt", p->dir);
    snprintf(cmd, sizeof(cmd), "%s exec '%s' -s -p 0 -V -v --timeout 20 %s", env, it_iwping(),
             extra);
    p->srv_pid = it_spawn(cmd, p->srv_out);
    p->port = it_server_port(p->srv_out, p->srv_pid, 20);
}

/* Run one client; returns its exit status and leaves its output in cli_out. */
static int run_client(struct pair *p, const char *addr, int size, int count, const char *extra)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "exec '%s' -c -a %s -p %d -S %d -C %d -V -v --timeout 20 %s >>'%s' 2>&1", it_iwping(),
             addr, p->port, size, count, extra, p->cli_out);
    char *out = NULL;
    int rc = it_run(cmd, 1, 60, &out);
    free(out);
    return rc;
}

static void dump(const char *what, const char *path)
{
    char *s = it_slurp(path);
    fprintf(stderr, "---- %s:\n%s\n", what, s);
    free(s);
}

static void check_pair(struct pair *p, int client_rc, int pings_last)
{
    char want[64];
    int src = it_wait(p->srv_pid, 30);
    if (client_rc != 0 || src != 0) {
        dump("client", p->cli_out);
        dump("server", p->srv_out);
    }
    CHECK_EQ(client_rc, 0);
    CHECK_EQ(src, 0);
    char *c = it_slurp(p->cli_out), *s = it_slurp(p->srv_out);
    snprintf(want, sizeof(want), "ping data: rdma-ping-%d: ", pings_last);
    CHECK(strstr(c, want) != NULL);
    CHECK(strstr(s, "server ping data: rdma-ping-0: ") != NULL);
    CHECK(strstr(c, "mismatch") == NULL);
    free(c);
    free(s);
}

static void one(const char *addr, int size, int count, const char *sx, const char *cx)
{
    struct pair p;
    start_server(&p, sx);
    int rc = run_client(&p, addr, size, count, cx);
    check_pair(&p, rc, count - 1);
    it_rmtree(p.dir);
}

TEST(iwping_loopback_ipv4)
{
    one("127.0.0.1", 64, 10, "-S 64", "");
}

TEST(iwping_loopback_ipv6)
{
    one("::1", 1000, 5, "-a ::1 -S 1000", "");
}

TEST(iwping_loopback_crc)
{
    one("127.0.0.1", 4096, 5, "-S 4096", "--crc");
}

TEST(iwping_loopback_server_asks_crc)
{
    one("127.0.0.1", 4096, 5, "-S 4096 --crc", "");
}

TEST(iwping_loopback_mpa_rev1)
{
    one("127.0.0.1", 300, 5, "-S 300 --mpa-rev 1", "--mpa-rev 1");
}

TEST(iwping_loopback_rev1_client_rev2_server)
{
    one("127.0.0.1", 300, 5, "-S 300", "--mpa-rev 1 --crc");
}

/* rping's sizes from its minimum to its maximum against one persistent server */
TEST(iwping_loopback_sizes)
{
    static const int sizes[] = {26, 27, 64, 1000, 1455, 4096, 9000, 32768, 65535};
    const int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
    struct pair p;
    char extra[64];
    snprintf(extra, sizeof(extra), "-P --conns %d -S 65535", n);
    start_server(&p, extra);
    for (int i = 0; i < n; i++) {
        int rc = run_client(&p, "127.0.0.1", sizes[i], 3, "");
        if (rc != 0) {
            fprintf(stderr, "size %d failed\n", sizes[i]);
            dump("client", p.cli_out);
            dump("server", p.srv_out);
        }
        CHECK_EQ(rc, 0);
    }
    check_pair(&p, 0, 2);
    char *c = it_slurp(p.cli_out);
    CHECK_EQ(it_count(c, "ping data: rdma-ping-2: "), n);
    free(c);
    it_rmtree(p.dir);
}

/* Sizes out of rping's range are refused as rping does. */
TEST(iwping_rejects_bad_sizes)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' -c -a 127.0.0.1 -S 25", it_iwping());
    CHECK(it_run(cmd, 1, 10, &out) != 0);
    CHECK(strstr(out, "Invalid size 25") != NULL);
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s' -c -a 127.0.0.1 -S 65536", it_iwping());
    CHECK(it_run(cmd, 1, 10, &out) != 0);
    CHECK(strstr(out, "Invalid size 65536") != NULL);
    free(out);
}

/* A capture of a CRC run decodes in tshark: Request and Reply, every FPDU Good CRC32, and
 * per ping four Sends, one Read Request, one Read Response and one Write. */
TEST(iwping_pcap_tshark)
{
    struct pair p;
    char pcapdir[600], extra[700], cmd[1400], *out = NULL;
    const int pings = 4;
    if (!it_tshark())
        SKIP("tshark not installed");
    start_server(&p, "-S 2000");
    snprintf(pcapdir, sizeof(pcapdir), "%s/pcap", p.dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", pcapdir);
    CHECK_EQ(it_run(cmd, 1, 10, &out), 0);
    free(out);
    snprintf(extra, sizeof(extra), "--crc --pcap '%s'", pcapdir);
    int rc = run_client(&p, "127.0.0.1", 2000, pings, extra);
    check_pair(&p, rc, pings - 1);
    snprintf(cmd, sizeof(cmd), "ls '%s'/*.pcap", pcapdir);
    CHECK_EQ(it_run(cmd, 0, 10, &out), 0);
    CHECK_EQ(it_nlines(out), 1);
    char path[700];
    snprintf(path, sizeof(path), "%.*s", (int)strcspn(out, "\n"), out);
    free(out);

    out = it_tshark_fields(path, "iwarp_mpa.req", "iwarp_mpa.crc_flag");
    CHECK_STR(out, "1\n");
    free(out);
    out = it_tshark_fields(path, "iwarp_mpa.rep", "iwarp_mpa.crc_flag");
    CHECK_STR(out, "1\n");
    free(out);
    out = it_tshark_fields(path,
                           "tcp.checksum.status!=1 || ip.checksum.status!=1 || "
                           "tcp.analysis.flags || _ws.malformed",
                           "frame.number");
    CHECK_EQ(it_nlines(out), 0);
    free(out);
    out = it_tshark_fields(path, "iwarp_rdma", "iwarp_rdma.opcode");
    int cnt[16] = {0};
    for (char *s = out; *s;) {
        char *end;
        long v = strtol(s, &end, 0);
        if (end != s && v >= 0 && v < 16)
            cnt[v]++;
        s = (end != s) ? end : s + 1;
    }
    free(out);
    CHECK_EQ(cnt[3], 4 * pings);
    CHECK_EQ(cnt[1], pings);
    CHECK(cnt[2] >= pings);
    CHECK(cnt[0] >= pings);
    snprintf(cmd, sizeof(cmd), "'%s' -n -r '%s' -V 2>/dev/null", it_tshark(), path);
    CHECK_EQ(it_run(cmd, 0, 60, &out), 0);
    int fpdus = it_count(out, "Good CRC32");
    CHECK(fpdus >= 4 * pings + pings + pings + pings);
    CHECK_EQ(it_count(out, "Bad CRC32"), 0);
    free(out);
    it_rmtree(p.dir);
}

/* The first capture file in dir (path into out); fails if there is not exactly one. */
static void one_pcap(const char *dir, char *out, size_t cap)
{
    char cmd[1024], *ls = NULL;
    snprintf(cmd, sizeof(cmd), "ls '%s'/*.pcap", dir);
    CHECK_EQ(it_run(cmd, 0, 10, &ls), 0);
    CHECK_EQ(it_nlines(ls), 1);
    snprintf(out, cap, "%.*s", (int)strcspn(ls, "\n"), ls);
    free(ls);
}

/* The environment variable alone turns capturing on (server side here), and our own
 * Terminate shows in the capture as the RFC orders it: the client advertises an STag that
 * names no region, the server's RDMA Read makes the client's stack answer RDMAP / Remote
 * Protection / Invalid STag (Layer 0 in the high nibble), and the server's Read fails. */
TEST(iwping_pcap_env_terminate)
{
    struct pair p;
    char env[700], path[800], *out = NULL;
    if (!it_tshark())
        SKIP("tshark not installed");
    char tmp[512];
    it_tmpdir(tmp, sizeof(tmp), "pcapenv");
    snprintf(env, sizeof(env), "UIW_PCAP_DIR='%s'", tmp);
    start_server_env(&p, env, "-S 100");
    int rc = run_client(&p, "127.0.0.1", 100, 1, "--bad-rkey");
    int src = it_wait(p.srv_pid, 30);
    char *s = it_slurp(p.srv_out);
    if (rc == 0 || src == 0)
        fprintf(stderr, "server:\n%s\n", s);
    CHECK(rc != 0);
    CHECK(src != 0);
    /* the Read's status as libibverbs numbers it (rping prints the same line) */
    CHECK(strstr(s, "cq completion failed status 10 (remote access error)") != NULL);
    CHECK(strstr(s, "peer Terminate: layer 0 etype 1 code 0") != NULL);
    free(s);
    one_pcap(tmp, path, sizeof(path));
    out = it_tshark_fields(path, "iwarp_rdma.terminate",
                           "ip.src iwarp_rdma.term_layer iwarp_rdma.term_etype_rdma "
                           "iwarp_rdma.term_errcode_rdma");
    CHECK_STR(out, "127.0.0.1|0x00|0x01|0x00\n");
    free(out);
    out = it_tshark_fields(path, "iwarp_rdma.rr", "iwarp_rdma.srcstag");
    CHECK(strncmp(out, "0x00fffe", 8) == 0);
    free(out);
    it_rmtree(tmp);
    it_rmtree(p.dir);
}

/* Markers both ways (each side asks) with CRC: the stream still decodes in tshark, every
 * FPDU with a good CRC, though markers sit inside FPDUs and the pcap writer must find the
 * FPDU boundaries around them. Sizes span several 512-byte marker intervals. */
TEST(iwping_pcap_markers)
{
    struct pair p;
    char pcapdir[600], extra[700], cmd[1400], path[800], *out = NULL;
    const int pings = 3;
    if (!it_tshark())
        SKIP("tshark not installed");
    start_server(&p, "-S 3000 --markers");
    snprintf(pcapdir, sizeof(pcapdir), "%s/pcap", p.dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", pcapdir);
    CHECK_EQ(it_run(cmd, 1, 10, &out), 0);
    free(out);
    snprintf(extra, sizeof(extra), "--crc --markers --pcap '%s'", pcapdir);
    int rc = run_client(&p, "127.0.0.1", 3000, pings, extra);
    check_pair(&p, rc, pings - 1);
    one_pcap(pcapdir, path, sizeof(path));
    out = it_tshark_fields(path, "iwarp_mpa.req || iwarp_mpa.rep", "iwarp_mpa.marker_flag");
    CHECK_STR(out, "1\n1\n");
    free(out);
    out = it_tshark_fields(path, "_ws.malformed || tcp.analysis.flags", "frame.number");
    CHECK_STR(out, "");
    free(out);
    snprintf(cmd, sizeof(cmd), "'%s' -n -r '%s' -V 2>/dev/null", it_tshark(), path);
    CHECK_EQ(it_run(cmd, 0, 60, &out), 0);
    CHECK(it_count(out, "Good CRC32") >= 7 * pings);
    CHECK_EQ(it_count(out, "Bad CRC32"), 0);
    CHECK(it_count(out, "Read Request") >= pings);
    free(out);
    it_rmtree(p.dir);
}
