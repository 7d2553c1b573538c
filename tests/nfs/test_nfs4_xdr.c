/* NFSv4.1 and 4.2's XDR (xdr/nfs4.x through rpcgen, and xdr/nfs4_dirlist.c), on its own:
 * nothing serves it yet.
 *   - A COMPOUND as Linux's client starts one (SEQUENCE, PUTROOTFH, LOOKUP, GETATTR with a
 *     two-word bitmap) and its reply (the attributes coded with the fattr4_* routines):
 *     each encoded to exactly the bytes RFC 8881 gives it, written here word by word,
 *     decoded back field by field, and refused when cut short anywhere.
 *   - READDIR's entries, coded in a loop: the same bytes as rpcgen's recursive routines,
 *     and a hostile reply of 1,000,000 entries decoded and freed on a thread with a
 *     256 KiB stack, which rpcgen's routine overflows.
 *   - The decoding bounds: lengths and counts past them refused before anything is
 *     allocated for them, lengths at them accepted.
 *   - The server's size of a result in a reply (uiw__nfs4_res_size, SEQUENCE's check of
 *     the session's limits): xdr_sizeof's for every result it counts itself; and its
 *     encoding of a result (uiw__nfs4_enc_result, which writes the common ones itself):
 *     rpcgen's bytes, with room inline and without.
 * NFSv3's headers and NFSv4's in one file (nfs/xdr_data.h includes nfs3.h and mount3.h)
 * are part of the test. */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nfs/nfs4int.h"
#include "nfs/xdr_data.h"
#include "nfs4.h"
#include "interop.h"
#include "test.h"

/* rpcgen's own recursive routines for READDIR's list (xdr/nfs4.x keeps them under these
 * names for this test) */
bool_t uiw__nfs4_rpcgen_xdr_entry4(XDR *x, entry4 *e);
bool_t uiw__nfs4_rpcgen_xdr_dirlist4(XDR *x, dirlist4 *d);

/* ---- the bytes of a message, written word by word ---- */

struct wire {
    uint8_t *b;
    size_t n, cap;
};

static void w32(struct wire *w, uint32_t v)
{
    CHECK(w->n + 4 <= w->cap);
    it_put32(w->b + w->n, v);
    w->n += 4;
}

static void w64(struct wire *w, uint64_t v)
{
    w32(w, (uint32_t)(v >> 32));
    w32(w, (uint32_t)v);
}

/* n bytes, then zeros to a multiple of four */
static void wfixed(struct wire *w, const void *p, size_t n)
{
    size_t padded = (n + 3) & ~(size_t)3;
    CHECK(w->n + padded <= w->cap);
    memcpy(w->b + w->n, p, n);
    memset(w->b + w->n + n, 0, padded - n);
    w->n += padded;
}

/* a variable-length opaque or string */
static void wvar(struct wire *w, const char *p, size_t n)
{
    w32(w, (uint32_t)n);
    wfixed(w, p, n);
}

static void wstr(struct wire *w, const char *s)
{
    wvar(w, s, strlen(s));
}

/* Encode *obj with f into buf (cap bytes): the length. */
static size_t encode(xdrproc_t f, void *obj, char *buf, size_t cap)
{
    XDR x;
    xdrmem_create(&x, buf, (u_int)cap, XDR_ENCODE);
    if (!f(&x, obj))
        uiw_test_fail(__FILE__, __LINE__, "encoding failed");
    size_t n = xdr_getpos(&x);
    xdr_destroy(&x);
    return n;
}

/* Decode buf[0..n) with f into *obj (zeroed first, size bytes): TRUE when it decoded and
 * used all n bytes. */
static bool_t decode(xdrproc_t f, const void *buf, size_t n, void *obj, size_t size)
{
    XDR x;
    memset(obj, 0, size);
    xdrmem_create(&x, (char *)buf, (u_int)n, XDR_DECODE);
    bool_t ok = f(&x, obj) && xdr_getpos(&x) == n;
    xdr_destroy(&x);
    return ok;
}

/* Every prefix of buf[0..n) fails to decode with f, and what it decoded is freed
 * (LeakSanitizer). */
static void cut_short(xdrproc_t f, const void *buf, size_t n, void *obj, size_t size)
{
    for (size_t cut = 0; cut < n; cut++) {
        if (decode(f, buf, cut, obj, size))
            uiw_test_fail(__FILE__, __LINE__, "%zu of %zu bytes decoded", cut, n);
        xdr_free(f, (caddr_t)obj);
    }
}

/* ---- a COMPOUND and its reply ---- */

static void fill(char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(seed + 7 * i);
}

#define TAG "uiw-nfs4-test"

/* The attributes GETATTR asks for, as Linux's client does on a LOOKUP: word 0 type,
 * change, size, fsid, fileid; word 1 mode, numlinks, owner, owner_group, space_used,
 * time_access, time_metadata, time_modify, mounted_on_fileid. */
static uint32_t want[2] = {1u << FATTR4_TYPE | 1u << FATTR4_CHANGE | 1u << FATTR4_SIZE |
                               1u << FATTR4_FSID | 1u << FATTR4_FILEID,
                           1u << (FATTR4_MODE - 32) | 1u << (FATTR4_NUMLINKS - 32) |
                               1u << (FATTR4_OWNER - 32) | 1u << (FATTR4_OWNER_GROUP - 32) |
                               1u << (FATTR4_SPACE_USED - 32) | 1u << (FATTR4_TIME_ACCESS - 32) |
                               1u << (FATTR4_TIME_METADATA - 32) | 1u << (FATTR4_TIME_MODIFY - 32) |
                               1u << (FATTR4_MOUNTED_ON_FILEID - 32)};

/* Their values, in the order of their numbers. */
struct attrs {
    fattr4_type type;
    fattr4_change change;
    fattr4_size size;
    fattr4_fsid fsid;
    fattr4_fileid fileid;
    fattr4_mode mode;
    fattr4_numlinks numlinks;
    fattr4_owner owner;
    fattr4_owner_group group;
    fattr4_space_used used;
    fattr4_time_access atime;
    fattr4_time_metadata ctime;
    fattr4_time_modify mtime;
    fattr4_mounted_on_fileid mounted_on;
};

static bool_t xdr_attrs(XDR *x, struct attrs *a)
{
    return xdr_fattr4_type(x, &a->type) && xdr_fattr4_change(x, &a->change) &&
           xdr_fattr4_size(x, &a->size) && xdr_fattr4_fsid(x, &a->fsid) &&
           xdr_fattr4_fileid(x, &a->fileid) && xdr_fattr4_mode(x, &a->mode) &&
           xdr_fattr4_numlinks(x, &a->numlinks) && xdr_fattr4_owner(x, &a->owner) &&
           xdr_fattr4_owner_group(x, &a->group) && xdr_fattr4_space_used(x, &a->used) &&
           xdr_fattr4_time_access(x, &a->atime) && xdr_fattr4_time_metadata(x, &a->ctime) &&
           xdr_fattr4_time_modify(x, &a->mtime) && xdr_fattr4_mounted_on_fileid(x, &a->mounted_on);
}

static void time_vs(const nfstime4 *t, int64_t s, uint32_t ns)
{
    CHECK_EQ(t->seconds, s);
    CHECK_EQ(t->nseconds, ns);
}

TEST(nfs4_xdr_compound_round_trip)
{
    char sid[NFS4_SESSIONID_SIZE];
    fill(sid, sizeof(sid), 0x30);
    static char buf[4096], ref[4096];

    /* the call */
    nfs_argop4 ops[4];
    memset(ops, 0, sizeof(ops));
    ops[0].argop = OP_SEQUENCE;
    SEQUENCE4args *sa = &ops[0].nfs_argop4_u.opsequence;
    *sa = (SEQUENCE4args){
        .sa_sequenceid = 7, .sa_slotid = 3, .sa_highest_slotid = 5, .sa_cachethis = TRUE};
    memcpy(sa->sa_sessionid, sid, sizeof(sid));
    ops[1].argop = OP_PUTROOTFH;
    ops[2].argop = OP_LOOKUP;
    ops[2].nfs_argop4_u.oplookup.objname.utf8string_len = 6;
    ops[2].nfs_argop4_u.oplookup.objname.utf8string_val = "export";
    ops[3].argop = OP_GETATTR;
    ops[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 2;
    ops[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = want;
    COMPOUND4args args = {.tag = {sizeof(TAG) - 1, TAG}, .minorversion = 1};
    args.argarray.argarray_len = 4;
    args.argarray.argarray_val = ops;
    size_t n = encode(UIW__XDRPROC(xdr_COMPOUND4args), &args, buf, sizeof(buf));

    /* RFC 8881 sections 16.2.1, 18.46.1, 18.21.1, 18.15.1, 18.7.1 */
    struct wire w = {(uint8_t *)ref, 0, sizeof(ref)};
    wstr(&w, TAG);
    w32(&w, 1);  /* minorversion */
    w32(&w, 4);  /* operations */
    w32(&w, 53); /* SEQUENCE */
    wfixed(&w, sid, sizeof(sid));
    w32(&w, 7);  /* sequenceid */
    w32(&w, 3);  /* slotid */
    w32(&w, 5);  /* highest slotid */
    w32(&w, 1);  /* cachethis */
    w32(&w, 24); /* PUTROOTFH */
    w32(&w, 15); /* LOOKUP */
    wstr(&w, "export");
    w32(&w, 9);          /* GETATTR */
    w32(&w, 2);          /* bitmap words */
    w32(&w, 0x0010011a); /* 1, 3, 4, 8, 20 */
    w32(&w, 0x00b0a03a); /* 33, 35, 36, 37, 45, 47, 52, 53, 55 */
    CHECK_EQ(n, w.n);
    CHECK_MEM(buf, ref, n);

    COMPOUND4args a;
    CHECK(decode(UIW__XDRPROC(xdr_COMPOUND4args), buf, n, &a, sizeof(a)));
    CHECK_EQ(a.tag.utf8string_len, sizeof(TAG) - 1);
    CHECK_MEM(a.tag.utf8string_val, TAG, sizeof(TAG) - 1);
    CHECK_EQ(a.minorversion, 1);
    CHECK_EQ(a.argarray.argarray_len, 4);
    nfs_argop4 *o = a.argarray.argarray_val;
    CHECK_EQ(o[0].argop, OP_SEQUENCE);
    sa = &o[0].nfs_argop4_u.opsequence;
    CHECK_MEM(sa->sa_sessionid, sid, sizeof(sid));
    CHECK_EQ(sa->sa_sequenceid, 7);
    CHECK_EQ(sa->sa_slotid, 3);
    CHECK_EQ(sa->sa_highest_slotid, 5);
    CHECK_EQ(sa->sa_cachethis, TRUE);
    CHECK_EQ(o[1].argop, OP_PUTROOTFH);
    CHECK_EQ(o[2].argop, OP_LOOKUP);
    CHECK_EQ(o[2].nfs_argop4_u.oplookup.objname.utf8string_len, 6);
    CHECK_MEM(o[2].nfs_argop4_u.oplookup.objname.utf8string_val, "export", 6);
    CHECK_EQ(o[3].argop, OP_GETATTR);
    bitmap4 *bm = &o[3].nfs_argop4_u.opgetattr.attr_request;
    CHECK_EQ(bm->bitmap4_len, 2);
    CHECK_EQ(bm->bitmap4_val[0], want[0]);
    CHECK_EQ(bm->bitmap4_val[1], want[1]);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4args), (caddr_t)&a);
    cut_short(UIW__XDRPROC(xdr_COMPOUND4args), buf, n, &a, sizeof(a));

    /* the reply: the attributes' values first */
    struct attrs at = {.type = NF4DIR,
                       .change = 0x1122334455667788ull,
                       .size = 4096,
                       .fsid = {0x8001, 42},
                       .fileid = 0x200000001ull,
                       .mode = 0755,
                       .numlinks = 3,
                       .owner = {4, "1000"},
                       .group = {3, "100"},
                       .used = 8192,
                       .atime = {1700000001, 123456789},
                       .ctime = {-2, 5},
                       .mtime = {1700000003, 999999999},
                       .mounted_on = 2};
    char vals[512];
    size_t vn = encode(UIW__XDRPROC(xdr_attrs), &at, vals, sizeof(vals));
    /* RFC 8881 section 5.8 */
    w = (struct wire){(uint8_t *)ref, 0, sizeof(ref)};
    w32(&w, NF4DIR);
    w64(&w, 0x1122334455667788ull);
    w64(&w, 4096);
    w64(&w, 0x8001);
    w64(&w, 42);
    w64(&w, 0x200000001ull);
    w32(&w, 0755);
    w32(&w, 3);
    wstr(&w, "1000");
    wstr(&w, "100");
    w64(&w, 8192);
    w64(&w, 1700000001);
    w32(&w, 123456789);
    w64(&w, (uint64_t)-2);
    w32(&w, 5);
    w64(&w, 1700000003);
    w32(&w, 999999999);
    w64(&w, 2);
    CHECK_EQ(vn, w.n);
    CHECK_MEM(vals, ref, vn);

    nfs_resop4 res[4];
    memset(res, 0, sizeof(res));
    res[0].resop = OP_SEQUENCE;
    SEQUENCE4resok *sr = &res[0].nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
    *sr = (SEQUENCE4resok){.sr_sequenceid = 7,
                           .sr_slotid = 3,
                           .sr_highest_slotid = 5,
                           .sr_target_highest_slotid = 9,
                           .sr_status_flags = SEQ4_STATUS_RECALLABLE_STATE_REVOKED};
    memcpy(sr->sr_sessionid, sid, sizeof(sid));
    res[1].resop = OP_PUTROOTFH;
    res[2].resop = OP_LOOKUP;
    res[3].resop = OP_GETATTR;
    fattr4 *fa = &res[3].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    fa->attrmask.bitmap4_len = 2;
    fa->attrmask.bitmap4_val = want;
    fa->attr_vals.attrlist4_len = (u_int)vn;
    fa->attr_vals.attrlist4_val = vals;
    COMPOUND4res reply = {.status = NFS4_OK, .tag = {sizeof(TAG) - 1, TAG}};
    reply.resarray.resarray_len = 4;
    reply.resarray.resarray_val = res;
    n = encode(UIW__XDRPROC(xdr_COMPOUND4res), &reply, buf, sizeof(buf));

    /* RFC 8881 sections 16.2.2, 18.46.2, 18.21.2, 18.15.2, 18.7.2 */
    w = (struct wire){(uint8_t *)ref, 0, sizeof(ref)};
    w32(&w, NFS4_OK);
    wstr(&w, TAG);
    w32(&w, 4);
    w32(&w, 53);
    w32(&w, NFS4_OK);
    wfixed(&w, sid, sizeof(sid));
    w32(&w, 7);
    w32(&w, 3);
    w32(&w, 5);
    w32(&w, 9);
    w32(&w, 0x40);
    w32(&w, 24);
    w32(&w, NFS4_OK);
    w32(&w, 15);
    w32(&w, NFS4_OK);
    w32(&w, 9);
    w32(&w, NFS4_OK);
    w32(&w, 2);
    w32(&w, want[0]);
    w32(&w, want[1]);
    wvar(&w, vals, vn);
    CHECK_EQ(n, w.n);
    CHECK_MEM(buf, ref, n);

    COMPOUND4res r;
    CHECK(decode(UIW__XDRPROC(xdr_COMPOUND4res), buf, n, &r, sizeof(r)));
    CHECK_EQ(r.status, NFS4_OK);
    CHECK_EQ(r.tag.utf8string_len, sizeof(TAG) - 1);
    CHECK_MEM(r.tag.utf8string_val, TAG, sizeof(TAG) - 1);
    CHECK_EQ(r.resarray.resarray_len, 4);
    nfs_resop4 *p = r.resarray.resarray_val;
    CHECK_EQ(p[0].resop, OP_SEQUENCE);
    CHECK_EQ(p[0].nfs_resop4_u.opsequence.sr_status, NFS4_OK);
    sr = &p[0].nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
    CHECK_MEM(sr->sr_sessionid, sid, sizeof(sid));
    CHECK_EQ(sr->sr_sequenceid, 7);
    CHECK_EQ(sr->sr_slotid, 3);
    CHECK_EQ(sr->sr_highest_slotid, 5);
    CHECK_EQ(sr->sr_target_highest_slotid, 9);
    CHECK_EQ(sr->sr_status_flags, SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
    CHECK_EQ(p[1].resop, OP_PUTROOTFH);
    CHECK_EQ(p[1].nfs_resop4_u.opputrootfh.status, NFS4_OK);
    CHECK_EQ(p[2].resop, OP_LOOKUP);
    CHECK_EQ(p[2].nfs_resop4_u.oplookup.status, NFS4_OK);
    CHECK_EQ(p[3].resop, OP_GETATTR);
    CHECK_EQ(p[3].nfs_resop4_u.opgetattr.status, NFS4_OK);
    fa = &p[3].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    CHECK_EQ(fa->attrmask.bitmap4_len, 2);
    CHECK_EQ(fa->attrmask.bitmap4_val[0], want[0]);
    CHECK_EQ(fa->attrmask.bitmap4_val[1], want[1]);
    struct attrs d;
    CHECK(decode(UIW__XDRPROC(xdr_attrs), fa->attr_vals.attrlist4_val, fa->attr_vals.attrlist4_len,
                 &d, sizeof(d)));
    CHECK_EQ(d.type, NF4DIR);
    CHECK_EQ(d.change, 0x1122334455667788ull);
    CHECK_EQ(d.size, 4096);
    CHECK_EQ(d.fsid.major, 0x8001);
    CHECK_EQ(d.fsid.minor, 42);
    CHECK_EQ(d.fileid, 0x200000001ull);
    CHECK_EQ(d.mode, 0755);
    CHECK_EQ(d.numlinks, 3);
    CHECK_EQ(d.owner.utf8string_len, 4);
    CHECK_MEM(d.owner.utf8string_val, "1000", 4);
    CHECK_EQ(d.group.utf8string_len, 3);
    CHECK_MEM(d.group.utf8string_val, "100", 3);
    CHECK_EQ(d.used, 8192);
    time_vs(&d.atime, 1700000001, 123456789);
    time_vs(&d.ctime, -2, 5);
    time_vs(&d.mtime, 1700000003, 999999999);
    CHECK_EQ(d.mounted_on, 2);
    xdr_free(UIW__XDRPROC(xdr_attrs), (caddr_t)&d);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (caddr_t)&r);
    cut_short(UIW__XDRPROC(xdr_COMPOUND4res), buf, n, &r, sizeof(r));
}

/* ---- READDIR's entries ---- */

/* f(x, obj) over buf[0..len) (XDR_DECODE), then XDR_FREE, on a thread with a 256 KiB
 * stack: whether it decoded, and the entries it found in the first READDIR result (or
 * dirlist4, when dl). */
struct on_thread {
    xdrproc_t f;
    const char *buf;
    size_t len;
    int dl;
    bool_t ok;
    unsigned entries, bad_cookies;
    bool_t eof;
};

static void *decode_thread(void *arg)
{
    struct on_thread *t = arg;
    union {
        COMPOUND4res c;
        dirlist4 d;
    } u;
    memset(&u, 0, sizeof(u));
    XDR x;
    xdrmem_create(&x, (char *)t->buf, (u_int)t->len, XDR_DECODE);
    t->ok = t->f(&x, &u);
    xdr_destroy(&x);
    if (t->ok) {
        dirlist4 *l = &u.d;
        if (!t->dl)
            l = &u.c.resarray.resarray_val[0].nfs_resop4_u.opreaddir.READDIR4res_u.resok4.reply;
        for (entry4 *e = l->entries; e; e = e->nextentry)
            if (e->cookie != ++t->entries)
                t->bad_cookies++;
        t->eof = l->eof;
    }
    xdr_free(t->f, (caddr_t)&u);
    return NULL;
}

static void run_on_small_stack(struct on_thread *t)
{
    pthread_attr_t a;
    pthread_t th;
    CHECK_EQ(pthread_attr_init(&a), 0);
    CHECK_EQ(pthread_attr_setstacksize(&a, 256 * 1024), 0);
    CHECK_EQ(pthread_create(&th, &a, decode_thread, t), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&a);
}

TEST(nfs4_xdr_readdir_entries_without_recursion)
{
    static char buf[4096], ref[4096];
    /* three entries: xdr_dirlist4 and xdr_entry4 code what rpcgen's routines code */
    entry4 e[3];
    memset(e, 0, sizeof(e));
    const char *names[3] = {"a", "bcdef", ""};
    uint32_t fileid_bit = 1u << FATTR4_FILEID;
    char fileid[8] = {0, 0, 0, 0, 0, 0, 0x10, 0x01};
    for (int i = 0; i < 3; i++) {
        e[i].cookie = 100u + (unsigned)i;
        e[i].name.utf8string_len = (u_int)strlen(names[i]);
        e[i].name.utf8string_val = (char *)names[i];
        if (i == 1) {
            e[i].attrs.attrmask.bitmap4_len = 1;
            e[i].attrs.attrmask.bitmap4_val = &fileid_bit;
            e[i].attrs.attr_vals.attrlist4_len = sizeof(fileid);
            e[i].attrs.attr_vals.attrlist4_val = fileid;
        }
        e[i].nextentry = i < 2 ? &e[i + 1] : NULL;
    }
    dirlist4 l = {e, TRUE};
    size_t n = encode(UIW__XDRPROC(xdr_dirlist4), &l, buf, sizeof(buf));
    CHECK_EQ(encode(UIW__XDRPROC(uiw__nfs4_rpcgen_xdr_dirlist4), &l, ref, sizeof(ref)), n);
    CHECK_MEM(buf, ref, n);
    size_t en = encode(UIW__XDRPROC(xdr_entry4), &e[0], buf, sizeof(buf));
    CHECK_EQ(encode(UIW__XDRPROC(uiw__nfs4_rpcgen_xdr_entry4), &e[0], ref, sizeof(ref)), en);
    CHECK_MEM(buf, ref, en);
    CHECK_EQ(en + 8, n); /* the list's first TRUE, and eof */
    /* decoded by each, each encodes the same bytes again */
    n = encode(UIW__XDRPROC(xdr_dirlist4), &l, ref, sizeof(ref));
    dirlist4 d, g;
    CHECK(decode(UIW__XDRPROC(xdr_dirlist4), ref, n, &d, sizeof(d)));
    CHECK(decode(UIW__XDRPROC(uiw__nfs4_rpcgen_xdr_dirlist4), ref, n, &g, sizeof(g)));
    CHECK_EQ(encode(UIW__XDRPROC(uiw__nfs4_rpcgen_xdr_dirlist4), &d, buf, sizeof(buf)), n);
    CHECK_MEM(buf, ref, n);
    CHECK_EQ(encode(UIW__XDRPROC(xdr_dirlist4), &g, buf, sizeof(buf)), n);
    CHECK_MEM(buf, ref, n);
    CHECK_EQ(d.entries->nextentry->attrs.attr_vals.attrlist4_len, sizeof(fileid));
    xdr_free(UIW__XDRPROC(xdr_dirlist4), (caddr_t)&d);
    CHECK(d.entries == NULL);
    xdr_free(UIW__XDRPROC(uiw__nfs4_rpcgen_xdr_dirlist4), (caddr_t)&g);
    cut_short(UIW__XDRPROC(xdr_dirlist4), ref, n, &d, sizeof(d));

    /* A hostile COMPOUND reply: one READDIR result of 1,000,000 entries (each a cookie, an
     * empty name, no attributes: 24 bytes). */
    const unsigned count = 1000000;
    size_t len = 4 * 3 + 4 * 2 + 8 + (size_t)count * 24 + 8;
    struct wire w = {malloc(len), 0, len};
    CHECK(w.b != NULL);
    w32(&w, NFS4_OK);
    w32(&w, 0); /* tag */
    w32(&w, 1); /* one result */
    w32(&w, OP_READDIR);
    w32(&w, NFS4_OK);
    w64(&w, 0x636f6f6b69657666ull); /* cookieverf */
    size_t list_at = w.n;
    for (unsigned i = 0; i < count; i++) {
        w32(&w, TRUE);
        w64(&w, i + 1u); /* cookie */
        w32(&w, 0);      /* name */
        w32(&w, 0);      /* attrmask */
        w32(&w, 0);      /* attr_vals */
    }
    w32(&w, FALSE);
    w32(&w, TRUE); /* eof */
    CHECK_EQ(w.n, len);
    /* decoded (one allocation per entry, no recursion) and freed on a 256 KiB stack */
    struct on_thread t = {UIW__XDRPROC(xdr_COMPOUND4res), (char *)w.b, len, 0, FALSE, 0, 0, FALSE};
    run_on_small_stack(&t);
    CHECK(t.ok);
    CHECK_EQ(t.entries, count);
    CHECK_EQ(t.bad_cookies, 0);
    CHECK(t.eof);
    /* cut short: fails, and what was decoded is freed (LeakSanitizer) */
    t = (struct on_thread){
        UIW__XDRPROC(xdr_COMPOUND4res), (char *)w.b, len / 2, 0, FALSE, 0, 0, FALSE};
    run_on_small_stack(&t);
    CHECK(!t.ok);
#if !defined(UIW__ASAN) && !defined(UIW__TSAN)
    /* The control: rpcgen's recursive routine overflows that stack on the same list (in a
     * child, without a core; not under the sanitizers, which report the overflow as an
     * error of their own). */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        t = (struct on_thread){UIW__XDRPROC(uiw__nfs4_rpcgen_xdr_dirlist4),
                               (char *)w.b + list_at,
                               len - list_at,
                               1,
                               FALSE,
                               0,
                               0,
                               FALSE};
        run_on_small_stack(&t);
        _exit(t.ok && t.entries == count ? 0 : 1);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st))
        uiw_test_fail(__FILE__, __LINE__,
                      "rpcgen's routine decoded %u entries on 256 KiB: status %d", count, st);
    CHECK(WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGBUS);
#else
    (void)list_at;
#endif
    free(w.b);
}

/* ---- the decoding bounds ---- */

/* A COMPOUND of one operation, its arguments from *w's caller: the header. */
static void call_of(struct wire *w, uint32_t op)
{
    w32(w, 0); /* tag */
    w32(w, 1); /* minorversion */
    w32(w, 1); /* one operation */
    w32(w, op);
}

static void stateid(struct wire *w)
{
    char other[NFS4_OTHER_SIZE];
    fill(other, sizeof(other), 1);
    w32(w, 1);
    wfixed(w, other, sizeof(other));
}

/* w's bytes, followed by 64 bytes of zeros, do not decode as COMPOUND4args. */
static void refused(struct wire *w, const char *what)
{
    for (int i = 0; i < 16; i++)
        w32(w, 0);
    COMPOUND4args a;
    if (decode(UIW__XDRPROC(xdr_COMPOUND4args), w->b, w->n, &a, sizeof(a)))
        uiw_test_fail(__FILE__, __LINE__, "%s decoded", what);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4args), (caddr_t)&a);
    w->n = 0;
}

TEST(nfs4_xdr_decode_bounds)
{
    static uint8_t b[2 * NFS4_NAME_DECODE + 256];
    struct wire w = {b, 0, sizeof(b)};
    long before = uiw_test_vm_kib("VmPeak");
    /* Each claims far more than its bound: had its decoder allocated what was claimed
     * (64 to 256 MiB), the address space would have grown by that much. */
    w32(&w, 256u << 20); /* the tag: NFS4_NAME_DECODE */
    refused(&w, "a tag of 256 MiB");
    w32(&w, 0);
    w32(&w, 1);
    w32(&w, 1u << 20); /* operations: NFS4_OPS_DECODE */
    refused(&w, "1 Mi operations");
    call_of(&w, OP_GETATTR);
    w32(&w, 1u << 24); /* bitmap words: NFS4_BITMAP_DECODE */
    refused(&w, "a bitmap of 16 Mi words");
    call_of(&w, OP_WRITE);
    stateid(&w);
    w64(&w, 0);          /* offset */
    w32(&w, UNSTABLE4);  /* stable */
    w32(&w, 256u << 20); /* data: NFS4_IO_DECODE */
    refused(&w, "a WRITE of 256 MiB");
    call_of(&w, OP_TEST_STATEID);
    w32(&w, 1u << 22); /* stateids: NFS4_LIST_DECODE */
    refused(&w, "4 Mi stateids");
    call_of(&w, OP_SETATTR);
    stateid(&w);
    w32(&w, 1);
    w32(&w, 1u << FATTR4_SIZE);
    w32(&w, 256u << 20); /* attr_vals: NFS4_BODY_DECODE */
    refused(&w, "attributes of 256 MiB");
    call_of(&w, OP_SECINFO_NO_NAME + 1000); /* not an operation: no arm in nfs_argop4 */
    refused(&w, "operation 1052");
    long after = uiw_test_vm_kib("VmPeak");
    if (after - before > 16 * 1024)
        uiw_test_fail(__FILE__, __LINE__, "VmPeak grew from %ld to %ld KiB", before, after);

    /* a LOOKUP of a name of NFS4_NAME_DECODE bytes decodes, one byte more does not */
    static char name[NFS4_NAME_DECODE + 1];
    memset(name, 'n', sizeof(name));
    for (size_t len = NFS4_NAME_DECODE; len <= NFS4_NAME_DECODE + 1; len++) {
        w.n = 0;
        call_of(&w, OP_LOOKUP);
        wvar(&w, name, len);
        COMPOUND4args a;
        bool_t ok = decode(UIW__XDRPROC(xdr_COMPOUND4args), b, w.n, &a, sizeof(a));
        CHECK_EQ(ok, len == NFS4_NAME_DECODE);
        if (ok)
            CHECK_EQ(a.argarray.argarray_val[0].nfs_argop4_u.oplookup.objname.utf8string_len, len);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4args), (caddr_t)&a);
    }
}

/* uiw__nfs4_enc_result's bytes against xdr_nfs_resop4's, into a buffer of `room` bytes
 * (both fail alike when it is too small) */
static void same_bytes(const nfs_resop4 *r, u_int room, const char *what)
{
    static char a[1024], b[1024];
    memset(a, 0xa5, sizeof(a));
    memset(b, 0x5a, sizeof(b));
    XDR xa, xb;
    xdrmem_create(&xa, a, room, XDR_ENCODE);
    xdrmem_create(&xb, b, room, XDR_ENCODE);
    bool_t oka = uiw__nfs4_enc_result(&xa, r);
    bool_t okb = xdr_nfs_resop4(&xb, (nfs_resop4 *)(uintptr_t)r);
    if (oka != okb)
        uiw_test_fail(__FILE__, __LINE__, "%s in %u bytes: %d, rpcgen %d", what, room, oka, okb);
    if (oka && (xdr_getpos(&xa) != xdr_getpos(&xb) || memcmp(a, b, xdr_getpos(&xa)) != 0))
        uiw_test_fail(__FILE__, __LINE__, "%s: other bytes than rpcgen's", what);
    xdr_destroy(&xa);
    xdr_destroy(&xb);
}

/* uiw__nfs4_res_size against xdr_sizeof of the same result, and its bytes (same_bytes) */
static void same_size(const nfs_resop4 *r, const char *what)
{
    uint32_t exp = (uint32_t)xdr_sizeof(UIW__XDRPROC(xdr_nfs_resop4), (void *)(uintptr_t)r);
    uint32_t got = uiw__nfs4_res_size(r);
    same_bytes(r, 1024, what);
    if (exp >= 4)
        same_bytes(r, exp - 4, what); /* no room for the last word */
    if (got != exp)
        uiw_test_fail(__FILE__, __LINE__, "%s: %u bytes, xdr_sizeof says %u", what, got, exp);
}

TEST(nfs4_xdr_results_sized_and_coded_as_rpcgen)
{
    nfs_resop4 r;
    static const nfsstat4 sts[] = {NFS4_OK, NFS4ERR_BADSESSION, NFS4ERR_STALE};
    for (unsigned i = 0; i < sizeof(sts) / sizeof(sts[0]); i++) {
        memset(&r, 0, sizeof(r));
        r.resop = OP_SEQUENCE;
        r.nfs_resop4_u.opsequence.sr_status = sts[i];
        SEQUENCE4resok *ok = &r.nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
        for (int b = 0; b < NFS4_SESSIONID_SIZE; b++)
            ok->sr_sessionid[b] = (char)(0x31 + b);
        ok->sr_sequenceid = 0x01020304;
        ok->sr_slotid = 63;
        ok->sr_highest_slotid = 127;
        ok->sr_target_highest_slotid = 126;
        ok->sr_status_flags = SEQ4_STATUS_CB_PATH_DOWN;
        same_size(&r, "SEQUENCE");
        static const nfs_opnum4 puts[] = {OP_PUTFH, OP_PUTROOTFH, OP_PUTPUBFH, OP_SAVEFH,
                                          OP_RESTOREFH};
        for (unsigned k = 0; k < sizeof(puts) / sizeof(puts[0]); k++) {
            memset(&r, 0, sizeof(r));
            r.resop = puts[k];
            r.nfs_resop4_u.opputfh.status = sts[i];
            same_size(&r, "a handle operation");
        }
    }
    /* GETATTR: every bitmap length to 3 words, values of 0 to 9 bytes (the pad), and about
     * the most the server writes in place (HOT_ATTRS, 512) */
    uint32_t words[3] = {0x0010011a, 0x00b0a23a, 0x2};
    static char vals[600];
    for (size_t b = 0; b < sizeof(vals); b++)
        vals[b] = (char)('a' + b % 26);
    static const u_int lens[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 511, 512, 513, 600};
    for (u_int nw = 0; nw <= 3; nw++) {
        for (unsigned li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
            u_int len = lens[li];
            memset(&r, 0, sizeof(r));
            r.resop = OP_GETATTR;
            fattr4 *f = &r.nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
            f->attrmask.bitmap4_len = nw;
            f->attrmask.bitmap4_val = words;
            f->attr_vals.attrlist4_len = len;
            f->attr_vals.attrlist4_val = vals;
            same_size(&r, "GETATTR");
        }
    }
    memset(&r, 0, sizeof(r));
    r.resop = OP_GETATTR;
    r.nfs_resop4_u.opgetattr.status = NFS4ERR_ACCESS;
    same_size(&r, "GETATTR refused");
    /* one it leaves to xdr_sizeof: GETFH, with a handle of 5 bytes */
    char fh[5] = {1, 2, 3, 4, 5};
    memset(&r, 0, sizeof(r));
    r.resop = OP_GETFH;
    r.nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len = sizeof(fh);
    r.nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_val = fh;
    same_size(&r, "GETFH");
    CHECK_EQ(uiw__nfs4_res_size(&r), 8 + 4 + 8);
}
