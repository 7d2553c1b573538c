/*
 * src/rpc/xdr_pad.h against libtirpc: xdr_opaque, xdr_bytes and xdr_string give the same
 * bytes, positions, results and memory, every length from 0 to 9 (every pad), short
 * streams and sizes over the limit included; and threads decoding items with a pad at
 * once share nothing (ThreadSanitizer reported libtirpc's shared pad word).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/xdr_pad.h"
#include "test.h"

enum { BUF = 64 };

static void fill(char *p, u_int n, int seed)
{
    for (u_int i = 0; i < n; i++)
        p[i] = (char)('a' + (i * 7 + (u_int)seed) % 26);
}

/* Encode with libtirpc (which = 0) or ours (1) into b; returns the position, -1 on failure. */
static int enc_opaque(int which, char *b, u_int cap, char *item, u_int n)
{
    XDR x;
    xdrmem_create(&x, b, cap, XDR_ENCODE);
    bool_t ok = which ? uiw__xdr_opaque(&x, item, n) : xdr_opaque(&x, item, n);
    int pos = ok ? (int)xdr_getpos(&x) : -1;
    xdr_destroy(&x);
    return pos;
}

TEST(xdr_pad_opaque_as_libtirpc)
{
    for (u_int n = 0; n <= 9; n++) {
        char item[16], a[BUF], b[BUF];
        fill(item, n, (int)n);
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        int pa = enc_opaque(0, a, BUF, item, n), pb = enc_opaque(1, b, BUF, item, n);
        CHECK_EQ(pa, (int)((n + 3) & ~3u));
        CHECK_EQ(pb, pa);
        CHECK_MEM(a, b, sizeof(a));
        /* too short a stream for the item or its pad: both fail */
        if (n > 0) {
            CHECK_EQ(enc_opaque(0, a, (u_int)pa - 1, item, n), -1);
            CHECK_EQ(enc_opaque(1, b, (u_int)pa - 1, item, n), -1);
        }
        for (u_int cap = n ? (u_int)pa - 1 : 0; cap <= (u_int)pa; cap++) {
            char da[16], db[16];
            memset(da, 1, sizeof(da));
            memset(db, 1, sizeof(db));
            XDR xa, xb;
            xdrmem_create(&xa, a, cap, XDR_DECODE);
            xdrmem_create(&xb, a, cap, XDR_DECODE);
            bool_t ra = xdr_opaque(&xa, da, n), rb = uiw__xdr_opaque(&xb, db, n);
            CHECK_EQ(rb, ra);
            CHECK_EQ(ra, cap == (u_int)pa);
            if (ra) {
                CHECK_EQ(xdr_getpos(&xb), xdr_getpos(&xa));
                CHECK_MEM(db, item, n);
                CHECK_MEM(da, db, sizeof(da));
            }
            xdr_destroy(&xa);
            xdr_destroy(&xb);
        }
    }
}

TEST(xdr_pad_bytes_and_string_as_libtirpc)
{
    for (u_int n = 0; n <= 9; n++) {
        char item[16] = "", a[BUF], b[BUF];
        fill(item, n, 3);
        for (int str = 0; str < 2; str++) {
            char *ip = item;
            u_int len = n;
            XDR x;
            memset(a, 0, sizeof(a));
            memset(b, 0, sizeof(b));
            xdrmem_create(&x, a, BUF, XDR_ENCODE);
            CHECK(str ? xdr_string(&x, &ip, 9) : xdr_bytes(&x, &ip, &len, 9));
            u_int pos = xdr_getpos(&x);
            xdr_destroy(&x);
            xdrmem_create(&x, b, BUF, XDR_ENCODE);
            CHECK(str ? uiw__xdr_string(&x, &ip, 9) : uiw__xdr_bytes(&x, &ip, &len, 9));
            CHECK_EQ(xdr_getpos(&x), pos);
            xdr_destroy(&x);
            CHECK_MEM(a, b, sizeof(a));
            /* over the limit: both refuse, encoding and decoding */
            for (int ours = 0; ours < 2; ours++) {
                xdrmem_create(&x, b, BUF, XDR_ENCODE);
                if (n > 0) {
                    bool_t r =
                        str ? (ours ? uiw__xdr_string(&x, &ip, n - 1) : xdr_string(&x, &ip, n - 1))
                            : (ours ? uiw__xdr_bytes(&x, &ip, &len, n - 1)
                                    : xdr_bytes(&x, &ip, &len, n - 1));
                    CHECK_EQ(r, FALSE);
                }
                xdr_destroy(&x);
            }
            /* decoding into memory it allocates, whole or from a short stream, then freed */
            for (u_int cap = pos > 0 ? pos - 1 : 0; cap <= pos; cap++) {
                char *da = NULL, *db = NULL;
                u_int la = 77, lb = 77;
                XDR xa, xb;
                xdrmem_create(&xa, a, cap, XDR_DECODE);
                xdrmem_create(&xb, a, cap, XDR_DECODE);
                bool_t ra = str ? xdr_string(&xa, &da, 9) : xdr_bytes(&xa, &da, &la, 9);
                bool_t rb = str ? uiw__xdr_string(&xb, &db, 9) : uiw__xdr_bytes(&xb, &db, &lb, 9);
                CHECK_EQ(rb, ra);
                CHECK_EQ(ra, cap == pos);
                CHECK_EQ(lb, la);
                CHECK_EQ(db == NULL, da == NULL);
                if (ra) {
                    CHECK_EQ(xdr_getpos(&xb), xdr_getpos(&xa));
                    if (n > 0 || str)
                        CHECK_MEM(db, item, n + (u_int)str); /* a string ends with its NUL */
                }
                xdr_destroy(&xa);
                xdr_destroy(&xb);
                /* XDR_FREE: libtirpc's for its memory, ours for ours (both calloc'd) */
                XDR f = {.x_op = XDR_FREE};
                CHECK(str ? xdr_string(&f, &da, 9) : xdr_bytes(&f, &da, &la, 9));
                CHECK(str ? uiw__xdr_string(&f, &db, 9) : uiw__xdr_bytes(&f, &db, &lb, 9));
                CHECK(da == NULL && db == NULL);
            }
        }
    }
}

static char stream[8];

static void *decode_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        char out[4];
        XDR x;
        xdrmem_create(&x, stream, sizeof(stream), XDR_DECODE);
        CHECK(uiw__xdr_opaque(&x, out, 3));
        xdr_destroy(&x);
    }
    return NULL;
}

/* Two threads decode 3-byte opaques (a pad byte each) at once: under ThreadSanitizer,
 * libtirpc's xdr_opaque here is a race on its pad word; ours touches nothing shared. */
TEST(xdr_pad_threads_share_nothing)
{
    memcpy(stream, "abc\0\0\0\0", 8);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, decode_many, NULL), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
}
