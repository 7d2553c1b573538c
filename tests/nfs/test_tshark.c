/* Wireshark's NFS dissector, an implementation of RFC 1813 that is not ours, reads what
 * uiw-nfsd sent: a capture of NFS over TCP (the tests' relay writes the connection with
 * the stack's pcap writer) and one of NFS over RPC-over-RDMA Version One (the client's
 * iWARP connection, UIW_PCAP_DIR), each holding a GETATTR, a READDIRPLUS and a WRITE. Every
 * field tshark decodes of those replies is checked against the export on disk: each
 * fattr3 against lstat (type, mode, nlink, uid, gid, size, used, rdev, fsid the same for
 * all, fileid, the three times to the nanosecond), READDIRPLUS's names, fileids and
 * handles against the directory, WRITE's wcc_data against lstat before and after, its
 * count, stability and verifier against the call's. Nothing in the capture is malformed.
 *
 * tshark is a dependency (scripts/deps.sh): without it the tests skip (77) on a user's
 * machine and fail where tools are required (UIW_ROOT_REQUIRED=1 or CI set, as CI does). */
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs/xdr_data.h"
#include "interop.h"
#include "nfs_util.h"
#include "relay.h"
#include "test.h"

static void need_tshark(void)
{
    if (it_tshark())
        return;
    const char *req = getenv("UIW_ROOT_REQUIRED"), *ci = getenv("CI");
    if ((req && strcmp(req, "1") == 0) || (ci && *ci))
        uiw_test_fail(__FILE__, __LINE__,
                      "tshark is not installed, and the tools are required here "
                      "(UIW_ROOT_REQUIRED=1 or CI): scripts/deps.sh installs it");
    SKIP("tshark is not installed (scripts/deps.sh installs it)");
}

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
    char *f[32];
    int n;
};

static void split(char *line, struct row *r)
{
    r->n = 0;
    for (char *p = line; r->n < 32;) {
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
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d", relay_port(rl), v.dir, v.mount);
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
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1;
    o.vers1_only = 1;
    srv_start(&v, &o);
    make_files(&v);
    char dir[512];
    it_tmpdir(dir, sizeof(dir), "nfscap");
    int port = uiw__nfsd_port(v.s, UIW__NFSD_RDMA);
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma&rpcrdma=1", port,
             v.dir, v.mount);
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
