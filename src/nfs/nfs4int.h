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
    struct uiw__nfs4_mem *mem; /* reply memory, freed after the reply */
};

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
/* The current handle's file: a new O_PATH descriptor (dir: it must be a directory). */
nfsstat4 uiw__nfs4_resolve(struct uiw__nfs4_c *c, struct uiw__vfs *v, int dir, int *fd,
                           struct uiw__nfs_export **ex);
/* The handle of fd, `name` in dfd (NULL: dfd itself or its parent), as the current one. */
nfsstat4 uiw__nfs4_issue(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex,
                         int dfd, const char *name, int fd);
/* RFC 8881 section 18.9.3's checks of a component name, copied into out: NFS4ERR_INVAL
 * for an empty one, NFS4ERR_BADNAME for "." and ".." and one with '/' or NUL,
 * NFS4ERR_NAMETOOLONG past NAME_MAX. */
nfsstat4 uiw__nfs4_name(const component4 *n, char out[NAME_MAX + 1]);

/* GETATTR (section 18.7): the attributes of the current handle's file. */
nfsstat4 uiw__nfs4_getattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const GETATTR4args *a,
                           GETATTR4resok *r);

#endif
