/* libFuzzer target: uiw-nfsd's TCP byte stream as a peer sends it. The input, after its
 * first byte, is the stream (record marks, fragments, calls, anything); it goes through
 * the record-marking receiver a connection reads with (rm.c), in reads whose sizes the
 * first byte chooses, and every record handed out runs as the TCP service runs it
 * (uiw__nfs_call_large, then uiw__nfs_call_run) on an export of a file and a directory.
 *
 * Oracles: no crash, leak or over-read (ASan, LSan, UBSan); the receiver wants bytes
 * until the stream ends or it refuses a record longer than its limit (then nothing after
 * is read, as the connection closes), and never hands out more bytes than came; the
 * records handed out are the stream's fragments joined, in order (checked against a
 * parse of the stream here); each reply is one record whose mark gives its length, a
 * reply (an ONC RPC REPLY with the call's XID); no pooled buffer is kept after a call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "nfs/nfsd.h"
#include "nfs/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_IO 65536
#define LIMIT  (MAX_IO + 8192)

static struct uiw__nfsd *srv;
static struct uiw__nfs_pool *pool;
static char dir[64];

static void die(const char *what)
{
    fprintf(stderr, "fuzz-nfs_tcp: %s\n", what);
    abort();
}

static void rm_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz-nfs_tcp: could not remove %s\n", dir);
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/uiw-fuzz-nfs-tcp-XXXXXX");
    if (!mkdtemp(dir))
        die("mkdtemp");
    atexit(rm_dir);
    char p[128];
    snprintf(p, sizeof(p), "%s/f", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "hello\n", 6) != 6)
        die("a file in the export");
    close(fd);
    snprintf(p, sizeof(p), "%s/d", dir);
    if (mkdir(p, 0755) != 0)
        die("a directory in the export");
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.tcp_port = o.mount_port = o.rdma_port = -1;
    o.max_io = MAX_IO;
    srv = uiw__nfsd_create(&o);
    if (!srv || uiw__nfsd_add_export(srv, dir) != 0)
        die("the server");
    pool = uiw__nfs_pool_create(LIMIT, 4);
    if (!pool)
        die("the pool");
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The stream parsed here, the simple way: the next record's bytes (fragments joined)
 * into out; its length, -1 when the stream ends first, -2 for a record over the limit. */
static long next_record(const uint8_t *s, size_t n, size_t *at, uint8_t *out)
{
    size_t len = 0;
    for (;;) {
        if (n - *at < 4)
            return -1;
        uint32_t m = be32(s + *at);
        size_t fl = m & 0x7fffffffu;
        if (len + fl > LIMIT)
            return -2;
        if (n - *at - 4 < fl)
            return -1;
        memcpy(out + len, s + *at + 4, fl);
        len += fl;
        *at += 4 + fl;
        if (m & 0x80000000u)
            return (long)len;
    }
}

static void run(const uint8_t *rec, struct uiw__nfs_rec *r)
{
    struct uiw__nfs_peer peer;
    memset(&peer, 0, sizeof(peer));
    struct sockaddr_in *sin = (struct sockaddr_in *)&peer.addr;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(900);
    sin->sin_addr.s_addr = htonl(0x7f000001u);
    peer.len = sizeof(*sin);
    char *p = r->buf->data + r->off;
    struct uiw__nfs_buf *large =
        uiw__nfs_call_large(srv, p, r->len) ? uiw__nfs_pool_large(pool) : NULL;
    unsigned before = uiw__nfs_pool_large_taken(pool) - (unsigned)r->buf->large - (large != NULL);
    struct uiw__nfs_reply reply;
    int has = uiw__nfs_call_run(srv, pool, &peer, p, r->len, large, &reply);
    if (has) {
        size_t o = 0;
        static uint8_t flat[4 * LIMIT];
        for (int i = 0; i < reply.niov; i++) {
            if (o + reply.iov[i].iov_len > sizeof(flat))
                die("a reply longer than the largest");
            memcpy(flat + o, reply.iov[i].iov_base, reply.iov[i].iov_len);
            o += reply.iov[i].iov_len;
        }
        if (o != reply.len || o < 12 || be32(flat) != (0x80000000u | (uint32_t)(o - 4)))
            die("a reply record whose mark is not its length");
        if (r->len < 4 || memcmp(flat + 4, rec, 4) != 0 || be32(flat + 8) != 1)
            die("a reply that is not a REPLY with the call's XID");
        uiw__nfs_reply_free(pool, &reply);
    }
    uiw__nfs_pool_put(pool, r->buf);
    if (uiw__nfs_pool_large_taken(pool) != before)
        die("a call kept a large buffer");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t want[LIMIT];
    if (!srv)
        setup();
    if (size < 1)
        return 0;
    size_t piece = data[0] ? data[0] : SIZE_MAX;
    const uint8_t *s = data + 1;
    size_t n = size - 1, parsed = 0;
    struct uiw__nfs_rm r;
    uiw__nfs_rm_init(&r, pool, LIMIT);
    int refused = 0;
    for (size_t o = 0; o < n && !refused;) {
        struct iovec iov;
        int rc = uiw__nfs_rm_want(&r, &iov);
        if (rc == -EMSGSIZE) {
            refused = 1;
            break;
        }
        if (rc != 0)
            die("the receiver wants no bytes");
        size_t k = n - o < iov.iov_len ? n - o : iov.iov_len;
        if (k > piece)
            k = piece;
        memcpy(iov.iov_base, s + o, k);
        o += k;
        rc = uiw__nfs_rm_got(&r, k);
        if (rc == -EMSGSIZE)
            refused = 1;
        else if (rc != 0)
            die("the receiver failed within its limit");
        struct uiw__nfs_rec rec;
        while (uiw__nfs_rm_take(&r, &rec)) {
            long len;
            while ((len = next_record(s, n, &parsed, want)) == 0)
                ; /* empty records: no call, as the receiver drops them */
            if (len < 0 || (size_t)len != rec.len ||
                memcmp(want, rec.buf->data + rec.off, rec.len) != 0)
                die("the receiver handed out another record than the stream's");
            run(want, &rec);
        }
    }
    if (refused) {
        long len;
        while ((len = next_record(s, n, &parsed, want)) >= 0)
            if (len > 0)
                die("a record within the limit left behind a refused one");
        if (len != -2)
            die("a record refused that is within the limit");
    }
    uiw__nfs_rm_fini(&r);
    if (uiw__nfs_pool_large_taken(pool) != 0)
        die("the receiver kept a large buffer");
    return 0;
}
