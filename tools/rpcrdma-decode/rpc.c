/*
 * The ONC RPC message header (RFC 5531 section 9, struct rpc_msg without the procedure's
 * arguments or results) as JSON, for --rpc. Decoding only: on the way back the "rpc" key
 * is ignored (the payload bytes carry the RPC message).
 *
 * JSON names follow the XDR, except the AUTH_ERROR arm of rejected_reply, which RFC 5531
 * names "stat" like its discriminant: it is "auth_stat" here.
 */
#include <errno.h>

#include "rpcrdma.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct rdr {
    const uint8_t *p;
    size_t len, off;
    struct rd_buf *out;
};

static int rpc_get32(struct rdr *r, uint32_t *v)
{
    if (r->len - r->off < 4)
        return -EINVAL;
    const uint8_t *p = r->p + r->off;
    *v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    r->off += 4;
    return 0;
}

static void rpc_key(struct rd_buf *o, const char *sep, const char *key)
{
    rd_buf_puts(o, sep);
    rd_buf_put(o, "\"", 1);
    rd_buf_puts(o, key);
    rd_buf_put(o, "\":", 2);
}

/* A uint32 member. */
static int u32(struct rdr *r, const char *sep, const char *key, uint32_t *v)
{
    uint32_t tmp;
    if (!v)
        v = &tmp;
    if (rpc_get32(r, v) != 0)
        return -EINVAL;
    rpc_key(r->out, sep, key);
    rd_buf_u64(r->out, *v);
    return 0;
}

/* An enum member: names[v] when defined; an undefined value is an error unless the enum is
 * open (then it is written as a number). */
static int enm(struct rdr *r, const char *sep, const char *key, const char *const *names, size_t n,
               int open, uint32_t *v)
{
    if (rpc_get32(r, v) != 0)
        return -EINVAL;
    const char *name = *v < n ? names[*v] : NULL;
    if (!name && !open)
        return -EINVAL;
    rpc_key(r->out, sep, key);
    if (name) {
        rd_buf_put(r->out, "\"", 1);
        rd_buf_puts(r->out, name);
        rd_buf_put(r->out, "\"", 1);
    } else {
        rd_buf_u64(r->out, *v);
    }
    return 0;
}

static const char *const msg_type[] = {"CALL", "REPLY"};
static const char *const auth_flavor[] = {"AUTH_NONE", "AUTH_SYS", "AUTH_SHORT", "AUTH_DH",
                                          NULL,        NULL,       "RPCSEC_GSS"};
static const char *const reply_stat[] = {"MSG_ACCEPTED", "MSG_DENIED"};
static const char *const accept_stat[] = {"SUCCESS",      "PROG_UNAVAIL", "PROG_MISMATCH",
                                          "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"};
static const char *const reject_stat[] = {"RPC_MISMATCH", "AUTH_ERROR"};
static const char *const auth_stat[] = {
    "AUTH_OK",           "AUTH_BADCRED",           "AUTH_REJECTEDCRED",    "AUTH_BADVERF",
    "AUTH_REJECTEDVERF", "AUTH_TOOWEAK",           "AUTH_INVALIDRESP",     "AUTH_FAILED",
    "AUTH_KERB_GENERIC", "AUTH_TIMEEXPIRE",        "AUTH_TKT_FILE",        "AUTH_DECODE",
    "AUTH_NET_ADDR",     "RPCSEC_GSS_CREDPROBLEM", "RPCSEC_GSS_CTXPROBLEM"};

/* struct opaque_auth { auth_flavor flavor; opaque body<400>; } */
static int opaque_auth(struct rdr *r, const char *sep, const char *key)
{
    uint32_t v, n;
    rpc_key(r->out, sep, key);
    if (enm(r, "{", "flavor", auth_flavor, N(auth_flavor), 1, &v) != 0 || rpc_get32(r, &n) != 0)
        return -EINVAL;
    size_t pad = (4 - (n & 3)) & 3;
    if (n > 400 || n > r->len - r->off || pad > r->len - r->off - n)
        return -EINVAL;
    for (size_t i = 0; i < pad; i++)
        if (r->p[r->off + n + i] != 0)
            return -EINVAL;
    rpc_key(r->out, ",", "body");
    rd_buf_put(r->out, "\"", 1);
    rd_buf_hex(r->out, r->p + r->off, n);
    rd_buf_put(r->out, "\"}", 2);
    r->off += n + pad;
    return 0;
}

/* struct mismatch_info { unsigned int low; unsigned int high; } */
static int mismatch_info(struct rdr *r)
{
    rpc_key(r->out, ",", "mismatch_info");
    if (u32(r, "{", "low", NULL) != 0 || u32(r, ",", "high", NULL) != 0)
        return -EINVAL;
    rd_buf_put(r->out, "}", 1);
    return 0;
}

static int call_body(struct rdr *r)
{
    rpc_key(r->out, ",", "cbody");
    if (u32(r, "{", "rpcvers", NULL) != 0 || u32(r, ",", "prog", NULL) != 0 ||
        u32(r, ",", "vers", NULL) != 0 || u32(r, ",", "proc", NULL) != 0 ||
        opaque_auth(r, ",", "cred") != 0 || opaque_auth(r, ",", "verf") != 0)
        return -EINVAL;
    rd_buf_put(r->out, "}", 1);
    return 0;
}

static int reply_body(struct rdr *r)
{
    uint32_t stat, v;
    rpc_key(r->out, ",", "rbody");
    if (enm(r, "{", "stat", reply_stat, N(reply_stat), 0, &stat) != 0)
        return -EINVAL;
    if (stat == 0) { /* accepted_reply { verf; reply_data switching on accept_stat } */
        rpc_key(r->out, ",", "areply");
        if (opaque_auth(r, "{", "verf") != 0)
            return -EINVAL;
        rpc_key(r->out, ",", "reply_data");
        if (enm(r, "{", "stat", accept_stat, N(accept_stat), 0, &v) != 0)
            return -EINVAL;
        if (v == 2 && mismatch_info(r) != 0) /* PROG_MISMATCH */
            return -EINVAL;
        rd_buf_put(r->out, "}}", 2);
    } else { /* rejected_reply switching on reject_stat */
        rpc_key(r->out, ",", "rreply");
        if (enm(r, "{", "stat", reject_stat, N(reject_stat), 0, &v) != 0)
            return -EINVAL;
        if (v == 0 ? mismatch_info(r) != 0
                   : enm(r, ",", "auth_stat", auth_stat, N(auth_stat), 1, &v) != 0)
            return -EINVAL;
        rd_buf_put(r->out, "}", 1);
    }
    rd_buf_put(r->out, "}", 1);
    return 0;
}

int rd_render_rpc(const uint8_t *buf, size_t len, struct rd_buf *out)
{
    struct rdr r = {buf, len, 0, out};
    size_t start = out->len;
    uint32_t mtype;
    int rc = u32(&r, "{", "xid", NULL);
    if (rc == 0) {
        rpc_key(out, ",", "body");
        rc = enm(&r, "{", "mtype", msg_type, N(msg_type), 0, &mtype);
    }
    if (rc == 0)
        rc = mtype == 0 ? call_body(&r) : reply_body(&r);
    if (rc != 0) {
        out->len = start;
        return rc;
    }
    rd_buf_put(out, "}}", 2);
    return 0;
}
