#include "xdr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <uiw/error.h>

/* ---------------------------------------------------------------------------------------
 * XDR -> JSON
 * ------------------------------------------------------------------------------------- */

struct dctx {
    const uint8_t *buf;
    size_t len, off;
    struct rd_buf *out;
    uint32_t counts[RD_XCOUNTERS];
};

static int get32(struct dctx *c, uint32_t *v)
{
    if (c->len - c->off < 4)
        return UIW_E_RPCRDMA_TRUNCATED;
    const uint8_t *p = c->buf + c->off;
    *v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    c->off += 4;
    return 0;
}

static const char *enum_name(const struct rd_xtype *t, uint32_t v)
{
    for (size_t i = 0; i < t->nenums; i++)
        if (t->enums[i].value == v)
            return t->enums[i].name;
    return NULL;
}

static void put_key(struct rd_buf *out, const char *name)
{
    rd_buf_put(out, "\"", 1);
    rd_buf_puts(out, name);
    rd_buf_put(out, "\":", 2);
}

static void put_name(struct rd_buf *out, const char *name)
{
    rd_buf_put(out, "\"", 1);
    rd_buf_puts(out, name);
    rd_buf_put(out, "\"", 1);
}

/* Writes the JSON of discriminant / enum value v of type t (an enum or uint32). */
static int put_enum(const struct rd_xtype *t, uint32_t v, struct rd_buf *out)
{
    if (t->kind != RD_XENUM) {
        rd_buf_u64(out, v);
        return 0;
    }
    const char *name = enum_name(t, v);
    if (name) {
        put_name(out, name);
        return 0;
    }
    if (t->open) {
        rd_buf_u64(out, v);
        return 0;
    }
    return t->bad_enum_error ? t->bad_enum_error : UIW_E_RPCRDMA_BAD_ENUM;
}

static const struct rd_xarm *find_arm(const struct rd_xtype *u, uint32_t v)
{
    for (size_t i = 0; i < u->narms; i++)
        if (u->arms[i].value == v)
            return &u->arms[i];
    return u->dflt;
}

static int dec(struct dctx *c, const struct rd_xtype *t)
{
    size_t start = c->off;
    uint32_t v, n;
    int r;
    switch (t->kind) {
    case RD_XU32:
        if ((r = get32(c, &v)) != 0)
            return r;
        rd_buf_u64(c->out, v);
        break;
    case RD_XU64: {
        uint32_t lo;
        if ((r = get32(c, &v)) != 0 || (r = get32(c, &lo)) != 0)
            return r;
        rd_buf_u64(c->out, (uint64_t)v << 32 | lo);
        break;
    }
    case RD_XENUM:
        if ((r = get32(c, &v)) != 0)
            return r;
        if ((r = put_enum(t, v, c->out)) != 0)
            return r;
        break;
    case RD_XOPAQUE: {
        if ((r = get32(c, &n)) != 0)
            return r;
        if (t->max && n > t->max)
            return t->cap_error ? t->cap_error : UIW_E_RPCRDMA_TRUNCATED;
        size_t pad = (4 - (n & 3)) & 3;
        if (n > c->len - c->off || pad > c->len - c->off - n)
            return UIW_E_RPCRDMA_TRUNCATED;
        for (size_t i = 0; i < pad; i++)
            if (c->buf[c->off + n + i] != 0)
                return UIW_E_RPCRDMA_BAD_PAD;
        rd_buf_put(c->out, "\"", 1);
        rd_buf_hex(c->out, c->buf + c->off, n);
        rd_buf_put(c->out, "\"", 1);
        c->off += (size_t)n + pad;
        break;
    }
    case RD_XSTRUCT:
        rd_buf_put(c->out, "{", 1);
        for (size_t i = 0; i < t->nfields; i++) {
            if (i)
                rd_buf_put(c->out, ",", 1);
            put_key(c->out, t->fields[i].name);
            if ((r = dec(c, t->fields[i].type)) != 0)
                return r;
        }
        rd_buf_put(c->out, "}", 1);
        break;
    case RD_XUNION: {
        if ((r = get32(c, &v)) != 0)
            return r;
        const struct rd_xarm *arm = find_arm(t, v);
        if (!arm)
            return t->disc->bad_enum_error ? t->disc->bad_enum_error : UIW_E_RPCRDMA_BAD_ENUM;
        if (arm->refused)
            return arm->refused;
        rd_buf_put(c->out, "{", 1);
        put_key(c->out, t->disc_name);
        if ((r = put_enum(t->disc, v, c->out)) != 0)
            return r;
        if (arm->name) {
            rd_buf_put(c->out, ",", 1);
            put_key(c->out, arm->name);
            if ((r = dec(c, arm->type)) != 0)
                return r;
        }
        rd_buf_put(c->out, "}", 1);
        break;
    }
    case RD_XARRAY:
        if ((r = get32(c, &n)) != 0)
            return r;
        if (t->max && n > t->max)
            return UIW_E_RPCRDMA_TRUNCATED;
        if (t->cap && n > t->cap)
            return t->cap_error;
        /* Every element type takes at least 4 bytes. */
        if (n > (c->len - c->off) / 4)
            return UIW_E_RPCRDMA_TRUNCATED;
        rd_buf_put(c->out, "[", 1);
        for (uint32_t i = 0; i < n; i++) {
            if (i)
                rd_buf_put(c->out, ",", 1);
            if ((r = dec(c, t->elem)) != 0)
                return r;
        }
        rd_buf_put(c->out, "]", 1);
        break;
    case RD_XLIST:
        rd_buf_put(c->out, "[", 1);
        for (n = 0;; n++) {
            if ((r = get32(c, &v)) != 0)
                return r;
            if (v == 0)
                break;
            if (v != 1)
                return UIW_E_RPCRDMA_BAD_BOOL;
            if (t->cap && n >= t->cap)
                return t->cap_error;
            if (n)
                rd_buf_put(c->out, ",", 1);
            if ((r = dec(c, t->elem)) != 0)
                return r;
        }
        rd_buf_put(c->out, "]", 1);
        break;
    case RD_XOPTION:
        if ((r = get32(c, &v)) != 0)
            return r;
        if (v == 0) {
            rd_buf_puts(c->out, "null");
        } else if (v == 1) {
            if ((r = dec(c, t->elem)) != 0)
                return r;
        } else {
            return UIW_E_RPCRDMA_BAD_BOOL;
        }
        break;
    }
    if (t->counter != RD_XCOUNTER_NONE && ++c->counts[t->counter] > t->counter_max)
        return t->counter_error;
    if (t->check && (r = t->check(c->buf + start, c->off - start)) != 0)
        return r;
    return 0;
}

long rd_xdr_decode(const struct rd_xtype *t, const uint8_t *buf, size_t len, struct rd_buf *out)
{
    struct dctx c = {.buf = buf, .len = len, .out = out};
    int r = dec(&c, t);
    if (r != 0)
        return r;
    if (out->oom)
        return -ENOMEM;
    return (long)c.off;
}

/* ---------------------------------------------------------------------------------------
 * JSON -> XDR
 * ------------------------------------------------------------------------------------- */

struct ectx {
    const struct rd_jdoc *doc;
    struct rd_buf *out;
    char *err;
    size_t errlen;
    char path[512];
    size_t plen;
};

static int efail(struct ectx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int efail(struct ectx *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", c->plen ? c->path : "(top level)", msg);
    return -EINVAL;
}

static size_t push_key(struct ectx *c, const char *name)
{
    size_t old = c->plen;
    int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "%s%s", c->plen ? "." : "", name);
    if (n > 0)
        c->plen = c->plen + (size_t)n < sizeof c->path ? c->plen + (size_t)n : sizeof c->path - 1;
    return old;
}

static size_t push_index(struct ectx *c, size_t i)
{
    size_t old = c->plen;
    int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);
    if (n > 0)
        c->plen = c->plen + (size_t)n < sizeof c->path ? c->plen + (size_t)n : sizeof c->path - 1;
    return old;
}

static void pop(struct ectx *c, size_t old)
{
    c->plen = old;
    c->path[old] = '\0';
}

static const char *jtype_name(enum rd_jtype t)
{
    switch (t) {
    case RD_JNULL:
        return "null";
    case RD_JFALSE:
    case RD_JTRUE:
        return "a boolean";
    case RD_JINT:
        return "an integer";
    case RD_JSTR:
        return "a string";
    case RD_JARR:
        return "an array";
    case RD_JOBJ:
        return "an object";
    }
    return "?";
}

static int want_u32(struct ectx *c, const struct rd_jval *v, uint32_t *out)
{
    if (v->type != RD_JINT || v->neg || v->u > UINT32_MAX)
        return efail(c, "expected an integer 0..4294967295, got %s",
                     v->type == RD_JINT ? "an integer out of range" : jtype_name(v->type));
    *out = (uint32_t)v->u;
    return 0;
}

/* The value of enum / discriminant JSON v for type t. */
static int want_enum(struct ectx *c, const struct rd_xtype *t, const struct rd_jval *v,
                     uint32_t *out)
{
    if (t->kind != RD_XENUM)
        return want_u32(c, v, out);
    if (v->type == RD_JSTR) {
        const char *s = rd_json_str(c->doc, v);
        for (size_t i = 0; i < t->nenums; i++) {
            if (strcmp(t->enums[i].name, s) == 0) {
                *out = t->enums[i].value;
                return 0;
            }
        }
        return efail(c, "\"%s\" is not an enumerator of %s", s, t->name);
    }
    if (t->open && v->type == RD_JINT)
        return want_u32(c, v, out);
    return efail(c, "expected an enumerator of %s, got %s", t->name, jtype_name(v->type));
}

static int is_extra(const char *const *extra, const char *key)
{
    for (; extra && *extra; extra++)
        if (strcmp(*extra, key) == 0)
            return 1;
    return 0;
}

/* Every member of object v must be one of names[0..n) or an extra key. */
static int check_keys(struct ectx *c, const struct rd_jval *v, const char *const *names, size_t n,
                      const char *const *extra)
{
    for (const struct rd_jval *m = rd_json_at(c->doc, v->child); m;
         m = rd_json_at(c->doc, m->next)) {
        const char *key = rd_json_keyname(c->doc, m);
        int ok = is_extra(extra, key);
        for (size_t i = 0; i < n && !ok; i++)
            ok = names[i] && strcmp(names[i], key) == 0;
        if (!ok)
            return efail(c, "unexpected key \"%s\"", key);
    }
    return 0;
}

static int enc(struct ectx *c, const struct rd_xtype *t, const struct rd_jval *v,
               const char *const *extra);

static int enc_member(struct ectx *c, const struct rd_jval *obj, const char *name,
                      const struct rd_xtype *t)
{
    const struct rd_jval *m = rd_json_get(c->doc, obj, name);
    if (!m)
        return efail(c, "missing key \"%s\"", name);
    size_t old = push_key(c, name);
    int r = enc(c, t, m, NULL);
    if (r == 0)
        pop(c, old);
    return r;
}

static int enc(struct ectx *c, const struct rd_xtype *t, const struct rd_jval *v,
               const char *const *extra)
{
    uint32_t u = 0;
    int r;
    switch (t->kind) {
    case RD_XU32:
        if ((r = want_u32(c, v, &u)) != 0)
            return r;
        rd_buf_be32(c->out, u);
        return 0;
    case RD_XU64:
        if (v->type != RD_JINT || v->neg)
            return efail(c, "expected an integer 0..18446744073709551615, got %s",
                         v->type == RD_JINT ? "a negative integer" : jtype_name(v->type));
        rd_buf_be64(c->out, v->u);
        return 0;
    case RD_XENUM:
        if ((r = want_enum(c, t, v, &u)) != 0)
            return r;
        rd_buf_be32(c->out, u);
        return 0;
    case RD_XOPAQUE: {
        if (v->type != RD_JSTR)
            return efail(c, "expected a lowercase hex string, got %s", jtype_name(v->type));
        if (v->len % 2 != 0 || v->len / 2 > UINT32_MAX)
            return efail(c, "odd number of hex digits");
        size_t n = v->len / 2;
        if (t->max && n > t->max)
            return efail(c, "%zu bytes exceed the bound of %u", n, (unsigned)t->max);
        rd_buf_be32(c->out, (uint32_t)n);
        if (rd_hex_decode(c->out, rd_json_str(c->doc, v), v->len, 0, 1) != 0)
            return c->out->oom ? -ENOMEM : efail(c, "not a lowercase hex string");
        static const uint8_t zero[4];
        rd_buf_put(c->out, zero, (4 - (n & 3)) & 3);
        return 0;
    }
    case RD_XSTRUCT: {
        if (v->type != RD_JOBJ)
            return efail(c, "expected an object (%s), got %s", t->name, jtype_name(v->type));
        const char *names[16];
        for (size_t i = 0; i < t->nfields; i++) {
            if ((r = enc_member(c, v, t->fields[i].name, t->fields[i].type)) != 0)
                return r;
            if (i < 16)
                names[i] = t->fields[i].name;
        }
        return check_keys(c, v, names, t->nfields < 16 ? t->nfields : 16, extra);
    }
    case RD_XUNION: {
        if (v->type != RD_JOBJ)
            return efail(c, "expected an object (%s), got %s", t->name, jtype_name(v->type));
        const struct rd_jval *d = rd_json_get(c->doc, v, t->disc_name);
        if (!d)
            return efail(c, "missing key \"%s\"", t->disc_name);
        size_t old = push_key(c, t->disc_name);
        if ((r = want_enum(c, t->disc, d, &u)) != 0)
            return r;
        pop(c, old);
        const struct rd_xarm *arm = find_arm(t, u);
        if (!arm)
            return efail(c, "%s has no arm for \"%s\" %u", t->name, t->disc_name, (unsigned)u);
        rd_buf_be32(c->out, u);
        if (arm->name && (r = enc_member(c, v, arm->name, arm->type)) != 0)
            return r;
        const char *names[2] = {t->disc_name, arm->name};
        return check_keys(c, v, names, 2, extra);
    }
    case RD_XARRAY: {
        if (v->type != RD_JARR)
            return efail(c, "expected an array, got %s", jtype_name(v->type));
        if (v->count > UINT32_MAX || (t->max && v->count > t->max))
            return efail(c, "too many elements (%zu)", v->count);
        rd_buf_be32(c->out, (uint32_t)v->count);
        size_t i = 0;
        for (const struct rd_jval *e = rd_json_at(c->doc, v->child); e;
             e = rd_json_at(c->doc, e->next), i++) {
            size_t old = push_index(c, i);
            if ((r = enc(c, t->elem, e, NULL)) != 0)
                return r;
            pop(c, old);
        }
        return 0;
    }
    case RD_XLIST: {
        if (v->type != RD_JARR)
            return efail(c, "expected an array, got %s", jtype_name(v->type));
        size_t i = 0;
        for (const struct rd_jval *e = rd_json_at(c->doc, v->child); e;
             e = rd_json_at(c->doc, e->next), i++) {
            size_t old = push_index(c, i);
            rd_buf_be32(c->out, 1);
            if ((r = enc(c, t->elem, e, NULL)) != 0)
                return r;
            pop(c, old);
        }
        rd_buf_be32(c->out, 0);
        return 0;
    }
    case RD_XOPTION:
        if (v->type == RD_JNULL) {
            rd_buf_be32(c->out, 0);
            return 0;
        }
        rd_buf_be32(c->out, 1);
        return enc(c, t->elem, v, NULL);
    }
    return efail(c, "bad type table");
}

int rd_xdr_encode(const struct rd_xtype *t, const struct rd_jdoc *doc, const struct rd_jval *v,
                  const char *const *extra, struct rd_buf *out, char *err, size_t errlen)
{
    struct ectx c = {.doc = doc, .out = out, .err = err, .errlen = errlen};
    int r = enc(&c, t, v, extra);
    if (r == 0 && out->oom)
        r = -ENOMEM;
    if (r == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return r;
}
