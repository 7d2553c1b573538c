/*
 * Interop with the Linux kernel's soft-iWARP (siw) in the VM rig (scripts/siwvm.sh):
 *  - the kernel's rping client drives an iwping server on this host (MPA Rev 2 default,
 *    siw asking for CRC, siw speaking MPA Rev 1), rping's sizes from 26 to 65535 bytes,
 *    rping -V checking the data and iwping -V checking it too;
 *  - iwping clients drive the kernel's rping server (Rev 2 default and CRC); in the same
 *    boot the stack, in this process, pings the rping server while it streams RDMA Writes
 *    into the server's buffer, so that siw's Read Requests arrive in the middle of them:
 *    our Read Responses must go out between our Writes, never inside one (siw drops the
 *    connection on a "packet intersection");
 *  - Terminates: a raw peer (the wire codecs on a plain socket) provokes siw into sending
 *    Terminates and checks how they decode (siw's bit order; its flagless RDMAP words as
 *    the engine reads them in the middle of a connection), and sends siw an RFC-order
 *    Terminate that siw must take as one (its "got TERMINATE" line in dmesg); then the
 *    stack itself (iwping --bad-rkey) sends siw its Terminate, seen the same way;
 *  - siw with peer_to_peer=1 against iwping --p2p, both roles;
 *  - every data test runs the production send path (no --pcap) and is judged by an
 *    independent capture: tcpdump on the loopback, decoded by tshark (MPA frames, CRC
 *    verdicts, one Reply per connection); retries only for connections refused or reset
 *    before the MPA Reply, counted and reported.
 * Each test boots one VM (20-35 s under TCG) and combines its scenarios in that run.
 * The tests exit 77 (skipped, see tests.cmake) when this machine cannot build or run the
 * VM; a rig that fails to build or boot fails them, and so does one that is not available
 * where it is required (UIW_SIWVM_REQUIRED=1, as CI sets).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/wire.h>

#include "interop.h"
#include "rnic/engine.h"
#include "test.h"

/* Bound on a boot (10-25 s under TCG on an idle host; far more on a loaded one). */
#define VM_BOOT_S 240

static const int rping_sizes[] = {26, 64, 1000, 4096, 16384, 65535};
#define NSIZES ((int)(sizeof(rping_sizes) / sizeof(rping_sizes[0])))

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct vm {
    char dir[512];
    char console[600], out[600], script[600];
    int pid;
};

/* Boot a VM running `script` (a sh script, written to a shared folder) with the given siw
 * options and host port forwards. */
static void vm_start(struct vm *v, const char *script, const char *siwopts, const char *hostfwd,
                     int timeout_s)
{
    char cmd[4096];
    it_siwvm_ensure();
    it_tmpdir(v->dir, sizeof(v->dir), "siwvm");
    snprintf(v->console, sizeof(v->console), "%s/console.log", v->dir);
    snprintf(v->out, sizeof(v->out), "%s/run.txt", v->dir);
    snprintf(v->script, sizeof(v->script), "%s/guest.sh", v->dir);
    FILE *f = fopen(v->script, "w");
    CHECK(f != NULL);
    fprintf(f, "%s\n", script);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "SIWVM_SHARE='%s' SIWVM_LOG='%s' SIWVM_TIMEOUT=%d SIWVM_SIWOPTS='%s' "
             "SIWVM_HOSTFWD='%s' exec '%s/scripts/siwvm.sh' run sh /mnt/host/guest.sh",
             v->dir, v->console, timeout_s, siwopts ? siwopts : "", hostfwd ? hostfwd : "",
             UIW_SOURCE_DIR);
    v->pid = it_spawn(cmd, v->out);
}

/* Wait for the VM; returns the guest command's status. Prints the console on failure. */
static int vm_wait(struct vm *v, int timeout_s)
{
    int rc = it_wait(v->pid, timeout_s);
    if (rc != 0) {
        char *s = it_slurp(v->out);
        fprintf(stderr, "---- VM run (status %d):\n%s\n", rc, s);
        free(s);
    }
    return rc;
}

static char *vm_output(const struct vm *v)
{
    return it_slurp(v->out);
}

/* An independent capture: tcpdump on the host's loopback, where slirp's side of each
 * connection to the guest runs; what it records is what siw sent and received, byte for
 * byte (only the TCP segmentation is slirp's). The stack under test writes none of it.
 * A verdict needs every packet: the kernel's buffer for tcpdump is 64 MiB (-B), so that a
 * descheduled tcpdump on a loaded machine does not drop any; a drop still fails the test. */
struct capture {
    char path[600], log[600];
    int pid;
};

static void capture_start(struct capture *c, const char *dir, const char *filter)
{
    char cmd[1500];
    snprintf(c->path, sizeof(c->path), "%s/lo.pcap", dir);
    snprintf(c->log, sizeof(c->log), "%s/tcpdump.txt", dir);
    CHECK(access("/usr/bin/tcpdump", X_OK) == 0 || access("/usr/sbin/tcpdump", X_OK) == 0);
    snprintf(cmd, sizeof(cmd), "exec tcpdump -i lo -n -U -s 0 -B 65536 -w '%s' '%s'", c->path,
             filter);
    c->pid = it_spawn(cmd, c->log);
    CHECK(it_wait_for(c->log, "listening on lo", c->pid, 30));
}

/* Let tcpdump write out what it has yet to read: until the file has not grown for three
 * looks 100 ms apart (at most 5 s). */
static void capture_settle(const struct capture *c)
{
    off_t last = -1;
    for (int i = 0, same = 0; i < 50 && same < 3; i++) {
        usleep(100000);
        struct stat st;
        off_t now = stat(c->path, &st) == 0 ? st.st_size : -1;
        same = now == last ? same + 1 : 0;
        last = now;
    }
}

static void capture_stop(struct capture *c)
{
    capture_settle(c); /* the last segments (FINs) reach the file */
    it_kill(c->pid);   /* SIGTERM: tcpdump closes the file */
    char *s = it_slurp(c->log);
    CHECK(strstr(s, "packets captured") != NULL);
    CHECK(strstr(s, "\n0 packets dropped by kernel") != NULL);
    free(s);
}

/* After a failure: let tcpdump write out what it has, stop it and say where the capture
 * is; the test's folder is kept (a failed test does not remove it), so the bytes can be
 * looked at. Without the wait, the exit's SIGTERM cut the capture short of the failing
 * connection. */
static void capture_keep(struct capture *c)
{
    capture_settle(c);
    it_kill(c->pid);
    fprintf(stderr, "capture kept: %s\n", c->path);
}

/* tshark -T fields over the capture (exit status checked). Not it_tshark_fields: that one
 * verifies TCP checksums, and on the loopback the kernel leaves them to an offload that
 * never happens, so Wireshark would refuse to reassemble the segments. */
static char *capture_fields(const char *pcap, const char *filter, const char *field)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd), "'%s' -n -r '%s' -Y '%s' -T fields -e %s", it_tshark(), pcap, filter,
             field);
    int rc = it_run(cmd, 0, 300, &out);
    if (rc != 0)
        uiw_test_fail(__FILE__, __LINE__, "tshark failed (%d): %s\n%s", rc, cmd, out);
    return out;
}

/* The FPDUs with a bad CRC32c in tshark's full decode `v` of a capture: those the kernel
 * sent (from a port other than ours, `port`; every one when port is 0) in *peer, ours in
 * *own, and in *answered our Terminates for an MPA CRC error (from port). */
static void bad_crcs(const char *v, int port, int *peer, int *own, int *answered)
{
    *peer = *own = *answered = 0;
    char ours[32];
    snprintf(ours, sizeof(ours), "Source Port: %d\n", port);
    for (const char *f = strstr(v, "Frame "); f;) {
        const char *next = strstr(f + 1, "\nFrame ");
        size_t n = next ? (size_t)(next - f) : strlen(f);
        char *frame = strndup(f, n);
        CHECK(frame != NULL);
        int from_us = port && strstr(frame, ours) != NULL;
        int bad = it_count(frame, "Bad CRC32");
        *(from_us ? own : peer) += bad;
        if (from_us && strstr(frame, "MPA CRC Error"))
            (*answered)++;
        free(frame);
        f = next ? next + 1 : NULL;
    }
}

/* tshark over the capture, its exit status checked: exactly want_replies MPA Replies
 * (a connection reset before the Reply has none), each with revision want_rev, and one
 * more for each FPDU the kernel sent with a bad CRC (below); with want_crc the side that
 * asks (`asker`: "req" or "rep") sets C in every frame and Wireshark finds FPDUs with a
 * good CRC32c; with p2p every Request and Reply has the peer-to-peer bit of its IRD word
 * (RFC 6581). Never a malformed frame, never a bad CRC from us (port: our side's; 0 when
 * there is none to tell apart). A bad CRC from the kernel's siw (see SIW_CRC_OPTS) is
 * allowed only when port is given, and each must be answered with our Terminate for an MPA
 * CRC error, which ends that connection (its size is tried again): their number. */
static int check_capture(const char *pcap, int want_replies, int want_rev, int want_crc,
                         const char *asker, int p2p, int port)
{
    char filter[64], want[64], *out;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' -n -r '%s' -V", it_tshark(), pcap);
    CHECK_EQ(it_run(cmd, 0, 300, &out), 0);
    int good = it_count(out, "Good CRC32"), peer_bad, own_bad, answered;
    bad_crcs(out, port, &peer_bad, &own_bad, &answered);
    fprintf(stderr, "%s: %d MPA Replies, %d FPDUs with a good CRC32c, %d bad (%d of ours)\n", pcap,
            want_replies + peer_bad, good, peer_bad + own_bad, own_bad);
    if (want_crc)
        CHECK(good > 0);
    CHECK_EQ(own_bad, 0);
    if (!port)
        CHECK_EQ(peer_bad, 0);
    CHECK_EQ(answered, peer_bad);
    CHECK_EQ(it_count(out, "Malformed"), 0);
    free(out);
    want_replies += peer_bad;
    out = capture_fields(pcap, "iwarp_mpa.rep", "iwarp_mpa.rev");
    snprintf(want, sizeof(want), "%d", want_rev);
    if (it_count_lines(out, want) != want_replies || it_nlines(out) != want_replies)
        fprintf(stderr, "MPA Replies in %s:\n%s\n", pcap, out);
    CHECK_EQ(it_nlines(out), want_replies);
    CHECK_EQ(it_count_lines(out, want), want_replies);
    free(out);
    snprintf(filter, sizeof(filter), "iwarp_mpa.%s", asker);
    out = capture_fields(pcap, filter, "iwarp_mpa.crc_flag");
    CHECK(it_nlines(out) >= want_replies);
    CHECK_EQ(it_count_lines(out, "1"), want_crc ? it_nlines(out) : 0);
    free(out);
    if (p2p) {
        out = capture_fields(pcap, "iwarp_mpa.req || iwarp_mpa.rep", "iwarp_mpa.privatedata");
        int frames = 0;
        for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
            unsigned ird = 0;
            CHECK(sscanf(l, "%4x", &ird) == 1);
            CHECK(ird & UIW_MPA_V2_PEER2PEER);
            frames++;
        }
        CHECK(frames >= 2 * want_replies);
        free(out);
    }
    return peer_bad;
}

/* siw with CRC: its zero-copy transmit (zcopy_tx, on by default) sends an unsignalled
 * message's pages by reference after computing their CRC, and rping rewrites its buffers
 * while they may still be queued in TCP, so siw's FPDUs then carry a CRC that does not
 * match the bytes (siw_qp_tx.c says as much). The CRC runs turn it off: every FPDU must
 * then have a good CRC, and a bad one, in either direction, fails the test. */
#define SIW_CRC_OPTS "mpa_crc_required=1,zcopy_tx=0"

/* The kernel's rping client against an iwping server on this host, every size, on the
 * production send path (no --pcap); the capture is tcpdump's. rping -V compares the data
 * of every ping and exits non-zero on a mismatch; it also exits 0 when the connection
 * went down early, so the guest wants its last ping printed in rping's own output too
 * (-v), and the guest's exit status is the verdict (the console may lose or garble a
 * line among the kernel's). The guest tries a size again only after a failure, at most
 * twice; each retry is reported, and the capture proves it was a connection reset before
 * the MPA Reply (exactly one Reply per size: a failure after the Reply is never retried
 * away). */
static void rping_client_to_iwping(const char *siwopts, int rev, int crc, int p2p, const int *sizes,
                                   int nsizes)
{
    char dir[512], srv_out[600], cmd[2048], script[2048], filter[64];
    it_tmpdir(dir, sizeof(dir), "siwsrv");
    snprintf(srv_out, sizeof(srv_out), "%s/server.txt", dir);
    snprintf(cmd, sizeof(cmd), "exec '%s' -s -a 127.0.0.1 -p 0 -P -S 65535 -V -v --timeout 400 %s",
             it_iwping(), p2p ? "--p2p" : "");
    int spid = it_spawn(cmd, srv_out);
    int port = it_server_port(srv_out, spid, 20);
    struct capture cap;
    snprintf(filter, sizeof(filter), "tcp port %d", port);
    capture_start(&cap, dir, filter);

    size_t o = 0;
    for (int i = 0; i < nsizes; i++)
        o += (size_t)snprintf(
            script + o, sizeof(script) - o,
            "ok=0; for t in 1 2 3; do "
            "if rping -c -a 10.0.2.2 -p %d -S %d -C 3 -V -v >/tmp/rp 2>&1 && "
            "grep -q 'ping data: rdma-ping-2: ' /tmp/rp; then ok=1; fi; "
            "cat /tmp/rp; [ $ok = 1 ] && break; echo RPING-RETRY-%d; sleep 1; done\n"
            "[ $ok = 1 ] || { echo RPING-FAILED-%d; exit 1; }\n",
            port, sizes[i], sizes[i], sizes[i]);
    CHECK(o < sizeof(script));
    struct vm v;
    vm_start(&v, script, siwopts, NULL, 420);
    int rc = vm_wait(&v, 450);
    it_kill(spid); /* a persistent server: it serves until stopped */
    capture_stop(&cap);
    char *s = it_slurp(srv_out);
    char *out = vm_output(&v);
    int retries = it_count(out, "RPING-RETRY-");
    fprintf(stderr, "retries: %d (each must be a connection reset before the MPA Reply)\n",
            retries);
    if (rc != 0 || retries)
        fprintf(stderr, "---- iwping server:\n%s\n", s);
    CHECK_EQ(rc, 0); /* every size: rping -V content, its last ping done */
    CHECK(it_count(s, "server ping data: rdma-ping-") >= 3 * nsizes);
    CHECK(strstr(s, "mismatch") == NULL);
    CHECK(it_tshark() != NULL);
    /* our server failed no connection but for an FPDU of the kernel's with a bad CRC,
     * which it answered with the Terminate for that (a Read Response's: its Read fails) */
    int peer_bad = check_capture(cap.path, nsizes, rev, crc, "req", p2p, crc ? port : 0);
    CHECK_EQ(it_count(s, "failed"), 2 * peer_bad);
    CHECK_EQ(it_count(s, "connection "), peer_bad);
    CHECK(retries >= peer_bad);
    free(out);
    free(s);
    it_rmtree(v.dir);
    it_rmtree(dir);
}

TEST(siwvm_rping_client_to_iwping_server)
{
    rping_client_to_iwping("", 2, 0, 0, rping_sizes, NSIZES);
}

TEST(siwvm_rping_client_to_iwping_server_crc)
{
    rping_client_to_iwping(SIW_CRC_OPTS, 2, 1, 0, rping_sizes, NSIZES);
}

TEST(siwvm_rping_client_to_iwping_server_mpa_rev1)
{
    rping_client_to_iwping("mpa_version=1", 1, 0, 0, rping_sizes, NSIZES);
}

/* ------------------------------------------------------------------------------------ */
/* The stack as the kernel rping server's client, in this process, writing into the
 * server's buffer while the server reads from ours: Linux siw ends the stream when a
 * tagged message it is in the middle of is continued by another one ("packet
 * intersection" in siw_get_hdr), so our Read Response must never go out inside one of
 * our multi-segment RDMA Writes, nor the reverse (one message at a time on the wire). */

enum { IL_SIZE = 65535, IL_DEPTH = 16, IL_WAIT_S = 60 };

struct il {
    struct uiw_context *ctx;
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *id;
    struct uiw_pd *pd;
    struct uiw_cq *cq;
    uint8_t *src, *sink; /* rping's start_buf (read by the server) and rdma_buf */
    uint8_t ctl[2][16];  /* our Sends, the server's */
    struct uiw_mr *src_mr, *sink_mr, *ctl_mr;
    int retries;
};

static void il_post(struct il *c, uint64_t id, enum uiw_wr_opcode op, void *addr, uint32_t len,
                    uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
    struct uiw_sge sge = {(uintptr_t)addr, len, lkey};
    struct uiw_send_wr wr = {.wr_id = id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = UIW_SEND_SIGNALED},
                       *bad = NULL;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    CHECK_EQ(uiw_post_send(c->id->qp, &wr, &bad), 0);
}

static void il_post_recv(struct il *c)
{
    struct uiw_sge sge = {(uintptr_t)c->ctl[1], 16, c->ctl_mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
    CHECK_EQ(uiw_post_recv(c->id->qp, &wr, &bad), 0);
}

/* rping's advertisement of buf: address, STag and length, big-endian, in a Send (wr 2) */
static void il_advertise(struct il *c, const uint8_t *buf, const struct uiw_mr *mr)
{
    it_put64(c->ctl[0], (uint64_t)(uintptr_t)buf);
    it_put32(c->ctl[0] + 8, mr->rkey);
    it_put32(c->ctl[0] + 12, IL_SIZE);
    il_post(c, 2, UIW_WR_SEND, c->ctl[0], 16, c->ctl_mr->lkey, 0, 0);
}

/* The next completion (bounded); every one must succeed. */
static struct uiw_wc il_wc(struct il *c)
{
    double deadline = now_s() + IL_WAIT_S;
    struct uiw_wc wc;
    for (;;) {
        int n = uiw_poll_cq(c->cq, 1, &wc);
        CHECK(n >= 0);
        if (n == 1)
            break;
        if (now_s() > deadline)
            uiw_test_fail(__FILE__, __LINE__, "no completion within %d s", IL_WAIT_S);
        usleep(200);
    }
    if (wc.status != UIW_WC_SUCCESS) {
        struct uiw_qp_attr a;
        CHECK_EQ(uiw_query_qp(c->id->qp, &a), 0);
        uiw_test_fail(__FILE__, __LINE__,
                      "wr %llu: %s (%s); Terminate received %d: layer %u etype %u code %u",
                      (unsigned long long)wc.wr_id, uiw_wc_status_str(wc.status),
                      uiw_strerror(wc.vendor_err), a.term_received, a.term_layer, a.term_etype,
                      a.term_code);
    }
    return wc;
}

/* One completion counted: a Write or Send of ours done, or the server's go-ahead (it read
 * our source) received. */
static void il_take(struct il *c, int *writes_out, int *sends_out, bool *go)
{
    struct uiw_wc wc = il_wc(c);
    if (wc.opcode == UIW_WC_RDMA_WRITE)
        --*writes_out;
    else if (wc.opcode == UIW_WC_SEND)
        --*sends_out;
    else if (wc.opcode == UIW_WC_RECV)
        *go = true;
}

/* Connect to the guest's rping server through QEMU's forward on port; only a connection
 * refused or reset before the MPA Reply is tried again (the server is not listening yet),
 * counted in c->retries. */
static void il_connect(struct il *c, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    double deadline = now_s() + 90;
    for (;;) {
        c->id = uiw_cm_create_id(c->ch, c->ctx, NULL);
        CHECK(c->id != NULL);
        struct uiw_qp_init_attr qa = {.send_cq = c->cq,
                                      .recv_cq = c->cq,
                                      .cap = {.max_send_wr = IL_DEPTH + 4,
                                              .max_recv_wr = 2,
                                              .max_send_sge = 1,
                                              .max_recv_sge = 1},
                                      .max_ird = 1,
                                      .max_ord = 1};
        CHECK_EQ(uiw_cm_create_qp(c->id, c->pd, &qa), 0);
        il_post_recv(c);
        CHECK_EQ(uiw_cm_connect(c->id, (struct sockaddr *)&a, NULL), 0);
        struct uiw_cm_event *ev = NULL;
        CHECK_EQ(uiw_cm_get_event(c->ch, &ev, 30000), 0);
        enum uiw_cm_event_type t = ev->event;
        int st = ev->status;
        CHECK_EQ(uiw_cm_ack_event(ev), 0);
        if (t == UIW_CM_EVENT_ESTABLISHED)
            return;
        CHECK((t == UIW_CM_EVENT_UNREACHABLE && st == -ECONNREFUSED) ||
              (t == UIW_CM_EVENT_CONNECT_ERROR && st == -ECONNRESET));
        CHECK(now_s() < deadline);
        c->retries++;
        uiw_cm_destroy_qp(c->id);
        CHECK_EQ(uiw_cm_destroy_id(c->id), 0);
        c->id = NULL;
        /* the flush of the posted receive */
        struct uiw_wc wc;
        while (uiw_poll_cq(c->cq, 1, &wc) == 1)
            ;
        usleep(300000);
    }
}

/* rounds pings of rping's protocol with IL_SIZE bytes: the server reads our source, tells
 * us to go on, reads our sink's advertisement and writes the data back. From the second
 * round on, our Send that advertises the source is followed by a stream of RDMA Writes of
 * the same bytes into the server's buffer (its STag and TO as the first round's Read
 * Request named them), IL_DEPTH of them outstanding, until the server's go-ahead shows its
 * Read completed: its Read Request arrives while our Writes are under way, and our Read
 * Response has to find its place between them. Every completion must succeed, the data
 * come back whole. Returns the Writes sent. */
static int il_rping(int port, int rounds)
{
    struct il c;
    memset(&c, 0, sizeof(c));
    c.ctx = uiw_open_context(NULL);
    c.ch = uiw_cm_create_channel();
    CHECK(c.ctx && c.ch);
    c.pd = uiw_alloc_pd(c.ctx);
    c.cq = uiw_create_cq(c.ctx, 4 * IL_DEPTH, NULL, NULL, 0);
    c.src = malloc(IL_SIZE);
    c.sink = calloc(1, IL_SIZE);
    CHECK(c.pd && c.cq && c.src && c.sink);
    unsigned rw = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ | UIW_ACCESS_REMOTE_WRITE;
    c.src_mr = uiw_reg_mr(c.pd, c.src, IL_SIZE, rw);
    c.sink_mr = uiw_reg_mr(c.pd, c.sink, IL_SIZE, rw);
    c.ctl_mr = uiw_reg_mr(c.pd, c.ctl, sizeof(c.ctl), UIW_ACCESS_LOCAL_WRITE);
    CHECK(c.src_mr && c.sink_mr && c.ctl_mr);
    il_connect(&c, port);
    struct uiw_qp *qp = c.id->qp;
    uint32_t stag = 0;
    uint64_t to = 0;
    int writes = 0;
    for (int r = 0; r < rounds; r++) {
        /* rping's data: its message, then letters, a NUL at the end */
        int n = snprintf((char *)c.src, IL_SIZE, "rdma-ping-%d: ", r);
        for (int i = n; i < IL_SIZE - 1; i++)
            c.src[i] = (uint8_t)('A' + (r + i) % 58);
        c.src[IL_SIZE - 1] = 0;
        il_advertise(&c, c.src, c.src_mr);
        int out = 0, sends = 1;
        bool go = false;
        double until = now_s() + IL_WAIT_S;
        while (r > 0 && !go) {
            CHECK(now_s() < until); /* the server's Read never completed */
            while (out < IL_DEPTH) {
                il_post(&c, 3, UIW_WR_RDMA_WRITE, c.src, IL_SIZE, c.src_mr->lkey, to, stag);
                out++;
                writes++;
            }
            il_take(&c, &out, &sends, &go);
        }
        /* the Writes still out, and the go-ahead if it has not come */
        while (out > 0 || sends > 0 || !go)
            il_take(&c, &out, &sends, &go);
        if (r == 0) {
            /* the Read Request we served last names the server's buffer (rping registers
             * it for remote writes): its entry stays as it is until the next Request,
             * which comes only after our next Send */
            const struct uiw__ird *e = &qp->irq[(qp->irq_head + qp->irq_size - 1) % qp->irq_size];
            stag = e->sink_stag;
            to = e->sink_to;
            CHECK_EQ(e->size, IL_SIZE);
        }
        il_post_recv(&c);
        memset(c.sink, 0, IL_SIZE);
        il_advertise(&c, c.sink, c.sink_mr);
        CHECK_EQ(il_wc(&c).opcode, UIW_WC_SEND);
        CHECK_EQ(il_wc(&c).opcode, UIW_WC_RECV); /* the server wrote our data back */
        il_post_recv(&c);
        CHECK_MEM(c.sink, c.src, IL_SIZE);
    }
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_RTS);
    CHECK(!a.term_sent && !a.term_received);
    CHECK_EQ(uiw_cm_disconnect(c.id), 0);
    struct uiw_cm_event *ev = NULL;
    CHECK_EQ(uiw_cm_get_event(c.ch, &ev, 30000), 0);
    CHECK_EQ(ev->event, UIW_CM_EVENT_DISCONNECTED);
    CHECK_EQ(uiw_cm_ack_event(ev), 0);
    uiw_cm_destroy_qp(c.id);
    CHECK_EQ(uiw_cm_destroy_id(c.id), 0);
    struct uiw_wc wc;
    while (uiw_poll_cq(c.cq, 1, &wc) == 1)
        ;
    CHECK_EQ(uiw_dereg_mr(c.src_mr), 0);
    CHECK_EQ(uiw_dereg_mr(c.sink_mr), 0);
    CHECK_EQ(uiw_dereg_mr(c.ctl_mr), 0);
    CHECK_EQ(uiw_destroy_cq(c.cq), 0);
    CHECK_EQ(uiw_dealloc_pd(c.pd), 0);
    CHECK_EQ(uiw_cm_destroy_channel(c.ch), 0);
    CHECK_EQ(uiw_close_context(c.ctx), 0);
    free(c.src);
    free(c.sink);
    fprintf(stderr, "writes beside the server's reads: %d RDMA Writes of %d bytes, %d retries\n",
            writes, IL_SIZE, c.retries);
    return writes;
}

/* iwping clients against the kernel's rping server (one server after another, until the
 * test creates the file "stop" in the shared folder). The guest looks for "stop" before it
 * prints a server's marker, and the test creates it only after it saw the marker of the
 * last round it needs: so one more server always listens, for the client that releases
 * it, and then the loop ends. With crc the client asks for CRC
 * (siw as the responder does not set C on its own even with mpa_crc_required=1; it turns
 * CRC on when the initiator asks) and siw's Reply must carry C. The clients run the
 * production send path (no --pcap); the capture is tcpdump's. A client connects again
 * only when its connection was refused or reset before the MPA Reply (slirp accepts and
 * drops until the guest's rping listens; iwping --retry): those retries are counted and
 * reported, and any other failure fails the test. */
static void iwping_to_rping_server(const char *siwopts, int crc, int p2p, const int *sizes,
                                   int nsizes, int il_rounds)
{
    char script[1024], fwd[128], dir[512], cmd[2048], marker[64], stop[700], filter[64];
    int hport = it_free_port(), conns = 0, retries = 0, pings2 = 0; /* QEMU's forward */
    snprintf(script, sizeof(script),
             "i=0\nwhile :; do rping -s -a 10.0.2.15 -p 7174 -S 65535 -v; s=0; "
             "[ -e /mnt/host/stop ] && s=1; echo SERVER-DONE-$i; i=$((i+1)); "
             "[ $s = 1 ] && break; done\n"
             "dmesg | grep 'siw' | grep -i 'intersection' | sed 's/^/DMESG: /'\n");
    snprintf(fwd, sizeof(fwd), "tcp:127.0.0.1:%d-:7174", hport);
    it_tmpdir(dir, sizeof(dir), "siwcli");
    struct capture cap;
    snprintf(filter, sizeof(filter), "tcp port %d", hport);
    capture_start(&cap, dir, filter);

    struct vm v;
    vm_start(&v, script, siwopts, fwd, 420);
    snprintf(stop, sizeof(stop), "%s/stop", v.dir);
    CHECK(it_wait_for(v.console, "siwvm: ready", v.pid, VM_BOOT_S));
    if (il_rounds > 0) {
        /* a server of its own for the stack in this process, writing while siw reads */
        CHECK(il_rping(hport, il_rounds) > 0);
        snprintf(marker, sizeof(marker), "SERVER-DONE-%d", conns++);
        CHECK(it_wait_for(v.console, marker, v.pid, 60));
    }
    for (int i = 0; i <= nsizes; i++) {
        /* the last round (i == nsizes) only releases the last server after "stop" */
        int size = i < nsizes ? sizes[i] : 64, count = i < nsizes ? 3 : 1;
        if (i == nsizes) {
            FILE *f = fopen(stop, "w");
            CHECK(f != NULL);
            fclose(f);
        }
        char *out = NULL;
        snprintf(cmd, sizeof(cmd),
                 "exec '%s' -c -a 127.0.0.1 -p %d -S %d -C %d -V -v --timeout 60 --retry 90 "
                 "%s %s",
                 it_iwping(), hport, size, count, crc ? "--crc" : "", p2p ? "--p2p" : "");
        int rc = it_run(cmd, 1, 200, &out);
        snprintf(marker, sizeof(marker), "SERVER-DONE-%d", conns++);
        if (rc != 0) {
            fprintf(stderr, "---- iwping client, size %d (status %d):\n%s\n", size, rc, out);
            capture_keep(&cap);
        }
        retries += it_count(out, "before the MPA Reply");
        pings2 += it_count(out, "ping data: rdma-ping-2: ");
        free(out);
        CHECK_EQ(rc, 0);
        CHECK(it_wait_for(v.console, marker, v.pid, 60));
    }
    CHECK_EQ(vm_wait(&v, 200), 0);
    capture_stop(&cap);
    fprintf(stderr, "retries: %d (connections refused or reset before the MPA Reply)\n", retries);
    char *g = vm_output(&v);
    CHECK_EQ(pings2, nsizes);
    CHECK(it_count(g, "server ping data: rdma-ping-2: ") >= nsizes);
    CHECK_EQ(it_count(g, "DMESG: "), 0); /* siw saw no packet intersection */
    free(g);
    CHECK(it_tshark() != NULL);
    check_capture(cap.path, nsizes + 1 + (il_rounds > 0), 2, crc, "rep", p2p, 0);
    it_rmtree(v.dir);
    it_rmtree(dir);
}

TEST(siwvm_iwping_client_to_rping_server)
{
    iwping_to_rping_server("", 0, 0, rping_sizes, NSIZES, 2);
}

TEST(siwvm_iwping_client_to_rping_server_crc)
{
    iwping_to_rping_server(SIW_CRC_OPTS, 1, 0, rping_sizes, NSIZES, 0);
}

/* siw with peer_to_peer=1 (RFC 6581's enhanced connection setup with a ready-to-receive
 * message) in both roles against iwping --p2p: the P bit in every Request and Reply of the
 * capture, the pings' data checked on both sides. */
TEST(siwvm_p2p)
{
    static const int sizes[] = {64, 65535};
    rping_client_to_iwping("peer_to_peer=1", 2, 0, 1, sizes, 2);
    iwping_to_rping_server("peer_to_peer=1", 0, 1, sizes, 2, 0);
}

/* ------------------------------------------------------------------------------------ */
/* A raw iWARP peer built from the wire codecs. */

struct raw {
    int fd;
    struct uiw_fpdu_rx rx;
    uint8_t buf[70000];
    size_t have, off;
    uint8_t ulpdu[65536];
    uint32_t msn[3]; /* next MSN we send per QN */
    bool sent;       /* an FPDU went out */
};

/* Read more bytes (bounded); returns bytes read, 0 on EOF, -1 on error, -2 on timeout. */
static ssize_t raw_fill(struct raw *r, int timeout_ms)
{
    if (r->off == r->have)
        r->off = r->have = 0;
    struct pollfd p = {r->fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0)
        return -2;
    ssize_t n = read(r->fd, r->buf + r->have, sizeof(r->buf) - r->have);
    if (n > 0)
        r->have += (size_t)n;
    return n < 0 ? -1 : n;
}

static int raw_send(struct raw *r, const void *b, size_t n)
{
    const uint8_t *p = b;
    while (n) {
        ssize_t w = write(r->fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* TCP connect + MPA Rev 2 Request (IRD = ORD = 1, no CRC) + Reply; retries while the
 * guest is not listening yet. Returns 0 when the Reply (no reject) arrived. */
static int raw_connect(struct raw *r, int port, int timeout_s)
{
    double deadline = now_s() + timeout_s;
    while (now_s() < deadline) {
        struct sockaddr_in a;
        memset(r, 0, sizeof(*r));
        r->fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(r->fd >= 0);
        int one = 1;
        setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(r->fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
            struct uiw_mpa_frame req = {0};
            uint8_t fb[64];
            req.kind = UIW_MPA_REQUEST;
            req.flags = UIW_MPA_FLAG_ENHANCED;
            req.rev = 2;
            req.ird = 1;
            req.ord = 1;
            ssize_t n = uiw_mpa_frame_encode(&req, fb, sizeof(fb));
            CHECK(n > 0);
            if (raw_send(r, fb, (size_t)n) == 0) {
                struct uiw_mpa_frame rep;
                for (;;) {
                    ssize_t k = uiw_mpa_frame_parse(UIW_MPA_REPLY, r->buf, r->have, 0, &rep);
                    if (k > 0) {
                        r->off = (size_t)k;
                        if (rep.flags & UIW_MPA_FLAG_REJECT)
                            break;
                        uiw_fpdu_rx_init(&r->rx, (rep.flags & UIW_MPA_FLAG_CRC) != 0, false, 0);
                        r->msn[0] = r->msn[1] = r->msn[2] = 1;
                        return 0;
                    }
                    if (k != UIW_E_MPA_TRUNCATED || raw_fill(r, 5000) <= 0)
                        break;
                }
            }
        }
        close(r->fd);
        usleep(300000);
    }
    return -1;
}

/* Send one FPDU with the given DDP header and payload. */
static void raw_fpdu(struct raw *r, const struct uiw_ddp_hdr *h, const void *pay, size_t len)
{
    uint8_t hb[32], out[2048];
    ssize_t hl = uiw_ddp_hdr_encode(h, hb, sizeof(hb));
    CHECK(hl > 0);
    struct uiw_wire_iov iov[2] = {{hb, (size_t)hl}, {pay, len}};
    ssize_t n = uiw_fpdu_encode(iov, len ? 2 : 1, r->rx.crc_on, out, sizeof(out));
    CHECK(n > 0);
    CHECK_EQ(raw_send(r, out, (size_t)n), 0);
    if (!r->sent) {
        /* siw (Linux 6.1) as the responder can miss an FPDU that arrives right after its
         * MPA Reply: as the stack's initiator does (cm.h), wake it with a zero-length
         * Write when nothing comes back */
        r->sent = true;
        if (raw_fill(r, 100) == -2) {
            struct uiw_ddp_hdr w = {.tagged = true,
                                    .last = true,
                                    .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_WRITE),
                                    .stag = 1};
            raw_fpdu(r, &w, NULL, 0);
        }
    }
}

/* Next FPDU from the peer into r->ulpdu; returns its ULPDU length or -1 (EOF/timeout). */
static int raw_next(struct raw *r, int timeout_s)
{
    double deadline = now_s() + timeout_s;
    for (;;) {
        if (r->off < r->have) {
            uint16_t ul = 0;
            bool done = false;
            ssize_t k = uiw_fpdu_rx_feed(&r->rx, r->buf + r->off, r->have - r->off, r->ulpdu,
                                         sizeof(r->ulpdu), &ul, &done);
            if (k < 0)
                return -1;
            r->off += (size_t)k;
            if (done)
                return ul;
            continue;
        }
        int left = (int)((deadline - now_s()) * 1000);
        if (left <= 0 || raw_fill(r, left) <= 0)
            return -1;
    }
}

/* Wait for the peer's Terminate; returns 0 with *t. */
static int raw_wait_terminate(struct raw *r, struct uiw_terminate *t, int timeout_s)
{
    for (;;) {
        int ul = raw_next(r, timeout_s);
        if (ul < 0)
            return -1;
        struct uiw_ddp_hdr h;
        ssize_t hl = uiw_ddp_hdr_parse(r->ulpdu, (size_t)ul, &h);
        if (hl < 0)
            return -1;
        if (!h.tagged && h.qn == UIW_DDP_QN_TERMINATE &&
            uiw_rdmap_ctrl_opcode(h.rdmap_ctrl) == UIW_RDMAP_TERMINATE)
            return uiw_terminate_parse(r->ulpdu + hl, (size_t)ul - (size_t)hl, t) > 0 ? 0 : -1;
    }
}

static void raw_close(struct raw *r)
{
    close(r->fd);
}

/* How the engine reads the Terminate ULPDU ul[0..n) arriving in the middle of a
 * connection (a QP in RTS that received an FPDU before): into *a. */
static void engine_reads(const uint8_t *ul, size_t n, struct uiw_qp_attr *a)
{
    struct uiw_context *ctx = uiw__context_alloc(NULL);
    CHECK(ctx != NULL);
    struct uiw_pd *pd = uiw_alloc_pd(ctx);
    struct uiw_cq *cq = uiw_create_cq(ctx, 16, NULL, NULL, 0);
    CHECK(pd && cq);
    struct uiw_qp_init_attr qa = {
        .send_cq = cq, .recv_cq = cq, .cap = {.max_send_wr = 4, .max_recv_wr = 4}};
    struct uiw_qp *qp = uiw_create_qp(pd, &qa);
    CHECK(qp != NULL);
    struct uiw__conn_params cp = {.mpa_rev = 2, .mulpdu = 1460, .ird = 1, .ord = 1};
    CHECK_EQ(uiw__qp_start(qp, &cp), 0);
    uint8_t w[UIW_DDP_TAGGED_HDR_LEN], stream[256];
    struct uiw_ddp_hdr h = {
        .tagged = true, .last = true, .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_WRITE), .stag = 1};
    CHECK_EQ(uiw_ddp_hdr_encode(&h, w, sizeof(w)), UIW_DDP_TAGGED_HDR_LEN);
    struct uiw_wire_iov v1 = {w, sizeof(w)}, v2 = {ul, n};
    ssize_t k1 = uiw_fpdu_encode(&v1, 1, false, stream, sizeof(stream));
    CHECK(k1 > 0);
    ssize_t k2 = uiw_fpdu_encode(&v2, 1, false, stream + k1, sizeof(stream) - (size_t)k1);
    CHECK(k2 > 0);
    size_t off = 0, total = (size_t)(k1 + k2);
    int r = 0;
    while (off < total && r == 0) {
        struct iovec iov[8];
        int cnt = uiw__qp_rx_next(qp, iov, 8);
        CHECK(cnt > 0);
        size_t m = 0;
        for (int i = 0; i < cnt && off + m < total; i++) {
            size_t c = iov[i].iov_len < total - off - m ? iov[i].iov_len : total - off - m;
            memcpy(iov[i].iov_base, stream + off + m, c);
            m += c;
        }
        r = uiw__qp_rx_advance(qp, m);
        off += m;
    }
    CHECK_EQ(r, UIW_E_RNIC_TERM_RECEIVED);
    CHECK_EQ(uiw_query_qp(qp, a), 0);
    CHECK_EQ(uiw_destroy_qp(qp), 0);
    CHECK_EQ(uiw_destroy_cq(cq), 0);
    CHECK_EQ(uiw_dealloc_pd(pd), 0);
    CHECK_EQ(uiw__context_free(ctx), 0);
}

/* Provoke siw's flagless RDMAP Terminate: a Send whose RDMAP control byte is `ctrl` (a
 * bad version or opcode). siw writes 20 <code> 00 00 (its bit order, no M/D/R), which
 * also reads in RFC order (LLP / MPA); in the middle of a connection the engine must read
 * it as siw meant it: RDMAP / Remote Operation / code. */
static void siw_flagless(struct raw *r, int port, uint8_t ctrl, uint8_t code)
{
    CHECK_EQ(raw_connect(r, port, 120), 0);
    struct uiw_ddp_hdr h = {.last = true, .rdmap_ctrl = ctrl, .qn = UIW_DDP_QN_SEND};
    h.msn = r->msn[0]++;
    raw_fpdu(r, &h, "flagless", 8);
    int ul = -1;
    struct uiw_ddp_hdr th;
    ssize_t hl = -1;
    for (int i = 0; i < 8; i++) {
        ul = raw_next(r, 30);
        CHECK(ul > 0);
        hl = uiw_ddp_hdr_parse(r->ulpdu, (size_t)ul, &th);
        CHECK(hl > 0);
        if (!th.tagged && th.qn == UIW_DDP_QN_TERMINATE)
            break;
    }
    CHECK(!th.tagged && th.qn == UIW_DDP_QN_TERMINATE);
    const uint8_t *b = r->ulpdu + hl;
    fprintf(stderr, "siw Terminate for RDMAP control %02x: %02x %02x %02x %02x (%d bytes)\n", ctrl,
            b[0], b[1], b[2], b[3], ul - (int)hl);
    const uint8_t word[4] = {0x20, code, 0x00, 0x00};
    CHECK_MEM(b, word, 4);
    struct uiw_qp_attr a;
    engine_reads(r->ulpdu, (size_t)ul, &a);
    CHECK(a.term_received);
    CHECK(a.term_ambiguous);
    CHECK(a.term_siw_order);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(a.term_etype, UIW_TERM_RDMAP_REMOTE_OPERATION);
    CHECK_EQ(a.term_code, code);
    raw_close(r);
}

/* Wait until the peer closes the stream (bounded); 1 if it did. */
static int raw_wait_eof(struct raw *r, int timeout_s)
{
    double deadline = now_s() + timeout_s;
    while (now_s() < deadline) {
        r->off = r->have = 0;
        ssize_t n = raw_fill(r, 500);
        if (n == 0 || n == -1)
            return 1; /* EOF or reset */
    }
    return 0;
}

/*
 * One VM, three kernel rping servers in turn:
 *  1. an RDMA Write to an STag siw never issued: siw answers DDP / Tagged Buffer /
 *     Invalid STag, written in siw's bit order;
 *  2. a Read Request for an unknown source STag: RDMAP / Remote Protection / Invalid STag;
 *  3. rping's first Send advertising a bogus STag: the kernel rping posts an RDMA Read,
 *     we answer its Read Request with an RFC-order Terminate (RDMAP / Remote Protection /
 *     Invalid STag, with the DDP and RDMAP headers); siw must take it as a Terminate: its
 *     "got TERMINATE" line appears in dmesg (siw reads the control word with its own bit
 *     order, so it prints layer 1, type 0 for RDMAP(0) / Remote Protection(1));
 *  4. the same provoked through the stack: iwping --bad-rkey, our engine's Terminate;
 *  5. the kernel's rping client against iwping -s --bad-remote-rkey: siw's Terminate for
 *     our RDMA Read through a wrong key must reach the application decoded as RDMAP /
 *     Remote Protection / Invalid STag (the engine undoing siw's bit order);
 *  6. a Send with RDMAP version 2, then one with opcode 15: siw's flagless Terminates
 *     20 05 00 00 and 20 06 00 00, read by the engine as RDMAP / Remote Operation.
 */
TEST(siwvm_terminates)
{
    char script[1024], fwd[128], dir[512], srv_out[600], scmd[1024];
    int hport = it_free_port(); /* QEMU's forward: it cannot report a port it picked */
    /* 5 (after the servers): the kernel's rping client against an iwping server that reads
     * through a wrong key: siw answers with its Terminate, which our engine must decode */
    it_tmpdir(dir, sizeof(dir), "siwterm");
    snprintf(srv_out, sizeof(srv_out), "%s/server.txt", dir);
    snprintf(scmd, sizeof(scmd),
             "exec '%s' -s -a 127.0.0.1 -p 0 -S 64 --timeout 300 --bad-remote-rkey", it_iwping());
    int spid = it_spawn(scmd, srv_out);
    int sport = it_server_port(srv_out, spid, 20);
    snprintf(script, sizeof(script),
             "for i in 1 2 3 4 5 6; do timeout 100 rping -s -a 10.0.2.15 -p 7174 -v; "
             "echo RPING-SERVER-$i-EXIT=$?; done\n"
             "timeout 60 rping -c -a 10.0.2.2 -p %d -C 1 -v; echo RPING-CLIENT-EXIT=$?\n"
             "dmesg | grep -E 'siw: (got|rx bogus) TERM' | sed 's/^/DMESG: /'\n"
             "exit 0\n",
             sport);
    snprintf(fwd, sizeof(fwd), "tcp:127.0.0.1:%d-:7174", hport);
    struct vm v;
    vm_start(&v, script, "", fwd, 360);
    CHECK(it_wait_for(v.console, "siwvm: ready", v.pid, VM_BOOT_S));

    struct raw *r = calloc(1, sizeof(*r));
    struct uiw_terminate t;
    struct uiw_ddp_hdr h;
    CHECK(r != NULL);

    /* 1: RDMA Write to an invalid STag */
    CHECK_EQ(raw_connect(r, hport, 120), 0);
    memset(&h, 0, sizeof(h));
    h.tagged = true;
    h.last = true;
    h.rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_WRITE);
    h.stag = 0x00BAD100u;
    h.to = 0x1000;
    raw_fpdu(r, &h, "0123456789abcdef", 16);
    memset(&t, 0, sizeof(t));
    CHECK_EQ(raw_wait_terminate(r, &t, 30), 0);
    fprintf(stderr, "siw Terminate 1: layer %u etype %u code %u hdrct %x siw_order %d\n", t.layer,
            t.etype, t.code, t.hdrct, t.siw_order);
    CHECK_EQ(t.layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(t.etype, UIW_TERM_DDP_TAGGED);
    CHECK_EQ(t.code, UIW_TERM_DT_INVALID_STAG);
    CHECK(t.siw_order);
    raw_close(r);
    CHECK(it_wait_for(v.console, "RPING-SERVER-1-EXIT", v.pid, 120));

    /* 2: Read Request for an invalid source STag */
    CHECK_EQ(raw_connect(r, hport, 120), 0);
    memset(&h, 0, sizeof(h));
    h.last = true;
    h.rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ);
    h.qn = UIW_DDP_QN_READ_REQ;
    h.msn = r->msn[1]++;
    struct uiw_rdmap_read_req rr = {0x00001200u, 0x2000, 64, 0x00BAD200u, 0x3000};
    uint8_t rrb[UIW_RDMAP_READ_REQ_LEN];
    uiw_rdmap_read_req_encode(&rr, rrb);
    raw_fpdu(r, &h, rrb, sizeof(rrb));
    memset(&t, 0, sizeof(t));
    CHECK_EQ(raw_wait_terminate(r, &t, 30), 0);
    fprintf(stderr, "siw Terminate 2: layer %u etype %u code %u hdrct %x siw_order %d\n", t.layer,
            t.etype, t.code, t.hdrct, t.siw_order);
    CHECK_EQ(t.layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(t.etype, UIW_TERM_RDMAP_REMOTE_PROTECTION);
    CHECK_EQ(t.code, UIW_TERM_RP_INVALID_STAG);
    CHECK(t.siw_order);
    raw_close(r);
    CHECK(it_wait_for(v.console, "RPING-SERVER-2-EXIT", v.pid, 120));

    /* 3: our RFC-order Terminate in answer to the kernel rping's RDMA Read */
    CHECK_EQ(raw_connect(r, hport, 120), 0);
    uint8_t info[16];
    it_put64(info, 0x5000);
    it_put32(info + 8, 0x00BAD300u);
    it_put32(info + 12, 64);
    memset(&h, 0, sizeof(h));
    h.last = true;
    h.rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_SEND);
    h.qn = UIW_DDP_QN_SEND;
    h.msn = r->msn[0]++;
    raw_fpdu(r, &h, info, sizeof(info));
    int got_rr = 0;
    struct uiw_ddp_hdr rh;
    uint8_t rdma_hdr[UIW_RDMAP_READ_REQ_LEN];
    for (int i = 0; i < 8 && !got_rr; i++) {
        int ul = raw_next(r, 30);
        CHECK(ul > 0);
        ssize_t hl = uiw_ddp_hdr_parse(r->ulpdu, (size_t)ul, &rh);
        CHECK(hl > 0);
        if (!rh.tagged && rh.qn == UIW_DDP_QN_READ_REQ) {
            CHECK(ul >= hl + UIW_RDMAP_READ_REQ_LEN);
            memcpy(rdma_hdr, r->ulpdu + hl, sizeof(rdma_hdr));
            CHECK_EQ(uiw_rdmap_read_req_parse(rdma_hdr, sizeof(rdma_hdr), &rr),
                     UIW_RDMAP_READ_REQ_LEN);
            CHECK_EQ(rr.src_stag, 0x00BAD300u);
            got_rr = 1;
        }
    }
    CHECK(got_rr);
    struct uiw_terminate our = {0};
    our.layer = UIW_TERM_LAYER_RDMAP;
    our.etype = UIW_TERM_RDMAP_REMOTE_PROTECTION;
    our.code = UIW_TERM_RP_INVALID_STAG;
    our.hdrct = UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R;
    our.ddp_seg_len = UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN;
    our.ddp_hdr_len = UIW_DDP_UNTAGGED_HDR_LEN;
    CHECK_EQ(uiw_ddp_hdr_encode(&rh, our.ddp_hdr, sizeof(our.ddp_hdr)), UIW_DDP_UNTAGGED_HDR_LEN);
    memcpy(our.rdma_hdr, rdma_hdr, sizeof(rdma_hdr));
    uint8_t tb[128];
    ssize_t tl = uiw_terminate_encode(&our, tb, sizeof(tb));
    CHECK(tl > 0);
    CHECK_EQ(tb[0], 0x01); /* RFC 5040 4.8: Layer in the high nibble, EType in the low */
    memset(&h, 0, sizeof(h));
    h.last = true;
    h.rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE);
    h.qn = UIW_DDP_QN_TERMINATE;
    h.msn = r->msn[2]++;
    raw_fpdu(r, &h, tb, (size_t)tl);
    CHECK(raw_wait_eof(r, 30)); /* siw ends the stream */
    raw_close(r);
    free(r);
    CHECK(it_wait_for(v.console, "RPING-SERVER-3-EXIT", v.pid, 120));

    /* 4: the same from the stack itself: iwping advertises an STag that names no region;
     * the kernel rping's RDMA Read gets our engine's Terminate */
    char cmd[1024], *cout = NULL;
    snprintf(cmd, sizeof(cmd),
             "exec '%s' -c -a 127.0.0.1 -p %d -S 64 -C 1 --timeout 30 --retry 90 --bad-rkey",
             it_iwping(), hport);
    int crc = it_run(cmd, 1, 150, &cout);
    fprintf(stderr, "iwping --bad-rkey (status %d):\n%s\n", crc, cout);
    CHECK(crc != 0);
    CHECK(strstr(cout, "rping client failed") != NULL);
    free(cout);
    CHECK(it_wait_for(v.console, "RPING-SERVER-4-EXIT", v.pid, 120));

    /* 6: siw's flagless RDMAP Terminates */
    r = calloc(1, sizeof(*r));
    CHECK(r != NULL);
    siw_flagless(r, hport, (uint8_t)(0x80 | UIW_RDMAP_SEND), UIW_TERM_RO_INVALID_VERSION);
    CHECK(it_wait_for(v.console, "RPING-SERVER-5-EXIT", v.pid, 120));
    siw_flagless(r, hport, (uint8_t)(0x40 | 0x0F), UIW_TERM_RO_UNEXPECTED_OPCODE);
    free(r);

    CHECK_EQ(vm_wait(&v, 200), 0);
    int src = it_wait(spid, 30);
    char *so = it_slurp(srv_out);
    fprintf(stderr, "iwping server --bad-remote-rkey (status %d):\n%s\n", src, so);
    CHECK(src != 0);
    CHECK(strstr(so, "cq completion failed") != NULL);
    /* RDMAP / Remote Protection / Invalid STag, though siw wrote it in its own bit order */
    CHECK(strstr(so, "peer Terminate: layer 0 etype 1 code 0") != NULL);
    free(so);
    it_rmtree(dir);
    char *g = vm_output(&v);
    fprintf(stderr, "%s", strstr(g, "RPING-SERVER-1") ? strstr(g, "RPING-SERVER-1") : g);
    CHECK(strstr(g, "RPING-SERVER-6-EXIT") != NULL);
    CHECK(strstr(g, "RPING-CLIENT-EXIT") != NULL);
    CHECK(strstr(g, "DMESG: ") != NULL);
    CHECK_EQ(it_count(g, "DMESG: "), 2);
    CHECK_EQ(it_count(g, "got TERMINATE. layer 1, type 0, code 0"), 2);
    CHECK(strstr(g, "rx bogus TERM") == NULL);
    free(g);
    it_rmtree(v.dir);
}

/* The rig boots and siw0 is active, with the module parameters the tests use. */
TEST(siwvm_rig)
{
    struct vm v;
    vm_start(&v,
             "rdma link show\n"
             "for p in mpa_crc_required mpa_version; do echo PARAM $p=$(cat "
             "/sys/module/siw/parameters/$p); done\n"
             "command -v rping\n",
             "mpa_crc_required=1", NULL, 180);
    CHECK_EQ(vm_wait(&v, 200), 0);
    char *g = vm_output(&v);
    CHECK(strstr(g, "siw0/1 state ACTIVE") != NULL);
    CHECK(strstr(g, "PARAM mpa_crc_required=Y") != NULL ||
          strstr(g, "PARAM mpa_crc_required=1") != NULL);
    CHECK(strstr(g, "/rping") != NULL);
    free(g);
    it_rmtree(v.dir);
}
