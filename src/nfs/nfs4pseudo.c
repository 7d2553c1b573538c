/*
 * NFSv4's pseudo file system (RFC 8881 section 7.3), as knfsd presents its exports:
 * PUTROOTFH (and PUTPUBFH) gives a read-only directory "/" whose tree of directories joins
 * the exports' paths (/srv/a and /data/b: pseudo directories /, /srv and /data; the
 * exports' roots at their paths), so that a client mounts an export by the same path over
 * NFSv3 and NFSv4, and one mounting "/" finds every export it may use; an export whose
 * access control refuses the caller (NFS4ERR_ACCESS) is not in it. An export at "/", or
 * one marked fsid=root (knfsd's fsid=0) that the caller may see, is the root instead:
 * PUTROOTFH gives that export's root, and the other exports are not reached over NFSv4.
 *   - a pseudo directory's handle (fh.c's FH_PSEUDO kind) names it by a hash of its path,
 *     which is also its fileid; PUTFH of one whose directory no longer joins exports
 *     gets NFS4ERR_STALE;
 *   - its attributes: a directory, mode 0555, owned by root, its own fsid (major 0, minor
 *     1: exports' have minor 0, so a client sees a mount point where it enters an
 *     export), times 0, its change the hash of the exports it joins;
 *   - LOOKUP, LOOKUPP (from an export's root too, back into the pseudo file system),
 *     READDIR (cookies: an entry's place + 3; verifier: the change), ACCESS (read and
 *     lookup), GETATTR, SECINFO and SECINFO_NO_NAME (AUTH_SYS and AUTH_NONE) through it;
 *     every change NFS4ERR_ROFS, every other operation NFS4ERR_ISDIR (uiw__nfs4_check).
 * An export inside another (/srv and /srv/pub) is entered where its root is, as knfsd's
 * clients see it: LOOKUP of "pub" in /srv gives /srv/pub's root handle, so its fsid, its
 * read-only and its access control hold whichever way a client walks there (an export
 * the caller may not use: NFS4ERR_ACCESS, never /srv's rights on it); LOOKUPP from its
 * root gives /srv's directory; its mounted_on_fileid is that directory entry's own (the
 * same inode). No pseudo directory lies at or below an export the caller may use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/nfs4int.h"

/* The pseudo file system's fsid minor (the exports': 0). */
#define PSEUDO_FSID_MINOR 1

static uint64_t hash_path(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h | 1ull << 63; /* never 0 */
}

/* Whether the caller may see the export: present, and a client of its line (a flavor it
 * refuses still shows it: SECINFO tells which to use). */
static int visible(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex)
{
    if (ex->removed)
        return 0;
    struct uiw__nfs_cred cred;
    const struct uiw__nfs_xopts *xo;
    nfsstat3 st = uiw__nfsd_access(c->s, ex, c->rq, 0, &cred, &xo);
    (void)v;
    return uiw__nfs4_st4(st, ex, c->rq) != NFS4ERR_ACCESS;
}

/* Whether path p (n bytes, canonical) is ex's path or below it. */
static int within(const struct uiw__nfs_export *ex, const char *p, size_t n)
{
    size_t el = strlen(ex->path);
    if (el == 1)
        return 1; /* everything is below "/" */
    return n >= el && memcmp(p, ex->path, el) == 0 && (n == el || p[el] == '/');
}

/* The export that ex lies in: the one of the longest path above ex's (NULL: none). */
static struct uiw__nfs_export *enclosing(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex)
{
    struct uiw__nfs_export *best = NULL;
    size_t pl = strlen(ex->path);
    for (unsigned i = 0; i < c->s->nexports; i++) {
        struct uiw__nfs_export *e = &c->s->exports[i];
        if (e == ex || e->removed || strlen(e->path) >= pl || !within(e, ex->path, pl))
            continue;
        if (!best || strlen(e->path) > strlen(best->path))
            best = e;
    }
    return best;
}

/* Whether path p (n bytes) is at or below an export the caller may see: no pseudo
 * directory is there. */
static int in_visible(struct uiw__nfs4_c *c, struct uiw__vfs *v, const char *p, size_t n)
{
    for (unsigned i = 0; i < c->s->nexports; i++)
        if (within(&c->s->exports[i], p, n) && visible(c, v, &c->s->exports[i]))
            return 1;
    return 0;
}

struct uiw__nfs_export *uiw__nfs4_nested(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex,
                                         int fd)
{
    struct stat sb;
    if (c->s->nexports < 2 || fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return NULL; /* one export: nothing nested (no fstat on LOOKUP's way) */
    for (unsigned i = 0; i < c->s->nexports; i++) {
        struct uiw__nfs_export *e = &c->s->exports[i];
        if (e != ex && !e->removed && e->dev == sb.st_dev && e->ino == sb.st_ino &&
            strlen(e->path) > strlen(ex->path) && within(ex, e->path, strlen(e->path)))
            return e;
    }
    return NULL;
}

int uiw__nfs4_export_root(struct uiw__nfs4_c *c, const struct stat *sb)
{
    if (!S_ISDIR(sb->st_mode))
        return 0;
    for (unsigned i = 0; i < c->s->nexports; i++) {
        const struct uiw__nfs_export *e = &c->s->exports[i];
        if (!e->removed && e->dev == sb->st_dev && e->ino == sb->st_ino)
            return 1;
    }
    return 0;
}

int uiw__nfs4_export_is_root(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex)
{
    if (strcmp(ex->path, "/") == 0)
        return 1;
    if (!ex->access)
        return c->s->opts.nfs4_cmdline_root; /* of the command line: no options */
    const struct netbuf *nb = svc_getrpccaller(c->rq->rq_xprt);
    if (!nb || !nb->buf || nb->len < sizeof(sa_family_t))
        return 0;
    const struct uiw__nfs_xopts *o = uiw__nfs_xentry_match(ex->access, nb->buf);
    return o && (o->flags & UIW__X_FSID_ROOT);
}

int uiw__nfs4_pseudo_active(struct uiw__nfs4_c *c, struct uiw__vfs *v)
{
    unsigned n = 0;
    for (unsigned i = 0; i < c->s->nexports; i++) {
        struct uiw__nfs_export *ex = &c->s->exports[i];
        if (!visible(c, v, ex))
            continue;
        if (uiw__nfs4_export_is_root(c, ex))
            return 0; /* the pseudo root is that export's root */
        n++;
    }
    return n > 0;
}

int uiw__nfs4_is_pseudo(const struct uiw__nfs4_fh *f, uint64_t *node)
{
    uint64_t n;
    nfs_fh3 h;
    h.data.data_len = f->len;
    h.data.data_val = (char *)(uintptr_t)f->data;
    return uiw__nfs_fh_pseudo_node(&h, node ? node : &n);
}

/* The path of pseudo directory `node` (its length in *len; "/" for the root), a prefix of
 * a visible export's path; NULL when none is. */
static const char *path_of(struct uiw__nfs4_c *c, struct uiw__vfs *v, uint64_t node, size_t *len)
{
    if (node == hash_path("/", 1)) {
        *len = 1;
        return "/";
    }
    for (unsigned i = 0; i < c->s->nexports; i++) {
        struct uiw__nfs_export *ex = &c->s->exports[i];
        if (!visible(c, v, ex))
            continue;
        /* its proper ancestors: every prefix that ends before a '/' */
        for (size_t k = 1; ex->path[k]; k++) {
            if (ex->path[k] == '/' && hash_path(ex->path, k) == node) {
                if (in_visible(c, v, ex->path, k))
                    return NULL; /* inside an export: its directory, not a pseudo one */
                *len = k;
                return ex->path;
            }
        }
    }
    return NULL;
}

/* One entry of a pseudo directory: a pseudo directory below, or an export's root. */
struct child {
    const char *name;
    size_t len;
    struct uiw__nfs_export *ex; /* NULL: a pseudo directory */
    uint64_t node;              /* the hash of its path */
};

/* The entries of the pseudo directory at path p (plen bytes) into out (at most max;
 * every visible export gives at most one): their number. */
static unsigned children(struct uiw__nfs4_c *c, struct uiw__vfs *v, const char *p, size_t plen,
                         struct child *out, unsigned max)
{
    unsigned n = 0;
    size_t base = plen == 1 ? 0 : plen; /* "/" is the root: names start at 1 */
    for (unsigned i = 0; i < c->s->nexports && n < max; i++) {
        struct uiw__nfs_export *ex = &c->s->exports[i];
        if (!visible(c, v, ex) || strncmp(ex->path, p, base) != 0 || ex->path[base] != '/')
            continue;
        const char *name = ex->path + base + 1;
        size_t len = strcspn(name, "/");
        if (!len)
            continue;
        int dup = 0;
        for (unsigned k = 0; k < n && !dup; k++)
            dup = out[k].len == len && memcmp(out[k].name, name, len) == 0;
        if (dup) {
            /* an export at this very path wins over the pseudo directory leading on */
            for (unsigned k = 0; k < n; k++)
                if (out[k].len == len && memcmp(out[k].name, name, len) == 0 && !name[len])
                    out[k].ex = ex;
            continue;
        }
        out[n].name = name;
        out[n].len = len;
        out[n].ex = name[len] ? NULL : ex;
        out[n].node = hash_path(ex->path, base + 1 + len);
        n++;
    }
    return n;
}

static nfsstat4 set_pseudo(struct uiw__nfs4_c *c, uint64_t node)
{
    char buf[UIW__NFS_FH_MAX];
    nfs_fh3 h;
    uiw__nfs_fh_pseudo(node, &h, buf);
    uiw__nfs4_set_fh(&c->cur, &h);
    return NFS4_OK;
}

nfsstat4 uiw__nfs4_pseudo_root(struct uiw__nfs4_c *c)
{
    return set_pseudo(c, hash_path("/", 1));
}

nfsstat4 uiw__nfs4_pseudo_put(struct uiw__nfs4_c *c, struct uiw__vfs *v, const nfs_fh3 *h)
{
    uint64_t node;
    size_t len;
    if (!uiw__nfs_fh_pseudo_node(h, &node))
        return NFS4ERR_BADHANDLE;
    if (!uiw__nfs4_pseudo_active(c, v) || !path_of(c, v, node, &len))
        return NFS4ERR_STALE; /* the exports changed: it joins none now */
    return set_pseudo(c, node);
}

nfsstat4 uiw__nfs4_enter_export(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                                struct uiw__nfs_export *ex)
{
    nfsstat4 st = uiw__nfs4_st4(uiw__nfsd_access(c->s, ex, c->rq, 0, &v->cred, &v->xo), ex, c->rq);
    return st != NFS4_OK ? st : uiw__nfs4_issue_root(c, v, ex);
}

nfsstat4 uiw__nfs4_pseudo_lookup(struct uiw__nfs4_c *c, struct uiw__vfs *v, const char *name)
{
    uint64_t node;
    size_t plen;
    const char *p;
    if (!uiw__nfs4_is_pseudo(&c->cur, &node) || !(p = path_of(c, v, node, &plen)))
        return NFS4ERR_STALE;
    if (!name) {
        if (plen == 1)
            return NFS4ERR_NOENT; /* nothing above the root */
        size_t up = plen;
        while (up > 0 && p[up - 1] != '/')
            up--;
        return set_pseudo(c, up <= 1 ? hash_path("/", 1) : hash_path(p, up - 1));
    }
    unsigned max = c->s->nexports ? c->s->nexports : 1;
    struct child *ch = malloc(max * sizeof(*ch));
    if (!ch)
        return NFS4ERR_SERVERFAULT;
    unsigned n = children(c, v, p, plen, ch, max);
    nfsstat4 st = NFS4ERR_NOENT;
    for (unsigned i = 0; i < n; i++) {
        if (ch[i].len != strlen(name) || memcmp(ch[i].name, name, ch[i].len) != 0)
            continue;
        st = ch[i].ex ? uiw__nfs4_enter_export(c, v, ch[i].ex) : set_pseudo(c, ch[i].node);
        break;
    }
    free(ch);
    return st;
}

nfsstat4 uiw__nfs4_pseudo_up(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex,
                             int rootfd)
{
    struct uiw__nfs_export *out = enclosing(c, ex);
    if (out && visible(c, v, out)) {
        /* the directory that holds ex's root, in the export around it, entered as
         * LOOKUP there would be: the caller's rights on that export */
        nfsstat4 st =
            uiw__nfs4_st4(uiw__nfsd_access(c->s, out, c->rq, 0, &v->cred, &v->xo), out, c->rq);
        if (st != NFS4_OK)
            return st;
        if (uiw__vfs_enter(v) != 0)
            return NFS4ERR_PERM;
        int fd = openat(rootfd, "..", O_PATH | O_CLOEXEC);
        int err = errno;
        uiw__vfs_leave(v);
        if (fd < 0)
            return (nfsstat4)uiw__nfsd_errno(err);
        st = uiw__nfs4_issue(c, v, out, rootfd, NULL, fd);
        close(fd);
        return st;
    }
    size_t up = strlen(ex->path);
    while (up > 0 && ex->path[up - 1] != '/')
        up--;
    if (out && in_visible(c, v, ex->path, up > 1 ? up - 1 : 1))
        return NFS4ERR_ACCESS; /* above it an export this caller may not use */
    if (!uiw__nfs4_pseudo_active(c, v))
        return NFS4ERR_NOENT; /* nothing above an export's root (section 18.14.3) */
    return set_pseudo(c, up <= 1 ? hash_path("/", 1) : hash_path(ex->path, up - 1));
}

uint64_t uiw__nfs4_pseudo_mounted_on(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                                     const struct uiw__nfs_export *ex, uint64_t fileid)
{
    struct uiw__nfs_export *out = enclosing(c, ex);
    if (out && visible(c, v, out))
        return fileid; /* its directory in that export is the same inode */
    if (!uiw__nfs4_pseudo_active(c, v))
        return fileid;
    return hash_path(ex->path, strlen(ex->path));
}

/* The change of the pseudo file system: a hash of the exports the caller sees. */
static uint64_t change(struct uiw__nfs4_c *c, struct uiw__vfs *v)
{
    uint64_t h = 0;
    for (unsigned i = 0; i < c->s->nexports; i++)
        if (visible(c, v, &c->s->exports[i]))
            h = h * 31 + hash_path(c->s->exports[i].path, strlen(c->s->exports[i].path));
    return h;
}

/* The attributes of pseudo directory `node` into out (fh: its handle). */
static nfsstat4 attrs(struct uiw__nfs4_c *c, struct uiw__vfs *v, uint64_t node,
                      const struct uiw__nfs4_fh *fh, const bitmap4 *req, fattr4 *out, size_t room)
{
    struct stat sb;
    memset(&sb, 0, sizeof(sb));
    sb.st_mode = S_IFDIR | 0555;
    sb.st_nlink = 2;
    sb.st_ino = (ino_t)node;
    uint64_t ch = change(c, v);
    sb.st_ctim.tv_sec = (time_t)(ch / 1000000000u);
    sb.st_ctim.tv_nsec = (long)(ch % 1000000000u);
    return uiw__nfs4_encode(c, -1, &sb, NULL, fh, node, req, out, room);
}

nfsstat4 uiw__nfs4_pseudo_getattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const bitmap4 *req,
                                  fattr4 *out)
{
    uint64_t node;
    size_t len;
    if (!uiw__nfs4_is_pseudo(&c->cur, &node) || !path_of(c, v, node, &len))
        return NFS4ERR_STALE;
    return attrs(c, v, node, &c->cur, req, out, 4096);
}

nfsstat4 uiw__nfs4_pseudo_readdir(struct uiw__nfs4_c *c, struct uiw__vfs *v, const READDIR4args *a,
                                  READDIR4resok *r)
{
    uint64_t node;
    size_t plen;
    const char *p;
    if (!uiw__nfs4_is_pseudo(&c->cur, &node) || !(p = path_of(c, v, node, &plen)))
        return NFS4ERR_STALE;
    uint64_t verf = change(c, v);
    char mine[NFS4_VERIFIER_SIZE];
    for (int i = 0; i < 8; i++)
        mine[i] = (char)(verf >> (56 - 8 * i));
    if (a->cookie != 0 && memcmp(mine, a->cookieverf, sizeof(mine)) != 0)
        return NFS4ERR_NOT_SAME;
    memcpy(r->cookieverf, mine, sizeof(mine));
    unsigned max = c->s->nexports ? c->s->nexports : 1;
    struct child *ch = malloc(max * sizeof(*ch));
    if (!ch)
        return NFS4ERR_SERVERFAULT;
    unsigned n = children(c, v, p, plen, ch, max);
    uint32_t maxcount = a->maxcount < UIW__NFS4_READDIR_MAX ? a->maxcount : UIW__NFS4_READDIR_MAX;
    uint32_t used = 4 + 8 + 4 + 4;
    entry4 *first = NULL, *last = NULL;
    nfsstat4 st = NFS4_OK;
    r->reply.eof = TRUE;
    for (uint64_t i = a->cookie ? a->cookie - 2 : 0; i < n; i++) {
        entry4 *e = uiw__nfs4_alloc(c, sizeof(*e) + ch[i].len);
        if (!e) {
            st = NFS4ERR_SERVERFAULT;
            break;
        }
        memset(e, 0, sizeof(*e));
        e->cookie = i + 3;
        e->name.utf8string_len = (u_int)ch[i].len;
        e->name.utf8string_val = (char *)(e + 1);
        memcpy(e->name.utf8string_val, ch[i].name, ch[i].len);
        struct uiw__nfs4_fh fh = {0};
        nfs_fh3 h;
        if (ch[i].ex) {
            /* an export's root: its own attributes, mounted on this directory */
            struct uiw__nfs_export *ex = ch[i].ex;
            struct stat sb;
            struct uiw__nfs4_fh cur = c->cur;
            st = uiw__nfs4_enter_export(c, v, ex);
            fh = c->cur;
            c->cur = cur;
            if (st == NFS4_OK && fstat(ex->rootfd, &sb) != 0)
                st = (nfsstat4)uiw__nfsd_errno(errno);
            if (st == NFS4_OK)
                st = uiw__nfs4_encode(c, ex->rootfd, &sb, ex, &fh, ch[i].node, &a->attr_request,
                                      &e->attrs, 1024);
            if (st != NFS4_OK) {
                /* the entry with its error alone when asked for (section 18.23.3) */
                st = uiw__nfs4_rdattr_error(c, st, &a->attr_request, &e->attrs);
            }
        } else {
            char buf[UIW__NFS_FH_MAX];
            uiw__nfs_fh_pseudo(ch[i].node, &h, buf);
            uiw__nfs4_set_fh(&fh, &h);
            st = attrs(c, v, ch[i].node, &fh, &a->attr_request, &e->attrs, 1024);
        }
        if (st != NFS4_OK)
            break;
        uint32_t need = 4 + 8 + 4 + ((ch[i].len + 3) & ~3u) + 4 +
                        4 * e->attrs.attrmask.bitmap4_len + 4 +
                        ((e->attrs.attr_vals.attrlist4_len + 3) & ~3u);
        if (used + need > maxcount) {
            if (!first)
                st = NFS4ERR_TOOSMALL;
            r->reply.eof = FALSE;
            break;
        }
        used += need;
        if (last)
            last->nextentry = e;
        else
            first = e;
        last = e;
    }
    free(ch);
    r->reply.entries = st == NFS4_OK ? first : NULL;
    return st;
}
