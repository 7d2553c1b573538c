/* The inside of an NFSv4 COMPOUND (nfs4.c), shared by the files that run its operations
 * (nfs4attr.c: attributes; nfs4*.c: the others by concern). */
#ifndef UIW_NFS_NFS4INT_H
#define UIW_NFS_NFS4INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs/vfs.h"

/* A file handle of the COMPOUND (the current or the saved one). */
struct uiw__nfs4_fh {
    u_int len;   /* 0: none */
    int trusted; /* issued by this COMPOUND (0: as a client put it, not yet resolved) */
    char data[UIW__NFS_FH_MAX];
};

struct uiw__nfs4_mem;
struct uiw__nfs4_pool;

/* One COMPOUND while it runs. */
struct uiw__nfs4_c {
    struct uiw__nfsd *s;
    struct svc_req *rq;
    struct uiw__nfs4_limits lim;
    uint32_t minor;
    struct uiw__nfs4_fh cur, saved;
    struct uiw__nfs4_slotref ref; /* the SEQUENCE's slot (ref.ses NULL: none) */
    int cachethis;
    char *replay; /* a retry's reply, from its slot */
    size_t replay_len;
    utf8str_cs tag;
    nfsstat4 status;
    uint32_t nargs, nres, cap;
    uint32_t ndec;    /* operations whose arguments were decoded (freed after the reply) */
    uint32_t req_len; /* the COMPOUND's bytes (but for the RPC header) */
    uint32_t next_op; /* the operation after the one running (0: none) */
    nfs_argop4 *args;
    nfs_resop4 *res;
    struct uiw__nfs4_mem *mem;   /* reply memory, freed after the reply */
    struct uiw__nfs4_pool *pool; /* the thread's memory it took (NULL: its own) */
    /* the current stateid (RFC 8881 section 16.2.3.1.2), of the file whose handle was
     * current when an operation set it (cur_sid_fh.len 0: none) */
    stateid4 cur_sid;
    struct uiw__nfs4_fh cur_sid_fh, saved_sid_fh;
    stateid4 saved_sid;
    struct uiw__vfs vfs; /* the caller, as uiw__vfs_init makes it: each operation's copy */
    size_t read_bytes;   /* READ data in the results, for the reply's room */
    int read_lent;       /* a READ's data is in the transport's lent buffer */
};

/* The bytes result r takes in a COMPOUND's reply (xdr_sizeof's answer, without its
 * encoding pass for the results of nearly every COMPOUND). */
uint32_t uiw__nfs4_res_size(const nfs_resop4 *r);
/* Result r into x, as xdr_nfs_resop4 encodes it (SEQUENCE, PUTFH and its like, and
 * GETATTR written in place when the stream has room inline). */
bool_t uiw__nfs4_enc_result(XDR *x, const nfs_resop4 *r);

/* n bytes that live until the reply is sent (NULL: no memory). */
void *uiw__nfs4_alloc(struct uiw__nfs4_c *c, size_t n);

static inline nfs_fh3 uiw__nfs4_fh3(struct uiw__nfs4_fh *f)
{
    nfs_fh3 h;
    h.data.data_len = f->len;
    h.data.data_val = f->data;
    return h;
}

static inline void uiw__nfs4_set_fh(struct uiw__nfs4_fh *f, const nfs_fh3 *h)
{
    f->len = h->data.data_len;
    f->trusted = 1;
    memcpy(f->data, h->data.data_val, f->len);
}

/* NFSv3's status as NFSv4's (the same numbers for the same errors); an export's refusal
 * of the caller's flavor (its sec=) as NFS4ERR_WRONGSEC. */
nfsstat4 uiw__nfs4_st4(nfsstat3 st, const struct uiw__nfs_export *ex, const struct svc_req *rq);
/* The export handle f names and the caller's access to it. */
nfsstat4 uiw__nfs4_check(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs4_fh *f,
                         struct uiw__nfs_export **ex);
/* The current handle's file: a new O_PATH descriptor (dir: it must be a directory), and
 * its attributes in *sb (NULL: not wanted) as uiw__vfs_resolve gives them. */
nfsstat4 uiw__nfs4_resolve(struct uiw__nfs4_c *c, struct uiw__vfs *v, int dir, int *fd,
                           struct uiw__nfs_export **ex, struct stat *sb);
/* The current handle's file's attributes, with no descriptor (NFSv3's GETATTR path: the
 * same checks of the handle and the export as uiw__nfs4_resolve). */
nfsstat4 uiw__nfs4_stat(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct stat *sb,
                        struct uiw__nfs_export **ex);
/* The handle of fd, `name` in dfd (NULL: dfd itself or its parent), as the current one. */
nfsstat4 uiw__nfs4_issue(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex,
                         int dfd, const char *name, int fd);
/* The root of export ex as the current handle. */
nfsstat4 uiw__nfs4_issue_root(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                              struct uiw__nfs_export *ex);
/* RFC 8881 section 18.9.3's checks of a component name, copied into out: NFS4ERR_INVAL
 * for an empty one, NFS4ERR_BADNAME for "." and ".." and one with '/' or NUL,
 * NFS4ERR_NAMETOOLONG past NAME_MAX. */
nfsstat4 uiw__nfs4_name(const component4 *n, char out[NAME_MAX + 1]);

/* GETATTR (section 18.7): the attributes of the current handle's file. */
nfsstat4 uiw__nfs4_getattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const GETATTR4args *a,
                           GETATTR4resok *r);

/* ---- attributes (nfs4attr.c) ---- */

/* The words of the attribute bitmaps the server knows (up to suppattr_exclcreat, 75). */
#define UIW__NFS4_ATTR_WORDS 3

/* w as a bitmap4, without its trailing zero words. */
void uiw__nfs4_bitmap(bitmap4 *b, uint32_t w[UIW__NFS4_ATTR_WORDS]);
/* The change attribute of a file: its ctime in nanoseconds. */
uint64_t uiw__nfs4_change(const struct stat *st);
/* The attributes of req the server supports, of the file sb (fd: an O_PATH descriptor of
 * it, for the file system's, which may be -1 when req asks for none of those; fh its handle;
 * mounted_on its mounted_on_fileid), encoded into out in at most room bytes (NFS4ERR_RESOURCE past
 * that; NFS4ERR_INVAL for a write-only attribute asked for). */
nfsstat4 uiw__nfs4_encode(struct uiw__nfs4_c *c, int fd, const struct stat *sb,
                          const struct uiw__nfs_export *ex, const struct uiw__nfs4_fh *fh,
                          uint64_t mounted_on, const bitmap4 *req, fattr4 *out, size_t room);
/* The settable attributes of in (SETATTR, CREATE) as the file-system layer takes them,
 * and their bitmap in set: NFS4ERR_ATTRNOTSUPP for one the server does not support,
 * NFS4ERR_INVAL for a read-only one or a bad value, NFS4ERR_BADOWNER for an owner it
 * cannot map, NFS4ERR_BADXDR for values that do not decode. */
nfsstat4 uiw__nfs4_sattr(struct uiw__nfs4_c *c, const fattr4 *in, struct uiw__vfs_sattr *out,
                         uint32_t set[UIW__NFS4_ATTR_WORDS]);
/* VERIFY and NVERIFY: whether the current file's attributes encode as in's (*same). */
nfsstat4 uiw__nfs4_verify(struct uiw__nfs4_c *c, struct uiw__vfs *v, const fattr4 *in, int *same);

/* ---- namespace operations (nfs4ns.c) ---- */

/* Whether SETATTR of the size of the file sb may go ahead with this stateid: as WRITE's
 * (an open of this client for writing, or a special stateid; nfs4open.c). */
nfsstat4 uiw__nfs4_setattr_stateid_ok(struct uiw__nfs4_c *c, const stateid4 *sid,
                                      const struct stat *sb);

/* READDIR's reply is kept within this many bytes (maxcount clamped to it): the COMPOUND's
 * reply is encoded into 64 KiB (nfs4.c's REPLY_MAX), with room for the other results. */
#define UIW__NFS4_READDIR_MAX 60000u

nfsstat4 uiw__nfs4_create(struct uiw__nfs4_c *c, struct uiw__vfs *v, const CREATE4args *a,
                          CREATE4resok *r);
nfsstat4 uiw__nfs4_remove(struct uiw__nfs4_c *c, struct uiw__vfs *v, const REMOVE4args *a,
                          REMOVE4resok *r);
nfsstat4 uiw__nfs4_rename(struct uiw__nfs4_c *c, struct uiw__vfs *v, const RENAME4args *a,
                          RENAME4resok *r);
nfsstat4 uiw__nfs4_link(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LINK4args *a,
                        LINK4resok *r);
nfsstat4 uiw__nfs4_readlink(struct uiw__nfs4_c *c, struct uiw__vfs *v, READLINK4resok *r);
nfsstat4 uiw__nfs4_setattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const SETATTR4args *a,
                           SETATTR4res *r);
nfsstat4 uiw__nfs4_readdir(struct uiw__nfs4_c *c, struct uiw__vfs *v, const READDIR4args *a,
                           READDIR4resok *r);
nfsstat4 uiw__nfs4_secinfo(struct uiw__nfs4_c *c, struct uiw__vfs *v, const SECINFO4args *a,
                           SECINFO4resok *r);
/* The flavors the export takes from the caller, as SECINFO's list (SECINFO_NO_NAME's too;
 * ex NULL: a pseudo directory's, AUTH_SYS and AUTH_NONE). */
nfsstat4 uiw__nfs4_flavors(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex,
                           SECINFO4resok *r);
/* An entry's attributes as READDIR gives them when st failed them: rdattr_error alone
 * when req asks for it (section 18.23.3; NFS4_OK), else st, which fails the READDIR. */
nfsstat4 uiw__nfs4_rdattr_error(struct uiw__nfs4_c *c, nfsstat4 st, const bitmap4 *req,
                                fattr4 *out);

/* ---- the pseudo file system (nfs4pseudo.c) ---- */

/* Whether PUTROOTFH gives the pseudo root: an export the caller may see, and none of
 * those at "/" or marked fsid=root. */
int uiw__nfs4_pseudo_active(struct uiw__nfs4_c *c, struct uiw__vfs *v);
/* Whether ex is the NFSv4 root in place of the pseudo file system for the caller: at "/",
 * fsid=root in the options of the caller's client of its line, or of the command line
 * with the server's nfs4_cmdline_root. */
int uiw__nfs4_export_is_root(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex);
/* Whether f is a pseudo directory's handle (its node in *node, which may be NULL). */
int uiw__nfs4_is_pseudo(const struct uiw__nfs4_fh *f, uint64_t *node);
/* PUTROOTFH's pseudo root, PUTFH of a pseudo handle (NFS4ERR_STALE when it joins nothing
 * now), as the current handle. */
nfsstat4 uiw__nfs4_pseudo_root(struct uiw__nfs4_c *c);
nfsstat4 uiw__nfs4_pseudo_put(struct uiw__nfs4_c *c, struct uiw__vfs *v, const nfs_fh3 *h);
/* LOOKUP of name in the current pseudo directory (NULL: LOOKUPP), and LOOKUPP from the
 * root of export ex (rootfd: a descriptor of it): the directory holding it in the export
 * it lies in when the caller may use that one (its access checked as LOOKUP's, which
 * sets v's), else its pseudo directory; NFS4ERR_ACCESS when that directory is inside
 * an export the caller may use only through one it may not, NFS4ERR_NOENT with no
 * pseudo file system. */
nfsstat4 uiw__nfs4_pseudo_lookup(struct uiw__nfs4_c *c, struct uiw__vfs *v, const char *name);
nfsstat4 uiw__nfs4_pseudo_up(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex,
                             int rootfd);
/* The export other than ex whose root is the directory fd and whose path is below ex's
 * (nested in it), which LOOKUP into fd from ex enters; NULL when fd is none's root. */
struct uiw__nfs_export *uiw__nfs4_nested(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex,
                                         int fd);
/* Whether sb is the root directory of an export (REMOVE and RENAME through the export
 * it is nested in leave it alone). */
int uiw__nfs4_export_root(struct uiw__nfs4_c *c, const struct stat *sb);
/* The current handle as export ex's root, after the caller's access to ex as PUTFH
 * checks it (NFS4ERR_ACCESS, NFS4ERR_WRONGSEC); v's credentials become ex's. */
nfsstat4 uiw__nfs4_enter_export(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                                struct uiw__nfs_export *ex);
/* The mounted_on_fileid of export ex's root (fileid: its own): fileid when it lies in an
 * export the caller may use (the same directory there), else its directory's in the
 * pseudo file system. */
uint64_t uiw__nfs4_pseudo_mounted_on(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                                     const struct uiw__nfs_export *ex, uint64_t fileid);
nfsstat4 uiw__nfs4_pseudo_getattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const bitmap4 *req,
                                  fattr4 *out);
nfsstat4 uiw__nfs4_pseudo_readdir(struct uiw__nfs4_c *c, struct uiw__vfs *v, const READDIR4args *a,
                                  READDIR4resok *r);

/* ---- open state (nfs4stid.c) and its operations (nfs4open.c) ---- */

/* The stateids (and owners) one client may hold, opens', locks' and delegations': past
 * it, OPEN and LOCK get NFS4ERR_RESOURCE (and OPEN no delegation). */
#define UIW__NFS4_STIDS_MAX 4096u

struct uiw__nfs4_stids;
struct uiw__nfs4_stids *uiw__nfs4_stids_create(void);
void uiw__nfs4_stids_destroy(struct uiw__nfs4_stids *t);
/* The cap of stateids and owners per client (tests). */
void uiw__nfs4_stids_set_max(struct uiw__nfs4_stids *t, unsigned max);
/* The client went (its lease ran out, or it was destroyed): its state goes with it. */
void uiw__nfs4_stids_client_gone(struct uiw__nfs4_stids *t, clientid4 cid);
/* The server's stateids, and the client ID of the COMPOUND's session (0: none). */
struct uiw__nfs4_stids *uiw__nfs4_state_stids(struct uiw__nfs4_state *st);
clientid4 uiw__nfs4_session_client(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref);

/* Whether s is one of the special stateids (its `other` all zeros or all ones). */
int uiw__nfs4_stid_special(const stateid4 *s);
/* OPEN's state: a new open of owner o on (dev, ino), or the upgrade of its open there;
 * NFS4ERR_SHARE_DENIED against another open's share reservation. */
nfsstat4 uiw__nfs4_stid_open(struct uiw__nfs4_stids *t, clientid4 cid, const open_owner4 *o,
                             dev_t dev, ino_t ino, uint32_t access, uint32_t deny, stateid4 *out);
nfsstat4 uiw__nfs4_stid_downgrade(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                                  const stateid4 *in, uint32_t access, uint32_t deny,
                                  stateid4 *out);
nfsstat4 uiw__nfs4_stid_close(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const stateid4 *in);
/* May the stateid `in` read (write 0) or write the file (dev, ino)? */
nfsstat4 uiw__nfs4_stid_io(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                           const stateid4 *in, int write);
nfsstat4 uiw__nfs4_stid_test(struct uiw__nfs4_stids *t, clientid4 cid, const stateid4 *in);
nfsstat4 uiw__nfs4_stid_free(struct uiw__nfs4_stids *t, clientid4 cid, const stateid4 *in);

/* ---- byte-range locks (nfs4lock.c, their stateids nfs4stid.c) ---- */

/* The end of a range that runs to the end of the file (the largest offset + 1). */
#define UIW__NFS4_LK_EOF ((uint64_t)INT64_MAX + 1)
/* The ranges one lock stateid may hold apart (past it: NFS4ERR_RESOURCE, LOCKU
 * NFS4ERR_LOCK_RANGE), so that one owner cannot grow the server's memory. */
#define UIW__NFS4_LK_RANGES 256u

/* A range of bytes [start, end) (end UIW__NFS4_LK_EOF: to the end of the file) to lock
 * (type F_RDLCK, F_WRLCK) or unlock (F_UNLCK). */
struct uiw__nfs4_lkrange {
    uint64_t start, end;
    short type;
};

/* The lock that refused one (LOCK4denied): its range and type, and its owner when it is
 * a client's of this server (cid 0 and len 0: a local process's, or NFSv3's). */
struct uiw__nfs4_lkdenied {
    uint64_t start, end;
    int write;
    clientid4 cid;
    u_int len;
    char owner[NFS4_OPAQUE_LIMIT];
};

/* The locks of one lock stateid: an open file description of its own (OFD locks, so
 * that they conflict with every other owner's, this server's or a local process's) and
 * the ranges it holds. Not locked: nfs4stid.c calls these under its lock. */
struct uiw__nfs4_lk;
/* A lock state on fd (a descriptor of the file open for data, taken: closed with it), or
 * NULL (fd left open) without memory. */
struct uiw__nfs4_lk *uiw__nfs4_lk_new(int fd);
/* Its locks released (the descriptor closed) and its memory freed (NULL: nothing). */
void uiw__nfs4_lk_free(struct uiw__nfs4_lk *lk);
/* Whether it holds any lock. */
int uiw__nfs4_lk_held(const struct uiw__nfs4_lk *lk);
/* Whether one of its locks overlaps [start, end). */
int uiw__nfs4_lk_overlaps(const struct uiw__nfs4_lk *lk, uint64_t start, uint64_t end);
/* Lock or unlock q (POSIX's splits and merges): NFS4ERR_DENIED and *d (but its owner) for
 * a conflicting lock, NFS4ERR_OPENMODE when the descriptor cannot take a lock of that
 * type, NFS4ERR_RESOURCE (a lock) or NFS4ERR_LOCK_RANGE (an unlock) past
 * UIW__NFS4_LK_RANGES. */
nfsstat4 uiw__nfs4_lk_set(struct uiw__nfs4_lk *lk, const struct uiw__nfs4_lkrange *q,
                          struct uiw__nfs4_lkdenied *d);
/* Whether q could be locked through lk (NULL: through fd, a descriptor of the file with
 * no locks): NFS4ERR_DENIED and *d (but its owner) when not. */
nfsstat4 uiw__nfs4_lk_test(const struct uiw__nfs4_lk *lk, int fd, const struct uiw__nfs4_lkrange *q,
                           struct uiw__nfs4_lkdenied *d);

/* LOCK's state (section 18.10.3): with lo, a new lock-owner's lock stateid (that owner's
 * on the file if it has one) from `in`, an open stateid of cid on (dev, ino), its locks
 * on fd (a new descriptor of the file for data, always taken); without lo, `in` is the
 * lock stateid. Then q is locked and the lock stateid with its seqid up is *out.
 * NFS4ERR_OPENMODE for a lock the open's access does not give (a write lock needs
 * writing, a read lock reading), NFS4ERR_DENIED and *d (with its owner when it is ours)
 * for a conflict, NFS4ERR_RESOURCE past the client's cap; a lock stateid made for a LOCK
 * that fails goes with it. */
nfsstat4 uiw__nfs4_stid_lock(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                             const stateid4 *in, const lock_owner4 *lo, int fd,
                             const struct uiw__nfs4_lkrange *q, stateid4 *out,
                             struct uiw__nfs4_lkdenied *d);
/* LOCKT (section 18.11): whether lock-owner lo of cid could lock q on (dev, ino) (its own
 * locks no conflict; fd a descriptor of the file for one with none there, not taken). */
nfsstat4 uiw__nfs4_stid_lockt(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const lock_owner4 *lo, int fd, const struct uiw__nfs4_lkrange *q,
                              struct uiw__nfs4_lkdenied *d);
/* LOCKU (section 18.12): q (F_UNLCK) released through lock stateid `in` of cid on (dev,
 * ino), its seqid up in *out. */
nfsstat4 uiw__nfs4_stid_locku(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const stateid4 *in, const struct uiw__nfs4_lkrange *q, stateid4 *out);

nfsstat4 uiw__nfs4_lock(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOCK4args *a, LOCK4res *r);
nfsstat4 uiw__nfs4_lockt(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOCKT4args *a,
                         LOCKT4res *r);
nfsstat4 uiw__nfs4_locku(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOCKU4args *a,
                         LOCKU4res *r);
/* nfs4open.c's for nfs4lock.c: the stateid an operation names (the current one for the
 * special "current stateid"), the current stateid set, and the current file, regular
 * (a directory NFS4ERR_ISDIR, another file `other`), as an O_PATH descriptor. */
nfsstat4 uiw__nfs4_sid_in(struct uiw__nfs4_c *c, const stateid4 *in, stateid4 *out);
void uiw__nfs4_sid_set(struct uiw__nfs4_c *c, const stateid4 *s);
nfsstat4 uiw__nfs4_reg_file(struct uiw__nfs4_c *c, struct uiw__vfs *v, nfsstat4 other, int *fd,
                            struct uiw__nfs_export **ex, struct stat *sb);

/* ---- delegations: their state (nfs4stid.c) ---- */

struct uiw__nfs4_deleg_counts {
    uint64_t granted, recalled, returned, revoked;
};

/* A delegation whose recall is to be sent: its holder, stateid and file handle. */
struct uiw__nfs4_recall {
    clientid4 cid;
    stateid4 sid;
    u_int fhlen;
    char fh[UIW__NFS_FH_MAX];
};

/* A read delegation for client cid on (dev, ino), whose handle fh CB_RECALL names, after
 * the OPEN that opened it there: NFS4_OK with its stateid in out; NFS4ERR_DELAY on
 * contention (another client's open for writing, a recall under way, a delegation of cid
 * there already); NFS4ERR_RESOURCE past the client's cap or without memory. */
nfsstat4 uiw__nfs4_stid_deleg(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                              const nfs_fh4 *fh, stateid4 *out);
/* The delegations of clients other than cid (0: an NFSv3 caller) on (dev, ino), which a
 * change of the file conflicts with: how many there are, but for those whose recall
 * started before before_ns (revoked now); those not recalled yet marked recalled at
 * now_ns and given in out (at most n; *nout of them), for CB_RECALL. */
unsigned uiw__nfs4_stid_deleg_conflict(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev,
                                       ino_t ino, int64_t now_ns, int64_t before_ns,
                                       struct uiw__nfs4_recall *out, unsigned n, unsigned *nout);
/* Revoke the delegation sid (nothing if it went): off its file, kept as revoked until
 * FREE_STATEID (TEST_STATEID, READ: NFS4ERR_DELEG_REVOKED) or its client goes. */
void uiw__nfs4_stid_deleg_revoke(struct uiw__nfs4_stids *t, const stateid4 *sid);
/* Revoke the delegations whose recall started before before_ns (any client's), then say
 * whether client cid has a revoked one not freed (SEQ4_STATUS_RECALLABLE_STATE_REVOKED). */
int uiw__nfs4_stid_deleg_revoked(struct uiw__nfs4_stids *t, clientid4 cid, int64_t before_ns);
/* Whether `in` is a delegation of cid on (dev, ino) (NFS4ERR_BAD_STATEID, its seqid's
 * errors, NFS4ERR_DELEG_REVOKED); DELEGRETURN (ret) frees it. */
nfsstat4 uiw__nfs4_stid_deleg_check(struct uiw__nfs4_stids *t, clientid4 cid, dev_t dev, ino_t ino,
                                    const stateid4 *in, int ret);
void uiw__nfs4_stid_deleg_counts(struct uiw__nfs4_stids *t, struct uiw__nfs4_deleg_counts *n);

/* ---- delegations: when they are granted and recalled (nfs4deleg.c) ---- */

/* OPEN's delegation (after its open of the file sb, the current handle the file's): a
 * read delegation in *d when section 10.4's conditions hold (access READ alone by
 * CLAIM_NULL or CLAIM_FH, want not WANT_NO_DELEG, the client's back channel up, no
 * contention, delegations on); else 0, d untouched. */
int uiw__nfs4_deleg_open(struct uiw__nfs4_c *c, const OPEN4args *a, const struct stat *sb,
                         open_delegation4 *d);
/* Whether a change of the file sb by this COMPOUND's client conflicts with another
 * client's delegation: 1 (its recall sent once: answer NFS4ERR_DELAY), else 0. */
int uiw__nfs4_deleg_conflict(struct uiw__nfs4_c *c, const struct stat *sb);
/* DELEGRETURN (section 18.6). */
nfsstat4 uiw__nfs4_delegreturn(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                               const DELEGRETURN4args *a);

/* The operations of nfs4open.c, for run_op: operation i of the COMPOUND. */
nfsstat4 uiw__nfs4_open(struct uiw__nfs4_c *c, struct uiw__vfs *v, const OPEN4args *a,
                        OPEN4resok *r);
nfsstat4 uiw__nfs4_open_downgrade(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                                  const OPEN_DOWNGRADE4args *a, OPEN_DOWNGRADE4resok *r);
nfsstat4 uiw__nfs4_close(struct uiw__nfs4_c *c, struct uiw__vfs *v, const CLOSE4args *a,
                         stateid4 *r);
nfsstat4 uiw__nfs4_read(struct uiw__nfs4_c *c, struct uiw__vfs *v, const READ4args *a,
                        READ4resok *r);
nfsstat4 uiw__nfs4_write(struct uiw__nfs4_c *c, struct uiw__vfs *v, const WRITE4args *a,
                         WRITE4resok *r);
nfsstat4 uiw__nfs4_commit(struct uiw__nfs4_c *c, struct uiw__vfs *v, const COMMIT4args *a,
                          COMMIT4resok *r);
nfsstat4 uiw__nfs4_test_stateid(struct uiw__nfs4_c *c, const TEST_STATEID4args *a,
                                TEST_STATEID4resok *r);
nfsstat4 uiw__nfs4_free_stateid(struct uiw__nfs4_c *c, const FREE_STATEID4args *a);
/* SAVEFH and RESTOREFH carry the current stateid with the handle. */
void uiw__nfs4_sid_save(struct uiw__nfs4_c *c);
void uiw__nfs4_sid_restore(struct uiw__nfs4_c *c);

/* The current file, regular, for I/O with stateid `in` (write 0: reading), the stateid
 * checked as READ's and WRITE's (nfs4open.c): its data descriptor *dfd (open for reading
 * or writing) with *of to give back (uiw__vfs_put), its export and its stat. */
nfsstat4 uiw__nfs4_io_data(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *in, int write,
                           int *dfd, struct uiw__vfs_file **of, struct uiw__nfs_export **ex,
                           struct stat *sb);

/* NFSv4.2's operations on file data (nfs4v42.c). */
nfsstat4 uiw__nfs4_seek(struct uiw__nfs4_c *c, struct uiw__vfs *v, const SEEK4args *a,
                        seek_res4 *r);
nfsstat4 uiw__nfs4_allocate(struct uiw__nfs4_c *c, struct uiw__vfs *v, const ALLOCATE4args *a);
nfsstat4 uiw__nfs4_deallocate(struct uiw__nfs4_c *c, struct uiw__vfs *v, const DEALLOCATE4args *a);
nfsstat4 uiw__nfs4_copy(struct uiw__nfs4_c *c, struct uiw__vfs *v, const COPY4args *a,
                        COPY4resok *r);
nfsstat4 uiw__nfs4_clone(struct uiw__nfs4_c *c, struct uiw__vfs *v, const CLONE4args *a);

#endif
