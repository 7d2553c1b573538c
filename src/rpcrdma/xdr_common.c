/* RPC-over-RDMA header codec: decode space, properties, property subsets, names.
 * The codec itself is xdr_codec.c. */
#include <errno.h>
#include <string.h>

#include <uiw/rpcrdma.h>

#include "rpcrdma/xdr_internal.h"

void uiw_rpcrdma_space_init(struct uiw_rpcrdma_space *sp, struct uiw_rpcrdma_space_default *st)
{
    /* Only the addresses of st's arrays are taken: st need not be initialised. */
    // cppcheck-suppress ctuuninitvar
    sp->reads = st->reads;
    sp->max_reads = UIW_RPCRDMA_MAX_READS;
    sp->writes = st->writes;
    sp->max_writes = UIW_RPCRDMA_MAX_WRITES;
    sp->segs = st->segs;
    sp->max_segs = (uint32_t)(sizeof(st->segs) / sizeof(st->segs[0]));
    sp->max_segs_per_chunk = UIW_RPCRDMA_MAX_SEGS_PER_CHUNK;
    sp->props = st->props;
    sp->max_props = UIW_RPCRDMA_MAX_PROPS;
}

/* ---------------------------------------------------------------------------------------
 * Properties and subsets
 * ------------------------------------------------------------------------------------- */

int uiw_rpcrdma_prop_check(const struct uiw_rpcrdma_prop *p)
{
    return uiw__rpcrdma_prop_check(p);
}

const struct uiw_rpcrdma_prop *uiw_rpcrdma_propset_find(const struct uiw_rpcrdma_propset *ps,
                                                        uint32_t which)
{
    for (uint32_t i = 0; ps->props && i < ps->n; i++)
        if (ps->props[i].which == which)
            return &ps->props[i];
    return NULL;
}

uint32_t uiw_rpcrdma_subset_word(const struct uiw_rpcrdma_propsubset *s, uint32_t i)
{
    if (i >= s->nwords || !s->wire)
        return 0;
    return uiw__xdr_ld32(s->wire + (size_t)i * 4);
}

bool uiw_rpcrdma_subset_has(const struct uiw_rpcrdma_propsubset *s, uint32_t propid)
{
    return (uiw_rpcrdma_subset_word(s, propid / 32) >> (propid % 32)) & 1;
}

int uiw_rpcrdma_subset_build(struct uiw_rpcrdma_propsubset *s, uint8_t *wire, size_t cap,
                             const uint32_t *ids, size_t n)
{
    uint32_t nwords = 0;

    for (size_t i = 0; i < n; i++)
        if (ids[i] / 32 + 1 > nwords)
            nwords = ids[i] / 32 + 1;
    if ((size_t)nwords * 4 > cap || nwords > (uint32_t)INT32_MAX)
        return UIW_E_RPCRDMA_NOSPC;
    if (nwords)
        memset(wire, 0, (size_t)nwords * 4);
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = wire + (size_t)(ids[i] / 32) * 4;
        uiw__xdr_st32(p, uiw__xdr_ld32(p) | (1u << (ids[i] % 32)));
    }
    s->nwords = nwords;
    s->wire = nwords ? wire : NULL;
    return (int)nwords;
}

/* ---------------------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------------------- */

static const char *const proc1_names[] = {"RDMA_MSG", "RDMA_NOMSG", "RDMA_MSGP", "RDMA_DONE",
                                          "RDMA_ERROR"};
static const char *const proc2_names[] = {"RDMA2_MSG",
                                          "RDMA2_NOMSG",
                                          NULL,
                                          NULL,
                                          "RDMA2_ERROR",
                                          "RDMA2_OPTIONAL",
                                          "RDMA2_CONNPROP",
                                          "RDMA2_REQPROP",
                                          "RDMA2_RESPROP",
                                          "RDMA2_UPDPROP"};
static const char *const err1_names[] = {NULL, "ERR_VERS", "ERR_CHUNK"};
static const char *const err2_names[] = {NULL,
                                         "RDMA2_ERR_VERS",
                                         "RDMA2_ERR_BAD_XDR",
                                         "RDMA2_ERR_REPLY_RESOURCE",
                                         "RDMA2_ERR_INVAL_PROC",
                                         "RDMA2_ERR_INVAL_OPTION",
                                         "RDMA2_ERR_SYSTEM"};
static const char *const dir_names[] = {"CALL", "REPLY"};
static const char *const brs_names[] = {"RDMA2_BKREQSUP_NONE", "RDMA2_BKREQSUP_INLINE",
                                        "RDMA2_BKREQSUP_GENL"};

#define NAMES(t) (sizeof(t) / sizeof((t)[0]))

static const char *name_of(const char *const *t, size_t n, uint32_t v)
{
    return v < n ? t[v] : NULL;
}

static int value_of(const char *const *t, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (t[i] && strcmp(t[i], name) == 0)
            return (int)i;
    return -1;
}

const char *uiw_rpcrdma_proc_name(uint32_t proc, uint32_t vers)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return name_of(proc1_names, NAMES(proc1_names), proc);
    if (vers == UIW_RPCRDMA_VERS2)
        return name_of(proc2_names, NAMES(proc2_names), proc);
    return NULL;
}

const char *uiw_rpcrdma_errcode_name(uint32_t errcode, uint32_t vers)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return name_of(err1_names, NAMES(err1_names), errcode);
    if (vers == UIW_RPCRDMA_VERS2)
        return name_of(err2_names, NAMES(err2_names), errcode);
    return NULL;
}

const char *uiw_rpcrdma_dir_name(uint32_t dir)
{
    return name_of(dir_names, NAMES(dir_names), dir);
}

const char *uiw_rpcrdma_bkreqsup_name(uint32_t v)
{
    return name_of(brs_names, NAMES(brs_names), v);
}

int uiw_rpcrdma_proc_from_name(const char *name, uint32_t vers)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return value_of(proc1_names, NAMES(proc1_names), name);
    if (vers == UIW_RPCRDMA_VERS2)
        return value_of(proc2_names, NAMES(proc2_names), name);
    return -1;
}

int uiw_rpcrdma_errcode_from_name(const char *name, uint32_t vers)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return value_of(err1_names, NAMES(err1_names), name);
    if (vers == UIW_RPCRDMA_VERS2)
        return value_of(err2_names, NAMES(err2_names), name);
    return -1;
}

int uiw_rpcrdma_dir_from_name(const char *name)
{
    return value_of(dir_names, NAMES(dir_names), name);
}
