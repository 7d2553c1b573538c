/*
 * JSON (as render.c writes it) -> struct uiw_rpcrdma_hdr, for the codec's encoder.
 *
 * Strict: every XDR field must be present, no other key may appear, enumerators are
 * written by name (the codec's names), integers must fit their XDR type, opaque data is
 * lowercase hex. Errors name the path of the offending field.
 *
 * The arrays the header points to live in a struct rd_scratch. A message is read in one
 * pass when the scratch is large enough; otherwise the first pass only counts what is
 * needed, the scratch grows, and a second pass fills it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma.h"

struct pctx {
    const struct rd_jdoc *doc;
    struct rd_scratch *sc;
    int overflow; /* something did not fit in sc: this pass only counts */
    uint32_t nv;  /* whose names: 1 for Version One, 2 otherwise */
    char *err;
    size_t errlen;
    char path[512];
    size_t plen;
};

/* ---------------------------------------------------------------------------------------
 * Scratch
 * ------------------------------------------------------------------------------------- */

/* n elements of size esz from v: their address, or NULL when they do not fit (or n is 0);
 * v->need counts them either way. */
static void *take(struct pctx *c, struct rd_vec *v, size_t n, size_t esz)
{
    if (n > SIZE_MAX / esz - v->need) {
        c->overflow = 1;
        v->need = SIZE_MAX / esz;
        return NULL;
    }
    v->need += n;
    if (v->need > v->cap) {
        c->overflow = 1;
        return NULL;
    }
    return n ? (char *)v->p + (v->need - n) * esz : NULL;
}

static int grow(struct rd_vec *v, size_t esz)
{
    if (v->need > v->cap) {
        if (v->need > SIZE_MAX / esz)
            return -ENOMEM;
        void *p = realloc(v->p, v->need * esz);
        if (!p)
            return -ENOMEM;
        v->p = p;
        v->cap = v->need;
    }
    v->need = 0;
    return 0;
}

void rd_scratch_free(struct rd_scratch *sc)
{
    free(sc->reads.p);
    free(sc->writes.p);
    free(sc->segs.p);
    free(sc->props.p);
    free(sc->bytes.p);
    memset(sc, 0, sizeof *sc);
}

/* ---------------------------------------------------------------------------------------
 * Errors and paths
 * ------------------------------------------------------------------------------------- */

static int efail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int efail(struct pctx *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", c->plen ? c->path : "(top level)", msg);
    return -EINVAL;
}

static size_t push(struct pctx *c, const char *key, size_t index)
{
    size_t old = c->plen;
    int n = key ? snprintf(c->path + old, sizeof c->path - old, "%s%s", old ? "." : "", key)
                : snprintf(c->path + old, sizeof c->path - old, "[%zu]", index);
    if (n > 0)
        c->plen = old + (size_t)n < sizeof c->path ? old + (size_t)n : sizeof c->path - 1;
    return old;
}

static void pop(struct pctx *c, size_t old)
{
    c->plen = old;
    c->path[old] = '\0';
}

/* ---------------------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------------------- */

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

static int want_u32(struct pctx *c, const struct rd_jval *v, uint32_t *out)
{
    *out = 0;
    if (v->type != RD_JINT || v->neg || v->u > UINT32_MAX)
        return efail(c, "expected an integer 0..4294967295, got %s",
                     v->type == RD_JINT ? "an integer out of range" : jtype_name(v->type));
    *out = (uint32_t)v->u;
    return 0;
}

static int want_u64(struct pctx *c, const struct rd_jval *v, uint64_t *out)
{
    *out = 0;
    if (v->type != RD_JINT || v->neg)
        return efail(c, "expected an integer 0..18446744073709551615, got %s",
                     v->type == RD_JINT ? "a negative integer" : jtype_name(v->type));
    *out = v->u;
    return 0;
}

static int want_type(struct pctx *c, const struct rd_jval *v, enum rd_jtype t, const char *what)
{
    if (v->type != t)
        return efail(c, "expected %s, got %s", what, jtype_name(v->type));
    return 0;
}

/* An enumerator of `type`: its value by lookup(name), -1 for none. */
static int want_enum(struct pctx *c, const struct rd_jval *v, const char *type,
                     int (*lookup)(const char *, uint32_t), uint32_t nv, uint32_t *out)
{
    if (v->type != RD_JSTR)
        return efail(c, "expected an enumerator of %s, got %s", type, jtype_name(v->type));
    const char *s = rd_json_str(c->doc, v);
    int val = strlen(s) == v->len ? lookup(s, nv) : -1;
    if (val < 0)
        return efail(c, "\"%s\" is not an enumerator of %s", s, type);
    *out = (uint32_t)val;
    return 0;
}

static int dir_lookup(const char *name, uint32_t nv)
{
    (void)nv;
    return uiw_rpcrdma_dir_from_name(name);
}

/* Opaque data: lowercase hex into the scratch bytes. */
static int want_opaque(struct pctx *c, const struct rd_jval *v, uint32_t *len, const uint8_t **data)
{
    if (v->type != RD_JSTR)
        return efail(c, "expected a lowercase hex string, got %s", jtype_name(v->type));
    if (v->len % 2 != 0)
        return efail(c, "odd number of hex digits");
    if (v->len / 2 > UINT32_MAX)
        return efail(c, "longer than 4294967295 bytes");
    uint8_t *dst = take(c, &c->sc->bytes, v->len / 2, 1);
    if (rd_hex_to(dst, rd_json_str(c->doc, v), v->len) != 0)
        return efail(c, "not a lowercase hex string");
    *len = (uint32_t)(v->len / 2);
    *data = dst;
    return 0;
}

/* The member `key` of object obj; the path enters it (the caller pops on success). */
static int member(struct pctx *c, const struct rd_jval *obj, const char *key,
                  const struct rd_jval **m, size_t *old)
{
    *old = c->plen;
    *m = rd_json_get(c->doc, obj, key);
    if (!*m)
        return efail(c, "missing key \"%s\"", key);
    *old = push(c, key, 0);
    return 0;
}

static int u32_member(struct pctx *c, const struct rd_jval *obj, const char *key, uint32_t *out)
{
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = member(c, obj, key, &m, &old)) != 0 || (r = want_u32(c, m, out)) != 0)
        return r;
    pop(c, old);
    return 0;
}

static int is_in(const char *const *names, size_t n, const char *key)
{
    for (size_t i = 0; names && i < n; i++)
        if (names[i] && strcmp(names[i], key) == 0)
            return 1;
    return 0;
}

/* Every member of object v is one of names[0..n) (NULL entries match nothing) or, when
 * extra is not NULL, of the NULL-terminated extra. */
static int check_keys(struct pctx *c, const struct rd_jval *v, const char *const *names, size_t n,
                      const char *const *extra)
{
    size_t nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    for (const struct rd_jval *m = rd_json_at(c->doc, v->child); m;
         m = rd_json_at(c->doc, m->next)) {
        const char *key = rd_json_keyname(c->doc, m);
        if (strlen(key) != m->klen || (!is_in(names, n, key) && !is_in(extra, nextra, key)))
            return efail(c, "unexpected key \"%s\"", key);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Chunk lists
 * ------------------------------------------------------------------------------------- */

/* The chunk fields' names: RFC 8166's for Version One, the draft's otherwise. */
static const char *const v1_seg[] = {"handle", "length", "offset"};
static const char *const v2_seg[] = {"rdma_handle", "rdma_length", "rdma_offset"};
static const char *const v1_rs[] = {"position", "target"};
static const char *const v2_rs[] = {"rdma_position", "rdma_target"};

static int segment(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_segment *s)
{
    const char *const *keys = c->nv == 1 ? v1_seg : v2_seg;
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object (segment)")) != 0 ||
        (r = u32_member(c, v, keys[0], &s->handle)) != 0 ||
        (r = u32_member(c, v, keys[1], &s->length)) != 0 ||
        (r = member(c, v, keys[2], &m, &old)) != 0 || (r = want_u64(c, m, &s->offset)) != 0)
        return r;
    pop(c, old);
    return check_keys(c, v, keys, 3, NULL);
}

/* A write chunk object: {"target":[segment...]} ("rdma_target" in Version Two) */
static int write_chunk(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_write_chunk *wc)
{
    const char *const *keys = c->nv == 1 ? v1_rs + 1 : v2_rs + 1;
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object (write chunk)")) != 0 ||
        (r = member(c, v, keys[0], &m, &old)) != 0 ||
        (r = want_type(c, m, RD_JARR, "an array")) != 0)
        return r;
    if (m->count > UINT32_MAX)
        return efail(c, "too many elements (%zu)", m->count);
    wc->nsegs = (uint32_t)m->count;
    wc->segs = take(c, &c->sc->segs, m->count, sizeof *wc->segs);
    size_t i = 0;
    for (const struct rd_jval *e = rd_json_at(c->doc, m->child); e;
         e = rd_json_at(c->doc, e->next), i++) {
        struct uiw_rpcrdma_segment tmp = {0};
        size_t at = push(c, NULL, i);
        if ((r = segment(c, e, wc->segs ? &wc->segs[i] : &tmp)) != 0)
            return r;
        pop(c, at);
    }
    pop(c, old);
    return check_keys(c, v, keys, 1, NULL);
}

static int read_list(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_chunks *ch)
{
    const char *const *keys = c->nv == 1 ? v1_rs : v2_rs;
    int r;
    if ((r = want_type(c, v, RD_JARR, "an array")) != 0)
        return r;
    if (v->count > UINT32_MAX)
        return efail(c, "too many elements (%zu)", v->count);
    ch->nreads = (uint32_t)v->count;
    ch->reads = take(c, &c->sc->reads, v->count, sizeof *ch->reads);
    size_t i = 0;
    for (const struct rd_jval *e = rd_json_at(c->doc, v->child); e;
         e = rd_json_at(c->doc, e->next), i++) {
        struct uiw_rpcrdma_read_segment tmp = {0};
        struct uiw_rpcrdma_read_segment *rs = ch->reads ? &ch->reads[i] : &tmp;
        const struct rd_jval *m;
        size_t at = push(c, NULL, i), old = 0;
        if ((r = want_type(c, e, RD_JOBJ, "an object (read segment)")) != 0 ||
            (r = u32_member(c, e, keys[0], &rs->position)) != 0 ||
            (r = member(c, e, keys[1], &m, &old)) != 0 || (r = segment(c, m, &rs->target)) != 0)
            return r;
        pop(c, old);
        if ((r = check_keys(c, e, keys, 2, NULL)) != 0)
            return r;
        pop(c, at);
    }
    return 0;
}

static int write_list(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_chunks *ch)
{
    int r;
    if ((r = want_type(c, v, RD_JARR, "an array")) != 0)
        return r;
    if (v->count > UINT32_MAX)
        return efail(c, "too many elements (%zu)", v->count);
    ch->nwrites = (uint32_t)v->count;
    ch->writes = take(c, &c->sc->writes, v->count, sizeof *ch->writes);
    size_t i = 0;
    for (const struct rd_jval *e = rd_json_at(c->doc, v->child); e;
         e = rd_json_at(c->doc, e->next), i++) {
        struct uiw_rpcrdma_write_chunk tmp = {0};
        size_t at = push(c, NULL, i);
        if ((r = write_chunk(c, e, ch->writes ? &ch->writes[i] : &tmp)) != 0)
            return r;
        pop(c, at);
    }
    return 0;
}

/* The three lists: members rdma_reads, rdma_writes, rdma_reply of obj. */
static int lists(struct pctx *c, const struct rd_jval *obj, struct uiw_rpcrdma_chunks *ch)
{
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = member(c, obj, "rdma_reads", &m, &old)) != 0 || (r = read_list(c, m, ch)) != 0)
        return r;
    pop(c, old);
    if ((r = member(c, obj, "rdma_writes", &m, &old)) != 0 || (r = write_list(c, m, ch)) != 0)
        return r;
    pop(c, old);
    if ((r = member(c, obj, "rdma_reply", &m, &old)) != 0)
        return r;
    ch->has_reply = m->type != RD_JNULL;
    if (ch->has_reply && (r = write_chunk(c, m, &ch->reply)) != 0)
        return r;
    pop(c, old);
    return 0;
}

/* rpc_rdma_header (v1: the lists) or rpcrdma2_chunk_lists (v2: direction, invalidate
 * handle, the lists). */
static int chunks(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_chunks *ch)
{
    static const char *const keys[] = {"rdma_direction", "rdma_inv_handle", "rdma_reads",
                                       "rdma_writes", "rdma_reply"};
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object (chunk lists)")) != 0)
        return r;
    if (c->nv == 2) {
        if ((r = member(c, v, "rdma_direction", &m, &old)) != 0 ||
            (r = want_enum(c, m, "msg_type", dir_lookup, 2, &ch->direction)) != 0)
            return r;
        pop(c, old);
        if ((r = u32_member(c, v, "rdma_inv_handle", &ch->inv_handle)) != 0)
            return r;
    }
    if ((r = lists(c, v, ch)) != 0)
        return r;
    return c->nv == 2 ? check_keys(c, v, keys, 5, NULL) : check_keys(c, v, keys + 2, 3, NULL);
}

/* ---------------------------------------------------------------------------------------
 * Errors, options, properties
 * ------------------------------------------------------------------------------------- */

/* rpc_rdma_error (v1) / rpcrdma2_error (v2): the error code and its arm. */
static int error_body(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_error *e)
{
    const char *disc = c->nv == 1 ? "err" : "rdma_err";
    const char *arm = NULL, *f1 = NULL, *f2 = NULL;
    uint32_t *p1 = NULL, *p2 = NULL;
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object (error)")) != 0 ||
        (r = member(c, v, disc, &m, &old)) != 0 ||
        (r = want_enum(c, m, c->nv == 1 ? "rpc_rdma_errcode" : "rpcrdma2_errcode",
                       uiw_rpcrdma_errcode_from_name, c->nv, &e->errcode)) != 0)
        return r;
    pop(c, old);
    if (e->errcode == UIW_RDMA_ERR_VERS) {
        arm = c->nv == 1 ? "range" : "rdma_vrange";
        f1 = "rdma_vers_low", p1 = &e->vers_low;
        f2 = "rdma_vers_high", p2 = &e->vers_high;
    } else if (c->nv == 2 && e->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE) {
        arm = "rdma_reply";
        f1 = "rdma_segment_index", p1 = &e->segment_index;
        f2 = "rdma_length_needed", p2 = &e->length_needed;
    }
    if (arm) {
        const char *const keys[] = {f1, f2};
        if ((r = member(c, v, arm, &m, &old)) != 0 ||
            (r = want_type(c, m, RD_JOBJ, "an object")) != 0 ||
            (r = u32_member(c, m, f1, p1)) != 0 || (r = u32_member(c, m, f2, p2)) != 0 ||
            (r = check_keys(c, m, keys, 2, NULL)) != 0)
            return r;
        pop(c, old);
    }
    const char *const keys[] = {disc, arm};
    return check_keys(c, v, keys, 2, NULL);
}

static int optional(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_optional *o)
{
    static const char *const keys[] = {"rdma_optdir", "rdma_opttype", "rdma_optinfo"};
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object (rpcrdma2_optional)")) != 0 ||
        (r = member(c, v, "rdma_optdir", &m, &old)) != 0 ||
        (r = want_enum(c, m, "msg_type", dir_lookup, 2, &o->optdir)) != 0)
        return r;
    pop(c, old);
    if ((r = u32_member(c, v, "rdma_opttype", &o->opttype)) != 0 ||
        (r = member(c, v, "rdma_optinfo", &m, &old)) != 0 ||
        (r = want_opaque(c, m, &o->optinfo_len, &o->optinfo)) != 0)
        return r;
    pop(c, old);
    return check_keys(c, v, keys, 3, NULL);
}

static int propval(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_prop *p)
{
    static const char *const keys[] = {"rdma_which", "rdma_data"};
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    uint8_t four[4];
    if ((r = want_type(c, v, RD_JOBJ, "an object (rpcrdma2_propval)")) != 0 ||
        (r = u32_member(c, v, "rdma_which", &p->which)) != 0 ||
        (r = member(c, v, "rdma_data", &m, &old)) != 0 ||
        (r = want_opaque(c, m, &p->len, &p->data)) != 0)
        return r;
    p->value = 0;
    if (!p->data && p->len == 4) { /* a counting pass: the value is still checked */
        (void)rd_hex_to(four, rd_json_str(c->doc, m), 8);
        p->data = four;
    }
    if (uiw_rpcrdma_prop_check(p) != 0)
        return efail(c,
                     "not a valid value of property %u (a receiver refuses it, and the "
                     "codec does not send what it would refuse)",
                     (unsigned)p->which);
    if (p->data == four)
        p->data = NULL;
    pop(c, old);
    return check_keys(c, v, keys, 2, NULL);
}

static int propset(struct pctx *c, const struct rd_jval *obj, const char *key,
                   struct uiw_rpcrdma_propset *ps)
{
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = member(c, obj, key, &m, &old)) != 0 || (r = want_type(c, m, RD_JARR, "an array")) != 0)
        return r;
    if (m->count > UINT32_MAX)
        return efail(c, "too many elements (%zu)", m->count);
    ps->n = (uint32_t)m->count;
    ps->props = take(c, &c->sc->props, m->count, sizeof *ps->props);
    size_t i = 0;
    for (const struct rd_jval *e = rd_json_at(c->doc, m->child); e;
         e = rd_json_at(c->doc, e->next), i++) {
        struct uiw_rpcrdma_prop tmp = {0};
        size_t at = push(c, NULL, i);
        if ((r = propval(c, e, ps->props ? &ps->props[i] : &tmp)) != 0)
            return r;
        pop(c, at);
    }
    pop(c, old);
    return 0;
}

/* A property subset: an array of uint32 words, stored big-endian as the codec wants. */
static int subset(struct pctx *c, const struct rd_jval *obj, const char *key,
                  struct uiw_rpcrdma_propsubset *s)
{
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = member(c, obj, key, &m, &old)) != 0 || (r = want_type(c, m, RD_JARR, "an array")) != 0)
        return r;
    if (m->count > UINT32_MAX / 4)
        return efail(c, "too many elements (%zu)", m->count);
    uint8_t *wire = take(c, &c->sc->bytes, m->count * 4, 1);
    s->nwords = (uint32_t)m->count;
    s->wire = wire;
    size_t i = 0;
    for (const struct rd_jval *e = rd_json_at(c->doc, m->child); e;
         e = rd_json_at(c->doc, e->next), i++) {
        uint32_t w = 0;
        size_t at = push(c, NULL, i);
        if ((r = want_u32(c, e, &w)) != 0)
            return r;
        if (wire) {
            wire[4 * i] = (uint8_t)(w >> 24);
            wire[4 * i + 1] = (uint8_t)(w >> 16);
            wire[4 * i + 2] = (uint8_t)(w >> 8);
            wire[4 * i + 3] = (uint8_t)w;
        }
        pop(c, at);
    }
    pop(c, old);
    return 0;
}

/* The arm of a Version Two property procedure: an object holding the listed members,
 * each a property set ('s') or a subset ('b'). */
static int props_arm(struct pctx *c, const struct rd_jval *v, const char *kinds,
                     const char *const *keys, struct uiw_rpcrdma_propset *const *sets,
                     struct uiw_rpcrdma_propsubset *const *subs)
{
    size_t n = strlen(kinds);
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object")) != 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        r = kinds[i] == 's' ? propset(c, v, keys[i], sets[i]) : subset(c, v, keys[i], subs[i]);
        if (r != 0)
            return r;
    }
    return check_keys(c, v, keys, n, NULL);
}

/* ---------------------------------------------------------------------------------------
 * The header
 * ------------------------------------------------------------------------------------- */

/* The arm name of procedure proc in version c->nv, NULL for a void arm. */
static const char *arm_name(const struct pctx *c, uint32_t proc)
{
    static const char *const v1[] = {"rdma_msg", "rdma_nomsg", "rdma_msgp", NULL, "rdma_error"};
    static const char *const v2[] = {
        "rdma_chunks",   "rdma_chunks",   NULL,           NULL,           "rdma_error",
        "rdma_optional", "rdma_connprop", "rdma_reqprop", "rdma_resprop", "rdma_updprop"};
    if (c->nv == 1)
        return proc < 5 ? v1[proc] : NULL;
    return proc < 10 ? v2[proc] : NULL;
}

static int body(struct pctx *c, const struct rd_jval *v, struct uiw_rpcrdma_hdr *h)
{
    const char *disc = c->nv == 1 ? "proc" : "rdma_proc";
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    if ((r = want_type(c, v, RD_JOBJ, "an object (the body union)")) != 0 ||
        (r = member(c, v, disc, &m, &old)) != 0 ||
        (r = want_enum(c, m, c->nv == 1 ? "rdma_proc" : "rpcrdma2_proc", uiw_rpcrdma_proc_from_name,
                       c->nv, &h->proc)) != 0)
        return r;
    if (c->nv == 1 && (h->proc == UIW_RDMA_MSGP || h->proc == UIW_RDMA_DONE))
        return efail(c, "%s is \"not to be used\" (RFC 8166) and is not encoded",
                     uiw_rpcrdma_proc_name(h->proc, 1));
    pop(c, old);
    const char *arm = arm_name(c, h->proc);
    if (!arm) /* not reached: every procedure a name gives has an arm */
        return efail(c, "no arm for this procedure");
    if ((r = member(c, v, arm, &m, &old)) != 0)
        return r;
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        r = chunks(c, m, &h->u.chunks);
        break;
    case UIW_RDMA_ERROR:
        r = error_body(c, m, &h->u.error);
        break;
    case UIW_RDMA2_OPTIONAL:
        r = optional(c, m, &h->u.optional);
        break;
    case UIW_RDMA2_CONNPROP: {
        const char *const keys[] = {"rdma_start", "rdma_nochg"};
        struct uiw_rpcrdma_propset *const sets[] = {&h->u.connprop.start, NULL};
        struct uiw_rpcrdma_propsubset *const subs[] = {NULL, &h->u.connprop.nochg};
        r = props_arm(c, m, "sb", keys, sets, subs);
        break;
    }
    case UIW_RDMA2_REQPROP: {
        const char *const keys[] = {"rdma_want"};
        struct uiw_rpcrdma_propset *const sets[] = {&h->u.reqprop.want};
        r = props_arm(c, m, "s", keys, sets, NULL);
        break;
    }
    case UIW_RDMA2_RESPROP: {
        const char *const keys[] = {"rdma_done", "rdma_rejected", "rdma_other"};
        struct uiw_rpcrdma_propset *const sets[] = {NULL, NULL, &h->u.resprop.other};
        struct uiw_rpcrdma_propsubset *const subs[] = {&h->u.resprop.done, &h->u.resprop.rejected,
                                                       NULL};
        r = props_arm(c, m, "bbs", keys, sets, subs);
        break;
    }
    case UIW_RDMA2_UPDPROP: {
        const char *const keys[] = {"rdma_now"};
        struct uiw_rpcrdma_propset *const sets[] = {&h->u.updprop.now};
        r = props_arm(c, m, "s", keys, sets, NULL);
        break;
    }
    default:
        r = efail(c, "no such procedure"); /* not reached: the name lookup failed first */
        break;
    }
    if (r != 0)
        return r;
    pop(c, old);
    const char *const keys[] = {disc, arm};
    return check_keys(c, v, keys, 2, NULL);
}

static int header(struct pctx *c, const struct rd_jval *root, const char *const *extra,
                  struct uiw_rpcrdma_hdr *h)
{
    static const char *const keys[] = {"rdma_xid", "rdma_vers", "rdma_credit", "rdma_body"};
    const struct rd_jval *m;
    size_t old = 0;
    int r;
    memset(h, 0, sizeof *h);
    if (!root || root->type != RD_JOBJ)
        return efail(c, "expected an object");
    if ((r = u32_member(c, root, "rdma_xid", &h->xid)) != 0 ||
        (r = u32_member(c, root, "rdma_vers", &h->vers)) != 0 ||
        (r = u32_member(c, root, "rdma_credit", &h->credit)) != 0)
        return r;
    /* Any version but One uses the Version Two XDR names (as the decoder writes the
     * ERR_VERS reply of another version). */
    c->nv = h->vers == UIW_RPCRDMA_VERS1 ? 1 : 2;
    if ((r = member(c, root, "rdma_body", &m, &old)) != 0 || (r = body(c, m, h)) != 0)
        return r;
    pop(c, old);
    if ((r = check_keys(c, root, keys, 4, extra)) != 0)
        return r;
    if (h->vers != UIW_RPCRDMA_VERS1 && h->vers != UIW_RPCRDMA_VERS2 &&
        (h->proc != UIW_RDMA_ERROR || h->u.error.errcode != UIW_RDMA_ERR_VERS)) {
        push(c, "rdma_vers", 0);
        return efail(c,
                     "version %u is not supported: only its RDMA2_ERROR with "
                     "RDMA2_ERR_VERS (the same in every version) is encoded",
                     (unsigned)h->vers);
    }
    return 0;
}

int rd_parse_header(const struct rd_jdoc *doc, const struct rd_jval *root, const char *const *extra,
                    struct rd_scratch *sc, struct uiw_rpcrdma_hdr *h, char *err, size_t errlen)
{
    struct pctx c = {.doc = doc, .sc = sc, .err = err, .errlen = errlen};
    struct rd_vec *vecs[] = {&sc->reads, &sc->writes, &sc->segs, &sc->props, &sc->bytes};
    const size_t esz[] = {sizeof(struct uiw_rpcrdma_read_segment),
                          sizeof(struct uiw_rpcrdma_write_chunk),
                          sizeof(struct uiw_rpcrdma_segment), sizeof(struct uiw_rpcrdma_prop), 1};
    for (size_t i = 0; i < 5; i++)
        vecs[i]->need = 0;
    int r = header(&c, root, extra, h);
    if (r != 0 || !c.overflow)
        return r;
    /* Too small: the pass counted what is needed. Grow and read again. */
    for (size_t i = 0; i < 5; i++) {
        if (grow(vecs[i], esz[i]) != 0) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
    }
    c = (struct pctx){.doc = doc, .sc = sc, .err = err, .errlen = errlen};
    r = header(&c, root, extra, h);
    if (r == 0 && c.overflow) { /* cannot happen: the same JSON needs the same room */
        snprintf(err, errlen, "internal error: scratch sizing");
        return -EINVAL;
    }
    return r;
}
