/*
 * RPC-over-RDMA against the Linux kernel's NFS server (knfsd, svcrdma over siw) in the siw
 * VM rig (scripts/siwvm.sh), one VM boot for all of it:
 *  - rpcrdma-ping calls NFSv3 NULL (program 100003, version 3) twice in one process: the
 *    first connection's first message is Version Two, the kernel answers ERR_VERS with the
 *    range 1 to 1 and the call goes on in Version One on that connection; the second
 *    connection starts in Version One at once (the answer remembered). Its capture,
 *    decoded by tshark (an independent RPC-over-RDMA Version One dissector), shows exactly
 *    that: the kernel's RDMA_ERROR / ERR_VERS 1..1 with the XID of our first message, then
 *    Version One calls answered with their XIDs, nothing malformed;
 *  - uiw-nfs moves a 1 MiB file to and from knfsd in Version One with its capture on: tshark
 *    decodes RPC-over-RDMA with the ONC RPC calls and replies inside (every call's XID
 *    answered), the 1 MiB WRITE with a Read list and the READ with a Write list;
 *  - the same pings with siw's mpa_crc_required=1 and --crc (siw as a responder does not
 *    turn CRC on by itself: it honours the initiator's request): MPA CRC on, the rest the
 *    same.
 * Exits 77 (skipped) where the rig is not available; a rig that fails fails the test.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interop.h"
#include "run.h"
#include "test.h"

#define PING UIW_BINARY_DIR "/tools/rpcrdma-ping"

/* Frames tshark marks malformed, or with an expert error. With nfs_read_data, not NFS READ
 * replies: tshark 4.0 does not put the data of a Write chunk (RDMA Writes before the
 * reply) back into the reply it dissects, so its NFS layer finds the READ's data missing;
 * the RPC-over-RDMA and RPC layers of those replies are still checked by the others. */
static int malformed(const char *pcap, bool nfs_read_data)
{
    return it_tshark_malformed(pcap, nfs_read_data ? "rpc.msgtyp == 1 && nfs.procedure_v3 == 6 && "
                                                     "rpcordma.writes_count > 0"
                                                   : NULL);
}

/* rpcrdma-ping of NFSv3 NULL, two connections in one process, capture into dir. */
static void ping_knfsd(int port, const char *dir, bool crc)
{
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    struct tool_run r;
    const char *plain[] = {
        "rpcrdma-ping", "-p", p,   "--connections", "2", "--pcap", dir, "127.0.0.1",
        "100003",       "3",  NULL};
    const char *withcrc[] = {"rpcrdma-ping",  "--crc",  "-p",     p,
                             "--connections", "2",      "--pcap", dir,
                             "127.0.0.1",     "100003", "3",      NULL};
    const char *const *argv = crc ? withcrc : plain;
    tool_run(PING, argv, "", 0, 120, &r);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "rpcrdma-ping to knfsd: status %d\n%s%s", r.status, r.out,
                      r.err);
    fprintf(stderr, "rpcrdma-ping:\n%s", r.out); /* shown when a check fails */
    const char *c1 = strstr(r.out, "connection 1:");
    const char *c2 = strstr(r.out, "connection 2:");
    CHECK(c1 && c2 && c1 < c2);
    const char *crcs = crc ? "MPA CRC on\n" : "MPA CRC off\n";
    CHECK(strncmp(c1 + strlen("connection 1: "), crcs, strlen(crcs)) == 0);
    CHECK(strncmp(c2 + strlen("connection 2: "), crcs, strlen(crcs)) == 0);
    /* the answer normally comes in time; on a loaded machine it may come behind the first
     * call (rpcrdma-ping then says so): the same facts either way */
    const char *fb = strstr(c1, "first message: RPC-over-RDMA Version Two");
    CHECK(fb && fb < c2);
    fb = strstr(c1, "going on in Version 1 on this connection");
    CHECK(fb && fb < c2);
    fb = strstr(c1, "ERR_VERS (versions 1 to 1)");
    CHECK(fb && fb < c2);
    CHECK(strstr(c2, "first message: RPC-over-RDMA Version One (the server answered ERR_VERS "
                     "to an earlier connection)") != NULL);
    /* the kernel's RFC 8797 private data, as the rig's README records it */
    const char *pd = "server's private data (RFC 8797): send size 4096, receive size 4096, "
                     "remote invalidation no";
    CHECK(strstr(c1, pd) && strstr(c1, pd) < c2);
    CHECK(strstr(c2, pd) != NULL);
    const char *ok = "program 100003 version 3 procedure 0: success";
    CHECK(strstr(c1, ok) && strstr(c1, ok) < c2);
    CHECK(strstr(c2, ok) != NULL);
    CHECK(strstr(c1, "RPC-over-RDMA version 1, credits ") != NULL);
    CHECK(strstr(c2, "RPC-over-RDMA version 1, credits ") != NULL);
    tool_run_free(&r);

    /* The wire: two captures (one per connection). */
    char cmd[800], *o = NULL;
    snprintf(cmd, sizeof(cmd), "ls '%s'/*.pcap | sort", dir);
    CHECK_EQ(it_run(cmd, 0, 10, &o), 0);
    CHECK_EQ(it_nlines(o), 2);
    char *second = strchr(o, '\n');
    *second++ = 0;
    second[strcspn(second, "\n")] = 0;
    const char *caps[2] = {o, second};
    for (int i = 0; i < 2; i++) {
        /* The raw Sends (tshark decodes only Version One RPC-over-RDMA): the client's first
         * message, and the kernel's first answer. Hex of each TCP payload: MPA length (4
         * digits), DDP/RDMAP untagged header (36), then the RPC-over-RDMA header. */
        char *sends =
            it_tshark_fields(caps[i], "iwarp_rdma.opcode == 3", "tcp.srcport tcp.payload");
        char *save = NULL, *first = strtok_r(sends, "\n", &save), *answer = NULL;
        CHECK(first != NULL);
        size_t plen = strcspn(first, "|");
        for (char *l = strtok_r(NULL, "\n", &save); l && !answer; l = strtok_r(NULL, "\n", &save))
            if (strncmp(l, first, plen + 1) != 0)
                answer = l;
        CHECK(answer != NULL);
        const char *q = first + plen + 1, *a = answer + strcspn(answer, "|") + 1;
        CHECK(strlen(q) >= 72 && strlen(a) >= 96);
        CHECK(strncmp(a + 40, q + 40, 8) == 0); /* the xid of our first message */
        if (i == 0) {
            /* Version Two; the kernel's RDMA_ERROR, ERR_VERS, versions 1 to 1, its header
             * carrying the version it refuses */
            CHECK(strncmp(q + 48, "00000002", 8) == 0);
            CHECK(strncmp(a + 48, "00000002", 8) == 0);
            CHECK(strncmp(a + 64, "00000004000000010000000100000001", 32) == 0);
        } else {
            /* Version One from the start: the NULL call, answered by the NULL reply */
            CHECK(strncmp(q + 48, "00000001", 8) == 0);
            CHECK(strncmp(a + 48, "00000001", 8) == 0);
            CHECK(strncmp(a + 64, "00000000", 8) == 0); /* RDMA_MSG */
        }
        free(sends);
        /* tshark's RPC-over-RDMA Version One: NFSv3 NULL calls, each answered with its XID,
         * no RDMA_ERROR in Version One, nothing malformed */
        char *e = it_tshark_fields(caps[i], "rpcordma.msg_type == 4", "frame.number");
        CHECK_EQ(it_nlines(e), 0);
        free(e);
        char *c = it_tshark_fields(caps[i], "rpcordma.version == 1 && rpc.msgtyp == 0", "rpc.xid");
        CHECK_EQ(it_nlines(c), 1);
        free(c);
        c = it_tshark_fields(caps[i],
                             "rpcordma.version == 1 && rpc.msgtyp == 0 && rpc.program == 100003 "
                             "&& rpc.programversion == 3 && rpc.procedure == 0",
                             "rpc.xid");
        CHECK_EQ(it_nlines(c), 1);
        free(c);
        CHECK_EQ(it_rpc_calls_answered(caps[i]), 1);
        CHECK_EQ(malformed(caps[i], false), 0);
    }
    free(o);
}

TEST(siwvm_rpcrdma_knfsd)
{
    if (!it_tshark())
        SKIP("tshark is not installed");
    it_siwvm_ensure();
    char vmdir[512], console[600], runlog[600], script[600];
    it_tmpdir(vmdir, sizeof(vmdir), "rpcvm");
    snprintf(console, sizeof(console), "%s/console.log", vmdir);
    snprintf(runlog, sizeof(runlog), "%s/run.txt", vmdir);
    snprintf(script, sizeof(script), "%s/guest.sh", vmdir);
    int km = it_free_port(), kr = it_free_port();
    while (kr == km)
        kr = it_free_port();
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    fprintf(f, "set -e\n"
               "siwvm-nfsd /export >/dev/null\n"
               "chmod 777 /export\n"
               "head -c 1048576 /dev/urandom > /export/m1 && chmod 666 /export/m1\n"
               "wait_host() { n=0; while [ ! -e /mnt/host/$1 ] && [ $n -lt 400 ]; do sleep 1; "
               "n=$((n+1)); done; }\n"
               "echo KNFSD-READY\n"
               "wait_host host1\n"
               "echo 1 > /sys/module/siw/parameters/mpa_crc_required\n"
               "echo CRC-ON\n"
               "wait_host host2\n"
               "echo GUEST-END\n");
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "SIWVM_SHARE='%s' SIWVM_LOG='%s' SIWVM_TIMEOUT=400 "
             "SIWVM_HOSTFWD='tcp:127.0.0.1:%d-:20048 tcp:127.0.0.1:%d-:20049' "
             "exec '%s/scripts/siwvm.sh' run sh /mnt/host/guest.sh",
             vmdir, console, km, kr, UIW_SOURCE_DIR);
    int pid = it_spawn(cmd, runlog);
    it_wait_marker(console, runlog, "KNFSD-READY", pid, 300);

    char d[700];
    snprintf(d, sizeof(d), "%s/ping", vmdir);
    CHECK_EQ(mkdir(d, 0700), 0);
    ping_knfsd(kr, d, false);

    /* 1 MiB READ and WRITE in Version One, captured: chunk lists, every XID answered. One
     * call at a time: the kernel sends replies that come due together in one TCP segment,
     * and tshark 4.0 decodes only the first FPDU of a segment. Then the same with a file's
     * calls in flight together (uiw-nfs's default), not captured. */
    snprintf(d, sizeof(d), "%s/nfs", vmdir);
    CHECK_EQ(mkdir(d, 0700), 0);
    char *o = NULL;
    for (int overlap = 0; overlap < 2; overlap++) {
        char env[800] = "";
        if (!overlap)
            snprintf(env, sizeof(env), "UIW_PCAP_DIR='%s' ", d);
        const char *one = overlap ? "" : "--inflight 1";
        snprintf(cmd, sizeof(cmd),
                 "%s'%s' %s --verify get "
                 "'nfs://127.0.0.1:%d/export/m1?mountport=%d&transport=rdma&rpcrdma=1&version=3' "
                 "'%s/m1' && %s'%s' %s --verify put '%s/m1' "
                 "'nfs://127.0.0.1:%d/export/m1.back?mountport=%d&transport=rdma&rpcrdma=1&"
                 "version=3' && test $(stat -c %%s '%s/m1') = 1048576 && rm '%s/m1'",
                 env, UIW_NFS, one, kr, km, vmdir, env, UIW_NFS, one, vmdir, kr, km, vmdir, vmdir);
        int rc = it_run(cmd, 1, 300, &o);
        if (rc != 0)
            uiw_test_fail(__FILE__, __LINE__, "uiw-nfs against knfsd (%s): %d\n%s",
                          overlap ? "calls overlapping" : "one call at a time", rc, o);
        free(o);
    }
    snprintf(cmd, sizeof(cmd), "ls '%s'/*.pcap", d);
    CHECK_EQ(it_run(cmd, 0, 10, &o), 0);
    int ncaps = it_nlines(o);
    CHECK(ncaps >= 2);
    int reads = 0, writes = 0, calls = 0, nwrite_calls = 0;
    char *save = NULL;
    for (char *l = strtok_r(o, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *v = it_tshark_fields(l, "rpcordma && rpcordma.version != 1", "frame.number");
        CHECK_EQ(it_nlines(v), 0);
        free(v);
        /* NFSv3 READ (6) calls with a Write list; WRITE (7) calls with a Read list
         * (tshark shows the NFS call in the frame that completes the chunk's RDMA Read) */
        char *r = it_tshark_fields(l,
                                   "rpc.msgtyp == 0 && nfs.procedure_v3 == 6 && "
                                   "rpcordma.writes_count > 0",
                                   "rpc.xid");
        reads += it_nlines(r);
        free(r);
        char *w = it_tshark_fields(l, "rpcordma.msg_type == 0 && rpcordma.reads_count > 0",
                                   "rpcordma.xid");
        writes += it_nlines(w);
        free(w);
        w = it_tshark_fields(l, "rpc.msgtyp == 0 && nfs.procedure_v3 == 7", "rpc.xid");
        nwrite_calls += it_nlines(w);
        free(w);
        calls += it_rpc_calls_answered(l);
        CHECK_EQ(malformed(l, true), 0);
    }
    free(o);
    CHECK(reads >= 1);
    CHECK(writes >= 1);
    CHECK_EQ(writes, nwrite_calls);
    CHECK(calls >= reads + writes);

    /* siw requires MPA CRC now: the kernel turns it on, the rest is as before. */
    it_touch(vmdir, "host1");
    it_wait_marker(console, runlog, "CRC-ON", pid, 120);
    snprintf(d, sizeof(d), "%s/crc", vmdir);
    CHECK_EQ(mkdir(d, 0700), 0);
    ping_knfsd(kr, d, true);

    it_touch(vmdir, "host2");
    CHECK_EQ(it_wait(pid, 120), 0);
    it_rmtree(vmdir);
}
