/*
 * uiw-nfsd's NFSv4.1 namespace operations (src/nfs/nfs4ns.c) and attributes (nfs4attr.c)
 * over raw TCP COMPOUNDs: CREATE, REMOVE, RENAME, LINK, READLINK and SETATTR checked on
 * disk with their change_info4 against the directories' ctime; READDIR of 1,000 entries
 * over several calls, its cookies and verifier; VERIFY and NVERIFY; owners as name@domain;
 * the exact error of each refusal.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/xdr_data.h"
#include "nfs4.h"
#include "nfs4_util.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

static void name4(component4 *c, const char *s)
{
    c->utf8string_len = (u_int)strlen(s);
    c->utf8string_val = (char *)(uintptr_t)s;
}

static void lookup_op(nfs_argop4 *a, const char *name)
{
    op(a, OP_LOOKUP);
    name4(&a->nfs_argop4_u.oplookup.objname, name);
}

/* The operations after a SEQUENCE (a[0], filled here); the COMPOUND's status. */
static nfsstat4 run(struct t4 *t, nfs_argop4 *a, unsigned n, COMPOUND4res *res)
{
    next_seq(t, &a[0]);
    compound(t, a, n, res);
    return res->status;
}

/* A COMPOUND whose result is only its status. */
static nfsstat4 run_st(struct t4 *t, nfs_argop4 *a, unsigned n)
{
    COMPOUND4res res;
    nfsstat4 st = run(t, a, n, &res);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    return st;
}

static uint64_t change_of(const struct stat *st)
{
    return (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;
}

/* A change_info4 against the directory's lstat before the call and now. */
static void check_cinfo(const change_info4 *ci, const struct stat *before, const char *dir)
{
    struct stat now = lstat_ok(dir);
    CHECK(ci->atomic);
    CHECK_EQ(ci->before, change_of(before));
    CHECK_EQ(ci->after, change_of(&now));
}

/* A server of a new export, every one allowed to change it, and a session. */
static void setup(struct srv *v, struct t4 *t, const char *idmap)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1;
    o.nfs4 = 1;
    o.idmap_domain = idmap;
    srv_start(v, &o);
    CHECK_EQ(chmod(v->dir, 0777), 0);
    t4_open(t, v, NULL);
    session(t, 16);
}

static void done(struct srv *v, struct t4 *t)
{
    t4_close(t);
    srv_stop(v);
}

static void create_op(nfs_argop4 *a, nfs_ftype4 type, const char *name)
{
    op(a, OP_CREATE);
    a->nfs_argop4_u.opcreate.objtype.type = type;
    name4(&a->nfs_argop4_u.opcreate.objname, name);
}

/* CREATE of each type it makes, checked on disk; its change_info4 and attrset; the new
 * object as the current handle; the refusals. */
TEST(nfs4_ns_create)
{
    struct srv v;
    struct t4 t;
    setup(&v, &t, NULL);
    nfs_argop4 a[6];
    COMPOUND4res res;
    /* a directory with mode 0750 (createattrs), then GETATTR of it: its fileid */
    struct stat before = lstat_ok(v.dir);
    uint32_t mode = 0750, fmask[2] = {0, 1u << (FATTR4_MODE - 32)};
    uint32_t mv = htonl(mode);
    op(&a[1], OP_PUTROOTFH);
    create_op(&a[2], NF4DIR, "d");
    fattr4 *ca = &a[2].nfs_argop4_u.opcreate.createattrs;
    ca->attrmask.bitmap4_len = 2;
    ca->attrmask.bitmap4_val = fmask;
    ca->attr_vals.attrlist4_len = 4;
    ca->attr_vals.attrlist4_val = (char *)&mv;
    op(&a[3], OP_GETATTR);
    uint32_t gmask[1] = {1u << FATTR4_FILEID};
    a[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 1;
    a[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = gmask;
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    struct stat d = lstat_ok(path_in(&v, "d"));
    CHECK(S_ISDIR(d.st_mode));
    CHECK_EQ(d.st_mode & 07777, 0750);
    CREATE4resok *cr = &res.resarray.resarray_val[2].nfs_resop4_u.opcreate.CREATE4res_u.resok4;
    check_cinfo(&cr->cinfo, &before, v.dir);
    CHECK_EQ(cr->attrset.bitmap4_len, 2);
    CHECK_EQ(cr->attrset.bitmap4_val[0], 0);
    CHECK_EQ(cr->attrset.bitmap4_val[1], fmask[1]);
    fattr4 *ga =
        &res.resarray.resarray_val[3].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    CHECK_EQ(ga->attr_vals.attrlist4_len, 8);
    uint64_t fileid;
    memcpy(&fileid, ga->attr_vals.attrlist4_val, 8);
    CHECK_EQ(be64toh(fileid), (uint64_t)d.st_ino); /* the current handle is the new one */
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* a symbolic link, a FIFO and a socket inside d */
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], "d");
    create_op(&a[3], NF4LNK, "l");
    a[3].nfs_argop4_u.opcreate.objtype.createtype4_u.linkdata.linktext4_len = 9;
    a[3].nfs_argop4_u.opcreate.objtype.createtype4_u.linkdata.linktext4_val = "../target";
    op(&a[4], OP_READLINK);
    CHECK_EQ(run(&t, a, 5, &res), NFS4_OK);
    READLINK4resok *rl =
        &res.resarray.resarray_val[4].nfs_resop4_u.opreadlink.READLINK4res_u.resok4;
    CHECK_EQ(rl->link.linktext4_len, 9);
    CHECK(memcmp(rl->link.linktext4_val, "../target", 9) == 0);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    char buf[64];
    ssize_t n = readlink(path_in(&v, "d/l"), buf, sizeof(buf));
    CHECK_EQ(n, 9);
    CHECK(memcmp(buf, "../target", 9) == 0);
    create_op(&a[3], NF4FIFO, "p");
    CHECK_EQ(run_st(&t, a, 4), NFS4_OK);
    CHECK(S_ISFIFO(lstat_ok(path_in(&v, "d/p")).st_mode));
    create_op(&a[3], NF4SOCK, "s");
    CHECK_EQ(run_st(&t, a, 4), NFS4_OK);
    CHECK(S_ISSOCK(lstat_ok(path_in(&v, "d/s")).st_mode));

    /* refusals: a regular file (OPEN's), a name there, bad names, a file as directory,
     * an empty link, no handle */
    create_op(&a[3], NF4REG, "r");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_BADTYPE);
    create_op(&a[3], NF4DIR, "p");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_EXIST);
    create_op(&a[3], NF4DIR, "..");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_BADNAME);
    create_op(&a[3], NF4DIR, "a/b");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_BADNAME);
    create_op(&a[3], NF4DIR, "");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_INVAL);
    char longname[NAME_MAX + 2];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    create_op(&a[3], NF4DIR, longname);
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_NAMETOOLONG);
    create_op(&a[3], NF4LNK, "l2");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_INVAL);
    lookup_op(&a[3], "p");
    create_op(&a[4], NF4DIR, "x");
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_NOTDIR);
    create_op(&a[1], NF4DIR, "x");
    CHECK_EQ(run_st(&t, a, 2), NFS4ERR_NOFILEHANDLE);
    /* an attribute it does not support (acl), and a read-only one (type) */
    uint32_t acl = 1u << FATTR4_ACL, type = 1u << FATTR4_TYPE;
    op(&a[1], OP_PUTROOTFH);
    create_op(&a[2], NF4DIR, "e");
    a[2].nfs_argop4_u.opcreate.createattrs.attrmask.bitmap4_len = 1;
    a[2].nfs_argop4_u.opcreate.createattrs.attrmask.bitmap4_val = &acl;
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ATTRNOTSUPP);
    a[2].nfs_argop4_u.opcreate.createattrs.attrmask.bitmap4_val = &type;
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_INVAL);
    CHECK(access(path_in(&v, "e"), F_OK) != 0);
    done(&v, &t);
}

/* REMOVE, RENAME, LINK and READLINK, checked on disk, with their change_info4. */
TEST(nfs4_ns_remove_rename_link)
{
    struct srv v;
    struct t4 t;
    setup(&v, &t, NULL);
    put_file(&v, "f", "data", 4);
    CHECK_EQ(chown(path_in(&v, "f"), 1000, 1000), 0); /* the caller's: it may link it */
    CHECK_EQ(mkdir(path_in(&v, "d"), 0777), 0);
    CHECK_EQ(chmod(path_in(&v, "d"), 0777), 0); /* past the umask */
    CHECK_EQ(mkdir(path_in(&v, "full"), 0777), 0);
    CHECK_EQ(chmod(path_in(&v, "full"), 0777), 0);
    put_file(&v, "full/x", "x", 1);
    nfs_argop4 a[8];
    COMPOUND4res res;
    char dpath[512];
    snprintf(dpath, sizeof(dpath), "%s", path_in(&v, "d"));

    /* LINK: SAVEFH the file, then the directory current */
    struct stat before = lstat_ok(dpath);
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], "f");
    op(&a[3], OP_SAVEFH);
    op(&a[4], OP_PUTROOTFH);
    lookup_op(&a[5], "d");
    op(&a[6], OP_LINK);
    name4(&a[6].nfs_argop4_u.oplink.newname, "g");
    CHECK_EQ(run(&t, a, 7, &res), NFS4_OK);
    check_cinfo(&res.resarray.resarray_val[6].nfs_resop4_u.oplink.LINK4res_u.resok4.cinfo, &before,
                dpath);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(lstat_ok(path_in(&v, "f")).st_nlink, 2);
    CHECK_EQ(lstat_ok(path_in(&v, "d/g")).st_ino, lstat_ok(path_in(&v, "f")).st_ino);
    /* again: the name is there; of a directory: NFS4ERR_ISDIR */
    CHECK_EQ(run_st(&t, a, 7), NFS4ERR_EXIST);
    lookup_op(&a[2], "full");
    name4(&a[6].nfs_argop4_u.oplink.newname, "h");
    CHECK_EQ(run_st(&t, a, 7), NFS4ERR_ISDIR);
    /* no saved handle */
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LINK);
    name4(&a[2].nfs_argop4_u.oplink.newname, "h");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_NOFILEHANDLE);

    /* RENAME f (root) to d/moved: both change_info4 */
    struct stat rb = lstat_ok(v.dir), db = lstat_ok(dpath);
    ino_t ino = lstat_ok(path_in(&v, "f")).st_ino;
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_SAVEFH);
    lookup_op(&a[3], "d");
    op(&a[4], OP_RENAME);
    name4(&a[4].nfs_argop4_u.oprename.oldname, "f");
    name4(&a[4].nfs_argop4_u.oprename.newname, "moved");
    CHECK_EQ(run(&t, a, 5, &res), NFS4_OK);
    RENAME4resok *rr = &res.resarray.resarray_val[4].nfs_resop4_u.oprename.RENAME4res_u.resok4;
    check_cinfo(&rr->source_cinfo, &rb, v.dir);
    check_cinfo(&rr->target_cinfo, &db, dpath);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK(access(path_in(&v, "f"), F_OK) != 0);
    CHECK_EQ(lstat_ok(path_in(&v, "d/moved")).st_ino, ino);
    /* the source gone: NFS4ERR_NOENT; a directory over one not empty: NFS4ERR_EXIST */
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_NOENT);
    name4(&a[4].nfs_argop4_u.oprename.oldname, "..");
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_BADNAME);
    op(&a[3], OP_PUTROOTFH);
    name4(&a[4].nfs_argop4_u.oprename.oldname, "d");
    name4(&a[4].nfs_argop4_u.oprename.newname, "full");
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_EXIST);

    /* REMOVE: a file, a directory not empty, a name not there, "." */
    before = lstat_ok(dpath);
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], "d");
    op(&a[3], OP_REMOVE);
    name4(&a[3].nfs_argop4_u.opremove.target, "moved");
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    check_cinfo(&res.resarray.resarray_val[3].nfs_resop4_u.opremove.REMOVE4res_u.resok4.cinfo,
                &before, dpath);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK(access(path_in(&v, "d/moved"), F_OK) != 0);
    CHECK_EQ(lstat_ok(path_in(&v, "d/g")).st_nlink, 1);
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_NOENT);
    name4(&a[3].nfs_argop4_u.opremove.target, ".");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_BADNAME);
    op(&a[2], OP_REMOVE);
    name4(&a[2].nfs_argop4_u.opremove.target, "full");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_NOTEMPTY);
    CHECK_EQ(unlink(path_in(&v, "full/x")), 0);
    CHECK_EQ(run_st(&t, a, 3), NFS4_OK);
    CHECK(access(path_in(&v, "full"), F_OK) != 0);
    /* REMOVE with a file as the directory: NFS4ERR_NOTDIR */
    lookup_op(&a[2], "d");
    lookup_op(&a[3], "g");
    op(&a[4], OP_REMOVE);
    name4(&a[4].nfs_argop4_u.opremove.target, "x");
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_NOTDIR);
    /* READLINK of a file: NFS4ERR_INVAL */
    op(&a[4], OP_READLINK);
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_INVAL);
    done(&v, &t);
}

/* A read-only export: every change NFS4ERR_ROFS, nothing changed on disk. */
TEST(nfs4_ns_rofs)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    t4_exports(&v, "%s 127.0.0.1(ro,insecure,no_root_squash,fsid=root)\n");
    CHECK_EQ(chmod(v.dir, 0777), 0);
    put_file(&v, "f", "data", 4);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 16);
    nfs_argop4 a[5];
    op(&a[1], OP_PUTROOTFH);
    create_op(&a[2], NF4DIR, "d");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ROFS);
    op(&a[2], OP_REMOVE);
    name4(&a[2].nfs_argop4_u.opremove.target, "f");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ROFS);
    op(&a[2], OP_SAVEFH);
    op(&a[3], OP_RENAME);
    name4(&a[3].nfs_argop4_u.oprename.oldname, "f");
    name4(&a[3].nfs_argop4_u.oprename.newname, "g");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_ROFS);
    lookup_op(&a[2], "f");
    op(&a[3], OP_SETATTR);
    uint32_t m[2] = {0, 1u << (FATTR4_MODE - 32)}, mv = htonl(0600);
    a[3].nfs_argop4_u.opsetattr.obj_attributes.attrmask.bitmap4_len = 2;
    a[3].nfs_argop4_u.opsetattr.obj_attributes.attrmask.bitmap4_val = m;
    a[3].nfs_argop4_u.opsetattr.obj_attributes.attr_vals.attrlist4_len = 4;
    a[3].nfs_argop4_u.opsetattr.obj_attributes.attr_vals.attrlist4_val = (char *)&mv;
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_ROFS);
    CHECK(access(path_in(&v, "d"), F_OK) != 0);
    CHECK_EQ(access(path_in(&v, "f"), F_OK), 0);
    CHECK((lstat_ok(path_in(&v, "f")).st_mode & 07777) != 0600);
    done(&v, &t);
}

/* XDR of attribute values, for SETATTR and VERIFY. */
struct vals {
    char buf[512];
    XDR x;
    uint32_t mask[3];
};

static void vals_init(struct vals *w)
{
    memset(w, 0, sizeof(*w));
    xdrmem_create(&w->x, w->buf, sizeof(w->buf), XDR_ENCODE);
}

static void vals_bit(struct vals *w, unsigned n)
{
    w->mask[n / 32] |= 1u << (n % 32);
}

static void vals_attr(struct vals *w, fattr4 *f)
{
    f->attrmask.bitmap4_len = w->mask[2] ? 3 : w->mask[1] ? 2 : 1;
    f->attrmask.bitmap4_val = w->mask;
    f->attr_vals.attrlist4_len = xdr_getpos(&w->x);
    f->attr_vals.attrlist4_val = w->buf;
}

static void setattr_op(nfs_argop4 *a, struct vals *w)
{
    op(a, OP_SETATTR);
    vals_attr(w, &a->nfs_argop4_u.opsetattr.obj_attributes);
}

/* The owner GETATTR gives for the current handle (out: at least 256 bytes). */
static void owner_of(struct t4 *t, const char *file, char *out)
{
    nfs_argop4 a[4];
    COMPOUND4res res;
    uint32_t m[2] = {0, 1u << (FATTR4_OWNER - 32)};
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], file);
    op(&a[3], OP_GETATTR);
    a[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 2;
    a[3].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = m;
    CHECK_EQ(run(t, a, 4, &res), NFS4_OK);
    fattr4 *f =
        &res.resarray.resarray_val[3].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    XDR x;
    xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
    CHECK(xdr_string(&x, &out, 256));
    xdr_destroy(&x);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
}

/* SETATTR of mode, size, times and owners, checked on disk; attrsset; its refusals. */
TEST(nfs4_ns_setattr)
{
    struct srv v;
    struct t4 t;
    setup(&v, &t, "uiw.test");
    put_file(&v, "f", "0123456789", 10);
    CHECK_EQ(chown(path_in(&v, "f"), 1000, 1000), 0);
    nfs_argop4 a[4];
    COMPOUND4res res;
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], "f");

    /* size 3 (anonymous stateid), mode 0640, atime the client's, mtime the server's */
    struct vals w;
    vals_init(&w);
    uint64_t size = 3;
    uint32_t mode = 0640, how = SET_TO_CLIENT_TIME4, ns = 5000;
    int64_t sec = 1000000000;
    vals_bit(&w, FATTR4_SIZE);
    CHECK(xdr_uint64_t(&w.x, &size));
    vals_bit(&w, FATTR4_MODE);
    CHECK(xdr_uint32_t(&w.x, &mode));
    vals_bit(&w, FATTR4_TIME_ACCESS_SET);
    CHECK(xdr_uint32_t(&w.x, &how) && xdr_int64_t(&w.x, &sec) && xdr_uint32_t(&w.x, &ns));
    vals_bit(&w, FATTR4_TIME_MODIFY_SET);
    how = SET_TO_SERVER_TIME4;
    CHECK(xdr_uint32_t(&w.x, &how));
    setattr_op(&a[3], &w);
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    SETATTR4res *sr = &res.resarray.resarray_val[3].nfs_resop4_u.opsetattr;
    CHECK_EQ(sr->attrsset.bitmap4_len, 2);
    CHECK_EQ(sr->attrsset.bitmap4_val[0], w.mask[0]);
    CHECK_EQ(sr->attrsset.bitmap4_val[1], w.mask[1]);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    struct stat st = lstat_ok(path_in(&v, "f"));
    CHECK_EQ(st.st_size, 3);
    CHECK_EQ(st.st_mode & 07777, 0640);
    CHECK_EQ(st.st_atim.tv_sec, 1000000000);
    CHECK_EQ(st.st_atim.tv_nsec, 5000);
    CHECK(st.st_mtim.tv_sec >= t0.tv_sec - 1);

    /* a size with a stateid this server never gave out (not of its boot): checked as a
     * WRITE's, NFS4ERR_STALE_STATEID, nothing set */
    a[3].nfs_argop4_u.opsetattr.stateid.seqid = 1;
    a[3].nfs_argop4_u.opsetattr.stateid.other[0] = 7;
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_STALE_STATEID);
    memset(&a[3].nfs_argop4_u.opsetattr.stateid, 0, sizeof(stateid4));
    /* unsupported (acl), read-only (type), a bad mode, values that do not decode */
    vals_init(&w);
    vals_bit(&w, FATTR4_ACL);
    setattr_op(&a[3], &w);
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_ATTRNOTSUPP);
    vals_init(&w);
    vals_bit(&w, FATTR4_TYPE);
    uint32_t u32 = NF4REG;
    CHECK(xdr_uint32_t(&w.x, &u32));
    setattr_op(&a[3], &w);
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_INVAL);
    vals_init(&w);
    vals_bit(&w, FATTR4_MODE);
    setattr_op(&a[3], &w); /* no value */
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_BADXDR);
    /* a size of a directory */
    vals_init(&w);
    vals_bit(&w, FATTR4_SIZE);
    CHECK(xdr_uint64_t(&w.x, &size));
    setattr_op(&a[2], &w);
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ISDIR);
    lookup_op(&a[2], "f");

    /* owners: GETATTR as name@domain (the option), SETATTR of name@domain and numbers;
     * a name not known or of another domain: NFS4ERR_BADOWNER */
    struct passwd *pw = getpwuid(1000);
    char got[256], want[300];
    owner_of(&t, "f", got);
    if (pw)
        snprintf(want, sizeof(want), "%s@uiw.test", pw->pw_name);
    else
        snprintf(want, sizeof(want), "1000");
    CHECK_STR(got, want);
    const char *owners[] = {want, "1000", "no-such-user-uiw@uiw.test", "root@other.domain", "0"};
    const nfsstat4 codes[] = {NFS4_OK, NFS4_OK, NFS4ERR_BADOWNER, NFS4ERR_BADOWNER, NFS4ERR_PERM};
    for (unsigned i = 0; i < 5; i++) {
        vals_init(&w);
        vals_bit(&w, FATTR4_OWNER);
        char *p = (char *)(uintptr_t)owners[i];
        CHECK(xdr_string(&w.x, &p, 256));
        setattr_op(&a[3], &w);
        nfsstat4 got_st = run_st(&t, a, 4);
        if (got_st != codes[i])
            uiw_test_fail(__FILE__, __LINE__, "owner %s: %d, not %d", owners[i], (int)got_st,
                          (int)codes[i]);
        CHECK_EQ(lstat_ok(path_in(&v, "f")).st_uid, 1000);
    }
    done(&v, &t);
}

/* VERIFY and NVERIFY: the current file's attributes compared as encoded. */
TEST(nfs4_ns_verify)
{
    struct srv v;
    struct t4 t;
    setup(&v, &t, NULL);
    put_file(&v, "f", "0123456789", 10);
    nfs_argop4 a[5];
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], "f");
    op(&a[4], OP_GETFH);
    struct vals w;
    uint64_t size = 10;
    uint32_t type = NF4REG;
    vals_init(&w);
    vals_bit(&w, FATTR4_TYPE);
    vals_bit(&w, FATTR4_SIZE);
    CHECK(xdr_uint32_t(&w.x, &type) && xdr_uint64_t(&w.x, &size));
    op(&a[3], OP_VERIFY);
    vals_attr(&w, &a[3].nfs_argop4_u.opverify.obj_attributes);
    CHECK_EQ(run_st(&t, a, 5), NFS4_OK);
    op(&a[3], OP_NVERIFY);
    vals_attr(&w, &a[3].nfs_argop4_u.opnverify.obj_attributes);
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_SAME);
    /* the file changes size: the other way round */
    CHECK_EQ(truncate(path_in(&v, "f"), 4), 0);
    CHECK_EQ(run_st(&t, a, 5), NFS4_OK);
    op(&a[3], OP_VERIFY);
    vals_attr(&w, &a[3].nfs_argop4_u.opverify.obj_attributes);
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_NOT_SAME);
    /* rdattr_error asked: NFS4ERR_INVAL; an unsupported one: NFS4ERR_ATTRNOTSUPP */
    vals_init(&w);
    vals_bit(&w, FATTR4_RDATTR_ERROR);
    uint32_t ok = NFS4_OK;
    CHECK(xdr_uint32_t(&w.x, &ok));
    vals_attr(&w, &a[3].nfs_argop4_u.opverify.obj_attributes);
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_INVAL);
    vals_init(&w);
    vals_bit(&w, FATTR4_ACL);
    vals_attr(&w, &a[3].nfs_argop4_u.opverify.obj_attributes);
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_ATTRNOTSUPP);
    done(&v, &t);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* READDIR of 1,000 entries over several calls: every name once, no "." or "..", each
 * entry's fileid and type as on disk, the cookies resuming; the verifier checked;
 * NFS4ERR_TOOSMALL when not one entry fits. */
TEST(nfs4_ns_readdir)
{
    struct srv v;
    struct t4 t;
    setup(&v, &t, NULL);
    enum { N = 1000 };
    CHECK_EQ(mkdir(path_in(&v, "big"), 0777), 0);
    for (int i = 0; i < N; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "big/entry-%04d", i);
        if (i % 10 == 0)
            CHECK_EQ(mkdir(path_in(&v, rel), 0755), 0);
        else
            put_file(&v, rel, "x", 1);
    }
    nfs_argop4 a[4];
    COMPOUND4res res;
    uint32_t mask[2] = {(1u << FATTR4_TYPE) | (1u << FATTR4_RDATTR_ERROR), 0};
    mask[FATTR4_FILEID / 32] |= 1u << (FATTR4_FILEID % 32);
    op(&a[1], OP_PUTROOTFH);
    lookup_op(&a[2], "big");
    op(&a[3], OP_READDIR);
    READDIR4args *ra = &a[3].nfs_argop4_u.opreaddir;
    ra->maxcount = 8192;
    ra->dircount = 4096;
    ra->attr_request.bitmap4_len = 1;
    ra->attr_request.bitmap4_val = mask;
    char *names[N + 1];
    unsigned got = 0, calls = 0;
    char verf[NFS4_VERIFIER_SIZE] = {0};
    for (int eof = 0; !eof;) {
        CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
        READDIR4resok *r =
            &res.resarray.resarray_val[3].nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
        if (calls > 0)
            CHECK(memcmp(verf, r->cookieverf, sizeof(verf)) == 0);
        memcpy(verf, r->cookieverf, sizeof(verf));
        CHECK(r->reply.entries != NULL);
        for (entry4 *e = r->reply.entries; e; e = e->nextentry) {
            CHECK(got < N);
            char *nm = malloc(e->name.utf8string_len + 1);
            memcpy(nm, e->name.utf8string_val, e->name.utf8string_len);
            nm[e->name.utf8string_len] = 0;
            names[got++] = nm;
            char rel[300];
            snprintf(rel, sizeof(rel), "big/%s", nm);
            struct stat st = lstat_ok(path_in(&v, rel));
            CHECK_EQ(e->attrs.attrmask.bitmap4_len, 1);
            CHECK_EQ(e->attrs.attrmask.bitmap4_val[0], mask[0]);
            XDR x;
            xdrmem_create(&x, e->attrs.attr_vals.attrlist4_val, e->attrs.attr_vals.attrlist4_len,
                          XDR_DECODE);
            uint32_t type, err;
            uint64_t fileid;
            CHECK(xdr_uint32_t(&x, &type) && xdr_uint32_t(&x, &err) && xdr_uint64_t(&x, &fileid));
            CHECK_EQ(type, S_ISDIR(st.st_mode) ? NF4DIR : NF4REG);
            CHECK_EQ(err, NFS4_OK);
            CHECK_EQ(fileid, (uint64_t)st.st_ino);
            xdr_destroy(&x);
            ra->cookie = e->cookie;
        }
        eof = r->reply.eof;
        memcpy(ra->cookieverf, verf, sizeof(verf));
        calls++;
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    CHECK(calls > 3); /* 8 KiB at a time */
    CHECK_EQ(got, N);
    qsort(names, got, sizeof(names[0]), cmp_str);
    for (unsigned i = 0; i < got; i++) {
        char want[32];
        snprintf(want, sizeof(want), "entry-%04u", i);
        CHECK_STR(names[i], want); /* every one once: no ".", "..", or repeats */
        free(names[i]);
    }

    /* a cookie with another directory's verifier: NFS4ERR_NOT_SAME; the reserved cookies
     * 1 and 2: NFS4ERR_BAD_COOKIE; a maxcount no entry fits: NFS4ERR_TOOSMALL */
    memset(ra->cookieverf, 0x5a, sizeof(ra->cookieverf));
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_NOT_SAME);
    ra->cookie = 2;
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_BAD_COOKIE);
    ra->cookie = 0;
    ra->maxcount = 40;
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_TOOSMALL);
    /* of a file: NFS4ERR_NOTDIR */
    ra->maxcount = 8192;
    lookup_op(&a[2], "big");
    op(&a[1], OP_PUTROOTFH);
    nfs_argop4 b[5];
    memcpy(b, a, sizeof(a));
    lookup_op(&b[3], "entry-0001");
    b[4] = a[3];
    CHECK_EQ(run_st(&t, b, 5), NFS4ERR_NOTDIR);
    /* an empty directory: eof and no entries */
    CHECK_EQ(mkdir(path_in(&v, "empty"), 0755), 0);
    lookup_op(&a[2], "empty");
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    READDIR4resok *r = &res.resarray.resarray_val[3].nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
    CHECK(r->reply.entries == NULL);
    CHECK(r->reply.eof);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    done(&v, &t);
}

/* SECINFO of a name: the export's flavors, the current handle consumed; a name not there:
 * NFS4ERR_NOENT. PUTPUBFH: the root's handle. */
TEST(nfs4_ns_secinfo_putpubfh)
{
    struct srv v;
    struct t4 t;
    setup(&v, &t, NULL);
    put_file(&v, "f", "x", 1);
    nfs_argop4 a[4];
    COMPOUND4res res;
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_SECINFO);
    name4(&a[2].nfs_argop4_u.opsecinfo.name, "f");
    op(&a[3], OP_GETFH);
    CHECK_EQ(run(&t, a, 4, &res), NFS4ERR_NOFILEHANDLE); /* consumed */
    CHECK_EQ(res.resarray.resarray_len, 4);
    SECINFO4resok *si = &res.resarray.resarray_val[2].nfs_resop4_u.opsecinfo.SECINFO4res_u.resok4;
    CHECK_EQ(si->SECINFO4resok_len, 2);
    CHECK_EQ(si->SECINFO4resok_val[0].flavor, AUTH_SYS);
    CHECK_EQ(si->SECINFO4resok_val[1].flavor, AUTH_NONE);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    name4(&a[2].nfs_argop4_u.opsecinfo.name, "missing");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_NOENT);
    name4(&a[2].nfs_argop4_u.opsecinfo.name, "..");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_BADNAME);
    /* PUTPUBFH and PUTROOTFH: one handle */
    op(&a[1], OP_PUTPUBFH);
    op(&a[2], OP_GETFH);
    op(&a[3], OP_PUTROOTFH);
    nfs_argop4 b[5];
    memcpy(b, a, sizeof(a));
    op(&b[4], OP_GETFH);
    CHECK_EQ(run(&t, b, 5, &res), NFS4_OK);
    nfs_fh4 *p = &res.resarray.resarray_val[2].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    nfs_fh4 *q = &res.resarray.resarray_val[4].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    CHECK_EQ(p->nfs_fh4_len, q->nfs_fh4_len);
    CHECK(memcmp(p->nfs_fh4_val, q->nfs_fh4_val, p->nfs_fh4_len) == 0);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    done(&v, &t);
}

/* One attribute (fsid, fileid, mounted_on_fileid: 64-bit words) of a GETATTR's result. */
struct fsattrs {
    uint32_t type, mode;
    uint64_t fsid_major, fsid_minor, fileid, mounted_on;
};

static void getattr_fs_op(nfs_argop4 *a, uint32_t mask[2])
{
    op(a, OP_GETATTR);
    mask[0] = (1u << FATTR4_TYPE) | (1u << FATTR4_FSID) | (1u << FATTR4_FILEID);
    mask[1] = (1u << (FATTR4_MODE - 32)) | (1u << (FATTR4_MOUNTED_ON_FILEID - 32));
    a->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 2;
    a->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = mask;
}

static struct fsattrs fsattrs_of(const nfs_resop4 *r)
{
    const fattr4 *f = &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    struct fsattrs o;
    XDR x;
    xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
    CHECK(xdr_uint32_t(&x, &o.type) && xdr_uint64_t(&x, &o.fsid_major) &&
          xdr_uint64_t(&x, &o.fsid_minor) && xdr_uint64_t(&x, &o.fileid) &&
          xdr_uint32_t(&x, &o.mode) && xdr_uint64_t(&x, &o.mounted_on));
    CHECK_EQ(xdr_getpos(&x), f->attr_vals.attrlist4_len);
    xdr_destroy(&x);
    return o;
}

/* The components of an absolute path (at most 8 of 63 bytes); their number. */
static unsigned path_comps(const char *path, char comps[8][64])
{
    char tmp[256];
    unsigned nc = 0;
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *s = strtok(tmp, "/"); s && nc < 8; s = strtok(NULL, "/"))
        snprintf(comps[nc++], sizeof(comps[0]), "%s", s);
    return nc;
}

/* The pseudo file system of two exports (and a third this client may not see): LOOKUP
 * from the pseudo root down the exports' paths, READDIR of its directories, the fsid
 * changing into an export, LOOKUPP back out, read-only. */
TEST(nfs4_ns_pseudo_fs)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    snprintf(v.dir, sizeof(v.dir), "/tmp/uiw-nfs4-pseudo.XXXXXX");
    CHECK(mkdtemp(v.dir) != NULL);
    CHECK_EQ(chmod(v.dir, 0755), 0);
    const char *subs[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        CHECK_EQ(mkdir(path_in(&v, subs[i]), 0755), 0);
    t4_exports(&v, "%s/a 127.0.0.1(rw,insecure)\n%s/b 127.0.0.1(ro,insecure)\n"
                   "%s/c 192.0.2.1(rw)\n");
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 16);
    nfs_argop4 a[16];
    COMPOUND4res res;
    uint32_t m0[2], m1[2], m2[2];

    /* the root: a directory 0555 of its own fsid, with one entry on the way to the
     * exports (their path's first component) */
    char comps[8][64];
    unsigned nc = path_comps(v.dir, comps);
    CHECK(nc >= 2 && nc <= 8);
    op(&a[1], OP_PUTROOTFH);
    getattr_fs_op(&a[2], m0);
    op(&a[3], OP_READDIR);
    uint32_t rmask = 1u << FATTR4_TYPE;
    a[3].nfs_argop4_u.opreaddir.maxcount = 4096;
    a[3].nfs_argop4_u.opreaddir.attr_request.bitmap4_len = 1;
    a[3].nfs_argop4_u.opreaddir.attr_request.bitmap4_val = &rmask;
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    struct fsattrs root = fsattrs_of(&res.resarray.resarray_val[2]);
    CHECK_EQ(root.type, NF4DIR);
    CHECK_EQ(root.mode, 0555);
    CHECK_EQ(root.fsid_minor, 1);
    CHECK_EQ(root.mounted_on, root.fileid);
    READDIR4resok *rd = &res.resarray.resarray_val[3].nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
    CHECK(rd->reply.eof);
    CHECK(rd->reply.entries != NULL && rd->reply.entries->nextentry == NULL);
    CHECK_EQ(rd->reply.entries->name.utf8string_len, strlen(comps[0]));
    CHECK(memcmp(rd->reply.entries->name.utf8string_val, comps[0], strlen(comps[0])) == 0);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* down to the directory of the exports: READDIR there shows a and b, not c */
    op(&a[1], OP_PUTROOTFH);
    for (unsigned i = 0; i < nc; i++)
        lookup_op(&a[2 + i], comps[i]);
    unsigned k = 2 + nc;
    op(&a[k], OP_GETFH);
    getattr_fs_op(&a[k + 1], m1);
    op(&a[k + 2], OP_READDIR);
    a[k + 2].nfs_argop4_u.opreaddir.maxcount = 4096;
    a[k + 2].nfs_argop4_u.opreaddir.attr_request.bitmap4_len = 1;
    a[k + 2].nfs_argop4_u.opreaddir.attr_request.bitmap4_val = &rmask;
    CHECK_EQ(run(&t, a, k + 3, &res), NFS4_OK);
    nfs_fh4 *pf = &res.resarray.resarray_val[k].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    char pfh[NFS4_FHSIZE];
    u_int pfl = pf->nfs_fh4_len;
    memcpy(pfh, pf->nfs_fh4_val, pfl);
    struct fsattrs pd = fsattrs_of(&res.resarray.resarray_val[k + 1]);
    CHECK_EQ(pd.fsid_minor, 1);
    CHECK(pd.fileid != root.fileid);
    rd = &res.resarray.resarray_val[k + 2].nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
    unsigned seen = 0;
    for (entry4 *e = rd->reply.entries; e; e = e->nextentry) {
        CHECK_EQ(e->name.utf8string_len, 1);
        CHECK(e->name.utf8string_val[0] == 'a' || e->name.utf8string_val[0] == 'b');
        seen |= 1u << (e->name.utf8string_val[0] - 'a');
    }
    CHECK_EQ(seen, 3u);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* into a: another fsid (a mount point), its own fileid, mounted on the pseudo
     * directory's entry; LOOKUPP back out gives the pseudo directory */
    op(&a[1], OP_PUTFH);
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_len = pfl;
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_val = pfh;
    lookup_op(&a[2], "a");
    getattr_fs_op(&a[3], m2);
    op(&a[4], OP_LOOKUPP);
    op(&a[5], OP_GETFH);
    CHECK_EQ(run(&t, a, 6, &res), NFS4_OK);
    struct fsattrs ea = fsattrs_of(&res.resarray.resarray_val[3]);
    CHECK_EQ(ea.fsid_minor, 0);
    CHECK_EQ(ea.type, NF4DIR);
    CHECK_EQ(ea.fileid, (uint64_t)lstat_ok(path_in(&v, "a")).st_ino);
    CHECK(ea.mounted_on != ea.fileid); /* the pseudo directory's entry's */
    nfs_fh4 *back = &res.resarray.resarray_val[5].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    CHECK_EQ(back->nfs_fh4_len, pfl);
    CHECK(memcmp(back->nfs_fh4_val, pfh, pfl) == 0);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* c is not there for this client; pseudo directories are read-only */
    lookup_op(&a[2], "c");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_NOENT);
    create_op(&a[2], NF4DIR, "new");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ROFS);
    op(&a[2], OP_REMOVE);
    name4(&a[2].nfs_argop4_u.opremove.target, "a");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ROFS);
    op(&a[2], OP_READLINK);
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ISDIR);
    op(&a[2], OP_ACCESS);
    a[2].nfs_argop4_u.opaccess.access = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY;
    CHECK_EQ(run(&t, a, 3, &res), NFS4_OK);
    ACCESS4resok *ac = &res.resarray.resarray_val[2].nfs_resop4_u.opaccess.ACCESS4res_u.resok4;
    CHECK_EQ(ac->access, ACCESS4_READ | ACCESS4_LOOKUP);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    /* LOOKUPP of the root: NFS4ERR_NOENT */
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LOOKUPP);
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_NOENT);
    t4_close(&t);
    srv_stop(&v);
}

/* One export: under the pseudo root at its path, as over NFSv3 (the fsid changing where
 * it is entered); with fsid=root, the root itself. */
TEST(nfs4_ns_pseudo_one_export)
{
    for (int asroot = 0; asroot < 2; asroot++) {
        struct srv v;
        memset(&v, 0, sizeof(v));
        t4_exports(&v, asroot ? "%s 127.0.0.1(rw,insecure,fsid=root)\n"
                              : "%s 127.0.0.1(rw,insecure)\n");
        struct t4 t;
        t4_open(&t, &v, NULL);
        session(&t, 16);
        nfs_argop4 a[12];
        COMPOUND4res res;
        uint32_t m0[2], m1[2];
        char comps[8][64];
        unsigned nc = path_comps(v.dir, comps);
        CHECK(nc >= 1 && nc <= 8);
        op(&a[1], OP_PUTROOTFH);
        getattr_fs_op(&a[2], m0);
        for (unsigned i = 0; i < nc; i++)
            lookup_op(&a[3 + i], comps[i]);
        getattr_fs_op(&a[3 + nc], m1);
        nfsstat4 st = run(&t, a, 4 + nc, &res);
        struct fsattrs root = fsattrs_of(&res.resarray.resarray_val[2]);
        uint64_t ino = (uint64_t)lstat_ok(v.dir).st_ino;
        if (asroot) {
            /* the export's root; its path is not found below it */
            CHECK_EQ(st, NFS4ERR_NOENT);
            CHECK_EQ(root.fsid_minor, 0);
            CHECK_EQ(root.fileid, ino);
        } else {
            CHECK_EQ(st, NFS4_OK);
            CHECK_EQ(root.fsid_minor, 1);
            CHECK_EQ(root.mode, 0555);
            struct fsattrs ex = fsattrs_of(&res.resarray.resarray_val[3 + nc]);
            CHECK_EQ(ex.fsid_minor, 0);
            CHECK_EQ(ex.fileid, ino);
        }
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
        t4_close(&t);
        srv_stop(&v);
    }
}

/* The handle a GETFH (result r) gave, copied out. */
static u_int fh_of(const nfs_resop4 *r, char out[NFS4_FHSIZE])
{
    const nfs_fh4 *f = &r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    CHECK(f->nfs_fh4_len <= NFS4_FHSIZE);
    memcpy(out, f->nfs_fh4_val, f->nfs_fh4_len);
    return f->nfs_fh4_len;
}

static void putfh_op(nfs_argop4 *a, char *fh, u_int len)
{
    op(a, OP_PUTFH);
    a->nfs_argop4_u.opputfh.object.nfs_fh4_len = len;
    a->nfs_argop4_u.opputfh.object.nfs_fh4_val = fh;
}

/* A server of a new directory (its mode `mode`) holding the directories dirs (0755),
 * exported by the lines `exports` (t4_exports), and a session of t with it. */
static void nest_start(struct srv *v, struct t4 *t, mode_t mode, const char *const *dirs,
                       unsigned n, const char *exports)
{
    memset(v, 0, sizeof(*v));
    snprintf(v->dir, sizeof(v->dir), "/tmp/uiw-nfs4-nest.XXXXXX");
    CHECK(mkdtemp(v->dir) != NULL);
    CHECK_EQ(chmod(v->dir, mode), 0);
    for (unsigned i = 0; i < n; i++)
        CHECK_EQ(mkdir(path_in(v, dirs[i]), 0755), 0);
    t4_exports(v, exports);
    t4_open(t, v, NULL);
    session(t, 16);
}

/* From a[1]: PUTROOTFH and a LOOKUP of each component of v's directory (comps: them);
 * the index of the operation after. */
static unsigned walk_ops(nfs_argop4 *a, const struct srv *v, char comps[8][64])
{
    unsigned nc = path_comps(v->dir, comps);
    CHECK(nc >= 1 && nc <= 4);
    op(&a[1], OP_PUTROOTFH);
    for (unsigned i = 0; i < nc; i++)
        lookup_op(&a[2 + i], comps[i]);
    return 2 + nc;
}

/* v with its URL for path sub below the export over NFSv3. */
static struct srv over_v3(const struct srv *v, const char *sub)
{
    struct srv w = *v;
    srv_url(v, sub, w.url, sizeof(w.url));
    strncat(w.url, "&version=3", sizeof(w.url) - strlen(w.url) - 1);
    return w;
}

/* A READDIR entry's fsid major, fileid and mounted_on_fileid, or its rdattr_error alone. */
struct dirattrs {
    nfsstat4 err;
    uint64_t fsid_major, fileid, mounted_on;
};

static struct dirattrs dirattrs_of(const entry4 *e)
{
    struct dirattrs o = {NFS4_OK, 0, 0, 0};
    const fattr4 *f = &e->attrs;
    XDR x;
    xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
    uint32_t err = 0;
    uint64_t minor = 0;
    if (f->attrmask.bitmap4_len == 1 && f->attrmask.bitmap4_val[0] == 1u << FATTR4_RDATTR_ERROR) {
        CHECK(xdr_uint32_t(&x, &err));
        CHECK(err != NFS4_OK);
    } else {
        CHECK(xdr_uint64_t(&x, &o.fsid_major) && xdr_uint64_t(&x, &minor) &&
              xdr_uint32_t(&x, &err) && xdr_uint64_t(&x, &o.fileid) &&
              xdr_uint64_t(&x, &o.mounted_on));
        CHECK_EQ(err, NFS4_OK);
        CHECK_EQ(minor, 0);
    }
    o.err = (nfsstat4)err;
    CHECK_EQ(xdr_getpos(&x), f->attr_vals.attrlist4_len);
    xdr_destroy(&x);
    return o;
}

/* Exports inside an export (knfsd's nested exports): /D read-write, /D/pub read-only,
 * /D/priv for another host. Walking from /D or from the pseudo root, LOOKUP of "pub"
 * enters /D/pub's root (its own fsid, its read-only), "priv" is refused, READDIR of /D
 * shows each with its own export's attributes, LOOKUPP from /D/pub comes back to /D;
 * NFSv3 from /D stays in /D's export, as it always has. */
TEST(nfs4_ns_nested_exports)
{
    struct srv v;
    struct t4 t;
    const char *subs[] = {"pub", "priv", "d"};
    /* the client's user may change /D */
    nest_start(&v, &t, 0777, subs, 3,
               "%s 127.0.0.1(rw,insecure,no_root_squash)\n"
               "%s/pub 127.0.0.1(ro,insecure,no_root_squash)\n"
               "%s/priv 192.0.2.1(rw,no_root_squash)\n");
    put_file(&v, "pub/f", "public", 6);
    nfs_argop4 a[16];
    COMPOUND4res res;
    uint32_t m0[2], m1[2], m2[2];
    char comps[8][64];

    /* from the pseudo root down to /D, into pub and back out */
    unsigned k = walk_ops(a, &v, comps);
    op(&a[k], OP_GETFH);
    getattr_fs_op(&a[k + 1], m0);
    lookup_op(&a[k + 2], "pub");
    op(&a[k + 3], OP_GETFH);
    getattr_fs_op(&a[k + 4], m1);
    op(&a[k + 5], OP_LOOKUPP);
    op(&a[k + 6], OP_GETFH);
    getattr_fs_op(&a[k + 7], m2);
    CHECK_EQ(run(&t, a, k + 8, &res), NFS4_OK);
    nfs_resop4 *rs = res.resarray.resarray_val;
    char dfh[NFS4_FHSIZE], pfh[NFS4_FHSIZE], back[NFS4_FHSIZE];
    u_int dl = fh_of(&rs[k], dfh), pl = fh_of(&rs[k + 3], pfh), bl = fh_of(&rs[k + 6], back);
    struct fsattrs d = fsattrs_of(&rs[k + 1]), p = fsattrs_of(&rs[k + 4]);
    struct fsattrs up = fsattrs_of(&rs[k + 7]);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    uint64_t pino = (uint64_t)lstat_ok(path_in(&v, "pub")).st_ino;
    CHECK_EQ(d.fsid_minor, 0);
    CHECK_EQ(d.fileid, (uint64_t)lstat_ok(v.dir).st_ino);
    /* pub: a file system of its own, mounted on /D's entry of it (the same inode) */
    CHECK(p.fsid_major != d.fsid_major);
    CHECK_EQ(p.fsid_minor, 0);
    CHECK_EQ(p.fileid, pino);
    CHECK_EQ(p.mounted_on, pino);
    CHECK(pl != dl || memcmp(pfh, dfh, pl) != 0);
    /* LOOKUPP from pub's root: /D's root again, not a pseudo directory */
    CHECK_EQ(bl, dl);
    CHECK(memcmp(back, dfh, dl) == 0);
    CHECK_EQ(up.fsid_major, d.fsid_major);
    CHECK_EQ(up.fsid_minor, 0);
    CHECK_EQ(up.fileid, d.fileid);

    /* pub is read-only however it is reached; /D is not */
    putfh_op(&a[1], dfh, dl);
    create_op(&a[2], NF4DIR, "made");
    CHECK_EQ(run_st(&t, a, 3), NFS4_OK);
    lookup_op(&a[2], "pub");
    create_op(&a[3], NF4DIR, "made");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_ROFS);
    op(&a[3], OP_REMOVE);
    name4(&a[3].nfs_argop4_u.opremove.target, "f");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_ROFS);
    /* a file of pub found through /D: pub's handle (its fsid), pub's read-only */
    lookup_op(&a[3], "f");
    getattr_fs_op(&a[4], m0);
    CHECK_EQ(run(&t, a, 5, &res), NFS4_OK);
    struct fsattrs f = fsattrs_of(&res.resarray.resarray_val[4]);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(f.fsid_major, p.fsid_major);
    op(&a[4], OP_SETATTR);
    uint32_t sm[2] = {0, 1u << (FATTR4_MODE - 32)}, mv = htonl(0666);
    a[4].nfs_argop4_u.opsetattr.obj_attributes.attrmask.bitmap4_len = 2;
    a[4].nfs_argop4_u.opsetattr.obj_attributes.attrmask.bitmap4_val = sm;
    a[4].nfs_argop4_u.opsetattr.obj_attributes.attr_vals.attrlist4_len = 4;
    a[4].nfs_argop4_u.opsetattr.obj_attributes.attr_vals.attrlist4_val = (char *)&mv;
    CHECK_EQ(run_st(&t, a, 5), NFS4ERR_ROFS);
    CHECK_EQ(lstat_ok(path_in(&v, "pub/f")).st_mode & 07777, 0644);
    CHECK(access(path_in(&v, "pub/made"), F_OK) != 0);
    CHECK(access(path_in(&v, "made"), F_OK) == 0);

    /* priv is for another host: not entered from /D (nor by the walk from the root),
     * and SECINFO of it says so */
    lookup_op(&a[2], "priv");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ACCESS);
    op(&a[2], OP_SECINFO);
    name4(&a[2].nfs_argop4_u.opsecinfo.name, "priv");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ACCESS);
    name4(&a[2].nfs_argop4_u.opsecinfo.name, "pub");
    CHECK_EQ(run_st(&t, a, 3), NFS4_OK);
    k = walk_ops(a, &v, comps);
    lookup_op(&a[k], "priv");
    CHECK_EQ(run_st(&t, a, k + 1), NFS4ERR_ACCESS);

    /* nor removed, renamed or replaced through /D (priv is empty, pub not) */
    putfh_op(&a[1], dfh, dl);
    op(&a[2], OP_REMOVE);
    name4(&a[2].nfs_argop4_u.opremove.target, "priv");
    CHECK_EQ(run_st(&t, a, 3), NFS4ERR_ACCESS);
    op(&a[2], OP_SAVEFH);
    op(&a[3], OP_RENAME);
    name4(&a[3].nfs_argop4_u.oprename.oldname, "pub");
    name4(&a[3].nfs_argop4_u.oprename.newname, "pub2");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_XDEV);
    name4(&a[3].nfs_argop4_u.oprename.oldname, "d");
    name4(&a[3].nfs_argop4_u.oprename.newname, "priv");
    CHECK_EQ(run_st(&t, a, 4), NFS4ERR_XDEV);
    CHECK(lstat_ok(path_in(&v, "priv")).st_ino != lstat_ok(path_in(&v, "d")).st_ino);
    CHECK_EQ(lstat_ok(path_in(&v, "pub")).st_ino, pino);

    /* READDIR of /D: each entry with its own export's attributes, priv's refusal */
    putfh_op(&a[1], dfh, dl);
    op(&a[2], OP_READDIR);
    uint32_t rm[2] = {(1u << FATTR4_FSID) | (1u << FATTR4_RDATTR_ERROR) | (1u << FATTR4_FILEID),
                      1u << (FATTR4_MOUNTED_ON_FILEID - 32)};
    a[2].nfs_argop4_u.opreaddir.maxcount = 8192;
    a[2].nfs_argop4_u.opreaddir.attr_request.bitmap4_len = 2;
    a[2].nfs_argop4_u.opreaddir.attr_request.bitmap4_val = rm;
    CHECK_EQ(run(&t, a, 3, &res), NFS4_OK);
    READDIR4resok *rd = &res.resarray.resarray_val[2].nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
    CHECK(rd->reply.eof);
    unsigned seen = 0;
    for (entry4 *e = rd->reply.entries; e; e = e->nextentry) {
        char name[16] = {0};
        CHECK(e->name.utf8string_len < sizeof(name));
        memcpy(name, e->name.utf8string_val, e->name.utf8string_len);
        struct dirattrs da = dirattrs_of(e);
        if (strcmp(name, "priv") == 0) {
            CHECK_EQ(da.err, NFS4ERR_ACCESS);
            seen |= 1;
        } else if (strcmp(name, "pub") == 0) {
            CHECK_EQ(da.fsid_major, p.fsid_major);
            CHECK_EQ(da.fileid, pino);
            CHECK_EQ(da.mounted_on, pino);
            seen |= 2;
        } else {
            CHECK_EQ(da.err, NFS4_OK);
            CHECK_EQ(da.fsid_major, d.fsid_major);
            CHECK_EQ(da.fileid, (uint64_t)lstat_ok(path_in(&v, name)).st_ino);
            seen |= strcmp(name, "d") == 0 ? 4 : 8;
        }
    }
    CHECK_EQ(seen, 15u);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t4_close(&t);

    /* NFSv3 walks from /D within /D's export, as before: /D's fsid on pub */
    struct srv v3 = over_v3(&v, "");
    struct uiw__nfs_client *c3 = srv_client(&v3, 0, 0);
    CHECK(strcmp(uiw__nfs_client_version(c3), "3") == 0);
    struct uiw__nfs_fh h3;
    fattr3 root3, pub3;
    CHECK_EQ(uiw__nfs_lookup_path(c3, "", &h3, &root3), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c3, "pub", &h3, &pub3), 0);
    CHECK_EQ(pub3.fsid, root3.fsid);
    CHECK_EQ(pub3.fileid, pino);
    uiw__nfs_client_close(c3);
    srv_stop(&v);
}

/* A nested export whose outer export this client may not use: reached through the pseudo
 * file system (the outer's path a pseudo directory, LOOKUPP back into it); and one below
 * an export it may not use inside one it may: LOOKUPP from its root is refused rather
 * than entering the middle one with the outer one's rights. */
TEST(nfs4_ns_nested_outer_refused)
{
    for (int middle = 0; middle < 2; middle++) {
        struct srv v;
        struct t4 t;
        const char *subs[] = {"mid", "mid/in"};
        nest_start(&v, &t, 0755, subs, 2,
                   middle ? "%s 127.0.0.1(rw,insecure)\n%s/mid 192.0.2.1(rw)\n"
                            "%s/mid/in 127.0.0.1(ro,insecure)\n"
                          : "%s 192.0.2.1(rw)\n%s/mid/in 127.0.0.1(ro,insecure)\n");
        nfs_argop4 a[16];
        COMPOUND4res res;
        uint32_t m0[2], m1[2], m2[2];
        char comps[8][64];
        unsigned k = walk_ops(a, &v, comps);
        getattr_fs_op(&a[k], m0);
        lookup_op(&a[k + 1], "mid");
        if (middle) {
            /* in is below mid, which this client may not enter */
            CHECK_EQ(run_st(&t, a, k + 2), NFS4ERR_ACCESS);
            /* in's root handle, as NFSv3's MOUNT gives it: LOOKUPP from it refused */
            struct srv w = over_v3(&v, "mid/in");
            struct uiw__nfs_client *c3 = srv_client(&w, 0, 0);
            const struct uiw__nfs_fh *root = uiw__nfs_client_root(c3);
            char rfh[NFS4_FHSIZE];
            memcpy(rfh, root->data, root->len);
            putfh_op(&a[1], rfh, root->len);
            getattr_fs_op(&a[2], m1);
            op(&a[3], OP_LOOKUPP);
            CHECK_EQ(run(&t, a, 4, &res), NFS4ERR_ACCESS);
            CHECK_EQ(res.resarray.resarray_len, 4);
            CHECK_EQ(fsattrs_of(&res.resarray.resarray_val[2]).fileid,
                     (uint64_t)lstat_ok(path_in(&v, "mid/in")).st_ino);
            xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
            uiw__nfs_client_close(c3);
            t4_close(&t);
            srv_stop(&v);
            continue;
        }
        lookup_op(&a[k + 2], "in");
        getattr_fs_op(&a[k + 3], m1);
        op(&a[k + 4], OP_LOOKUPP);
        getattr_fs_op(&a[k + 5], m2);
        CHECK_EQ(run(&t, a, k + 6, &res), NFS4_OK);
        nfs_resop4 *rs = res.resarray.resarray_val;
        struct fsattrs d = fsattrs_of(&rs[k]), in = fsattrs_of(&rs[k + 3]);
        struct fsattrs mid = fsattrs_of(&rs[k + 5]);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
        /* /D and /D/mid: pseudo directories; in: its export, mounted on one */
        CHECK_EQ(d.fsid_minor, 1);
        CHECK_EQ(d.mode, 0555);
        CHECK_EQ(in.fsid_minor, 0);
        CHECK_EQ(in.fileid, (uint64_t)lstat_ok(path_in(&v, "mid/in")).st_ino);
        CHECK(in.mounted_on != in.fileid);
        CHECK_EQ(mid.fsid_minor, 1);
        CHECK(mid.fileid != d.fileid);
        CHECK(mid.fileid != (uint64_t)lstat_ok(path_in(&v, "mid")).st_ino);
        t4_close(&t);
        srv_stop(&v);
    }
}
