/*
 * Caller identity. A server run as root performs each call as its caller: the thread's
 * file system uid and gid (setfsuid, setfsgid: per thread) and its supplementary groups
 * (the raw setgroups system call: the C library's wrapper would change every thread of
 * the process). Moving the file system uid away from 0 also drops the thread's file
 * capabilities (CAP_DAC_OVERRIDE and the others), so the kernel checks permissions as it
 * would for that user. A server run as anyone else serves files as itself.
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nfs/server.h"

void uiw__nfs_cred_from_req(const struct uiw__nfsd *s, const struct svc_req *rq,
                            const struct uiw__nfs_xopts *o, struct uiw__nfs_cred *c)
{
    uint32_t anon_uid = o ? o->anonuid : s->opts.anon_uid;
    uint32_t anon_gid = o ? o->anongid : s->opts.anon_gid;
    int squash_root = o ? (o->flags & UIW__X_ROOT_SQUASH) != 0 : !s->opts.no_root_squash;
    int squash_all = o && (o->flags & UIW__X_ALL_SQUASH);
    c->uid = anon_uid;
    c->gid = anon_gid;
    c->ngids = 0;
    c->anonymous = rq->rq_cred.oa_flavor == AUTH_NONE;
    if (rq->rq_cred.oa_flavor == AUTH_SYS && rq->rq_clntcred) {
        const struct authunix_parms *p = (const struct authunix_parms *)rq->rq_clntcred;
        c->uid = p->aup_uid;
        c->gid = p->aup_gid;
        unsigned n = p->aup_len;
        if (n > sizeof(c->gids) / sizeof(c->gids[0]))
            n = sizeof(c->gids) / sizeof(c->gids[0]);
        for (unsigned i = 0; i < n; i++)
            c->gids[c->ngids++] = p->aup_gids[i];
    }
    if (squash_all) {
        c->uid = anon_uid;
        c->gid = anon_gid;
        c->ngids = 0;
    } else if (squash_root) {
        if (c->uid == 0)
            c->uid = anon_uid;
        if (c->gid == 0)
            c->gid = anon_gid;
        for (unsigned i = 0; i < c->ngids; i++)
            if (c->gids[i] == 0)
                c->gids[i] = anon_gid;
    }
}

/* This thread's identity is the server's own after a leave: file system ids 0 and no
 * supplementary groups. Until its first leave a thread has whatever it was started with. */
static _Thread_local int at_rest;
static _Thread_local unsigned long switches;

/* Whether c is the identity a thread at rest has already: root, whose groups (if any) are
 * root's group, which its file system gid grants already. */
static int restful(const struct uiw__nfs_cred *c)
{
    if (c->uid != 0 || c->gid != 0)
        return 0;
    for (unsigned i = 0; i < c->ngids; i++)
        if (c->gids[i] != 0)
            return 0;
    return 1;
}

int uiw__nfs_cred_enter(const struct uiw__nfsd *s, const struct uiw__nfs_cred *c)
{
    if (!s->privileged)
        return 0;
    /* Root's calls on a server that does not squash root (a kernel client's writeback,
     * an administrator's copy): nothing to switch, nothing to switch back (eight system
     * calls a call otherwise). */
    if (at_rest && restful(c))
        return 0;
    at_rest = 0;
    switches++;
    gid_t g[16];
    for (unsigned i = 0; i < c->ngids; i++)
        g[i] = c->gids[i];
    if (syscall(SYS_setgroups, (size_t)c->ngids, g) != 0)
        return -errno;
    setfsgid(c->gid);
    setfsuid(c->uid);
    /* setfsuid answers with the previous id whatever happens: check it took. */
    if ((uint32_t)setfsuid((uid_t)-1) != c->uid || (uint32_t)setfsgid((gid_t)-1) != c->gid) {
        uiw__nfs_cred_leave(s);
        return -EPERM;
    }
    return 0;
}

void uiw__nfs_cred_leave(const struct uiw__nfsd *s)
{
    if (!s->privileged || at_rest)
        return;
    setfsuid(0);
    setfsgid(0);
    syscall(SYS_setgroups, (size_t)0, (gid_t *)NULL);
    at_rest = 1;
}

unsigned long uiw__nfs_cred_switches(void)
{
    return switches;
}

int uiw__nfs_cred_dac_override(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &h, d) != 0)
        return 0;
    return (d[CAP_TO_INDEX(CAP_DAC_OVERRIDE)].effective & CAP_TO_MASK(CAP_DAC_OVERRIDE)) != 0;
}
