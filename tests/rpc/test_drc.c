/* The duplicate-reply cache as another transport's server uses it (rpc/drc.h): replies
 * kept as bytes, and a retransmission that comes while its first copy runs. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc/drc.h"
#include "test.h"

static void key_of(struct uiw__drc_key *k, uint32_t xid, const char *args)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(800);
    sin->sin_addr.s_addr = htonl(0x7f000001u);
    uiw__drc_key(k, UIW__DRC_TCP, xid, 100003, 3, 12, &ss, args, strlen(args));
}

struct waiter {
    struct uiw__drc *d;
    struct uiw__drc_key k;
    int wait_ms;
    enum uiw__drc_verdict v;
    char out[64];
    uint32_t len;
    int slot;
};

static void *wait_for(void *arg)
{
    struct waiter *w = arg;
    w->v = uiw__drc_begin(w->d, &w->k, w, &w->slot, w->out, sizeof(w->out), &w->len, w->wait_ms);
    return NULL;
}

static void end_with(struct uiw__drc *d, int slot, void *owner, const char *reply, bool keep)
{
    struct iovec iov = {(void *)(uintptr_t)reply, strlen(reply)};
    uiw__drc_end(d, slot, owner, &iov, 1, keep);
}

/* A retransmission while the first copy runs waits for it and gets its reply; another
 * meanwhile gets WAIT at once; after the first's end, a retransmission gets the reply at
 * once; one with other arguments or another XID is another call. */
TEST(drc_bytes_retransmission_waits_for_the_first)
{
    struct uiw__drc *d = uiw__drc_create(8, 64);
    CHECK(d != NULL);
    struct uiw__drc_key k;
    key_of(&k, 1, "remove a");
    int slot, owner;
    char out[64];
    uint32_t len;
    CHECK_EQ(uiw__drc_begin(d, &k, &owner, &slot, out, sizeof(out), &len, 0), UIW__DRC_MISS);
    struct waiter w = {d, k, 5000, UIW__DRC_MISS, {0}, 0, -1};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, wait_for, &w), 0);
    usleep(100000);
    int other;
    CHECK_EQ(uiw__drc_begin(d, &k, &other, &slot, out, sizeof(out), &len, 5000), UIW__DRC_WAIT);
    end_with(d, 0, &owner, "removed", true);
    pthread_join(t, NULL);
    CHECK_EQ(w.v, UIW__DRC_HIT);
    CHECK_EQ(w.len, 7);
    CHECK_MEM(w.out, "removed", 7);
    CHECK_EQ(uiw__drc_begin(d, &k, &other, &slot, out, sizeof(out), &len, 0), UIW__DRC_HIT);
    CHECK_MEM(out, "removed", 7);
    struct uiw__drc_key k2;
    key_of(&k2, 1, "remove b");
    CHECK_EQ(uiw__drc_begin(d, &k2, &other, &slot, out, sizeof(out), &len, 0), UIW__DRC_MISS);
    end_with(d, slot, &other, "x", true);
    key_of(&k2, 2, "remove a");
    CHECK_EQ(uiw__drc_begin(d, &k2, &other, &slot, out, sizeof(out), &len, 0), UIW__DRC_MISS);
    end_with(d, slot, &other, "y", true);
    uiw__drc_free(d);
}

/* The waiting retransmission gives up after its time (WAIT), and runs itself (MISS) when
 * the first one's reply is not kept. */
TEST(drc_bytes_wait_bounded_and_uncached_first)
{
    struct uiw__drc *d = uiw__drc_create(8, 64);
    CHECK(d != NULL);
    struct uiw__drc_key k;
    key_of(&k, 7, "write");
    int slot, owner;
    char out[64];
    uint32_t len;
    CHECK_EQ(uiw__drc_begin(d, &k, &owner, &slot, out, sizeof(out), &len, 0), UIW__DRC_MISS);
    int first = slot;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    struct waiter w = {d, k, 200, UIW__DRC_MISS, {0}, 0, -1};
    wait_for(&w);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK_EQ(w.v, UIW__DRC_WAIT);
    long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
    CHECK(ms >= 150);
    /* a reply too long to keep: the waiter runs the call itself */
    w.wait_ms = 5000;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, wait_for, &w), 0);
    usleep(100000);
    char big[100];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    end_with(d, first, &owner, big, true);
    pthread_join(t, NULL);
    CHECK_EQ(w.v, UIW__DRC_MISS);
    CHECK(w.slot >= 0);
    end_with(d, w.slot, &w, "ok", true);
    CHECK_EQ(uiw__drc_begin(d, &k, &owner, &slot, out, sizeof(out), &len, 0), UIW__DRC_HIT);
    CHECK_MEM(out, "ok", 2);
    uiw__drc_free(d);
}

/* XIDs as clients make them, counters in network byte order (libtirpc's decremented,
 * Linux's incremented) or in host order: a full cache of 8192 (uiw-nfsd's) holds a short
 * chain in every bucket, and each call kept is found again. */
TEST(drc_xids_of_real_clients_spread_over_the_buckets)
{
    enum { N = 8192 };
    for (int kind = 0; kind < 3; kind++) {
        struct uiw__drc *d = uiw__drc_create(N, 64);
        CHECK(d != NULL);
        uint32_t xid = 0x5a3c9e17u, first = 0;
        int owner;
        for (uint32_t i = 0; i < 2 * N; i++) {
            if (kind == 0)
                xid = ntohl(htonl(xid) - 1);
            else if (kind == 1)
                xid = ntohl(htonl(xid) + 1);
            else
                xid++;
            if (i == N)
                first = xid;
            struct uiw__drc_key k;
            key_of(&k, xid, "args");
            int slot;
            char out[64];
            uint32_t len;
            CHECK_EQ(uiw__drc_begin(d, &k, &owner, &slot, out, sizeof(out), &len, 0),
                     UIW__DRC_MISS);
            end_with(d, slot, &owner, "reply", true);
        }
        uint32_t longest = uiw__drc_longest_chain(d);
        CHECK(longest >= 1 && longest <= 16);
        /* the second round's calls are all kept */
        xid = first;
        for (uint32_t i = 0; i < N; i += 97) {
            struct uiw__drc_key k;
            key_of(&k, xid, "args");
            int slot;
            char out[64];
            uint32_t len;
            CHECK_EQ(uiw__drc_begin(d, &k, &owner, &slot, out, sizeof(out), &len, 0), UIW__DRC_HIT);
            CHECK_MEM(out, "reply", 5);
            for (int j = 0; j < 97; j++)
                xid = kind == 0   ? ntohl(htonl(xid) - 1)
                      : kind == 1 ? ntohl(htonl(xid) + 1)
                                  : xid + 1;
        }
        uiw__drc_free(d);
    }
}
