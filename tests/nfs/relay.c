#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "io/pcap.h"
#include "test.h"

struct relay {
    int lfd, target, port;
    pthread_t thread;
    pthread_mutex_t lock;
    uint64_t s2c, c2s, cut_at;
    int armed, dir, mid_record, stop;
    int half;     /* relay_half_fpdu armed */
    int hold[2];  /* per direction: bytes are not read (relay_hold) */
    unsigned gen; /* raised by relay_cut_all */
    unsigned cuts, live;
    char capture[512]; /* the next connection's capture ("": none) */
    /* relay_watch_rpc: the calls outstanding, and the WRITE reply held */
    int watch;
    double hold_secs, hold_until;
    int hold_state; /* 0: no WRITE yet; 1: its reply is held; 2: released */
    int released;   /* a WRITE of another file came */
    uint32_t hold_xid;
    struct call_seen *seen;
    size_t nseen, capseen;
    unsigned most_writes, most_calls, calls, replies;
};

/* A call forwarded whose reply has not been: its XID, and a WRITE's file handle. */
struct call_seen {
    uint32_t xid;
    int write;
    unsigned fhlen;
    uint8_t fh[64];
};

/* One direction of ONC RPC over TCP followed: where its records start (record marking),
 * and the first bytes of each. */
struct rpc_track {
    uint64_t left; /* bytes of the current fragment still to come */
    unsigned mark_got;
    uint8_t mark[4];
    int last;      /* the current fragment ends its record */
    int in_record; /* a record's fragments are being followed */
    int parsed;    /* its head was looked at */
    uint8_t head[1024];
    size_t head_len;
};

/* Where a client's MPA stream is: within the MPA Request (its 20-byte header, then its
 * private data), or within FPDUs (a 2-byte ULPDU length, the ULPDU, pad to 4, the CRC
 * field). */
struct mpa_track {
    int fpdus;       /* the Request is behind */
    unsigned have;   /* header (or length field) bytes seen */
    uint8_t hdr[20]; /* the Request's header / an FPDU's length field */
    uint64_t skip;   /* bytes of the current frame still to pass */
};

/* Follow n bytes of the stream; returns the index of the first byte at which an FPDU
 * starts (n if none does), and in *len that FPDU's length (0 if its length field is not
 * all in p). With `find`, it stops there, having consumed nothing from that byte on. */
static size_t mpa_follow(struct mpa_track *t, const uint8_t *p, size_t n, int find, size_t *len)
{
    for (size_t i = 0; i < n;) {
        if (t->skip) {
            size_t k = (uint64_t)(n - i) < t->skip ? n - i : (size_t)t->skip;
            t->skip -= k;
            i += k;
            continue;
        }
        if (t->fpdus && t->have == 0 && find) {
            size_t ul = n - i >= 2 ? (size_t)p[i] << 8 | p[i + 1] : 0;
            *len = ul ? 2 + ul + (4 - (2 + ul) % 4) % 4 + 4 : 0;
            return i;
        }
        t->hdr[t->have++] = p[i++];
        if (!t->fpdus && t->have == 20) { /* key, flags, rev, private data length */
            t->skip = (uint64_t)t->hdr[18] << 8 | t->hdr[19];
            t->fpdus = 1;
            t->have = 0;
        } else if (t->fpdus && t->have == 2) {
            size_t ul = (size_t)t->hdr[0] << 8 | t->hdr[1];
            t->skip = ul + (4 - (2 + ul) % 4) % 4 + 4;
            t->have = 0;
        }
    }
    return n;
}

struct pipe_pair {
    struct relay *r;
    int c, s; /* client side, server side */
    unsigned gen;
    struct uiw__pcap *pcap; /* or NULL */
    struct mpa_track c2s;   /* the client's MPA framing */
    int watch;              /* relay_watch_rpc: */
    struct rpc_track calls; /* the client's calls */
    uint8_t *sbuf, *side;   /* the server's bytes not yet forwarded; a reply set aside */
    size_t sn, scap, siden;
};

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A call's head (r->lock held): counted as outstanding, a WRITE with its file handle; the
 * first WRITE's reply to be held, released by a WRITE of another file. */
static void call_head(struct relay *r, const uint8_t *h, size_t n)
{
    if (n < 32 || be32(h + 4) != 0) /* xid, CALL */
        return;
    uint32_t proc = be32(h + 20);
    size_t pos = 24;
    for (int k = 0; k < 2; k++) { /* the credential and the verifier */
        if (pos + 8 > n)
            return;
        pos += 8 + ((be32(h + pos + 4) + 3u) & ~3u);
    }
    struct call_seen c = {.xid = be32(h), .write = proc == 7 /* NFSPROC3_WRITE */};
    if (c.write) {
        if (pos + 4 > n || be32(h + pos) > 64 || pos + 4 + be32(h + pos) > n)
            return;
        c.fhlen = be32(h + pos);
        memcpy(c.fh, h + pos + 4, c.fhlen);
    }
    if (r->nseen == r->capseen) {
        size_t cap = r->capseen ? 2 * r->capseen : 256;
        struct call_seen *v = realloc(r->seen, cap * sizeof(*v));
        CHECK(v != NULL);
        r->seen = v;
        r->capseen = cap;
    }
    r->seen[r->nseen++] = c;
    r->calls++;
    if (r->nseen > r->most_calls)
        r->most_calls = (unsigned)r->nseen;
    if (!c.write)
        return;
    /* WRITEs of different files outstanding now */
    unsigned files = 0;
    for (size_t i = 0; i < r->nseen; i++) {
        const struct call_seen *a = &r->seen[i];
        int before = 0;
        for (size_t k = 0; k < i && a->write && !before; k++)
            before = r->seen[k].write && r->seen[k].fhlen == a->fhlen &&
                     memcmp(r->seen[k].fh, a->fh, a->fhlen) == 0;
        files += a->write && !before;
    }
    if (files > r->most_writes)
        r->most_writes = files;
    if (r->hold_secs > 0 && r->hold_state == 0) {
        r->hold_state = 1;
        r->hold_xid = c.xid;
        r->hold_until = mono() + r->hold_secs;
    } else if (r->hold_state == 1 && files > 1) {
        r->released = 1;
    }
}

/* A reply forwarded (r->lock held): its call no longer outstanding. */
static void reply_seen(struct relay *r, uint32_t xid)
{
    for (size_t i = 0; i < r->nseen; i++)
        if (r->seen[i].xid == xid) {
            r->seen[i] = r->seen[--r->nseen];
            r->replies++;
            return;
        }
}

/* The client's bytes: each call's head looked at as its record passes. */
static void track_calls(struct relay *r, struct rpc_track *t, const uint8_t *p, size_t n)
{
    for (size_t i = 0;;) {
        if (t->in_record && !t->parsed &&
            (t->head_len == sizeof(t->head) || (t->left == 0 && t->mark_got == 0 && t->last))) {
            pthread_mutex_lock(&r->lock);
            call_head(r, t->head, t->head_len);
            pthread_mutex_unlock(&r->lock);
            t->parsed = 1;
        }
        if (t->left == 0 && t->mark_got == 0 && t->last)
            t->in_record = 0;
        if (i >= n)
            return;
        if (t->left == 0) {
            t->mark[t->mark_got++] = p[i++];
            if (t->mark_got == 4) {
                uint32_t m = be32(t->mark);
                t->mark_got = 0;
                t->left = m & 0x7fffffffu;
                t->last = (m >> 31) != 0;
                if (!t->in_record) {
                    t->in_record = 1;
                    t->parsed = 0;
                    t->head_len = 0;
                }
            }
            continue;
        }
        size_t k = (uint64_t)(n - i) < t->left ? n - i : (size_t)t->left;
        size_t room = sizeof(t->head) - t->head_len;
        memcpy(t->head + t->head_len, p + i, k < room ? k : room);
        t->head_len += k < room ? k : room;
        t->left -= k;
        i += k;
    }
}

/* The reply set aside goes once a WRITE of another file came, or its time is up. */
static int release_side(struct pipe_pair *pp)
{
    struct relay *r = pp->r;
    if (!pp->siden)
        return 0;
    pthread_mutex_lock(&r->lock);
    int go = r->released || mono() >= r->hold_until;
    if (go) {
        r->hold_state = 2;
        reply_seen(r, r->hold_xid);
    }
    pthread_mutex_unlock(&r->lock);
    if (!go)
        return 0;
    int rc = send_all(pp->c, (const char *)pp->side, pp->siden);
    pp->siden = 0;
    return rc;
}

/* The server's bytes, whole records at a time: each forwarded, but the held WRITE's reply
 * set aside. -1 when the client's end failed. */
static int replies(struct pipe_pair *pp, const char *buf, size_t n)
{
    struct relay *r = pp->r;
    if (pp->sn + n > pp->scap) {
        size_t cap = pp->scap ? pp->scap : 1 << 16;
        while (cap < pp->sn + n)
            cap *= 2;
        uint8_t *b = realloc(pp->sbuf, cap);
        CHECK(b != NULL);
        pp->sbuf = b;
        pp->scap = cap;
    }
    memcpy(pp->sbuf + pp->sn, buf, n);
    pp->sn += n;
    size_t at = 0;
    for (;;) {
        size_t pos = at;
        int whole = 0;
        while (pp->sn - pos >= 4) {
            uint32_t m = be32(pp->sbuf + pos);
            if (pp->sn - pos - 4 < (m & 0x7fffffffu))
                break;
            pos += 4 + (m & 0x7fffffffu);
            if (m >> 31) {
                whole = 1;
                break;
            }
        }
        if (!whole)
            break;
        uint32_t xid = pos - at >= 8 ? be32(pp->sbuf + at + 4) : 0;
        pthread_mutex_lock(&r->lock);
        int aside = r->hold_state == 1 && xid == r->hold_xid && !r->released &&
                    mono() < r->hold_until && !pp->siden;
        if (!aside)
            reply_seen(r, xid);
        pthread_mutex_unlock(&r->lock);
        if (aside) {
            pp->side = malloc(pos - at);
            CHECK(pp->side != NULL);
            memcpy(pp->side, pp->sbuf + at, pos - at);
            pp->siden = pos - at;
        } else if (send_all(pp->c, (const char *)pp->sbuf + at, pos - at) != 0) {
            return -1;
        }
        at = pos;
    }
    memmove(pp->sbuf, pp->sbuf + at, pp->sn - at);
    pp->sn -= at;
    return release_side(pp);
}

static void reset(int fd)
{
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

static void *pump(void *arg)
{
    struct pipe_pair *pp = arg;
    struct relay *r = pp->r;
    static _Thread_local char buf[1 << 16];
    uint64_t rec_left = 0; /* server-to-client: bytes of the current fragment still to come */
    unsigned mark_got = 0;
    uint8_t mark[4];
    int cut = 0;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        int stop = r->stop;
        cut = r->gen != pp->gen;
        short in_c = r->hold[RELAY_C2S] ? 0 : POLLIN, in_s = r->hold[RELAY_S2C] ? 0 : POLLIN;
        pthread_mutex_unlock(&r->lock);
        if (stop || cut)
            break;
        if (pp->watch && release_side(pp) != 0)
            break;
        struct pollfd pf[2] = {{pp->c, in_c, 0}, {pp->s, in_s, 0}};
        if (poll(pf, 2, 100) <= 0)
            continue;
        if ((!in_c && pf[0].revents) || (!in_s && pf[1].revents))
            break; /* an end gone while its bytes are held */
        if (pf[0].revents) {
            ssize_t n = recv(pp->c, buf, sizeof(buf), 0);
            if (n <= 0)
                break;
            size_t fwd = (size_t)n;
            pthread_mutex_lock(&r->lock);
            if (r->armed && r->dir == RELAY_C2S && r->c2s + (uint64_t)n >= r->cut_at) {
                fwd = (size_t)(r->cut_at - r->c2s);
                cut = 1;
                r->armed = 0;
            }
            const uint8_t *u = (const uint8_t *)buf;
            size_t len = 0, at = mpa_follow(&pp->c2s, u, fwd, r->half, &len);
            if (r->half && at < fwd) {
                /* up to the FPDU, then half of it (what of it is here, if less) */
                size_t part = len / 2 ? len / 2 : 1;
                fwd = at + (part < fwd - at ? part : fwd - at);
                mpa_follow(&pp->c2s, u + at, fwd - at, 0, &len);
                r->half = 0;
                r->hold[RELAY_C2S] = 1; /* what the client sends after it stays here */
            }
            r->c2s += fwd;
            pthread_mutex_unlock(&r->lock);
            uiw__pcap_data(pp->pcap, 1, &(struct iovec){buf, fwd}, 1, fwd);
            if (fwd && send_all(pp->s, buf, fwd) != 0)
                break;
            if (pp->watch)
                track_calls(r, &pp->calls, (const uint8_t *)buf, fwd);
            if (cut)
                break;
        }
        if (pf[1].revents && pp->watch) {
            ssize_t n = recv(pp->s, buf, sizeof(buf), 0);
            if (n <= 0 || replies(pp, buf, (size_t)n) != 0)
                break;
            pthread_mutex_lock(&r->lock);
            r->s2c += (uint64_t)n;
            pthread_mutex_unlock(&r->lock);
        } else if (pf[1].revents) {
            ssize_t n = recv(pp->s, buf, sizeof(buf), 0);
            if (n <= 0)
                break;
            size_t fwd = (size_t)n;
            pthread_mutex_lock(&r->lock);
            if (r->armed && r->dir == RELAY_S2C && r->s2c + (uint64_t)n >= r->cut_at) {
                if (!r->mid_record) {
                    fwd = (size_t)(r->cut_at - r->s2c);
                    cut = 1;
                } else {
                    /* the first record that starts at or after cut_at: its mark and 8
                     * bytes, then the cut */
                    for (size_t i = 0; i < (size_t)n; i++) {
                        int starts = rec_left == 0 && mark_got == 0;
                        if (starts && r->s2c + i >= r->cut_at) {
                            fwd = i + 12 < (size_t)n ? i + 12 : (size_t)n;
                            cut = 1;
                            break;
                        }
                        if (rec_left) {
                            rec_left--;
                        } else {
                            mark[mark_got++] = (uint8_t)buf[i];
                            if (mark_got == 4) {
                                rec_left = ((uint32_t)mark[0] << 24 | (uint32_t)mark[1] << 16 |
                                            (uint32_t)mark[2] << 8 | mark[3]) &
                                           0x7fffffffu;
                                mark_got = 0;
                            }
                        }
                    }
                }
                if (cut)
                    r->armed = 0;
            } else {
                /* follow the records (in case a cut in the middle of one is asked for) */
                for (size_t i = 0; i < (size_t)n; i++) {
                    if (rec_left) {
                        size_t k = (size_t)n - i < rec_left ? (size_t)n - i : (size_t)rec_left;
                        rec_left -= k;
                        i += k - 1;
                        continue;
                    }
                    mark[mark_got++] = (uint8_t)buf[i];
                    if (mark_got == 4) {
                        rec_left = ((uint32_t)mark[0] << 24 | (uint32_t)mark[1] << 16 |
                                    (uint32_t)mark[2] << 8 | mark[3]) &
                                   0x7fffffffu;
                        mark_got = 0;
                    }
                }
            }
            r->s2c += fwd;
            pthread_mutex_unlock(&r->lock);
            uiw__pcap_data(pp->pcap, 0, &(struct iovec){buf, fwd}, 1, fwd);
            if (fwd && send_all(pp->c, buf, fwd) != 0)
                break;
            if (cut)
                break;
        }
    }
    uiw__pcap_close(pp->pcap);
    free(pp->sbuf);
    free(pp->side);
    if (cut) {
        /* counted before the reset: a client that sees it may reconnect, retry and
         * finish before this thread runs again */
        pthread_mutex_lock(&r->lock);
        r->cuts++;
        pthread_mutex_unlock(&r->lock);
        reset(pp->c);
        reset(pp->s);
    } else {
        close(pp->c);
        close(pp->s);
    }
    pthread_mutex_lock(&r->lock);
    r->live--;
    pthread_mutex_unlock(&r->lock);
    free(pp);
    return NULL;
}

static void *accepter(void *arg)
{
    struct relay *r = arg;
    for (;;) {
        struct pollfd pf = {r->lfd, POLLIN, 0};
        int n = poll(&pf, 1, 100);
        pthread_mutex_lock(&r->lock);
        int stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stop)
            break;
        if (n <= 0)
            continue;
        int c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->target)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            if (s >= 0)
                close(s);
            close(c);
            continue;
        }
        struct pipe_pair *pp = malloc(sizeof(*pp));
        CHECK(pp != NULL);
        *pp = (struct pipe_pair){.r = r, .c = c, .s = s};
        pthread_mutex_lock(&r->lock);
        pp->gen = r->gen;
        pp->watch = r->watch;
        if (r->capture[0]) {
            /* the client's address and port as the client sees them, and the server's */
            struct sockaddr_in from;
            socklen_t fl = sizeof(from);
            CHECK_EQ(getpeername(c, (struct sockaddr *)&from, &fl), 0);
            pp->pcap = uiw__pcap_open(r->capture, (struct sockaddr *)&from, (struct sockaddr *)&sa);
            CHECK(pp->pcap != NULL);
            r->capture[0] = 0;
        }
        r->live++;
        pthread_mutex_unlock(&r->lock);
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, pump, pp), 0);
        pthread_detach(t);
    }
    return NULL;
}

struct relay *relay_start(int target_port)
{
    struct relay *r = calloc(1, sizeof(*r));
    CHECK(r != NULL);
    r->target = target_port;
    pthread_mutex_init(&r->lock, NULL);
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(r->lfd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_EQ(listen(r->lfd, 64), 0);
    socklen_t sl = sizeof(sa);
    CHECK_EQ(getsockname(r->lfd, (struct sockaddr *)&sa, &sl), 0);
    r->port = ntohs(sa.sin_port);
    CHECK_EQ(pthread_create(&r->thread, NULL, accepter, r), 0);
    return r;
}

int relay_port(const struct relay *r)
{
    return r->port;
}

void relay_cut_at(struct relay *r, int dir, uint64_t at, int mid_record)
{
    pthread_mutex_lock(&r->lock);
    r->dir = dir;
    r->cut_at = at;
    r->mid_record = mid_record;
    r->armed = 1;
    pthread_mutex_unlock(&r->lock);
}

void relay_half_fpdu(struct relay *r)
{
    pthread_mutex_lock(&r->lock);
    r->half = 1;
    pthread_mutex_unlock(&r->lock);
}

void relay_capture(struct relay *r, const char *path)
{
    pthread_mutex_lock(&r->lock);
    CHECK(strlen(path) < sizeof(r->capture));
    snprintf(r->capture, sizeof(r->capture), "%s", path);
    pthread_mutex_unlock(&r->lock);
}

void relay_cut_all(struct relay *r)
{
    pthread_mutex_lock(&r->lock);
    r->gen++;
    pthread_mutex_unlock(&r->lock);
}

void relay_hold(struct relay *r, int dir, int on)
{
    pthread_mutex_lock(&r->lock);
    r->hold[dir] = on;
    pthread_mutex_unlock(&r->lock);
}

void relay_watch_rpc(struct relay *r, double hold_secs)
{
    pthread_mutex_lock(&r->lock);
    r->watch = 1;
    r->hold_secs = hold_secs;
    pthread_mutex_unlock(&r->lock);
}

static unsigned locked_read(struct relay *r, const unsigned *v)
{
    pthread_mutex_lock(&r->lock);
    unsigned n = *v;
    pthread_mutex_unlock(&r->lock);
    return n;
}

unsigned relay_most_writes(struct relay *r)
{
    return locked_read(r, &r->most_writes);
}

unsigned relay_most_calls(struct relay *r)
{
    return locked_read(r, &r->most_calls);
}

unsigned relay_rpc_calls(struct relay *r)
{
    return locked_read(r, &r->calls);
}

unsigned relay_rpc_replies(struct relay *r)
{
    return locked_read(r, &r->replies);
}

unsigned relay_cuts(struct relay *r)
{
    pthread_mutex_lock(&r->lock);
    unsigned n = r->cuts;
    pthread_mutex_unlock(&r->lock);
    return n;
}

uint64_t relay_bytes(struct relay *r, int dir)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = dir == RELAY_S2C ? r->s2c : r->c2s;
    pthread_mutex_unlock(&r->lock);
    return n;
}

void relay_stop(struct relay *r)
{
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    close(r->lfd);
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&r->lock);
        unsigned live = r->live;
        pthread_mutex_unlock(&r->lock);
        if (!live)
            break;
        usleep(10000);
    }
    pthread_mutex_destroy(&r->lock);
    free(r->seen);
    free(r);
}
