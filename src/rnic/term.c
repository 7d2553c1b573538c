/*
 * The one table from every violation the engine detects to its consequences: the
 * Terminate (layer, etype, code and which optional headers it carries, RFC 5040 4.8 /
 * RFC 5041 7 / RFC 5044), the async event, and the status of the local work request the
 * error hit. qp.c applies a row: QP -> TERMINATE, Terminate queued, WRs flushed.
 */
#include <uiw/wire.h>

#include "rnic/engine.h"

#define M UIW_TERM_FLAG_M
#define D UIW_TERM_FLAG_D
#define R UIW_TERM_FLAG_R

#define L_RDMAP UIW_TERM_LAYER_RDMAP
#define L_DDP   UIW_TERM_LAYER_DDP
#define L_LLP   UIW_TERM_LAYER_LLP

#define E_RP UIW_TERM_RDMAP_REMOTE_PROTECTION
#define E_RO UIW_TERM_RDMAP_REMOTE_OPERATION
#define E_DT UIW_TERM_DDP_TAGGED
#define E_DU UIW_TERM_DDP_UNTAGGED
#define E_MP UIW_TERM_LLP_MPA

#define EV_ACC UIW_EVENT_QP_ACCESS_ERR
#define EV_REQ UIW_EVENT_QP_REQ_ERR
#define EV_FAT UIW_EVENT_QP_FATAL
#define NO_WC  (-1)
#define NO_EV  (-1)

static const struct uiw__term_map table[] = {
    /* code                            model layer  etype code                          hdrs   async
       local WC */
    /* Tagged (RDMA Write, Read Response): DDP tagged buffer errors (RFC 5041 7.2). */
    {UIW_E_RNIC_TAG_STAG_INVALID, 1, L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, NO_WC},
    {UIW_E_RNIC_TAG_BOUNDS, 1, L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, NO_WC},
    {UIW_E_RNIC_TAG_NOT_ASSOC, 1, L_DDP, E_DT, UIW_TERM_DT_STAG_NOT_ASSOC, M | D, EV_ACC, NO_WC},
    {UIW_E_RNIC_TAG_TO_WRAP, 1, L_DDP, E_DT, UIW_TERM_DT_TO_WRAP, M | D, EV_ACC, NO_WC},
    /* A Read Response that does not carry exactly what its Read Request asked for, in
     * order (RFC 5041 has no code of its own for it; Linux siw answers the same). */
    {UIW_E_RNIC_RRESP_MISMATCH, 1, L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_REQ, NO_WC},
    /* DDP has no access-rights code: RDMAP Remote Protection (RFC 5040 4.8). */
    {UIW_E_RNIC_TAG_ACCESS, 1, L_RDMAP, E_RP, UIW_TERM_RP_ACCESS_RIGHTS, M | D, EV_ACC, NO_WC},
    /* Read Request source STag (RFC 5040 8.1.1): RDMAP Remote Protection, with the RDMA
     * header of the offending Read Request. */
    {UIW_E_RNIC_READ_STAG_INVALID, 0, L_RDMAP, E_RP, UIW_TERM_RP_INVALID_STAG, M | D | R, EV_ACC,
     NO_WC},
    {UIW_E_RNIC_READ_BOUNDS, 0, L_RDMAP, E_RP, UIW_TERM_RP_BASE_BOUNDS, M | D | R, EV_ACC, NO_WC},
    {UIW_E_RNIC_READ_ACCESS, 0, L_RDMAP, E_RP, UIW_TERM_RP_ACCESS_RIGHTS, M | D | R, EV_ACC, NO_WC},
    {UIW_E_RNIC_READ_NOT_ASSOC, 0, L_RDMAP, E_RP, UIW_TERM_RP_STAG_NOT_ASSOC, M | D | R, EV_ACC,
     NO_WC},
    {UIW_E_RNIC_READ_TO_WRAP, 0, L_RDMAP, E_RP, UIW_TERM_RP_TO_WRAP, M | D | R, EV_ACC, NO_WC},
    /* Send with Invalidate (RFC 5040 5.3), as Linux siw: 'STag cannot be invalidated', a
     * Remote Operation error (unknown STag, one that cannot be invalidated, or a Read
     * Response is sent from it), and a Remote Protection error for an STag of another PD
     * (not associated with this stream). */
    {UIW_E_RNIC_CANT_INVALIDATE, 0, L_RDMAP, E_RO, UIW_TERM_RO_CANT_INVALIDATE, M | D, EV_ACC,
     UIW_WC_LOC_ACCESS_ERR},
    {UIW_E_RNIC_INV_NOT_ASSOC, 0, L_RDMAP, E_RP, UIW_TERM_RP_CANT_INVALIDATE, M | D, EV_ACC,
     UIW_WC_LOC_ACCESS_ERR},
    /* Untagged buffer errors (RFC 5041 7.2). */
    {UIW_E_DDP_BAD_QN, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_QN, M | D, EV_REQ, NO_WC},
    {UIW_E_RNIC_BAD_QN, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_QN, M | D, EV_REQ, NO_WC},
    {UIW_E_RNIC_MSN_NO_BUF, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_MSN_NO_BUF, M | D, EV_REQ, NO_WC},
    {UIW_E_RNIC_IRD_EXCEEDED, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_MSN_NO_BUF, M | D, EV_REQ, NO_WC},
    {UIW_E_RNIC_MSN_RANGE, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_MSN_RANGE, M | D, EV_REQ, NO_WC},
    {UIW_E_RNIC_BAD_MO, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_MO, M | D, EV_REQ, NO_WC},
    {UIW_E_RNIC_MSG_TOO_LONG, 0, L_DDP, E_DU, UIW_TERM_DU_MSG_TOO_LONG, M | D, EV_REQ,
     UIW_WC_LOC_LEN_ERR},
    /* DDP version: the code depends on the model of the segment. */
    {UIW_E_DDP_BAD_VERSION, 1, L_DDP, E_DT, UIW_TERM_DT_INVALID_VERSION, M | D, EV_REQ, NO_WC},
    {UIW_E_DDP_BAD_VERSION, 0, L_DDP, E_DU, UIW_TERM_DU_INVALID_VERSION, M | D, EV_REQ, NO_WC},
    /* RDMAP control (RFC 5040 4.8, Remote Operation). */
    {UIW_E_RDMAP_BAD_VERSION, -1, L_RDMAP, E_RO, UIW_TERM_RO_INVALID_VERSION, M | D, EV_REQ, NO_WC},
    {UIW_E_RDMAP_BAD_OPCODE, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNEXPECTED_OPCODE, M | D, EV_REQ,
     NO_WC},
    {UIW_E_RNIC_UNEXPECTED_OP, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNEXPECTED_OPCODE, M | D, EV_REQ,
     NO_WC},
    {UIW_E_RDMAP_RESERVED_BITS, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, M | D, EV_REQ, NO_WC},
    {UIW_E_DDP_RESERVED_BITS, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, M | D, EV_REQ, NO_WC},
    {UIW_E_DDP_TRUNCATED, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, 0, EV_REQ, NO_WC},
    {UIW_E_RNIC_SHORT_SEGMENT, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, 0, EV_REQ, NO_WC},
    {UIW_E_RDMAP_TRUNCATED, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, M | D, EV_REQ, NO_WC},
    /* MPA (RFC 5044 8, RFC 6581). */
    {UIW_E_FPDU_CRC, -1, L_LLP, E_MP, UIW_TERM_MPA_CRC, 0, EV_FAT, NO_WC},
    {UIW_E_FPDU_MARKER, -1, L_LLP, E_MP, UIW_TERM_MPA_MARKER, 0, EV_FAT, NO_WC},
    {UIW_E_FPDU_TOO_LONG, -1, L_LLP, E_MP, UIW_TERM_MPA_MARKER, 0, EV_FAT, NO_WC},
    {UIW_E_FPDU_TOO_SHORT, -1, L_LLP, E_MP, UIW_TERM_MPA_MARKER, 0, EV_FAT, NO_WC},
    {UIW_E_RNIC_NO_RTR, -1, L_LLP, E_MP, UIW_TERM_MPA_NO_MATCHING_RTR, 0, EV_FAT, NO_WC},
    /* Local errors of our own work requests: the stream ends, the peer learns it as a
     * catastrophic error localised to the stream. */
    {UIW_E_RNIC_LOCAL_PROT, -1, L_RDMAP, E_RO, UIW_TERM_RO_CATASTROPHIC_STREAM, 0, NO_EV,
     UIW_WC_LOC_PROT_ERR},
    {UIW_E_RNIC_LOCAL_LEN, -1, L_RDMAP, E_RO, UIW_TERM_RO_CATASTROPHIC_STREAM, 0, NO_EV,
     UIW_WC_LOC_LEN_ERR},
    {UIW_E_RNIC_LOCAL_OP, -1, L_RDMAP, E_RO, UIW_TERM_RO_CATASTROPHIC_STREAM, 0, NO_EV,
     UIW_WC_LOC_QP_OP_ERR},
    {UIW_E_RNIC_NO_ORD, -1, L_RDMAP, E_RO, UIW_TERM_RO_CATASTROPHIC_STREAM, 0, NO_EV,
     UIW_WC_LOC_QP_OP_ERR},
    {UIW_E_RNIC_CQ_OVERFLOW, -1, L_RDMAP, E_RO, UIW_TERM_RO_CATASTROPHIC_STREAM, 0, EV_FAT, NO_WC},
    {UIW_E_RNIC_ABORT, -1, L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, 0, NO_EV, NO_WC},
};

static const struct uiw__term_map fallback = {0, -1,     L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED,
                                              0, EV_FAT, NO_WC};

const struct uiw__term_map *uiw__term_lookup(int code, int tagged)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        const struct uiw__term_map *m = &table[i];
        if (m->code == code && (m->model < 0 || tagged < 0 || m->model == tagged))
            return m;
    }
    return &fallback;
}

enum uiw_wc_status uiw__term_remote_status(const struct uiw_terminate *t)
{
    switch (t->layer) {
    case UIW_TERM_LAYER_RDMAP:
        if (t->etype == UIW_TERM_RDMAP_REMOTE_PROTECTION)
            return UIW_WC_REM_ACCESS_ERR;
        if (t->etype == UIW_TERM_RDMAP_REMOTE_OPERATION)
            return UIW_WC_REM_OP_ERR;
        return UIW_WC_FATAL_ERR;
    case UIW_TERM_LAYER_DDP:
        if (t->etype == UIW_TERM_DDP_TAGGED)
            return UIW_WC_REM_ACCESS_ERR;
        if (t->etype == UIW_TERM_DDP_UNTAGGED)
            return UIW_WC_REM_INV_REQ_ERR;
        return UIW_WC_FATAL_ERR;
    default:
        return UIW_WC_GENERAL_ERR;
    }
}
