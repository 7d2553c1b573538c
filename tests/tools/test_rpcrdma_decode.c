/* rpcrdma-decode: the built program, checked against hand-built messages and, as an
 * oracle, the project's header codec (<uiw/rpcrdma.h>). */
#include <arpa/inet.h>
#include <stdarg.h>
#include <unistd.h>

#include <uiw/rpcrdma.h>
#include <uiw/wire.h>

#include "interop.h"
#include "io/pcap.h"
#include "rnd.h"
#include "run.h"
#include "test.h"

#define TOOL UIW_BINARY_DIR "/tools/rpcrdma-decode"

/* ---------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------- */

struct text {
    char *p;
    size_t len, cap;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    CHECK(n >= 0);
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        t->p = realloc(t->p, cap);
        CHECK(t->p != NULL);
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static void text_hex(struct text *t, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        text_add(t, "%02x", p[i]);
}

static void run(const char *const *args, const char *in, size_t inlen, struct tool_run *r)
{
    const char *argv[8] = {TOOL};
    size_t i = 1;
    for (; args && *args; args++) {
        CHECK(i < 7);
        argv[i++] = *args;
    }
    argv[i] = NULL;
    tool_run(TOOL, argv, in, inlen, 30, r);
}

/* Line `i` (0-based) of text, copied into a malloc'ed string; NULL past the end. */
static char *line_at(const char *s, size_t i)
{
    for (; i > 0; i--) {
        s = strchr(s, '\n');
        if (!s)
            return NULL;
        s++;
    }
    if (!*s)
        return NULL;
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char *l = malloc(n + 1);
    CHECK(l != NULL);
    memcpy(l, s, n);
    l[n] = '\0';
    return l;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Big-endian words into bytes. */
static size_t words(uint8_t *out, size_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t w = va_arg(ap, uint32_t);
        out[4 * i] = (uint8_t)(w >> 24);
        out[4 * i + 1] = (uint8_t)(w >> 16);
        out[4 * i + 2] = (uint8_t)(w >> 8);
        out[4 * i + 3] = (uint8_t)w;
    }
    va_end(ap);
    return 4 * n;
}

#define W(...) (uint32_t[]){__VA_ARGS__}, sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)

static void add_words(struct text *t, const uint32_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        text_add(t, "%08x", w[i]);
    text_add(t, "\n");
}

/* The name the project's codec gives the error reply for a failed decode. */
static const char *oracle_error(int code, uint32_t vers)
{
    uint32_t e = uiw_rpcrdma_wire_error(code, vers);
    const char *name = uiw_rpcrdma_errcode_name(e, vers == 1 ? 1 : 2);
    CHECK(name != NULL);
    return name;
}

/* ---------------------------------------------------------------------------------------
 * Command line
 * ------------------------------------------------------------------------------------- */

TEST(rpcrdma_decode_help)
{
    struct tool_run r;
    run((const char *[]){"--help", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "usage: rpcrdma-decode") != NULL);
    CHECK(strstr(r.out, "--hex") && strstr(r.out, "--encode") && strstr(r.out, "--binary") &&
          strstr(r.out, "--rpc"));
    tool_run_free(&r);

    run((const char *[]){"-h", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "usage: rpcrdma-decode") != NULL);
    tool_run_free(&r);

    run((const char *[]){"--bogus", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 2);
    CHECK_EQ(r.outlen, 0);
    CHECK(strstr(r.err, "--bogus") != NULL);
    tool_run_free(&r);

    run((const char *[]){"--binary", NULL}, "", 0, &r); /* --binary needs --encode */
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);

    run((const char *[]){"/nonexistent/file", NULL}, "", 0, &r); /* a runtime failure */
    CHECK_EQ(r.status, 1);
    CHECK_EQ(r.outlen, 0);
    tool_run_free(&r);
}

/* ---------------------------------------------------------------------------------------
 * The example of the specification of the tool, both ways
 * ------------------------------------------------------------------------------------- */

static const char example_json[] =
    "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":32,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
    "MSG\",\"rdma_chunks\":{\"rdma_direction\":\"CALL\",\"rdma_inv_handle\":0,\"rdma_reads\":[],"
    "\"rdma_writes\":[{\"rdma_target\":[{\"rdma_handle\":4660,\"rdma_length\":1048576,\"rdma_"
    "offset\":140737488355328}]}],\"rdma_reply\":null}}}";

TEST(rpcrdma_decode_example)
{
    uint8_t msg[128];
    /* xid vers credit proc | dir inv | no reads | write list: 1, 1 segment, handle,
     * length, offset hi/lo, no more | no reply chunk */
    size_t n = words(msg, 15, 1u, 2u, 32u, 0u, 0u, 0u, 0u, 1u, 1u, 0x1234u, 0x100000u, 0x8000u, 0u,
                     0u, 0u);

    /* The codec agrees on what these bytes are. */
    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h;
    uiw_rpcrdma_space_init(&sp, &st);
    CHECK_EQ(uiw_rpcrdma_decode(msg, n, &h, &sp), (int)n);
    CHECK_EQ(h.u.chunks.nwrites, 1);
    CHECK_EQ(h.u.chunks.writes[0].segs[0].offset, 140737488355328ull);

    struct text hex = {0};
    text_hex(&hex, msg, n);
    text_add(&hex, "\n");

    struct tool_run r;
    run((const char *[]){"--hex", NULL}, hex.p, hex.len, &r);
    CHECK_EQ(r.status, 0);
    char *l = line_at(r.out, 0);
    CHECK_STR(l, example_json);
    CHECK_EQ(count_lines(r.out), 1);
    free(l);
    tool_run_free(&r);

    char in[sizeof example_json + 1];
    snprintf(in, sizeof in, "%s\n", example_json);
    run((const char *[]){"--encode", NULL}, in, strlen(in), &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, hex.p);
    tool_run_free(&r);
    free(hex.p);
}

/* ---------------------------------------------------------------------------------------
 * Round trips: every procedure of both versions, random content, the codec encodes
 * ------------------------------------------------------------------------------------- */

/* n random messages per procedure, encoded by the codec (some with payload); decode them
 * with the tool, check each decodes with the right procedure, encode the JSON with the
 * tool and compare with the original bytes. */
static void roundtrip(uint32_t vers, const int *procs, size_t nprocs, const char *const *names,
                      int per_proc)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ vers;
    static struct rnd_msg m;
    static uint8_t buf[65536];
    struct text hex = {0};
    const char *expect[512];
    size_t count = 0;

    for (size_t p = 0; p < nprocs; p++) {
        for (int i = 0; i < per_proc; i++) {
            rnd_msg(&m, &seed, vers, procs[p], false);
            int n = uiw_rpcrdma_encode(buf, sizeof buf, &m.h);
            CHECK(n > 0);
            size_t len = (size_t)n;
            if (i % 3 == 1) { /* an RPC payload after the header */
                size_t extra = 1 + rnd_below(&seed, 40);
                for (size_t k = 0; k < extra; k++)
                    buf[len++] = (uint8_t)rnd_next(&seed);
            }
            text_hex(&hex, buf, len);
            text_add(&hex, "\n");
            CHECK(count < 512);
            expect[count++] = names[p];
        }
    }

    struct tool_run dec, enc;
    run((const char *[]){"--hex", NULL}, hex.p, hex.len, &dec);
    CHECK_EQ(dec.status, 0);
    CHECK_EQ(count_lines(dec.out), count);
    for (size_t i = 0; i < count; i++) {
        char *l = line_at(dec.out, i);
        char want[64];
        snprintf(want, sizeof want, "\"%s\":\"%s\"", vers == 1 ? "proc" : "rdma_proc", expect[i]);
        if (!strstr(l, want))
            uiw_test_fail(__FILE__, __LINE__, "line %zu lacks %s: %s", i, want, l);
        free(l);
    }
    run((const char *[]){"--encode", NULL}, dec.out, dec.outlen, &enc);
    if (enc.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "encode failed: %s", enc.err);
    CHECK_EQ(enc.outlen, hex.len);
    CHECK_STR(enc.out, hex.p);
    tool_run_free(&dec);
    tool_run_free(&enc);
    free(hex.p);
}

TEST(rpcrdma_decode_roundtrip_v1)
{
    static const int procs[] = {UIW_RDMA_MSG, UIW_RDMA_NOMSG, UIW_RDMA_ERROR};
    static const char *const names[] = {"RDMA_MSG", "RDMA_NOMSG", "RDMA_ERROR"};
    roundtrip(1, procs, 3, names, 60);
}

TEST(rpcrdma_decode_roundtrip_v2)
{
    static const int procs[] = {UIW_RDMA_MSG,       UIW_RDMA_NOMSG,     UIW_RDMA_ERROR,
                                UIW_RDMA2_OPTIONAL, UIW_RDMA2_CONNPROP, UIW_RDMA2_REQPROP,
                                UIW_RDMA2_RESPROP,  UIW_RDMA2_UPDPROP};
    static const char *const names[] = {"RDMA2_MSG",      "RDMA2_NOMSG",    "RDMA2_ERROR",
                                        "RDMA2_OPTIONAL", "RDMA2_CONNPROP", "RDMA2_REQPROP",
                                        "RDMA2_RESPROP",  "RDMA2_UPDPROP"};
    roundtrip(2, procs, 8, names, 40);
}

/* Every arm of both error unions, and the JSON of each, exactly. */
TEST(rpcrdma_decode_error_messages)
{
    struct text in = {0};
    add_words(&in, W(5, 1, 0, 4, 1, 1, 1));
    add_words(&in, W(5, 1, 0, 4, 2));
    add_words(&in, W(6, 2, 3, 4, 1, 1, 2));
    add_words(&in, W(6, 2, 3, 4, 2));
    add_words(&in, W(6, 2, 3, 4, 3, 1, 4096));
    add_words(&in, W(6, 2, 3, 4, 4));
    add_words(&in, W(6, 2, 3, 4, 5));
    add_words(&in, W(6, 2, 3, 4, 6));
    add_words(&in, W(7, 9, 3, 4, 1, 1, 2)); /* ERR_VERS from a version-9 peer */
    static const char *const want[] = {
        "{\"rdma_xid\":5,\"rdma_vers\":1,\"rdma_credit\":0,\"rdma_body\":{\"proc\":\"RDMA_ERROR\","
        "\"rdma_error\":{\"err\":\"ERR_VERS\",\"range\":{\"rdma_vers_low\":1,\"rdma_vers_high\":"
        "1}}}}",
        "{\"rdma_xid\":5,\"rdma_vers\":1,\"rdma_credit\":0,\"rdma_body\":{\"proc\":\"RDMA_ERROR\","
        "\"rdma_error\":{\"err\":\"ERR_CHUNK\"}}}",
        "{\"rdma_xid\":6,\"rdma_vers\":2,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_VERS\",\"rdma_vrange\":{\"rdma_vers_"
        "low\":1,\"rdma_vers_high\":2}}}}",
        "{\"rdma_xid\":6,\"rdma_vers\":2,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_BAD_XDR\"}}}",
        "{\"rdma_xid\":6,\"rdma_vers\":2,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_REPLY_RESOURCE\",\"rdma_reply\":{"
        "\"rdma_segment_index\":1,\"rdma_length_needed\":4096}}}}",
        "{\"rdma_xid\":6,\"rdma_vers\":2,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_INVAL_PROC\"}}}",
        "{\"rdma_xid\":6,\"rdma_vers\":2,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_INVAL_OPTION\"}}}",
        "{\"rdma_xid\":6,\"rdma_vers\":2,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}}}",
        "{\"rdma_xid\":7,\"rdma_vers\":9,\"rdma_credit\":3,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"
        "ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_VERS\",\"rdma_vrange\":{\"rdma_vers_"
        "low\":1,\"rdma_vers_high\":2}}}}",
    };
    struct tool_run r, back;
    run((const char *[]){"--hex", NULL}, in.p, in.len, &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(count_lines(r.out), 9);
    for (size_t i = 0; i < 9; i++) {
        char *l = line_at(r.out, i);
        CHECK_STR(l, want[i]);
        free(l);
    }
    run((const char *[]){"--encode", NULL}, r.out, r.outlen, &back);
    CHECK_EQ(back.status, 0);
    CHECK_STR(back.out, in.p);
    tool_run_free(&r);
    tool_run_free(&back);
    free(in.p);
}

/* ---------------------------------------------------------------------------------------
 * Messages that do not decode
 * ------------------------------------------------------------------------------------- */

TEST(rpcrdma_decode_bad_messages)
{
    struct text in = {0};
    const char *want[64];
    size_t n = 0;
#define BAD(name, ...)                                                                             \
    do {                                                                                           \
        add_words(&in, W(__VA_ARGS__));                                                            \
        want[n++] = "{\"error\":\"" name "\"}";                                                    \
    } while (0)
    BAD("RDMA2_ERR_VERS", 1, 3, 1, 0, 0, 0, 0, 0, 0);          /* unknown version */
    BAD("RDMA2_ERR_VERS", 1, 0, 1, 0, 0, 0, 0, 0);             /* version 0 */
    BAD("RDMA2_ERR_VERS", 1, 3, 1, 4, 2);                      /* only ERR_VERS is universal */
    BAD("RDMA2_ERR_INVAL_PROC", 1, 2, 1, 2, 0, 0, 0, 0, 0);    /* v2 has no proc 2 */
    BAD("RDMA2_ERR_INVAL_PROC", 1, 2, 1, 10);                  /* nor 10 */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 0);                      /* truncated chunk lists */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 0, 2, 0, 0, 0, 0);       /* direction 2 */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 0, 0, 0, 2, 0, 0);       /* read list discriminator 2 */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 4, 7);                   /* undefined error code */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 6, 1, 1, 4, 512, 0);     /* RBSIZ below 1024 */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 6, 1, 2, 4, 3, 0);       /* BRS 3 */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 5, 0, 9, 3, 0x01020304); /* nonzero XDR pad */
    BAD("RDMA2_ERR_BAD_XDR", 1, 2, 1, 5, 0, 9, 8, 0);          /* opaque overruns */
    BAD("ERR_CHUNK", 1, 1, 1, 2, 0, 0, 0, 0, 0);               /* RDMA_MSGP */
    BAD("ERR_CHUNK", 1, 1, 1, 3);                              /* RDMA_DONE */
    BAD("ERR_CHUNK", 1, 1, 1, 5);                              /* v1 has no proc 5 */
    BAD("ERR_CHUNK", 1, 1, 1, 0, 0, 0);                        /* truncated */
    BAD("ERR_CHUNK", 1, 1, 1, 4, 3);                           /* undefined error code */
    BAD("ERR_CHUNK", 1, 1, 1, 0, 0, 1, 1, 0xFFFFFFFF, 0, 0);   /* segment count overruns */
    /* 17 write chunks: more than the receiver accepts */
    BAD("ERR_CHUNK", 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
        0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0);
    /* a good message in between still decodes */
    add_words(&in, W(1, 1, 1, 1, 0, 0, 0));
    want[n++] = "{\"rdma_xid\":1,\"rdma_vers\":1,\"rdma_credit\":1,\"rdma_body\":{\"proc\":"
                "\"RDMA_NOMSG\",\"rdma_nomsg\":{\"rdma_reads\":[],\"rdma_writes\":[],"
                "\"rdma_reply\":null}}}";
    /* 16 write chunks are accepted */
    add_words(&in, W(1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                     0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0));
    want[n++] = NULL;
    text_add(&in, "0000\n"); /* shorter than xid + vers */
    want[n++] = "{\"error\":\"RDMA2_ERR_BAD_XDR\"}";
    text_add(&in, "# a comment, then an empty line\n\n");
    text_add(&in, "zz\n"); /* not hex: reported on stderr, no output line */
    text_add(&in, "00000001 00000002 00000001 00000004 00000002\n"); /* spaces are fine */
    want[n++] = "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
                "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_BAD_XDR\"}}}";
#undef BAD

    struct tool_run r;
    run((const char *[]){"--hex", NULL}, in.p, in.len, &r);
    CHECK_EQ(r.status, 1);
    CHECK_EQ(count_lines(r.out), n);
    for (size_t i = 0; i < n; i++) {
        char *l = line_at(r.out, i);
        if (want[i])
            CHECK_STR(l, want[i]);
        else
            CHECK(strncmp(l, "{\"error\"", 8) != 0);
        free(l);
    }
    CHECK(strstr(r.err, "not hex") != NULL);
    tool_run_free(&r);

    /* Every line the codec refuses, the tool refuses with the reply the codec builds. */
    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h;
    uiw_rpcrdma_space_init(&sp, &st);
    for (size_t i = 0; i < n - 1; i++) { /* all but the spaced line */
        char *l = line_at(in.p, i);
        uint8_t msg[512];
        size_t len = strlen(l) / 2;
        CHECK(len <= sizeof msg);
        for (size_t k = 0; k < len; k++) {
            unsigned v;
            CHECK(sscanf(l + 2 * k, "%2x", &v) == 1);
            msg[k] = (uint8_t)v;
        }
        int rc = uiw_rpcrdma_decode(msg, len, &h, &sp);
        if (want[i] && strncmp(want[i], "{\"error\"", 8) == 0) {
            CHECK(rc < 0);
            char expect[64];
            snprintf(expect, sizeof expect, "{\"error\":\"%s\"}", oracle_error(rc, h.vers));
            CHECK_STR(want[i], expect);
        } else {
            CHECK_EQ(rc, (int)len);
        }
        free(l);
    }
    free(in.p);
}

/* ---------------------------------------------------------------------------------------
 * Differential: random and damaged messages, the codec's verdict is the oracle
 * ------------------------------------------------------------------------------------- */

TEST(rpcrdma_decode_differential)
{
    enum { N = 3000 };
    uint64_t seed = 0x1234567887654321ull;
    static struct rnd_msg m;
    static uint8_t msgs[N][1024];
    static size_t lens[N];
    struct text hex = {0};

    for (int i = 0; i < N; i++) {
        uint32_t vers = 1 + rnd_below(&seed, 2);
        rnd_msg(&m, &seed, vers, -1, rnd_below(&seed, 2));
        uint8_t *b = msgs[i];
        int n = uiw_rpcrdma_encode(b, sizeof msgs[i] - 64, &m.h);
        if (n < 0) { /* too large for the slot: use a bare header */
            n = (int)words(b, 7, 1u, vers, 1u, 1u, 0u, 0u, 0u);
        }
        size_t len = (size_t)n;
        switch (rnd_below(&seed, 8)) {
        case 0: /* intact */
            break;
        case 1: /* truncated */
            len = rnd_below(&seed, (uint32_t)len + 1);
            break;
        case 2: /* a payload follows */
            for (uint32_t k = 1 + rnd_below(&seed, 60); k; k--)
                b[len++] = (uint8_t)rnd_next(&seed);
            break;
        case 3: /* one byte flipped */
            b[rnd_below(&seed, (uint32_t)len)] ^= (uint8_t)(1u << rnd_below(&seed, 8));
            break;
        case 4:   /* one word set to a small value (discriminators, counts, versions) */
        case 5: { /* or to a huge one */
            size_t w = 4 * rnd_below(&seed, (uint32_t)len / 4);
            uint32_t v =
                rnd_below(&seed, 2) ? rnd_below(&seed, 12) : 0xFFFFFFFFu - rnd_below(&seed, 3);
            words(b + w, 1, v);
            break;
        }
        case 6: /* the version or the procedure changed */
            words(b + (rnd_below(&seed, 2) ? 4 : 12), 1, rnd_below(&seed, 12));
            break;
        default: /* random bytes */
            len = rnd_below(&seed, 64);
            for (size_t k = 0; k < len; k++)
                b[k] = (uint8_t)rnd_next(&seed);
            break;
        }
        lens[i] = len;
        if (len == 0) {
            text_add(&hex, "00\n"); /* an empty line would be skipped */
            lens[i] = 1;
            b[0] = 0;
        } else {
            text_hex(&hex, b, len);
            text_add(&hex, "\n");
        }
    }

    struct tool_run dec;
    run((const char *[]){"--hex", NULL}, hex.p, hex.len, &dec);
    CHECK(dec.status == 0 || dec.status == 1);
    CHECK_EQ(count_lines(dec.out), N);

    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h;
    uiw_rpcrdma_space_init(&sp, &st);
    struct text good_json = {0}, good_hex = {0};
    int nerr = 0, ngood = 0;
    for (int i = 0; i < N; i++) {
        char *l = line_at(dec.out, i);
        int rc = uiw_rpcrdma_decode(msgs[i], lens[i], &h, &sp);
        if (rc < 0) {
            char expect[64];
            snprintf(expect, sizeof expect, "{\"error\":\"%s\"}", oracle_error(rc, h.vers));
            if (strcmp(l, expect) != 0)
                uiw_test_fail(__FILE__, __LINE__, "message %d: codec says %s (%s), tool says %s", i,
                              expect, uiw_errname(rc), l);
            nerr++;
        } else {
            if (strncmp(l, "{\"error\"", 8) == 0)
                uiw_test_fail(__FILE__, __LINE__, "message %d: codec decodes it, tool says %s", i,
                              l);
            if ((size_t)rc < lens[i]) {
                char key[64];
                snprintf(key, sizeof key, ",\"header_length\":%d,", rc);
                CHECK(strstr(l, key) != NULL);
            } else {
                CHECK(strstr(l, "header_length") == NULL);
            }
            text_add(&good_json, "%s\n", l);
            text_hex(&good_hex, msgs[i], lens[i]);
            text_add(&good_hex, "\n");
            ngood++;
        }
        free(l);
    }
    CHECK_EQ(dec.status, nerr ? 1 : 0);
    /* Both outcomes are well represented. */
    CHECK(nerr > N / 10);
    CHECK(ngood > N / 10);

    /* Everything that decoded encodes back to the same bytes. */
    struct tool_run enc;
    run((const char *[]){"--encode", NULL}, good_json.p, good_json.len, &enc);
    if (enc.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "encode failed: %s", enc.err);
    CHECK_STR(enc.out, good_hex.p);
    tool_run_free(&dec);
    tool_run_free(&enc);
    free(hex.p);
    free(good_json.p);
    free(good_hex.p);
}

/* ---------------------------------------------------------------------------------------
 * Binary input and output
 * ------------------------------------------------------------------------------------- */

TEST(rpcrdma_decode_binary)
{
    uint8_t msg[64];
    size_t n = words(msg, 7, 0xAABBCCDDu, 1u, 128u, 1u, 0u, 0u, 0u);
    const char json[] =
        "{\"rdma_xid\":2864434397,\"rdma_vers\":1,\"rdma_credit\":128,\"rdma_body\":{\"proc\":"
        "\"RDMA_NOMSG\",\"rdma_nomsg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":"
        "null}}}\n";
    struct tool_run r;

    /* A binary message on standard input. */
    run(NULL, (const char *)msg, n, &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, json);
    tool_run_free(&r);

    /* From a file named on the command line, and "-" for standard input. */
    char path[] = "/tmp/uiw-rpcrdma-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, msg, n), (long)n);
    close(fd);
    run((const char *[]){path, NULL}, "", 0, &r);
    unlink(path);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, json);
    tool_run_free(&r);
    run((const char *[]){"-", NULL}, (const char *)msg, n, &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, json);
    tool_run_free(&r);

    /* A bad binary message: the error line and status 1. */
    run(NULL, (const char *)msg, 14, &r);
    CHECK_EQ(r.status, 1);
    CHECK_STR(r.out, "{\"error\":\"ERR_CHUNK\"}\n");
    tool_run_free(&r);

    /* --encode --binary writes the raw bytes, one message after another. */
    char two[512];
    snprintf(two, sizeof two, "%s%s", json, json);
    run((const char *[]){"--encode", "--binary", NULL}, two, strlen(two), &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(r.outlen, 2 * n);
    CHECK_MEM(r.out, msg, n);
    CHECK_MEM(r.out + n, msg, n);
    tool_run_free(&r);
}

/* ---------------------------------------------------------------------------------------
 * --rpc: the ONC RPC header after RDMA_MSG
 * ------------------------------------------------------------------------------------- */

TEST(rpcrdma_decode_rpc)
{
    struct text in = {0};
    /* v1 RDMA_MSG; RPC call xid 0x11, prog 100003 v3 proc 1, AUTH_SYS cred of 8 bytes,
     * AUTH_NONE verf, 4 bytes of arguments */
    add_words(&in, W(0x11, 1, 8, 0, 0, 0, 0, 0x11, 0, 2, 100003, 3, 1, 1, 8, 0xDEADBEEF, 0x01020304,
                     0, 0, 0x55));
    /* v2 RDMA2_MSG; reply accepted, SUCCESS, 4 bytes of results */
    add_words(&in, W(0x12, 2, 8, 0, 1, 0, 0, 0, 0, 0x12, 1, 0, 0, 0, 0, 7));
    /* v1 RDMA_MSG; reply accepted, PROG_MISMATCH 2..3 */
    add_words(&in, W(0x13, 1, 8, 0, 0, 0, 0, 0x13, 1, 0, 0, 0, 2, 2, 3));
    /* v1 RDMA_MSG; reply denied, AUTH_ERROR AUTH_TOOWEAK */
    add_words(&in, W(0x14, 1, 8, 0, 0, 0, 0, 0x14, 1, 1, 1, 5));
    /* v1 RDMA_MSG; reply denied, RPC_MISMATCH 2..2 */
    add_words(&in, W(0x15, 1, 8, 0, 0, 0, 0, 0x15, 1, 1, 0, 2, 2));
    /* v1 RDMA_MSG with a truncated RPC header */
    add_words(&in, W(0x16, 1, 8, 0, 0, 0, 0, 0x16, 0, 2));
    /* v1 RDMA_NOMSG: no RPC header to decode */
    add_words(&in, W(0x17, 1, 8, 1, 0, 0, 0));
    static const char *const want[] = {
        "{\"rdma_xid\":17,\"rdma_vers\":1,\"rdma_credit\":8,\"rdma_body\":{\"proc\":\"RDMA_MSG\","
        "\"rdma_msg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}},"
        "\"header_length\":28,\"payload_length\":52,\"rpc\":{\"xid\":17,\"body\":{\"mtype\":"
        "\"CALL\",\"cbody\":{\"rpcvers\":2,\"prog\":100003,\"vers\":3,\"proc\":1,\"cred\":{"
        "\"flavor\":\"AUTH_SYS\",\"body\":\"deadbeef01020304\"},\"verf\":{\"flavor\":"
        "\"AUTH_NONE\",\"body\":\"\"}}}}}",
        "{\"rdma_xid\":18,\"rdma_vers\":2,\"rdma_credit\":8,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_MSG\",\"rdma_chunks\":{\"rdma_direction\":\"REPLY\",\"rdma_inv_handle\":0,"
        "\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}},\"header_length\":36,"
        "\"payload_length\":28,\"rpc\":{\"xid\":18,\"body\":{\"mtype\":\"REPLY\",\"rbody\":{"
        "\"stat\":\"MSG_ACCEPTED\",\"areply\":{\"verf\":{\"flavor\":\"AUTH_NONE\",\"body\":\"\"},"
        "\"reply_data\":{\"stat\":\"SUCCESS\"}}}}}}",
        "{\"rdma_xid\":19,\"rdma_vers\":1,\"rdma_credit\":8,\"rdma_body\":{\"proc\":\"RDMA_MSG\","
        "\"rdma_msg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}},"
        "\"header_length\":28,\"payload_length\":32,\"rpc\":{\"xid\":19,\"body\":{\"mtype\":"
        "\"REPLY\",\"rbody\":{\"stat\":\"MSG_ACCEPTED\",\"areply\":{\"verf\":{\"flavor\":"
        "\"AUTH_NONE\",\"body\":\"\"},\"reply_data\":{\"stat\":\"PROG_MISMATCH\","
        "\"mismatch_info\":{\"low\":2,\"high\":3}}}}}}}",
        "{\"rdma_xid\":20,\"rdma_vers\":1,\"rdma_credit\":8,\"rdma_body\":{\"proc\":\"RDMA_MSG\","
        "\"rdma_msg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}},"
        "\"header_length\":28,\"payload_length\":20,\"rpc\":{\"xid\":20,\"body\":{\"mtype\":"
        "\"REPLY\",\"rbody\":{\"stat\":\"MSG_DENIED\",\"rreply\":{\"stat\":\"AUTH_ERROR\","
        "\"auth_stat\":\"AUTH_TOOWEAK\"}}}}}",
        "{\"rdma_xid\":21,\"rdma_vers\":1,\"rdma_credit\":8,\"rdma_body\":{\"proc\":\"RDMA_MSG\","
        "\"rdma_msg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}},"
        "\"header_length\":28,\"payload_length\":24,\"rpc\":{\"xid\":21,\"body\":{\"mtype\":"
        "\"REPLY\",\"rbody\":{\"stat\":\"MSG_DENIED\",\"rreply\":{\"stat\":\"RPC_MISMATCH\","
        "\"mismatch_info\":{\"low\":2,\"high\":2}}}}}}",
        "{\"rdma_xid\":22,\"rdma_vers\":1,\"rdma_credit\":8,\"rdma_body\":{\"proc\":\"RDMA_MSG\","
        "\"rdma_msg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}},"
        "\"header_length\":28,\"payload_length\":12,\"rpc\":null}",
        ("{\"rdma_xid\":23,\"rdma_vers\":1,\"rdma_credit\":8,\"rdma_body\":{\"proc\":\"RDMA_"
         "NOMSG\",\"rdma_nomsg\":{\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":null}}}"),
    };
    struct tool_run r;
    run((const char *[]){"--hex", "--rpc", "--no-payload", NULL}, in.p, in.len, &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(count_lines(r.out), 7);
    for (size_t i = 0; i < 7; i++) {
        char *l = line_at(r.out, i);
        CHECK_STR(l, want[i]);
        free(l);
    }
    tool_run_free(&r);

    /* With the payload, the "rpc" key is ignored on the way back. */
    struct tool_run back;
    run((const char *[]){"--hex", "--rpc", NULL}, in.p, in.len, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "\"payload\":\"000000110000000000000002000186a3") != NULL);
    run((const char *[]){"--encode", NULL}, r.out, r.outlen, &back);
    CHECK_EQ(back.status, 0);
    CHECK_STR(back.out, in.p);
    tool_run_free(&r);
    tool_run_free(&back);
    free(in.p);
}

/* ---------------------------------------------------------------------------------------
 * --encode: the JSON reader is strict and integers are exact
 * ------------------------------------------------------------------------------------- */

#define V2_NOMSG(inner)                                                                            \
    "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":\"RDMA2_"      \
    "NOMSG\",\"rdma_chunks\":{\"rdma_direction\":\"CALL\",\"rdma_inv_handle\":0,\"rdma_reads\":"   \
    "[],\"rdma_writes\":[{\"rdma_target\":[{\"rdma_handle\":1,\"rdma_length\":2,\"rdma_"           \
    "offset\":" inner "}]}],\"rdma_reply\":null}}}\n"

TEST(rpcrdma_decode_json_strict)
{
    static const char *const bad[] = {
        V2_NOMSG("1.0"),
        V2_NOMSG("1e3"),
        V2_NOMSG("01"),
        V2_NOMSG("-1"),
        V2_NOMSG("18446744073709551616"),
        V2_NOMSG("\"1\""),
        V2_NOMSG("true"),
        V2_NOMSG("null"),
        V2_NOMSG("1,\"rdma_offset\":2"), /* duplicate key */
        V2_NOMSG("1,\"extra\":2"),       /* key not in the XDR */
        V2_NOMSG("1 x"),
        "{\"rdma_xid\":4294967296,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}}}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_FOO\"}}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}}}\n", /* v1 name */
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\",\"rdma_vrange\":"
        "null}}}\n", /* a void arm has no field */
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_OPTIONAL\",\"rdma_optional\":{\"rdma_optdir\":\"CALL\",\"rdma_opttype\":1,"
        "\"rdma_optinfo\":\"ABCD\"}}}\n", /* opaque is lowercase hex */
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_OPTIONAL\",\"rdma_optional\":{\"rdma_optdir\":\"CALL\",\"rdma_opttype\":1,"
        "\"rdma_optinfo\":\"abc\"}}}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}},\"payload\":"
        "\"0\"}\n",
        "[1]\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}}\n", /* unclosed */
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYST\\q\"}}}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}},}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}}} {}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR\tSYSTEM\"}}}\n",
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"\\ud800\"}}}\n",
    };
    static const char *const good[] = {
        V2_NOMSG("18446744073709551615"),
        V2_NOMSG(" 0 "),
        /* escapes in keys and strings mean the same text */
        " { \"rdma\\u005fxid\" : 1 , \"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{"
        "\"rdma_proc\":\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_\\u0053YSTEM\"}"
        ",\"rdma_error\":null}}\n",
    };
    /* (the last "good" line has a duplicate key: it must fail too) */
    struct text in = {0};
    size_t nbad = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < nbad; i++) {
        text_add(&in, "%s", bad[i]);
        text_add(&in, "%s", good[i % 2]);
    }
    text_add(&in, "%s", good[2]);
    struct tool_run r;
    run((const char *[]){"--encode", NULL}, in.p, in.len, &r);
    CHECK_EQ(r.status, 1);
    CHECK_EQ(count_lines(r.out), nbad);
    CHECK_EQ(count_lines(r.err), nbad + 1);
    for (size_t i = 0; i < nbad; i++) {
        char *l = line_at(r.out, i);
        char *e = line_at(r.err, i);
        CHECK_STR(l, i % 2 ? "00000001000000020000000100000001000000000000000000000000000000"
                             "0100000001000000010000000200000000000000000000000000000000"
                           : "00000001000000020000000100000001000000000000000000000000000000"
                             "01000000010000000100000002ffffffffffffffff0000000000000000");
        char where[32];
        snprintf(where, sizeof where, "line %zu:", 2 * i + 1);
        CHECK(strstr(e, where) != NULL);
        free(l);
        free(e);
    }
    tool_run_free(&r);

    /* Objects are small in this JSON: a huge one is refused without quadratic work. */
    struct text huge = {0};
    text_add(&huge, "{\"rdma_xid\":1");
    for (int i = 0; i < 300; i++)
        text_add(&huge, ",\"k%d\":%d", i, i);
    text_add(&huge, "}\n");
    run((const char *[]){"--encode", NULL}, huge.p, huge.len, &r);
    CHECK_EQ(r.status, 1);
    CHECK_EQ(r.outlen, 0);
    CHECK(strstr(r.err, "more than 256 members") != NULL);
    tool_run_free(&r);
    free(huge.p);

    /* The escaped key without the duplicate is accepted. */
    const char ok[] = "{\"rdma\\u005fxid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{"
                      "\"rdma_proc\":\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_"
                      "\\u0053YSTEM\"}}}\n";
    run((const char *[]){"--encode", NULL}, ok, strlen(ok), &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, "000000010000000200000001000000040000000"
                     "6\n");
    tool_run_free(&r);
    free(in.p);
}

/* What the codec does not encode, the tool does not either: Version One's "not to be used"
 * procedures, messages of an unknown version other than the ERR_VERS reply (whose layout
 * every version shares), known properties with values a receiver refuses. Each is
 * reported on its line; the lines around still encode. Read, such messages are refused
 * with the error a receiver answers. */
TEST(rpcrdma_decode_encode_refused)
{
    const char in[] =
        "{\"rdma_xid\":1,\"rdma_vers\":1,\"rdma_credit\":1,\"rdma_body\":{\"proc\":\"RDMA_DONE\"}}"
        "\n"
        "{\"rdma_xid\":1,\"rdma_vers\":1,\"rdma_credit\":1,\"rdma_body\":{\"proc\":\"RDMA_MSGP\","
        "\"rdma_msgp\":{\"rdma_align\":4,\"rdma_thresh\":8,\"rdma_reads\":[],\"rdma_writes\":[],"
        "\"rdma_reply\":null}}}\n"
        "{\"rdma_xid\":1,\"rdma_vers\":7,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_SYSTEM\"}}}\n"
        "{\"rdma_xid\":1,\"rdma_vers\":2,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_UPDPROP\",\"rdma_updprop\":{\"rdma_now\":[{\"rdma_which\":1,\"rdma_data\":"
        "\"00000200\"}]}}}\n"
        "{\"rdma_xid\":1,\"rdma_vers\":7,\"rdma_credit\":1,\"rdma_body\":{\"rdma_proc\":"
        "\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_ERR_VERS\",\"rdma_vrange\":{"
        "\"rdma_vers_low\":7,\"rdma_vers_high\":7}}}}\n";
    struct tool_run r, back;
    run((const char *[]){"--encode", NULL}, in, strlen(in), &r);
    CHECK_EQ(r.status, 1);
    /* only the version-7 ERR_VERS reply is written */
    CHECK_STR(r.out, "000000010000000700000001000000040000000100000007000000"
                     "07\n");
    CHECK_EQ(count_lines(r.err), 4);
    char *e = line_at(r.err, 0);
    CHECK(strstr(e, "line 1:") && strstr(e, "RDMA_DONE"));
    free(e);
    e = line_at(r.err, 1);
    CHECK(strstr(e, "line 2:") && strstr(e, "RDMA_MSGP"));
    free(e);
    e = line_at(r.err, 2);
    CHECK(strstr(e, "line 3:") && strstr(e, "version 7"));
    free(e);
    e = line_at(r.err, 3);
    CHECK(strstr(e, "line 4:") && strstr(e, "rdma_now[0]"));
    free(e);
    run((const char *[]){"--hex", NULL}, r.out, r.outlen, &back);
    CHECK_EQ(back.status, 0);
    CHECK_STR(back.out,
              "{\"rdma_xid\":1,\"rdma_vers\":7,\"rdma_credit\":1,\"rdma_body\":{"
              "\"rdma_proc\":\"RDMA2_ERROR\",\"rdma_error\":{\"rdma_err\":\"RDMA2_"
              "ERR_VERS\",\"rdma_vrange\":{\"rdma_vers_low\":7,\"rdma_vers_high\":7}}}}\n");
    tool_run_free(&r);
    tool_run_free(&back);

    /* The same messages built by hand are refused when read. */
    const char hex[] = "00000001000000010000000100000003\n"
                       "000000010000000100000001000000020000000400000008000000000000000000000000\n"
                       "0000000100000007000000010000000400000006\n"
                       "000000010000000200000001000000090000000100000001000000040000020"
                       "0\n";
    run((const char *[]){"--hex", NULL}, hex, strlen(hex), &back);
    CHECK_EQ(back.status, 1);
    CHECK_STR(back.out, "{\"error\":\"ERR_CHUNK\"}\n{\"error\":\"ERR_CHUNK\"}\n"
                        "{\"error\":\"RDMA2_ERR_VERS\"}\n{\"error\":\"RDMA2_ERR_BAD_XDR\"}\n");
    tool_run_free(&back);
}

/* The encoder has no receive caps: a header a receiver refuses for its size (17 write
 * chunks, 20 segments in one chunk) is written, to test peers, and refused when read. */
TEST(rpcrdma_decode_encode_beyond_caps)
{
    struct text in = {0}, want = {0};
    text_add(&in, "{\"rdma_xid\":3,\"rdma_vers\":1,\"rdma_credit\":2,\"rdma_body\":{\"proc\":"
                  "\"RDMA_NOMSG\",\"rdma_nomsg\":{\"rdma_reads\":[],\"rdma_writes\":[");
    text_add(&want, "00000003000000010000000200000001" /* xid vers credit NOMSG */
                    "00000000");                       /* no reads */
    for (int i = 0; i < 17; i++) {
        text_add(&in, "%s{\"target\":[]}", i ? "," : "");
        text_add(&want, "0000000100000000");
    }
    text_add(&in, "],\"rdma_reply\":{\"target\":[");
    text_add(&want, "00000000" /* end of the write list */
                    "0000000100000014");
    for (int i = 0; i < 20; i++) {
        text_add(&in, "%s{\"handle\":%d,\"length\":4,\"offset\":%d}", i ? "," : "", i, 8 * i);
        text_add(&want, "%08x00000004%016x", i, 8 * i);
    }
    text_add(&in, "]}}}}\n");
    text_add(&want, "\n");

    struct tool_run r, back;
    run((const char *[]){"--encode", NULL}, in.p, in.len, &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, want.p);
    run((const char *[]){"--hex", NULL}, r.out, r.outlen, &back);
    CHECK_EQ(back.status, 1);
    CHECK_STR(back.out, "{\"error\":\"ERR_CHUNK\"}\n");
    tool_run_free(&r);
    tool_run_free(&back);
    free(in.p);
    free(want.p);
}

/* Version One objects carry RFC 8166's field names (xdr_rdma_segment, xdr_read_chunk,
 * xdr_write_chunk), Version Two the draft's. */
TEST(rpcrdma_decode_v1_field_names)
{
    /* xid 9, vers 1, credit 4, RDMA_MSG | read list: position 8, handle 0x11, length 100,
     * offset 0x22 | write list: one chunk of one segment | reply chunk: none */
    const char hex[] = "00000009000000010000000400000000"
                       "000000010000000800000011000000640000000000000022"
                       "00000000"
                       "000000010000000100000033000000c8000000000000004400000000"
                       "00000000\n";
    struct tool_run r;
    run((const char *[]){"--hex", "--no-payload", NULL}, hex, strlen(hex), &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, "{\"rdma_xid\":9,\"rdma_vers\":1,\"rdma_credit\":4,\"rdma_body\":{\"proc\":"
                     "\"RDMA_MSG\",\"rdma_msg\":{\"rdma_reads\":[{\"position\":8,\"target\":"
                     "{\"handle\":17,\"length\":100,\"offset\":34}}],\"rdma_writes\":[{\"target\""
                     ":[{\"handle\":51,\"length\":200,\"offset\":68}]}],\"rdma_reply\":null}}}\n");
    /* and back */
    struct tool_run back;
    run((const char *[]){"--encode", NULL}, r.out, r.outlen, &back);
    CHECK_EQ(back.status, 0);
    CHECK_STR(back.out, hex);
    tool_run_free(&back);
    /* the Version Two names are refused in a Version One object */
    const char *bad =
        "{\"rdma_xid\":9,\"rdma_vers\":1,\"rdma_credit\":4,\"rdma_body\":{\"proc\":"
        "\"RDMA_MSG\",\"rdma_msg\":{\"rdma_reads\":[{\"rdma_position\":8,"
        "\"rdma_target\":{\"rdma_handle\":17,\"rdma_length\":100,\"rdma_offset\":34}}],"
        "\"rdma_writes\":[],\"rdma_reply\":null}}}\n";
    run((const char *[]){"--encode", NULL}, bad, strlen(bad), &back);
    CHECK_EQ(back.status, 1);
    tool_run_free(&back);
    tool_run_free(&r);
}

/* --private: what the Linux kernel's NFS server sends (after its MPA Rev 2 IRD/ORD words),
 * what uiw sends, and data of another format. */
TEST(rpcrdma_decode_private)
{
    struct tool_run r;
    run((const char *[]){"--private", "f6ab0e1801000303", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, "{\"format_identifier\":4138405400,\"version\":1,\"reserved\":0,"
                     "\"remote_invalidation\":false,\"send_size\":4096,\"receive_size\":4096}\n");
    tool_run_free(&r);
    run((const char *[]){"--private", "00100010f6ab0e1801010f03", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, "{\"format_identifier\":4138405400,\"version\":1,\"reserved\":0,"
                     "\"remote_invalidation\":true,\"send_size\":16384,\"receive_size\":4096,"
                     "\"mpa_ird\":16,\"mpa_ord\":16}\n");
    tool_run_free(&r);
    run((const char *[]){"--private", "f6ab0e1802000303", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 1);
    CHECK_STR(r.out, "{\"error\":\"not RFC 8797 private data\"}\n");
    tool_run_free(&r);
    run((const char *[]){"--private", "f6ab0e", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 1);
    tool_run_free(&r);
    run((const char *[]){"--private", "zz", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    run((const char *[]){"--private", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    run((const char *[]){"--version", NULL}, "", 0, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "rpcrdma-decode (uiw) ") == r.out);
    tool_run_free(&r);
}

/* ---------------------------------------------------------------------------------------
 * --pcap: the Sends of a captured iWARP connection
 * ------------------------------------------------------------------------------------- */

/* A connection written by the project's capture writer, its MPA frames and FPDUs built
 * by the project's framing code. */
struct conv {
    struct uiw__pcap *pc;
    uint32_t msn[2]; /* next Send MSN, by direction (1: the requester's) */
    int corrupt;     /* flip a CRC byte of the next FPDU */
};

static void conv_bytes(struct conv *cv, int from_requester, const uint8_t *b, size_t n)
{
    struct iovec iov = {(void *)(uintptr_t)b, n};
    uiw__pcap_data(cv->pc, from_requester, &iov, 1, n);
}

/* One FPDU of a DDP segment: header h, then payload p[0..n). */
static void conv_fpdu(struct conv *cv, int from_requester, const struct uiw_ddp_hdr *h,
                      const uint8_t *p, size_t n)
{
    uint8_t hdr[UIW_DDP_UNTAGGED_HDR_LEN], f[512];
    ssize_t hl = uiw_ddp_hdr_encode(h, hdr, sizeof(hdr));
    CHECK(hl > 0);
    struct uiw_wire_iov iov[2] = {{hdr, (size_t)hl}, {p, n}};
    ssize_t fl = uiw_fpdu_encode(iov, 2, true, f, sizeof(f));
    CHECK(fl > 0);
    if (cv->corrupt) {
        f[fl - 1] ^= 1;
        cv->corrupt = 0;
    }
    conv_bytes(cv, from_requester, f, (size_t)fl);
}

/* A Send of m[0..n) in segments of at most seg bytes. */
static void conv_send(struct conv *cv, int from_requester, const uint8_t *m, size_t n, size_t seg)
{
    struct uiw_ddp_hdr h = {.rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_SEND), .qn = UIW_DDP_QN_SEND};
    h.msn = ++cv->msn[from_requester];
    size_t off = 0;
    do {
        size_t k = n - off < seg ? n - off : seg;
        h.mo = (uint32_t)off;
        h.last = off + k == n;
        conv_fpdu(cv, from_requester, &h, m + off, k);
        off += k;
    } while (off < n);
}

static void conv_mpa(struct conv *cv, int from_requester)
{
    struct uiw_mpa_frame f = {.kind = from_requester ? UIW_MPA_REQUEST : UIW_MPA_REPLY,
                              .flags = UIW_MPA_FLAG_CRC,
                              .rev = 1};
    uint8_t b[64];
    ssize_t n = uiw_mpa_frame_encode(&f, b, sizeof(b));
    CHECK(n > 0);
    conv_bytes(cv, from_requester, b, (size_t)n);
}

/* A capture of 10.0.0.1:40000 (the requester) with 10.0.0.2:20049: a forward call whose
 * Send comes in two segments, a backward call and its reply (Version Two), an RDMA Write
 * and a zero-length Send between them (neither is a message), and the forward reply,
 * which has a bad CRC when corrupt_last. */
static void write_capture(const char *path, int corrupt_last)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(40000)};
    struct sockaddr_in b = {.sin_family = AF_INET, .sin_port = htons(20049)};
    inet_pton(AF_INET, "10.0.0.1", &a.sin_addr);
    inet_pton(AF_INET, "10.0.0.2", &b.sin_addr);
    struct conv cv = {
        uiw__pcap_open(path, (struct sockaddr *)&a, (struct sockaddr *)&b), {0, 0}, 0};
    CHECK(cv.pc != NULL);
    conv_mpa(&cv, 1);
    conv_mpa(&cv, 0);
    uint8_t m[256];
    /* forward CALL xid 7: NFS (100003) v4 COMPOUND, AUTH_NONE, 4 bytes of arguments */
    size_t n = words(m, 17, 7, 2, 8, 0, 0, 0, 0, 0, 0, 7, 0, 2, 100003, 4, 1, 0, 0);
    n += words(m + n, 3, 0, 0, 0x55);
    conv_send(&cv, 1, m, n, 30);
    /* a zero-length Send (an RFC 6581 ready-to-send) and an RDMA Write of the server */
    conv_send(&cv, 0, m, 0, 30);
    struct uiw_ddp_hdr w = {.tagged = true,
                            .last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_WRITE),
                            .stag = 0x1234,
                            .to = 0};
    conv_fpdu(&cv, 0, &w, m, 16);
    /* backward CALL xid 9: the callback program 0x40000000 v1 proc 1 */
    n = words(m, 20, 9, 2, 8, 0, 0, 0, 0, 0, 0, 9, 0, 2, 0x40000000, 1, 1, 0, 0, 0, 0, 0x66);
    conv_send(&cv, 0, m, n, 200);
    /* its REPLY from the requester, accepted, SUCCESS */
    n = words(m, 16, 9, 2, 8, 0, 1, 0, 0, 0, 0, 9, 1, 0, 0, 0, 0, 0);
    conv_send(&cv, 1, m, n, 200);
    /* the forward REPLY xid 7 */
    n = words(m, 16, 7, 2, 8, 0, 1, 0, 0, 0, 0, 7, 1, 0, 0, 0, 0, 0);
    cv.corrupt = corrupt_last;
    conv_send(&cv, 0, m, n, 200);
    CHECK(!uiw__pcap_failed(cv.pc));
    uiw__pcap_close(cv.pc);
}

/* The value of "key": in line, up to the next ',' or '}'. */
static void key_is(const char *line, const char *key, const char *want)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(line, k);
    if (!p)
        uiw_test_fail(__FILE__, __LINE__, "no %s in %s", key, line);
    p += strlen(k);
    size_t n = strcspn(p, ",}");
    if (strlen(want) != n || memcmp(p, want, n) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s is %.*s, not %s, in %s", key, (int)n, p, want, line);
}

TEST(rpcrdma_decode_pcap)
{
    char dir[512], path[600], bad[600];
    it_tmpdir(dir, sizeof(dir), "rddpcap");
    snprintf(path, sizeof(path), "%s/c.pcap", dir);
    snprintf(bad, sizeof(bad), "%s/bad.pcap", dir);
    write_capture(path, 0);
    write_capture(bad, 1);
    struct tool_run r;
    run((const char *[]){"--pcap", "--rpc", "--no-payload", path, NULL}, "", 0, &r);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "status %d: %s", r.status, r.err);
    CHECK_EQ(count_lines(r.out), 4);
    static const struct {
        const char *xid, *src, *dst, *mtype, *backward;
    } want[] = {
        {"7", "\"10.0.0.1:40000\"", "\"10.0.0.2:20049\"", "\"CALL\"", "false"},
        {"9", "\"10.0.0.2:20049\"", "\"10.0.0.1:40000\"", "\"CALL\"", "true"},
        {"9", "\"10.0.0.1:40000\"", "\"10.0.0.2:20049\"", "\"REPLY\"", "true"},
        {"7", "\"10.0.0.2:20049\"", "\"10.0.0.1:40000\"", "\"REPLY\"", "false"},
    };
    unsigned long last = 0;
    for (size_t i = 0; i < 4; i++) {
        char *l = line_at(r.out, i);
        key_is(l, "rdma_xid", want[i].xid);
        key_is(l, "rdma_vers", "2");
        key_is(l, "xid", want[i].xid);
        key_is(l, "mtype", want[i].mtype);
        key_is(l, "rdma_direction", want[i].mtype);
        key_is(l, "src", want[i].src);
        key_is(l, "dst", want[i].dst);
        key_is(l, "backward", want[i].backward);
        unsigned long frame = strtoul(strstr(l, "\"frame\":") + 8, NULL, 10);
        CHECK(frame > last);
        last = frame;
        free(l);
    }
    /* the call's header, as --hex decodes the message */
    CHECK(strstr(r.out, "{\"rdma_xid\":7,\"rdma_vers\":2,\"rdma_credit\":8,\"rdma_body\":{"
                        "\"rdma_proc\":\"RDMA2_MSG\",\"rdma_chunks\":{\"rdma_direction\":\"CALL\","
                        "\"rdma_inv_handle\":0,\"rdma_reads\":[],\"rdma_writes\":[],\"rdma_reply\":"
                        "null}},\"header_length\":36,\"payload_length\":44,\"rpc\":{\"xid\":7,"
                        "\"body\":{\"mtype\":\"CALL\",\"cbody\":{\"rpcvers\":2,\"prog\":100003,"
                        "\"vers\":4,\"proc\":1,") == r.out);
    /* with the payload, every line encodes back to the message it came from */
    struct tool_run full, back;
    run((const char *[]){"--pcap", path, NULL}, "", 0, &full);
    CHECK_EQ(full.status, 0);
    run((const char *[]){"--encode", NULL}, full.out, full.outlen, &back);
    CHECK_EQ(back.status, 0);
    CHECK_EQ(count_lines(back.out), 4);
    char *l = line_at(back.out, 1);
    CHECK_STR(l, "000000090000000200000008000000000000000000000000000000000000000000000000"
                 "0000000900000000000000024000000000000001000000010000000000000000000000000000"
                 "000000000066");
    free(l);
    tool_run_free(&full);
    tool_run_free(&back);
    tool_run_free(&r);
    /* a bad CRC: the messages before it, the error, status 1 */
    run((const char *[]){"--pcap", bad, NULL}, "", 0, &r);
    CHECK_EQ(r.status, 1);
    CHECK_EQ(count_lines(r.out), 3);
    CHECK(strstr(r.err, "10.0.0.2:20049 > 10.0.0.1:40000: MPA CRC error") != NULL);
    tool_run_free(&r);
    /* not a pcap file; --pcap with --hex */
    run((const char *[]){"--pcap", NULL},
        "\x0a\x0d\x0d\x0a"
        "0123456789abcdefghijklmnop",
        30, &r);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "not a pcap file") != NULL);
    tool_run_free(&r);
    run((const char *[]){"--pcap", "--hex", path, NULL}, "", 0, &r);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    it_rmtree(dir);
}
