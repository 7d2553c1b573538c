/*
 * libtirpc's xdr_opaque, xdr_bytes and xdr_string with one difference: a decoded item's
 * XDR pad (1-3 bytes) is read into the caller's stack. libtirpc reads it into one static
 * word that every thread shares (xdr_opaque's `crud`), so two threads decoding an item
 * whose length is not a multiple of four write that word at once: a data race, harmless
 * as it is (the bytes are thrown away) but one that ThreadSanitizer rightly reports and
 * that only a suppression of all of libtirpc could hide (its library is stripped: the
 * word has no name there).
 *
 * The stack's own decoders call these; rpcgen's routines for NFS and MOUNT are compiled
 * with this header included first and UIW__XDR_PAD_RENAME defined, which makes their
 * calls of libtirpc's three functions calls of these. Everything else is as libtirpc
 * does it: the same stream calls in the same order (the bytes, then the pad in a second
 * call of its own: the RPC layer's streams rely on that), the same checks, memory
 * allocated with calloc and freed with free by XDR_FREE (but for a decoder's arena, below); and a
 * decoded string holding a NUL byte is refused, where libtirpc would cut it short at the NUL. Not
 * inlined, as libtirpc's are not (the compiler would otherwise weigh XDR_FREE's free against the
 * caller's stack items).
 */
#ifndef UIW_RPC_XDR_PAD_H
#define UIW_RPC_XDR_PAD_H

#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>

static __attribute__((noinline, unused)) bool_t uiw__xdr_opaque(XDR *xdrs, caddr_t cp, u_int cnt)
{
    static const char zeros[4];
    char pad[4];
    u_int rndup = (4 - (cnt & 3)) & 3;
    if (cnt == 0)
        return TRUE;
    switch (xdrs->x_op) {
    case XDR_DECODE:
        if (!XDR_GETBYTES(xdrs, cp, cnt))
            return FALSE;
        return rndup == 0 || XDR_GETBYTES(xdrs, pad, rndup);
    case XDR_ENCODE:
        if (!XDR_PUTBYTES(xdrs, cp, cnt))
            return FALSE;
        return rndup == 0 || XDR_PUTBYTES(xdrs, (const char *)zeros, rndup);
    case XDR_FREE:
        return TRUE;
    }
    return FALSE;
}

/* Memory the items decoded on a thread are taken from instead of being allocated, while
 * it is set there (uiw__xdr_arena): a server's call arguments, decoded into memory of the
 * call and freed with it. What does not fit is allocated. Freeing (XDR_FREE) leaves what
 * lies in the arena set on the thread alone, so it must be set again while arguments
 * decoded with it are freed. */
struct uiw__xdr_arena {
    char *mem;
    size_t cap, used;
};
extern _Thread_local struct uiw__xdr_arena *uiw__xdr_arena;

/* n bytes of the thread's arena (not zeroed), or NULL. */
static inline char *uiw__xdr_arena_take(size_t n)
{
    struct uiw__xdr_arena *a = uiw__xdr_arena;
    n = (n + 7) & ~(size_t)7;
    if (!a || n > a->cap - a->used)
        return NULL;
    char *p = a->mem + a->used;
    a->used += n;
    return p;
}

/* Free a decoded item (NULL: nothing), unless it lies in the thread's arena. */
static inline void uiw__xdr_release(char *p)
{
    struct uiw__xdr_arena *a = uiw__xdr_arena;
    if (a && p >= a->mem && p < a->mem + a->cap)
        return;
    free(p);
}

/* The item of xdr_bytes or xdr_string once its size is known: decoded into *cpp (when
 * NULL, into memory of the thread's arena or allocated for it, with `nul` more bytes,
 * released again on a failure; a string is terminated), encoded from it, or freed. */
static __attribute__((noinline, unused)) bool_t uiw__xdr_item(XDR *xdrs, char **cpp, u_int size,
                                                              u_int nul)
{
    char *sp = *cpp;
    switch (xdrs->x_op) {
    case XDR_DECODE: {
        if (size == 0 && !nul)
            return TRUE;
        bool_t allocated = sp == NULL;
        if (allocated) {
            sp = uiw__xdr_arena_take((size_t)size + nul);
            if (!sp && (sp = calloc(1, (size_t)size + nul)) == NULL)
                return FALSE;
            *cpp = sp;
        }
        if (nul)
            sp[size] = 0;
        if (uiw__xdr_opaque(xdrs, sp, size))
            return TRUE;
        if (allocated) {
            uiw__xdr_release(sp);
            *cpp = NULL;
        }
        return FALSE;
    }
    case XDR_ENCODE:
        return uiw__xdr_opaque(xdrs, sp, size);
    case XDR_FREE:
        uiw__xdr_release(sp);
        *cpp = NULL;
        return TRUE;
    }
    return FALSE;
}

static __attribute__((noinline, unused)) bool_t uiw__xdr_bytes(XDR *xdrs, char **cpp, u_int *sizep,
                                                               u_int maxsize)
{
    if (!xdr_u_int(xdrs, sizep))
        return FALSE;
    if (*sizep > maxsize && xdrs->x_op != XDR_FREE)
        return FALSE;
    return uiw__xdr_item(xdrs, cpp, *sizep, 0);
}

static __attribute__((noinline, unused)) bool_t uiw__xdr_string(XDR *xdrs, char **cpp,
                                                                u_int maxsize)
{
    u_int size = 0;
    switch (xdrs->x_op) {
    case XDR_FREE:
        if (*cpp == NULL)
            return TRUE;
        /* fall through */
    case XDR_ENCODE:
        if (*cpp == NULL)
            return FALSE;
        size = (u_int)strlen(*cpp);
        break;
    case XDR_DECODE:
        break;
    }
    if (!xdr_u_int(xdrs, &size) || size > maxsize || size == ~0u)
        return FALSE;
    char *was = *cpp;
    if (!uiw__xdr_item(xdrs, cpp, size, 1))
        return FALSE;
    if (xdrs->x_op == XDR_DECODE && memchr(*cpp, 0, size)) {
        /* a NUL inside: the C string would be another, shorter name (knfsd refuses these
         * too) */
        if (!was) {
            uiw__xdr_release(*cpp);
            *cpp = NULL;
        }
        return FALSE;
    }
    return TRUE;
}

#ifdef UIW__XDR_PAD_RENAME
#define xdr_opaque uiw__xdr_opaque
#define xdr_bytes  uiw__xdr_bytes
#define xdr_string uiw__xdr_string
#endif

#endif
