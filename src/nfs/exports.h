/*
 * uiw-nfsd's exports file (exports.c): the syntax of exports(5), as the Linux server's
 * administrators write it.
 *
 *   # comment
 *   /srv/a        192.0.2.7(rw,no_root_squash) 198.51.100.0/24(ro) *(ro,insecure)
 *   "/srv/with space"  -rw,async  host.example.com  2001:db8::/32(ro)
 *   /srv/b        client1(rw) \
 *                 client2(ro)
 *
 * A line is a path (absolute; double quotes and octal escapes such as \040 allowed), an
 * optional `-options` that every client of the line starts from, and clients, each with
 * its options in parentheses right after it (no space: `host (rw)` would export to every
 * host read-write, so it is refused). Clients: `*`, IPv4 and IPv6 addresses, networks in
 * CIDR form or with an IPv4 netmask, and host names (resolved when the file is read). A
 * client a call matches several ways gets the first match in this order, as exports(5)
 * says: addresses and host names, then networks, then `*`; within one kind, the first on
 * the line. Netgroups (`@group`) and wildcard host names are refused.
 *
 * Options (knfsd's defaults): ro (default) / rw, root_squash (default) / no_root_squash,
 * all_squash / no_all_squash (default), anonuid=N / anongid=N (65534), secure (default:
 * the client's source port below 1024) / insecure, sync (default) / async, fsid=N or
 * fsid=root, crossmnt / nohide (default: neither), subtree_check / no_subtree_check
 * (default), wdelay / no_wdelay (accepted; no effect), sec=sys, sec=none or sec=sys:none
 * (the flavors taken; default sys:none). Anything else is an error.
 */
#ifndef UIW_NFS_EXPORTS_H
#define UIW_NFS_EXPORTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

enum {
    UIW__X_RW = 1u << 0,
    UIW__X_ROOT_SQUASH = 1u << 1,
    UIW__X_ALL_SQUASH = 1u << 2,
    UIW__X_SECURE = 1u << 3,
    UIW__X_ASYNC = 1u << 4,
    UIW__X_CROSSMNT = 1u << 5,
    UIW__X_NOHIDE = 1u << 6,
    UIW__X_SUBTREE_CHECK = 1u << 7,
    UIW__X_FSID = 1u << 8,      /* fsid given */
    UIW__X_FSID_ROOT = 1u << 9, /* fsid=root (0) */
    UIW__X_SEC_SYS = 1u << 10,
    UIW__X_SEC_NONE = 1u << 11,
};

/* What a client may do with an export. */
struct uiw__nfs_xopts {
    uint32_t flags;
    uint32_t anonuid, anongid;
    uint32_t fsid;
};

enum uiw__nfs_xkind { UIW__XC_HOST, UIW__XC_NET, UIW__XC_ANY };

struct uiw__nfs_xclient {
    enum uiw__nfs_xkind kind;
    char *text;                     /* as written */
    struct sockaddr_storage *addrs; /* HOST: its addresses; NET: the network */
    unsigned naddrs;
    unsigned prefix; /* NET: bits */
    struct uiw__nfs_xopts o;
};

struct uiw__nfs_xentry {
    char *path;
    unsigned line;
    struct uiw__nfs_xclient *clients;
    unsigned nclients;
};

struct uiw__nfs_xtable {
    struct uiw__nfs_xentry *e;
    unsigned n;
};

/* The options a line without clients' options gives, and those of a command-line
 * export (every host, read-write, squashed as the server's options say, any port). */
void uiw__nfs_xopts_default(struct uiw__nfs_xopts *o);

/* Parse an exports file's text (name: for messages). 0, or -1 with "name:LINE: what"
 * in err. On success t holds the entries (uiw__nfs_xtable_free). */
int uiw__nfs_exports_parse(const char *text, const char *name, struct uiw__nfs_xtable *t, char *err,
                           size_t errlen);
/* Read and parse a file: 0, or -1 with the reason in err. */
int uiw__nfs_exports_load(const char *path, struct uiw__nfs_xtable *t, char *err, size_t errlen);
void uiw__nfs_xtable_free(struct uiw__nfs_xtable *t);

/* The options of the client of e that a call from peer matches (the order of the file's
 * top), or NULL: the peer may not use this export. */
const struct uiw__nfs_xopts *uiw__nfs_xentry_match(const struct uiw__nfs_xentry *e,
                                                   const struct sockaddr *peer);

/* Print the table as the server takes it: every entry, every client, every option
 * spelled out (uiw-nfsd --check-exports). */
void uiw__nfs_exports_print(FILE *f, const struct uiw__nfs_xtable *t);
/* One client's options, as exports(5) spells them, into buf. */
void uiw__nfs_xopts_text(const struct uiw__nfs_xopts *o, char *buf, size_t n);

#endif
