/*
 * uiw-nfsd: an NFS server of exported directories, versions 3 (RFC 1813, with MOUNT
 * version 3 over TCP) and 4.1 and 4.2 (RFC 8881, RFC 7862), serving NFS over TCP and over
 * RPC-over-RDMA.
 *
 *   uiw-nfsd [-a ADDR] [-p RDMA_PORT] [--tcp-port PORT] [--mount-port PORT] [--vers1-only]
 *            [--no-root-squash] [--anon-uid N] [--anon-gid N] [--max-io BYTES]
 *            [--rdma-threads N] [--inline-size BYTES] [--ddp-threshold BYTES]
 *            [--max-handles N] [--tcp-threads N]
 *            [--max-connections N] [--idle-timeout S] [--io-timeout S] [--io-buffers N]
 *            [--rpcbind | --no-rpcbind] [--no-nfs4] [--lease-time S]
 *            [--state-dir DIR] [--no-delegations]
 *            [--idmap-domain DOMAIN]
 *            [--stats] [-v]
 *            EXPORT_DIR...
 *
 * Once listening it prints one line on standard output,
 *   uiw-nfsd: ready tcp=PORT mount=PORT rdma=PORT
 * (a port of 0 picks a free one; -1 means off), then serves until SIGINT or SIGTERM;
 * SIGHUP reads the exports file again.
 * With --stats it prints the RPC-over-RDMA and RNIC counters on SIGUSR1 and as it ends.
 * Exit status 0 after a signal, 1 when it cannot start, 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs/exports.h"
#include "nfs/nfsd.h"
#include "nfs/vfs.h"
#include "rpcstats.h"

/* The exports file read when no export is named. */
#define UIW_NFSD_EXPORTS "/etc/uiw/exports"

static const char usage[] =
    "usage: uiw-nfsd [options] [EXPORT_DIR...]\n"
    "Serve the directories over NFS versions 3, 4.1 and 4.2 (TCP and RPC-over-RDMA), with\n"
    "MOUNT v3 over TCP. Clients mount an export by its absolute path. The exports come\n"
    "from -e FILE, and from the directories given (open to every host, read-write); with\n"
    "neither, from /etc/uiw/exports.\n"
    "  -e, --exports FILE    export what FILE says, to whom it says (exports(5) syntax;\n"
    "                        default /etc/uiw/exports when no EXPORT_DIR is given)\n"
    "  -a, --addr ADDR       listen address (default: all)\n"
    "  -p, --port PORT       RPC-over-RDMA port (default 20049; 0: any free; -1: off)\n"
    "      --tcp-port PORT   NFS over TCP (default 2049; 0: any free; -1: off)\n"
    "      --mount-port PORT MOUNT over TCP (default 20048; 0: any free; -1: off)\n"
    "      --vers1-only      speak RPC-over-RDMA Version One only\n"
    "      --no-root-squash  AUTH_SYS root keeps root's rights (server run as root)\n"
    "      --anon-uid N      uid of squashed and AUTH_NONE callers (default 65534)\n"
    "      --anon-gid N      gid of squashed and AUTH_NONE callers (default 65534)\n"
    "      --max-io BYTES    largest READ and WRITE (default 1048576)\n"
    "      --rdma-threads N  threads serving RPC-over-RDMA calls (default 4)\n"
    "      --inline-size BYTES\n"
    "                        RPC-over-RDMA receive buffers (advertised as RBSIZ and in\n"
    "                        RFC 8797 private data) and largest message sent inline,\n"
    "                        1024 to 262144, a multiple of 1024 (default 32768, so\n"
    "                        that READ and WRITE data up to some 31 KiB travel inline\n"
    "                        with a Version Two client that offers as much; 4096 with\n"
    "                        --vers1-only)\n"
    "      --ddp-threshold BYTES\n"
    "                        RPC-over-RDMA: READ data of at least this many bytes goes\n"
    "                        by RDMA Write into the client's Write chunk, shorter data\n"
    "                        inline (default 1024)\n"
    "      --max-handles N   file handle records kept (default 262144; older ones are\n"
    "                        found again by a search of the export)\n"
    "      --tcp-threads N   threads running NFS and MOUNT calls over TCP (default 8)\n"
    "      --max-connections N\n"
    "                        connections open at once, TCP and RPC-over-RDMA together\n"
    "                        (default 1024); more are refused at once (RDMA: rejected\n"
    "                        by the connection manager), with a line in the log;\n"
    "                        an RPC-over-RDMA connection is granted 64 credits\n"
    "                        (calls in flight at once); WRITE data pulled by RDMA\n"
    "                        Read takes 256 MiB at most (more waits)\n"
    "      --idle-timeout S  close a TCP connection without a call for S seconds\n"
    "                        (default 360)\n"
    "      --io-timeout S    close a connection whose call or reply makes no progress for\n"
    "                        S seconds (default 60; also TCP_USER_TIMEOUT): over TCP a\n"
    "                        record that stops coming or a reply the peer stops reading,\n"
    "                        over RPC-over-RDMA a reply or error that does not go out,\n"
    "                        an RDMA Read of a call's chunk left unanswered or a message\n"
    "                        the peer stops sending partway; an MPA request not come\n"
    "                        whole within S seconds, at most 10\n"
    "      --io-buffers N    buffers of max-io bytes for WRITE records and READ payloads\n"
    "                        over TCP (default 64): the memory they take at most\n"
    "      --no-nfs4         serve NFS version 3 alone: version 4 gets PROG_MISMATCH\n"
    "                        (by default versions 4.1 and 4.2 are served beside 3 on\n"
    "                        the NFS ports: sessions, opens, locks, read delegations\n"
    "                        recalled over the back channel, TCP or RPC-over-RDMA's\n"
    "                        backward direction, and a pseudo file system joining\n"
    "                        the exports at their paths)\n"
    "      --lease-time S    NFSv4 lease in seconds (default 90)\n"
    "      --state-dir DIR   keep NFSv4 client records in DIR (made if missing), so\n"
    "                        that after a restart the clients reclaim their state in\n"
    "                        a grace period of one lease, in which other new state\n"
    "                        waits (default: no records, no grace period)\n"
    "      --no-delegations  NFSv4: grant no delegations\n"
    "      --idmap-domain D  NFSv4 owners as name@D (default: as numbers)\n"
    "      --rpcbind         register NFS (tcp, tcp6, rdma) and MOUNT (tcp, tcp6) with\n"
    "                        the host's rpcbind, or do not start (default: register\n"
    "                        when NFS is on TCP port 2049 and an rpcbind runs)\n"
    "      --no-rpcbind      never register with rpcbind\n"
    "      --stats           print the RPC-over-RDMA counters (calls, replies, DRC hits,\n"
    "                        credits, chunks, bytes by RDMA and inline, errors, the\n"
    "                        memory its buffers hold) and the RNIC's (bytes, FPDUs,\n"
    "                        CRC errors, Terminates, copies) on standard output on\n"
    "                        SIGUSR1 and when it ends; with NFSv4 also NFSv4.1's\n"
    "                        callbacks (sent, CB_RECALLs, replies, errors, timeouts);\n"
    "                        and the open-file cache's descriptors, opens and hits\n"
    "      --pid-file FILE   write the server's process id there once it serves (removed\n"
    "                        when it ends)\n"
    "      --check-exports FILE\n"
    "                        read an exports file (exports(5) syntax), print the exports\n"
    "                        as the server takes them (every option spelled out) and exit\n"
    "                        (1, with the line of the first error, if it has one)\n"
    "  -v, --verbose         log mounts; twice: every call\n"
    "  -h, --help            this text\n"
    "      --version         the version\n";

static int parse_num(const char *s, long min, long max, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < min || x > max)
        return -1;
    *v = x;
    return 0;
}

/* --stats: the RPC-over-RDMA transport's counters, with the RNIC's; NFSv4.1's callbacks. */
static void print_stats(struct uiw__nfsd *s)
{
    struct uiw_rpc_xprt_stats st;
    int r = uiw__nfsd_xprt_stats(s, &st);
    if (r == 0)
        rpcstats_text(stdout, "server", &st);
    else
        printf("uiw-nfsd: no RPC-over-RDMA counters: %s\n", strerror(-r));
    struct uiw__nfsd_cb_counts cb;
    if (uiw__nfsd_cb_counts(s, &cb) == 0)
        printf("uiw-nfsd: NFSv4.1 callbacks: sent %llu (CB_RECALL %llu, resent %llu), "
               "replies %llu, errors %llu, timeouts %llu, dropped replies %llu\n",
               (unsigned long long)cb.sent, (unsigned long long)cb.recalls,
               (unsigned long long)cb.resent, (unsigned long long)cb.replies,
               (unsigned long long)cb.errors, (unsigned long long)cb.timeouts,
               (unsigned long long)cb.dropped);
    struct uiw__nfsd_deleg_counts dg;
    if (uiw__nfsd_deleg_counts(s, &dg) == 0)
        printf("uiw-nfsd: NFSv4.1 delegations: granted %llu, recalled %llu, returned %llu, "
               "revoked %llu\n",
               (unsigned long long)dg.granted, (unsigned long long)dg.recalled,
               (unsigned long long)dg.returned, (unsigned long long)dg.revoked);
    struct uiw__vfs_file_counts of;
    uiw__vfs_file_counts(s, &of);
    printf("uiw-nfsd: open files: %u descriptors (at most %u), %lu opens, %lu hits; %lu "
           "handles opened by calls\n",
           of.fds, of.max_fds, of.opens, of.hits, of.resolves);
    fflush(stdout);
}

/* SIGHUP: the exports file read again and taken (as it was, if it has an error). */
static void reload(struct uiw__nfsd *s, const char *exports)
{
    if (!exports) {
        fprintf(stderr, "uiw-nfsd: SIGHUP: no exports file to read again (no -e)\n");
        return;
    }
    struct uiw__nfs_xtable t;
    char err[512];
    if (uiw__nfs_exports_load(exports, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "uiw-nfsd: SIGHUP: %s: the exports stay as they were\n", err);
        return;
    }
    unsigned n = t.n;
    if (uiw__nfsd_reload_exports(s, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "uiw-nfsd: SIGHUP: %s: %s: the exports stay as they were\n", exports, err);
        uiw__nfs_xtable_free(&t);
        return;
    }
    fprintf(stderr, "uiw-nfsd: SIGHUP: %u exports read again from %s\n", n, exports);
}

int main(int argc, char **argv)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    enum {
        O_TCP = 256,
        O_MOUNT,
        O_V1,
        O_NRS,
        O_AUID,
        O_AGID,
        O_MAXIO,
        O_THREADS,
        O_INLINE,
        O_DDP,
        O_HANDLES,
        O_TCP_THREADS,
        O_MAXCONN,
        O_IDLE,
        O_IOTMO,
        O_IOBUFS,
        O_CHECK,
        O_PIDFILE,
        O_VERSION,
        O_STATS,
        O_RPCBIND,
        O_NO_RPCBIND,
        O_NFS4,
        O_NO_NFS4,
        O_LEASE,
        O_STATEDIR,
        O_IDMAP,
        O_NODELEG,
    };
    bool stats = false;
    static const struct option lo[] = {
        {"addr", required_argument, NULL, 'a'},
        {"exports", required_argument, NULL, 'e'},
        {"stats", no_argument, NULL, O_STATS},
        {"port", required_argument, NULL, 'p'},
        {"tcp-port", required_argument, NULL, O_TCP},
        {"mount-port", required_argument, NULL, O_MOUNT},
        {"vers1-only", no_argument, NULL, O_V1},
        {"no-root-squash", no_argument, NULL, O_NRS},
        {"anon-uid", required_argument, NULL, O_AUID},
        {"anon-gid", required_argument, NULL, O_AGID},
        {"max-io", required_argument, NULL, O_MAXIO},
        {"rdma-threads", required_argument, NULL, O_THREADS},
        {"inline-size", required_argument, NULL, O_INLINE},
        {"ddp-threshold", required_argument, NULL, O_DDP},
        {"max-handles", required_argument, NULL, O_HANDLES},
        {"tcp-threads", required_argument, NULL, O_TCP_THREADS},
        {"max-connections", required_argument, NULL, O_MAXCONN},
        {"idle-timeout", required_argument, NULL, O_IDLE},
        {"io-timeout", required_argument, NULL, O_IOTMO},
        {"io-buffers", required_argument, NULL, O_IOBUFS},
        {"check-exports", required_argument, NULL, O_CHECK},
        {"pid-file", required_argument, NULL, O_PIDFILE},
        {"rpcbind", no_argument, NULL, O_RPCBIND},
        {"no-rpcbind", no_argument, NULL, O_NO_RPCBIND},
        {"no-nfs4", no_argument, NULL, O_NO_NFS4},
        {"nfs4", no_argument, NULL, O_NFS4},
        {"nfs4-experimental", no_argument, NULL, O_NFS4}, /* its name while incomplete */
        {"lease-time", required_argument, NULL, O_LEASE},
        {"state-dir", required_argument, NULL, O_STATEDIR},
        {"idmap-domain", required_argument, NULL, O_IDMAP},
        {"no-delegations", no_argument, NULL, O_NODELEG},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    int ch;
    long v;
    const char *exports = NULL, *pidfile = NULL;
    while ((ch = getopt_long(argc, argv, "a:e:p:vh", lo, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'a':
            o.addr = optarg;
            break;
        case 'e':
            exports = optarg;
            break;
        case 'p':
            bad = parse_num(optarg, -1, 65535, &v);
            o.rdma_port = (int)v;
            break;
        case O_TCP:
            bad = parse_num(optarg, -1, 65535, &v);
            o.tcp_port = (int)v;
            break;
        case O_MOUNT:
            bad = parse_num(optarg, -1, 65535, &v);
            o.mount_port = (int)v;
            break;
        case O_V1:
            o.vers1_only = 1;
            break;
        case O_NRS:
            o.no_root_squash = 1;
            break;
        case O_NFS4:
            o.nfs4 = 1;
            break;
        case O_NO_NFS4:
            o.nfs4 = 0;
            break;
        case O_LEASE:
            bad = parse_num(optarg, 10, 3600, &v);
            o.lease_time = (unsigned)v;
            break;
        case O_STATEDIR:
            o.state_dir = optarg;
            break;
        case O_NODELEG:
            o.no_delegations = 1;
            break;
        case O_IDMAP:
            bad = !*optarg || strchr(optarg, '@') != NULL;
            o.idmap_domain = optarg;
            break;
        case O_AUID:
            bad = parse_num(optarg, 0, 0xffffffffL, &v);
            o.anon_uid = (uint32_t)v;
            break;
        case O_AGID:
            bad = parse_num(optarg, 0, 0xffffffffL, &v);
            o.anon_gid = (uint32_t)v;
            break;
        case O_MAXIO:
            bad = parse_num(optarg, 4096, 64L << 20, &v);
            o.max_io = (uint32_t)v;
            break;
        case O_THREADS:
            bad = parse_num(optarg, 1, 256, &v);
            o.rdma_threads = (unsigned)v;
            break;
        case O_INLINE:
            bad = parse_num(optarg, 1024, 262144, &v) || v % 1024;
            o.inline_size = (uint32_t)v;
            break;
        case O_DDP:
            bad = parse_num(optarg, 64, 1L << 30, &v);
            o.ddp_threshold = (uint32_t)v;
            break;
        case O_HANDLES:
            bad = parse_num(optarg, 16, 1L << 26, &v);
            o.max_handles = (unsigned)v;
            break;
        case O_TCP_THREADS:
            bad = parse_num(optarg, 1, 1024, &v);
            o.tcp_threads = (unsigned)v;
            break;
        case O_MAXCONN:
            bad = parse_num(optarg, 1, 1L << 20, &v);
            o.max_conns = (unsigned)v;
            break;
        case O_IDLE:
            bad = parse_num(optarg, 1, 1L << 24, &v);
            o.idle_timeout = (unsigned)v;
            break;
        case O_IOTMO:
            bad = parse_num(optarg, 1, 1L << 20, &v);
            o.io_timeout = (unsigned)v;
            break;
        case O_IOBUFS:
            bad = parse_num(optarg, 1, 65536, &v);
            o.io_buffers = (unsigned)v;
            break;
        case O_STATS:
            stats = true;
            break;
        case O_PIDFILE:
            pidfile = optarg;
            break;
        case O_RPCBIND:
            o.rpcbind = 1;
            break;
        case O_NO_RPCBIND:
            o.rpcbind = 0;
            break;
        case O_CHECK: {
            struct uiw__nfs_xtable t;
            char err[512];
            if (uiw__nfs_exports_load(optarg, &t, err, sizeof(err)) != 0) {
                fprintf(stderr, "uiw-nfsd: %s\n", err);
                return 1;
            }
            uiw__nfs_exports_print(stdout, &t);
            uiw__nfs_xtable_free(&t);
            return 0;
        }
        case 'v':
            o.verbose++;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case O_VERSION:
            printf("uiw-nfsd %s\n", UIW_VERSION);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "uiw-nfsd: bad value '%s'\n", optarg);
            return 2;
        }
    }
    if (!exports && optind >= argc) {
        if (access(UIW_NFSD_EXPORTS, F_OK) != 0) {
            fprintf(stderr, "uiw-nfsd: nothing to export: no EXPORT_DIR, no -e FILE, and no %s\n%s",
                    UIW_NFSD_EXPORTS, usage);
            return 2;
        }
        exports = UIW_NFSD_EXPORTS;
    }
    struct uiw__nfs_xtable table = {0};
    if (exports) {
        char err[512];
        if (uiw__nfs_exports_load(exports, &table, err, sizeof(err)) != 0) {
            fprintf(stderr, "uiw-nfsd: %s\n", err);
            return 1;
        }
    }
    /* Signals go to sigwait below, never to the server's threads. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct uiw__nfsd *s = uiw__nfsd_create(&o);
    if (!s) {
        fprintf(stderr, "uiw-nfsd: %s\n", strerror(errno));
        uiw__nfs_xtable_free(&table);
        return 1;
    }
    if (exports) {
        char err[512];
        int rc = uiw__nfsd_add_exports(s, &table, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "uiw-nfsd: %s: %s\n", exports, err);
            uiw__nfsd_destroy(s);
            return 1;
        }
    }
    for (int i = optind; i < argc; i++) {
        int rc = uiw__nfsd_add_export(s, argv[i]);
        if (rc != 0) {
            fprintf(stderr, "uiw-nfsd: export %s: %s\n", argv[i], strerror(-rc));
            uiw__nfsd_destroy(s);
            return 1;
        }
    }
    int rc = uiw__nfsd_start(s);
    if (rc != 0) {
        fprintf(stderr, "uiw-nfsd: cannot listen: %s\n", strerror(-rc));
        uiw__nfsd_destroy(s);
        return 1;
    }
    if (o.rdma_port >= 0 && uiw__nfsd_port(s, UIW__NFSD_RDMA) < 0)
        fprintf(stderr, "uiw-nfsd: built without the RPC-over-RDMA layer: TCP only\n");
    if (pidfile) {
        FILE *pf = fopen(pidfile, "w");
        if (!pf || fprintf(pf, "%ld\n", (long)getpid()) < 0 || fclose(pf) != 0) {
            fprintf(stderr, "uiw-nfsd: --pid-file %s: %s\n", pidfile, strerror(errno));
            uiw__nfsd_destroy(s);
            return 1;
        }
    }
    printf("uiw-nfsd: ready tcp=%d mount=%d rdma=%d\n", uiw__nfsd_port(s, UIW__NFSD_TCP),
           uiw__nfsd_port(s, UIW__NFSD_MOUNT), uiw__nfsd_port(s, UIW__NFSD_RDMA));
    fflush(stdout);
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0 || sig == SIGUSR1 || sig == SIGHUP) {
        if (sig == SIGUSR1 && stats)
            print_stats(s);
        if (sig == SIGHUP)
            reload(s, exports);
        sig = 0;
    }
    if (stats)
        print_stats(s);
    if (o.verbose)
        fprintf(stderr, "uiw-nfsd: signal %d: stopping\n", sig);
    uiw__nfsd_destroy(s);
    if (pidfile)
        unlink(pidfile);
    return 0;
}
