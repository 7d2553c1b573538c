/* Wireshark's NFS dissector, an implementation of RFC 1813 that is not ours, reads what
 * uiw-nfsd sent: a capture of NFS over TCP (the tests' relay writes the connection with
 * the stack's pcap writer) and one of NFS over RPC-over-RDMA Version One (the client's
 * iWARP connection, UIW_PCAP_DIR), each holding a GETATTR, a READDIRPLUS and a WRITE. Every
 * field tshark decodes of those replies is checked against the export on disk: each
 * fattr3 against lstat (type, mode, nlink, uid, gid, size, used, rdev, fsid the same for
 * all, fileid, the three times to the nanosecond), READDIRPLUS's names, fileids and
 * handles against the directory, WRITE's wcc_data against lstat before and after, its
 * count, stability and verifier against the call's. Nothing in the capture is malformed.
 * And NFSv4.1 as xdr/nfs4.x codes it (nothing serves it yet): COMPOUNDs of EXCHANGE_ID and
 * of SEQUENCE, PUTFH and READ with their replies, encoded by its routines into a capture of
 * NFS over TCP, in which tshark finds each operation and every field the test set.
 *
 * tshark is a dependency (scripts/deps.sh): without it the tests skip (77) on a user's
 * machine and fail where tools are required (UIW_ROOT_REQUIRED=1 or CI set, as CI does). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "io/pcap.h"
#include "nfs/client.h"
#include "nfs/xdr_data.h"
#include "nfs4.h"
#include "interop.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "relay.h"
#include "test.h"

/* What lstat said right after each reply. */
struct seen {
    struct stat f, d, x, y, up; /* after GETATTR of f; after READDIRPLUS of d (d, x, y, ..) */
    struct stat wb, wa;         /* f before and after the WRITE */
    char verf[8];
    unsigned entries;
};

/* f (100 bytes), d holding x and y: as root owned by 1234:5678, times with distinct
 * seconds and nanoseconds. */
static void make_files(struct srv *v)
{
    char buf[100];
    memset(buf, 'f', sizeof(buf));
    CHECK_EQ(chmod(v->dir, 0777), 0);
    put_file(v, "f", buf, sizeof(buf));
    CHECK_EQ(mkdir(path_in(v, "d"), 0750), 0);
    put_file(v, "d/x", "x", 1);
    put_file(v, "d/y", "yy", 2);
    CHECK_EQ(chmod(path_in(v, "d/y"), 0604), 0);
    const char *all[] = {"f", "d/x", "d/y", "d"};
    for (unsigned i = 0; i < 4; i++) {
        if (geteuid() == 0)
            CHECK_EQ(lchown(path_in(v, all[i]), 1234, 5678), 0);
        struct timespec t[2] = {{1000000001 + i, 123456789 + i}, {1100000002 + i, 987654321 - i}};
        CHECK_EQ(utimensat(AT_FDCWD, path_in(v, all[i]), t, AT_SYMLINK_NOFOLLOW), 0);
    }
}

static void fh3(nfs_fh3 *out, const struct uiw__nfs_fh *fh)
{
    out->data.data_len = fh->len;
    out->data.data_val = (char *)fh->data;
}

/* GETATTR of f, READDIRPLUS of d (one reply), WRITE of 10 bytes into f (FILE_SYNC). */
static void calls(struct srv *v, struct uiw__nfs_client *c, struct seen *s)
{
    struct uiw__nfs_fh f, d;
    CHECK_EQ(uiw__nfs_lookup_path(c, "f", &f, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c, "d", &d, NULL), 0);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, &f, &a), 0);
    s->f = lstat_ok(path_in(v, "f"));

    READDIRPLUS3args ra;
    READDIRPLUS3res rr;
    memset(&ra, 0, sizeof(ra));
    fh3(&ra.dir, &d);
    ra.dircount = 512;
    ra.maxcount = 900; /* a reply inline in Version One's 1 KiB */
    memset(&rr, 0, sizeof(rr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_READDIRPLUS, UIW__XDRPROC(xdr_READDIRPLUS3args), &ra,
                           UIW__XDRPROC(uiw__xdr_READDIRPLUS3res), &rr),
             0);
    CHECK_EQ(rr.status, NFS3_OK);
    CHECK(rr.READDIRPLUS3res_u.resok.reply.eof);
    s->entries = 0;
    for (entryplus3 *e = rr.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry)
        s->entries++;
    xdr_free(UIW__XDRPROC(uiw__xdr_READDIRPLUS3res), (caddr_t)&rr);
    CHECK_EQ(s->entries, 4);
    s->d = lstat_ok(path_in(v, "d"));
    s->x = lstat_ok(path_in(v, "d/x"));
    s->y = lstat_ok(path_in(v, "d/y"));
    s->up = lstat_ok(v->dir);

    s->wb = lstat_ok(path_in(v, "f"));
    CHECK_EQ(uiw__nfs_write(c, &f, 95, 10, "0123456789", FILE_SYNC, s->verf), 10);
    s->wa = lstat_ok(path_in(v, "f"));
    CHECK_EQ(s->wa.st_size, 105);
}

/* One line of tshark -T fields output, split: field k's values (',' between the
 * occurrences in one frame). */
struct row {
    char *f[48];
    int n;
};

static void split(char *line, struct row *r)
{
    r->n = 0;
    for (char *p = line; r->n < 48;) {
        r->f[r->n++] = p;
        p += strcspn(p, "|");
        if (!*p)
            break;
        *p++ = 0;
    }
}

/* Occurrence i of field k as a number (decimal, 0x hex or 0 octal, as tshark shows it);
 * the test fails if there is none. */
static unsigned long long val(const struct row *r, int k, int i, const char *name)
{
    CHECK(k < r->n);
    const char *p = r->f[k];
    for (int j = 0; j < i && p; j++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    if (!p || !*p || *p == ',')
        uiw_test_fail(__FILE__, __LINE__, "tshark shows no %s #%d (\"%s\")", name, i, r->f[k]);
    return strtoull(p, NULL, 0);
}

static int count(const struct row *r, int k)
{
    if (k >= r->n || !*r->f[k])
        return 0;
    int n = 1;
    for (const char *p = r->f[k]; (p = strchr(p, ',')) != NULL; p++)
        n++;
    return n;
}

/* The fattr3 fields, in the order of FATTR below. */
#define FATTR                                                                                      \
    "nfs.fattr3.type nfs.mode3 nfs.fattr3.nlink nfs.fattr3.uid nfs.fattr3.gid nfs.fattr3.size "    \
    "nfs.fattr3.used nfs.specdata1 nfs.specdata2 nfs.fattr3.fsid nfs.fattr3.fileid nfs.atime.sec " \
    "nfs.atime.nsec nfs.mtime.sec nfs.mtime.nsec nfs.ctime.sec nfs.ctime.nsec"
enum { NFATTR = 17 };

static unsigned ftype(mode_t m)
{
    return S_ISREG(m) ? NF3REG : S_ISDIR(m) ? NF3DIR : S_ISLNK(m) ? NF3LNK : 0;
}

/* Occurrence i of the fattr3 fields (starting at field 0 of r), occurrence ti of the
 * times (a wcc_data's pre-operation times come first), against st; the fsid the same as
 * *fsid (set by the first). */
static void fattr_vs(const struct row *r, int i, int ti, const struct stat *st, uint64_t *fsid,
                     const char *what)
{
    const unsigned long long want[NFATTR] = {ftype(st->st_mode),
                                             st->st_mode & 07777,
                                             st->st_nlink,
                                             st->st_uid,
                                             st->st_gid,
                                             (unsigned long long)st->st_size,
                                             (unsigned long long)st->st_blocks * 512,
                                             major(st->st_rdev),
                                             minor(st->st_rdev),
                                             0,
                                             st->st_ino,
                                             (uint32_t)st->st_atim.tv_sec,
                                             (unsigned long long)st->st_atim.tv_nsec,
                                             (uint32_t)st->st_mtim.tv_sec,
                                             (unsigned long long)st->st_mtim.tv_nsec,
                                             (uint32_t)st->st_ctim.tv_sec,
                                             (unsigned long long)st->st_ctim.tv_nsec};
    static const char *names[NFATTR] = {
        "type",       "mode",      "nlink",      "uid",       "gid",       "size",
        "used",       "specdata1", "specdata2",  "fsid",      "fileid",    "atime.sec",
        "atime.nsec", "mtime.sec", "mtime.nsec", "ctime.sec", "ctime.nsec"};
    for (int k = 0; k < NFATTR; k++) {
        int occ = k >= 13 ? ti : i; /* mtime and ctime also in wcc_attr */
        unsigned long long got = val(r, k, occ, names[k]);
        if (k == 9) {
            if (!*fsid)
                *fsid = got;
            if (got != *fsid)
                uiw_test_fail(__FILE__, __LINE__, "%s: tshark's fsid 0x%llx, another 0x%llx", what,
                              got, (unsigned long long)*fsid);
            continue;
        }
        if (got != want[k])
            uiw_test_fail(__FILE__, __LINE__, "%s: tshark's %s %llu, on disk %llu", what, names[k],
                          got, want[k]);
    }
}

/* One reply of procedure proc in the capture (field list after FATTR, then status). */
static char *reply_fields(const char *pcap, unsigned proc, const char *more, struct row *r)
{
    char filter[128], fields[1024];
    snprintf(filter, sizeof(filter), "rpc.msgtyp == 1 && nfs.procedure_v3 == %u", proc);
    snprintf(fields, sizeof(fields), "%s nfs.status3 %s", FATTR, more);
    char *o = it_tshark_fields(pcap, filter, fields);
    if (it_nlines(o) != 1)
        uiw_test_fail(__FILE__, __LINE__, "%d replies of procedure %u in %s:\n%s", it_nlines(o),
                      proc, pcap, o);
    o[strcspn(o, "\n")] = 0;
    split(o, r);
    CHECK_EQ(val(r, NFATTR, 0, "status"), NFS3_OK);
    return o;
}

static void check_capture(const char *pcap, const struct seen *s)
{
    CHECK_EQ(it_tshark_malformed(pcap, NULL), 0);
    CHECK(it_rpc_calls_answered(pcap) >= 5);
    uint64_t fsid = 0;
    struct row r;

    /* GETATTR: one fattr3. */
    char *o = reply_fields(pcap, NFSPROC3_GETATTR, "", &r);
    for (int k = 0; k < NFATTR; k++)
        CHECK_EQ(count(&r, k), 1);
    fattr_vs(&r, 0, 0, &s->f, &fsid, "GETATTR");
    free(o);

    /* READDIRPLUS: the directory's fattr3, then ".", "..", x, y in the server's order,
     * each with a fattr3 and a handle; the names and fileids of the directory on disk. */
    o = reply_fields(pcap, NFSPROC3_READDIRPLUS,
                     "nfs.readdirplus.entry.name nfs.readdirplus.entry.fileid nfs.fh.hash "
                     "nfs.readdir.eof",
                     &r);
    const int nk = NFATTR + 1, ik = NFATTR + 2, hk = NFATTR + 3, ek = NFATTR + 4;
    CHECK_EQ(count(&r, nk), (int)s->entries);
    CHECK_EQ(count(&r, ik), (int)s->entries);
    CHECK_EQ(count(&r, 0), (int)s->entries + 1);
    CHECK_EQ(count(&r, hk), (int)s->entries);
    CHECK_EQ(val(&r, ek, 0, "eof"), 1);
    fattr_vs(&r, 0, 0, &s->d, &fsid, "READDIRPLUS dir");
    unsigned found = 0;
    for (int e = 0; e < (int)s->entries; e++) {
        /* the e-th name */
        const char *p = r.f[nk];
        for (int j = 0; j < e; j++)
            p = strchr(p, ',') + 1;
        size_t len = strcspn(p, ",");
        char name[32];
        CHECK(len < sizeof(name));
        memcpy(name, p, len);
        name[len] = 0;
        struct stat st;
        if (strcmp(name, ".") == 0) {
            st = s->d;
        } else if (strcmp(name, "..") == 0) {
            st = s->up;
        } else if (strcmp(name, "x") == 0) {
            st = s->x;
        } else if (strcmp(name, "y") == 0) {
            st = s->y;
        } else {
            uiw_test_fail(__FILE__, __LINE__, "READDIRPLUS: tshark shows \"%s\"", name);
        }
        found |= 1u << (strcmp(name, ".") == 0 ? 0 : strcmp(name, "..") == 0 ? 3 : name[0] - 'w');
        CHECK_EQ(val(&r, ik, e, "entry fileid"), st.st_ino);
        fattr_vs(&r, e + 1, e + 1, &st, &fsid, name);
    }
    CHECK_EQ(found, 1u | 2u | 4u | 8u); /* ".", x, y, ".." */
    free(o);

    /* WRITE: wcc_data (size, mtime, ctime before; fattr3 after), count, committed,
     * verifier. */
    o = reply_fields(pcap, NFSPROC3_WRITE,
                     "nfs.wcc_attr.size nfs.count3 nfs.write.committed nfs.verifier", &r);
    const int sk = NFATTR + 1, ck = NFATTR + 2, mk = NFATTR + 3, vk = NFATTR + 4;
    CHECK_EQ(val(&r, sk, 0, "pre-op size"), s->wb.st_size);
    CHECK_EQ(val(&r, 13, 0, "pre-op mtime.sec"), (uint32_t)s->wb.st_mtim.tv_sec);
    CHECK_EQ(val(&r, 14, 0, "pre-op mtime.nsec"), s->wb.st_mtim.tv_nsec);
    CHECK_EQ(val(&r, 15, 0, "pre-op ctime.sec"), (uint32_t)s->wb.st_ctim.tv_sec);
    CHECK_EQ(val(&r, 16, 0, "pre-op ctime.nsec"), s->wb.st_ctim.tv_nsec);
    fattr_vs(&r, 0, 1, &s->wa, &fsid, "WRITE");
    CHECK_EQ(val(&r, ck, 0, "count"), 10);
    CHECK_EQ(val(&r, mk, 0, "committed"), FILE_SYNC);
    char hex[17];
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)s->verf[i]);
    const char *vf = r.f[vk];
    if (strncmp(vf, "0x", 2) == 0)
        vf += 2;
    CHECK_STR(vf, hex);
    free(o);
}

TEST(tshark_nfs_tcp)
{
    need_tshark();
    struct srv v;
    srv_start(&v, NULL);
    make_files(&v);
    char dir[512], pcap[600];
    it_tmpdir(dir, sizeof(dir), "nfscap");
    snprintf(pcap, sizeof(pcap), "%s/tcp.pcap", dir);
    struct relay *rl = relay_start(v.tcp);
    relay_capture(rl, pcap);
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d&version=3", relay_port(rl), v.dir,
             v.mount);
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    u.uid = geteuid() == 0 ? 1234 : geteuid();
    u.gid = geteuid() == 0 ? 5678 : getegid();
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "client: %s", err);
    struct seen s;
    calls(&v, c, &s);
    uiw__nfs_client_close(c);
    relay_stop(rl);
    check_capture(pcap, &s);
    it_rmtree(dir);
    srv_stop(&v);
}

TEST(tshark_nfs_rdma_v1)
{
#if UIW_NFS_HAVE_RDMA
    need_tshark();
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.vers1_only = 1;
    srv_start(&v, &o);
    make_files(&v);
    char dir[512];
    it_tmpdir(dir, sizeof(dir), "nfscap");
    int port = uiw__nfsd_port(v.s, UIW__NFSD_RDMA);
    char url[700], err[512];
    snprintf(url, sizeof(url),
             "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma&rpcrdma=1&version=3", port, v.dir,
             v.mount);
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    u.uid = geteuid() == 0 ? 1234 : geteuid();
    u.gid = geteuid() == 0 ? 5678 : getegid();
    /* the iWARP connections made meanwhile (the client's, and the server's side) captured */
    CHECK_EQ(setenv("UIW_PCAP_DIR", dir, 1), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    CHECK_EQ(unsetenv("UIW_PCAP_DIR"), 0);
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "client: %s", err);
    CHECK_STR(uiw__nfs_client_transport(c), "rdma-v1");
    struct seen s;
    calls(&v, c, &s);
    uiw__nfs_client_close(c);
    /* the client's capture: the one whose remote end is the server's RDMA port */
    char pat[700];
    snprintf(pat, sizeof(pat), "%s/uiw-*-127.0.0.1_*-127.0.0.1_%d.pcap", dir, port);
    glob_t g;
    CHECK_EQ(glob(pat, 0, NULL, &g), 0);
    CHECK_EQ(g.gl_pathc, 1);
    char *o2 = it_tshark_fields(g.gl_pathv[0], "rpcordma", "rpcordma.version");
    CHECK(it_nlines(o2) >= 10);
    CHECK_EQ(it_count_lines(o2, "1"), it_nlines(o2));
    free(o2);
    check_capture(g.gl_pathv[0], &s);
    globfree(&g);
    it_rmtree(dir);
    srv_stop(&v);
#else
    SKIP("a build without the RPC layer");
#endif
}

/* ---- NFSv4.1 as xdr/nfs4.x codes it ---- */

/* One ONC RPC message of NFSv4's COMPOUND as a record of the TCP stream: a call (AUTH_SYS)
 * from the client or an accepted reply from the server, its body coded by f. */
static void nfs4_record(struct uiw__pcap *pc, int call, uint32_t xid, xdrproc_t f, void *body)
{
    static char rec[8192];
    size_t hl = 4;
    if (call) {
        hl += call_header(rec + 4, xid, 100003, 4, 1, AUTH_SYS);
    } else {
        const uint32_t reply[] = {xid, 1 /* REPLY */,     0 /* MSG_ACCEPTED */,
                                  0,   0 /* AUTH_NONE */, 0 /* SUCCESS */};
        for (unsigned i = 0; i < 6; i++, hl += 4)
            it_put32((uint8_t *)rec + hl, reply[i]);
    }
    XDR x;
    xdrmem_create(&x, rec + hl, (u_int)(sizeof(rec) - hl), XDR_ENCODE);
    CHECK(f(&x, body));
    size_t n = hl + xdr_getpos(&x);
    xdr_destroy(&x);
    it_put32((uint8_t *)rec, 0x80000000u | (uint32_t)(n - 4)); /* the last fragment */
    struct iovec iov = {rec, n};
    uiw__pcap_data(pc, call, &iov, 1, n);
}

#define NFS4_OWNER "uiw-nfs/tshark-client"
#define NFS4_MAJOR "uiw-nfsd"

/* EXCHANGE_ID, then SEQUENCE + PUTFH + READ, each answered, as a client and uiw-nfsd
 * would send them (minor version 1), into a capture of TCP to port 2049. */
static void nfs4_capture(const char *pcap, const char *sid, const char *fh, const char *other)
{
    struct sockaddr_in cl = {.sin_family = AF_INET, .sin_port = htons(876)};
    struct sockaddr_in sv = {.sin_family = AF_INET, .sin_port = htons(2049)};
    cl.sin_addr.s_addr = sv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct uiw__pcap *pc = uiw__pcap_open(pcap, (struct sockaddr *)&cl, (struct sockaddr *)&sv);
    CHECK(pc != NULL);

    nfs_impl_id4 impl = {{11, "uiw.example"}, {12, "uiw-nfs 0.1"}, {1700000000, 5}};
    nfs_argop4 a[3];
    memset(a, 0, sizeof(a));
    a[0].argop = OP_EXCHANGE_ID;
    EXCHANGE_ID4args *ea = &a[0].nfs_argop4_u.opexchange_id;
    memcpy(ea->eia_clientowner.co_verifier, "uiwverf1", NFS4_VERIFIER_SIZE);
    ea->eia_clientowner.co_ownerid.co_ownerid_len = sizeof(NFS4_OWNER) - 1;
    ea->eia_clientowner.co_ownerid.co_ownerid_val = NFS4_OWNER;
    ea->eia_flags = EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID;
    ea->eia_state_protect.spa_how = SP4_NONE;
    ea->eia_client_impl_id.eia_client_impl_id_len = 1;
    ea->eia_client_impl_id.eia_client_impl_id_val = &impl;
    COMPOUND4args args = {.tag = {0, ""}, .minorversion = 1};
    args.argarray.argarray_len = 1;
    args.argarray.argarray_val = a;
    nfs4_record(pc, 1, 0x4e460001, UIW__XDRPROC(xdr_COMPOUND4args), &args);

    nfs_resop4 r[3];
    memset(r, 0, sizeof(r));
    r[0].resop = OP_EXCHANGE_ID;
    EXCHANGE_ID4resok *er = &r[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
    er->eir_clientid = 0x1122334455667788ull;
    er->eir_sequenceid = 1;
    er->eir_flags = EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_CONFIRMED_R;
    er->eir_state_protect.spr_how = SP4_NONE;
    er->eir_server_owner.so_minor_id = 9;
    er->eir_server_owner.so_major_id.so_major_id_len = sizeof(NFS4_MAJOR) - 1;
    er->eir_server_owner.so_major_id.so_major_id_val = NFS4_MAJOR;
    er->eir_server_scope.eir_server_scope_len = sizeof(NFS4_MAJOR) - 1;
    er->eir_server_scope.eir_server_scope_val = NFS4_MAJOR;
    COMPOUND4res res = {.status = NFS4_OK, .tag = {0, ""}};
    res.resarray.resarray_len = 1;
    res.resarray.resarray_val = r;
    nfs4_record(pc, 0, 0x4e460001, UIW__XDRPROC(xdr_COMPOUND4res), &res);

    memset(a, 0, sizeof(a));
    a[0].argop = OP_SEQUENCE;
    SEQUENCE4args *sa = &a[0].nfs_argop4_u.opsequence;
    *sa = (SEQUENCE4args){
        .sa_sequenceid = 2, .sa_slotid = 1, .sa_highest_slotid = 3, .sa_cachethis = TRUE};
    memcpy(sa->sa_sessionid, sid, NFS4_SESSIONID_SIZE);
    a[1].argop = OP_PUTFH;
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_len = 28;
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh;
    a[2].argop = OP_READ;
    READ4args *ra = &a[2].nfs_argop4_u.opread;
    ra->stateid.seqid = 5;
    memcpy(ra->stateid.other, other, NFS4_OTHER_SIZE);
    ra->offset = 0x123456789ull;
    ra->count = 4096;
    args.argarray.argarray_len = 3;
    nfs4_record(pc, 1, 0x4e460002, UIW__XDRPROC(xdr_COMPOUND4args), &args);

    memset(r, 0, sizeof(r));
    r[0].resop = OP_SEQUENCE;
    SEQUENCE4resok *sr = &r[0].nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
    *sr = (SEQUENCE4resok){
        .sr_sequenceid = 2, .sr_slotid = 1, .sr_highest_slotid = 3, .sr_target_highest_slotid = 63};
    memcpy(sr->sr_sessionid, sid, NFS4_SESSIONID_SIZE);
    r[1].resop = OP_PUTFH;
    r[2].resop = OP_READ;
    READ4resok *rr = &r[2].nfs_resop4_u.opread.READ4res_u.resok4;
    rr->eof = TRUE;
    rr->data.data_len = 21;
    rr->data.data_val = "bytes read over NFSv4";
    res.resarray.resarray_len = 3;
    nfs4_record(pc, 0, 0x4e460002, UIW__XDRPROC(xdr_COMPOUND4res), &res);
    CHECK(!uiw__pcap_failed(pc));
    uiw__pcap_close(pc);
}

/* The fields of the NFSv4 frames, in this order. */
#define NFS4_FIELDS                                                                                \
    "rpc.xid rpc.msgtyp nfs.minorversion nfs.opcode nfs.nfsstat4 nfs.verifier4 "                   \
    "nfs.exchange_id.call_flags nfs.exchange_id.reply_flags nfs.nii_domain4 nfs.nii_name4 "        \
    "nfs.nfstime4.seconds nfs.nfstime4.nseconds nfs.data nfs.exchange_id.state_protect "           \
    "nfs.clientid nfs.seqid nfs.minorid4 nfs.majorid4 nfs.scope nfs.session_id4 nfs.slotid "       \
    "nfs.high_slotid nfs.target_high_slotid nfs.cachethis4 nfs.fh.length nfs.fhandle "             \
    "nfs.stateid.seqid nfs.stateid.other nfs.offset4 nfs.count4 nfs.eof nfs.read.data_length "     \
    "nfs.sequence.flags"
enum {
    F_XID,
    F_TYPE,
    F_MINOR,
    F_OP,
    F_STATUS,
    F_VERF,
    F_CFLAGS,
    F_RFLAGS,
    F_DOMAIN,
    F_NAME,
    F_SEC,
    F_NSEC,
    F_DATA,
    F_PROTECT,
    F_CLIENTID,
    F_SEQID,
    F_MINORID,
    F_MAJORID,
    F_SCOPE,
    F_SESSION,
    F_SLOT,
    F_HIGH,
    F_TARGET,
    F_CACHE,
    F_FHLEN,
    F_FH,
    F_SSEQID,
    F_SOTHER,
    F_OFFSET,
    F_COUNT,
    F_EOF,
    F_RLEN,
    F_SFLAGS,
    NF4
};

/* Field k of r is exactly `want` (every occurrence, ',' between them). */
static void field_is(const struct row *r, int k, const char *want, const char *name)
{
    CHECK(k < r->n);
    if (strcmp(r->f[k], want) != 0)
        uiw_test_fail(__FILE__, __LINE__, "tshark's %s \"%s\", not \"%s\"", name, r->f[k], want);
}

/* p[0..n) in hex, as tshark shows bytes */
static const char *hex_of(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", ((const unsigned char *)p)[i]);
    out[2 * n] = 0;
    return out;
}

/* An RPC call carrying an NFSv4.1 COMPOUND of EXCHANGE_ID, then one of SEQUENCE, PUTFH
 * and READ, each with its reply, encoded by xdr/nfs4.x's routines into a capture of NFS
 * over TCP (record marking, port 2049): Wireshark's NFS dissector decodes every message
 * without an error, each operation's number and every field set. */
TEST(tshark_nfs4_compound)
{
    need_tshark();
    char dir[512], pcap[600];
    it_tmpdir(dir, sizeof(dir), "nfs4cap");
    snprintf(pcap, sizeof(pcap), "%s/nfs4.pcap", dir);
    char sid[NFS4_SESSIONID_SIZE], fh[28], other[NFS4_OTHER_SIZE];
    for (unsigned i = 0; i < sizeof(sid); i++)
        sid[i] = (char)(0xa0 + i);
    for (unsigned i = 0; i < sizeof(fh); i++)
        fh[i] = (char)(0x10 + 3 * i);
    for (unsigned i = 0; i < sizeof(other); i++)
        other[i] = (char)(0x51 + i);
    nfs4_capture(pcap, sid, fh, other);
    CHECK_EQ(it_tshark_malformed(pcap, NULL), 0);
    CHECK_EQ(it_rpc_calls_answered(pcap), 2);

    char *o = it_tshark_fields(pcap, "nfs", NFS4_FIELDS);
    if (it_nlines(o) != 4)
        uiw_test_fail(__FILE__, __LINE__, "%d NFS frames in %s:\n%s", it_nlines(o), pcap, o);
    struct row r[4];
    char *save = NULL, *line = strtok_r(o, "\n", &save);
    for (int i = 0; i < 4; i++, line = strtok_r(NULL, "\n", &save)) {
        CHECK(line != NULL);
        split(line, &r[i]);
        CHECK_EQ(r[i].n, NF4);
        CHECK_EQ(val(&r[i], F_XID, 0, "xid"), 0x4e460001u + (unsigned)i / 2);
        CHECK_EQ(val(&r[i], F_TYPE, 0, "message type"), (unsigned)i % 2);
    }
    char hex[128];

    /* EXCHANGE_ID */
    CHECK_EQ(val(&r[0], F_MINOR, 0, "minorversion"), 1);
    field_is(&r[0], F_OP, "42", "opcodes");
    CHECK_EQ(val(&r[0], F_VERF, 0, "co_verifier"), 0x7569777665726631ull); /* "uiwverf1" */
    field_is(&r[0], F_DATA, hex_of(NFS4_OWNER, sizeof(NFS4_OWNER) - 1, hex), "co_ownerid");
    CHECK_EQ(val(&r[0], F_CFLAGS, 0, "eia_flags"),
             EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID);
    CHECK_EQ(val(&r[0], F_PROTECT, 0, "eia_state_protect"), SP4_NONE);
    field_is(&r[0], F_DOMAIN, "uiw.example", "nii_domain");
    field_is(&r[0], F_NAME, "uiw-nfs 0.1", "nii_name");
    CHECK_EQ(val(&r[0], F_SEC, 0, "nii_date.seconds"), 1700000000);
    CHECK_EQ(val(&r[0], F_NSEC, 0, "nii_date.nseconds"), 5);
    field_is(&r[1], F_OP, "42", "opcodes");
    field_is(&r[1], F_STATUS, "0,0", "statuses"); /* COMPOUND's, EXCHANGE_ID's */
    CHECK_EQ(val(&r[1], F_CLIENTID, 0, "eir_clientid"), 0x1122334455667788ull);
    CHECK_EQ(val(&r[1], F_SEQID, 0, "eir_sequenceid"), 1);
    CHECK_EQ(val(&r[1], F_RFLAGS, 0, "eir_flags"),
             EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_CONFIRMED_R);
    CHECK_EQ(val(&r[1], F_MINORID, 0, "so_minor_id"), 9);
    field_is(&r[1], F_MAJORID, hex_of(NFS4_MAJOR, sizeof(NFS4_MAJOR) - 1, hex), "so_major_id");
    field_is(&r[1], F_SCOPE, hex, "eir_server_scope");

    /* SEQUENCE, PUTFH, READ */
    CHECK_EQ(val(&r[2], F_MINOR, 0, "minorversion"), 1);
    for (int i = 2; i < 4; i++) {
        field_is(&r[i], F_OP, "53,22,25", "opcodes");
        field_is(&r[i], F_SESSION, hex_of(sid, sizeof(sid), hex), "sessionid");
        CHECK_EQ(val(&r[i], F_SEQID, 0, "sequenceid"), 2);
        CHECK_EQ(val(&r[i], F_SLOT, 0, "slotid"), 1);
        CHECK_EQ(val(&r[i], F_HIGH, 0, "highest slotid"), 3);
    }
    CHECK_EQ(val(&r[2], F_CACHE, 0, "sa_cachethis"), 1);
    CHECK_EQ(val(&r[2], F_FHLEN, 0, "file handle length"), sizeof(fh));
    field_is(&r[2], F_FH, hex_of(fh, sizeof(fh), hex), "file handle");
    CHECK_EQ(val(&r[2], F_SSEQID, 0, "stateid seqid"), 5);
    field_is(&r[2], F_SOTHER, hex_of(other, sizeof(other), hex), "stateid other");
    CHECK_EQ(val(&r[2], F_OFFSET, 0, "READ offset"), 0x123456789ull);
    CHECK_EQ(val(&r[2], F_COUNT, 0, "READ count"), 4096);
    field_is(&r[3], F_STATUS, "0,0,0,0", "statuses");
    CHECK_EQ(val(&r[3], F_TARGET, 0, "target highest slotid"), 63);
    CHECK_EQ(val(&r[3], F_SFLAGS, 0, "sr_status_flags"), 0);
    CHECK_EQ(val(&r[3], F_EOF, 0, "eof"), 1);
    CHECK_EQ(val(&r[3], F_RLEN, 0, "READ length"), 21);
    field_is(&r[3], F_DATA, hex_of("bytes read over NFSv4", 21, hex), "READ data");
    free(o);
    it_rmtree(dir);
}
