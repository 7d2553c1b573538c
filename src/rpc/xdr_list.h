/*
 * An XDR linked list (`T *next` in a .x file) coded in a loop.
 *
 * rpcgen codes such a list as xdr_pointer() calling the element's routine again: one
 * stack frame per element, so a long list (a peer's reply, or a reply of ours to a
 * peer's large count) overflows the thread's stack. uiw__xdr_list codes the same bytes (a
 * TRUE before every element, a FALSE after the last) in a loop, in every direction:
 * `fields` codes an element's own fields, the link at `next_off` is the loop's. Decoding
 * allocates each element as rpcgen's routines do (zeroed, mem_alloc) and links it before
 * decoding its fields, so that XDR_FREE after a failure frees what was decoded; XDR_FREE
 * frees every element and sets the head to NULL.
 *
 * Used by the NFSv3 and MOUNT lists (src/nfs/xdr_data.c) and NFSv4's READDIR entries
 * (xdr/nfs4_dirlist.c).
 */
#ifndef UIW_RPC_XDR_LIST_H
#define UIW_RPC_XDR_LIST_H

#include <stddef.h>
#include <string.h>

#include <rpc/rpc.h>

typedef bool_t (*uiw__xdr_fields_fn)(XDR *, void *);

static __attribute__((unused)) bool_t uiw__xdr_list(XDR *x, void **head, size_t size,
                                                    size_t next_off, uiw__xdr_fields_fn fields)
{
    void **link = head;
    if (x->x_op == XDR_FREE) {
        void *e = *head;
        while (e) {
            void *next = *(void **)((char *)e + next_off);
            fields(x, e);
            mem_free(e, size);
            e = next;
        }
        *head = NULL;
        return TRUE;
    }
    for (;;) {
        bool_t more = x->x_op == XDR_ENCODE ? *link != NULL : FALSE;
        if (!xdr_bool(x, &more))
            return FALSE;
        if (!more) {
            if (x->x_op == XDR_DECODE)
                *link = NULL;
            return TRUE;
        }
        if (x->x_op == XDR_DECODE) {
            *link = mem_alloc(size);
            if (!*link)
                return FALSE;
            memset(*link, 0, size);
        }
        if (!fields(x, *link))
            return FALSE;
        link = (void **)((char *)*link + next_off);
    }
}

#endif
