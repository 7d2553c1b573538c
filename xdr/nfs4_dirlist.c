/*
 * READDIR's entries (RFC 8881 section 18.23: entry4's `*nextentry`) coded in a loop: the
 * xdr_entry4 and xdr_dirlist4 that nfs4.h declares and rpcgen's other routines call
 * (xdr_READDIR4resok, hence xdr_COMPOUND4res), in place of rpcgen's, which recurse once
 * per entry (nfs4.x keeps those as uiw__nfs4_rpcgen_xdr_entry4 and
 * uiw__nfs4_rpcgen_xdr_dirlist4). The same bytes in every direction, and the same memory:
 * decoding allocates each entry as rpcgen's do, XDR_FREE frees what they would (for
 * xdr_entry4, the given entry's fields and every entry after it).
 */
#include <stddef.h>

#include "nfs4.h"
#include "rpc/xdr_list.h"

/* An entry's own fields, without its link. */
static bool_t entry4_fields(XDR *x, void *p)
{
    entry4 *e = p;
    return xdr_nfs_cookie4(x, &e->cookie) && xdr_component4(x, &e->name) &&
           xdr_fattr4(x, &e->attrs);
}

/* One entry, then the rest of its list: what rpcgen's xdr_entry4 codes. */
bool_t xdr_entry4(XDR *x, entry4 *e)
{
    return entry4_fields(x, e) && uiw__xdr_list(x, (void **)&e->nextentry, sizeof(entry4),
                                                offsetof(entry4, nextentry), entry4_fields);
}

bool_t xdr_dirlist4(XDR *x, dirlist4 *d)
{
    return uiw__xdr_list(x, (void **)&d->entries, sizeof(entry4), offsetof(entry4, nextentry),
                         entry4_fields) &&
           xdr_bool(x, &d->eof);
}
