#include "schema.h"

#include <uiw/error.h>
#include <uiw/rpcrdma.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct rd_xtype t_u32 = {.kind = RD_XU32, .name = "uint32"};
static const struct rd_xtype t_u64 = {.kind = RD_XU64, .name = "uint64"};

/* Version Two has no RDMA2_MSGP/RDMA2_DONE: an unknown procedure there is INVAL_PROC;
 * Version One answers any unknown procedure with ERR_CHUNK. */

/* ---------------------------------------------------------------------------------------
 * Version One (xdr/rpcrdma_v1.x)
 * ------------------------------------------------------------------------------------- */

static const struct rd_xfield v1_segment_f[] = {
    {"rdma_handle", &t_u32}, {"rdma_length", &t_u32}, {"rdma_offset", &t_u64}};
static const struct rd_xtype v1_segment = {
    .kind = RD_XSTRUCT, .name = "rpcrdma1_segment", .fields = v1_segment_f, .nfields = 3};

static const struct rd_xfield v1_read_segment_f[] = {{"rdma_position", &t_u32},
                                                     {"rdma_target", &v1_segment}};
static const struct rd_xtype v1_read_segment = {
    .kind = RD_XSTRUCT, .name = "rpcrdma1_read_segment", .fields = v1_read_segment_f, .nfields = 2};

static const struct rd_xtype v1_read_list = {.kind = RD_XLIST,
                                             .name = "rpcrdma1_read_list",
                                             .elem = &v1_read_segment,
                                             .cap = UIW_RPCRDMA_MAX_READS,
                                             .cap_error = UIW_E_RPCRDMA_CAP_READS};

static const struct rd_xtype v1_segment_array = {.kind = RD_XARRAY,
                                                 .name = "rpcrdma1_segment<>",
                                                 .elem = &v1_segment,
                                                 .cap = UIW_RPCRDMA_MAX_SEGS_PER_CHUNK,
                                                 .cap_error = UIW_E_RPCRDMA_CAP_SEGS};

static const struct rd_xfield v1_write_chunk_f[] = {{"rdma_target", &v1_segment_array}};
static const struct rd_xtype v1_write_chunk = {
    .kind = RD_XSTRUCT, .name = "rpcrdma1_write_chunk", .fields = v1_write_chunk_f, .nfields = 1};

static const struct rd_xtype v1_write_list = {.kind = RD_XLIST,
                                              .name = "rpcrdma1_write_list",
                                              .elem = &v1_write_chunk,
                                              .cap = UIW_RPCRDMA_MAX_WRITES,
                                              .cap_error = UIW_E_RPCRDMA_CAP_WRITES};

static const struct rd_xtype v1_reply_chunk = {
    .kind = RD_XOPTION, .name = "rpcrdma1_write_chunk *", .elem = &v1_write_chunk};

static const struct rd_xfield v1_header_f[] = {{"rdma_reads", &v1_read_list},
                                               {"rdma_writes", &v1_write_list},
                                               {"rdma_reply", &v1_reply_chunk}};
static const struct rd_xtype v1_rpc_rdma_header = {
    .kind = RD_XSTRUCT, .name = "rpc_rdma_header", .fields = v1_header_f, .nfields = 3};
static const struct rd_xtype v1_rpc_rdma_header_nomsg = {
    .kind = RD_XSTRUCT, .name = "rpc_rdma_header_nomsg", .fields = v1_header_f, .nfields = 3};

static const struct rd_xfield v1_padded_f[] = {{"rdma_align", &t_u32},
                                               {"rdma_thresh", &t_u32},
                                               {"rdma_reads", &v1_read_list},
                                               {"rdma_writes", &v1_write_list},
                                               {"rdma_reply", &v1_reply_chunk}};
static const struct rd_xtype v1_rpc_rdma_header_padded = {
    .kind = RD_XSTRUCT, .name = "rpc_rdma_header_padded", .fields = v1_padded_f, .nfields = 5};

static const struct rd_xenumval v1_errcode_e[] = {{"ERR_VERS", 1}, {"ERR_CHUNK", 2}};
static const struct rd_xtype v1_errcode = {.kind = RD_XENUM,
                                           .name = "rpc_rdma_errcode",
                                           .enums = v1_errcode_e,
                                           .nenums = N(v1_errcode_e),
                                           .bad_enum_error = UIW_E_RPCRDMA_BAD_ERRCODE};

static const struct rd_xfield v1_errvers_f[] = {{"rdma_vers_low", &t_u32},
                                                {"rdma_vers_high", &t_u32}};
static const struct rd_xtype v1_errvers = {
    .kind = RD_XSTRUCT, .name = "rpc_rdma_errvers", .fields = v1_errvers_f, .nfields = 2};

static const struct rd_xarm v1_error_arms[] = {{1, "range", &v1_errvers, 0}, {2, NULL, NULL, 0}};
static const struct rd_xtype v1_error = {.kind = RD_XUNION,
                                         .name = "rpc_rdma_error",
                                         .disc_name = "err",
                                         .disc = &v1_errcode,
                                         .arms = v1_error_arms,
                                         .narms = N(v1_error_arms)};

static const struct rd_xenumval v1_proc_e[] = {
    {"RDMA_MSG", 0}, {"RDMA_NOMSG", 1}, {"RDMA_MSGP", 2}, {"RDMA_DONE", 3}, {"RDMA_ERROR", 4}};
static const struct rd_xtype v1_proc = {.kind = RD_XENUM,
                                        .name = "rdma_proc",
                                        .enums = v1_proc_e,
                                        .nenums = N(v1_proc_e),
                                        .bad_enum_error = UIW_E_RPCRDMA_V1_BAD_PROC};

static const struct rd_xarm v1_body_arms[] = {
    {0, "rdma_msg", &v1_rpc_rdma_header, 0},
    {1, "rdma_nomsg", &v1_rpc_rdma_header_nomsg, 0},
    {2, "rdma_msgp", &v1_rpc_rdma_header_padded, UIW_E_RPCRDMA_V1_REFUSED_PROC},
    {3, NULL, NULL, UIW_E_RPCRDMA_V1_REFUSED_PROC},
    {4, "rdma_error", &v1_error, 0}};
static const struct rd_xtype v1_body = {.kind = RD_XUNION,
                                        .name = "rdma_body",
                                        .disc_name = "proc",
                                        .disc = &v1_proc,
                                        .arms = v1_body_arms,
                                        .narms = N(v1_body_arms)};

static const struct rd_xfield v1_msg_f[] = {
    {"rdma_xid", &t_u32}, {"rdma_vers", &t_u32}, {"rdma_credit", &t_u32}, {"rdma_body", &v1_body}};
const struct rd_xtype rd_v1_header = {
    .kind = RD_XSTRUCT, .name = "rdma_msg", .fields = v1_msg_f, .nfields = 4};

/* ---------------------------------------------------------------------------------------
 * Version Two (xdr/rpcrdma_v2.x)
 * ------------------------------------------------------------------------------------- */

/* RFC 5531's enum msg_type, as the draft imports it. */
static const struct rd_xenumval msg_type_e[] = {{"CALL", 0}, {"REPLY", 1}};
static const struct rd_xtype v2_msg_type = {.kind = RD_XENUM,
                                            .name = "msg_type",
                                            .enums = msg_type_e,
                                            .nenums = N(msg_type_e),
                                            .bad_enum_error = UIW_E_RPCRDMA_BAD_ENUM};

static const struct rd_xtype v2_segment = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_segment", .fields = v1_segment_f, .nfields = 3};

static const struct rd_xfield v2_read_segment_f[] = {{"rdma_position", &t_u32},
                                                     {"rdma_target", &v2_segment}};
static const struct rd_xtype v2_read_segment = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_read_segment", .fields = v2_read_segment_f, .nfields = 2};

static const struct rd_xtype v2_read_list = {.kind = RD_XLIST,
                                             .name = "rpcrdma2_read_list",
                                             .elem = &v2_read_segment,
                                             .cap = UIW_RPCRDMA_MAX_READS,
                                             .cap_error = UIW_E_RPCRDMA_CAP_READS};

static const struct rd_xtype v2_segment_array = {.kind = RD_XARRAY,
                                                 .name = "rpcrdma2_segment<>",
                                                 .elem = &v2_segment,
                                                 .cap = UIW_RPCRDMA_MAX_SEGS_PER_CHUNK,
                                                 .cap_error = UIW_E_RPCRDMA_CAP_SEGS};

static const struct rd_xfield v2_write_chunk_f[] = {{"rdma_target", &v2_segment_array}};
static const struct rd_xtype v2_write_chunk = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_write_chunk", .fields = v2_write_chunk_f, .nfields = 1};

static const struct rd_xtype v2_write_list = {.kind = RD_XLIST,
                                              .name = "rpcrdma2_write_list",
                                              .elem = &v2_write_chunk,
                                              .cap = UIW_RPCRDMA_MAX_WRITES,
                                              .cap_error = UIW_E_RPCRDMA_CAP_WRITES};

static const struct rd_xtype v2_reply_chunk = {
    .kind = RD_XOPTION, .name = "rpcrdma2_write_chunk *", .elem = &v2_write_chunk};

static const struct rd_xfield v2_chunk_lists_f[] = {{"rdma_direction", &v2_msg_type},
                                                    {"rdma_inv_handle", &t_u32},
                                                    {"rdma_reads", &v2_read_list},
                                                    {"rdma_writes", &v2_write_list},
                                                    {"rdma_reply", &v2_reply_chunk}};
static const struct rd_xtype v2_chunk_lists = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_chunk_lists", .fields = v2_chunk_lists_f, .nfields = 5};

static const struct rd_xenumval v2_errcode_e[] = {
    {"RDMA2_ERR_VERS", 1},       {"RDMA2_ERR_BAD_XDR", 2},      {"RDMA2_ERR_REPLY_RESOURCE", 3},
    {"RDMA2_ERR_INVAL_PROC", 4}, {"RDMA2_ERR_INVAL_OPTION", 5}, {"RDMA2_ERR_SYSTEM", 6}};
static const struct rd_xtype v2_errcode = {.kind = RD_XENUM,
                                           .name = "rpcrdma2_errcode",
                                           .enums = v2_errcode_e,
                                           .nenums = N(v2_errcode_e),
                                           .bad_enum_error = UIW_E_RPCRDMA_BAD_ERRCODE};

static const struct rd_xtype v2_err_vers = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_err_vers", .fields = v1_errvers_f, .nfields = 2};

static const struct rd_xfield v2_err_reply_f[] = {{"rdma_segment_index", &t_u32},
                                                  {"rdma_length_needed", &t_u32}};
static const struct rd_xtype v2_err_reply = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_err_reply", .fields = v2_err_reply_f, .nfields = 2};

static const struct rd_xarm v2_error_arms[] = {{1, "rdma_vrange", &v2_err_vers, 0},
                                               {2, NULL, NULL, 0},
                                               {3, "rdma_reply", &v2_err_reply, 0},
                                               {4, NULL, NULL, 0},
                                               {5, NULL, NULL, 0},
                                               {6, NULL, NULL, 0}};
static const struct rd_xtype v2_error = {.kind = RD_XUNION,
                                         .name = "rpcrdma2_error",
                                         .disc_name = "rdma_err",
                                         .disc = &v2_errcode,
                                         .arms = v2_error_arms,
                                         .narms = N(v2_error_arms)};

static const struct rd_xtype t_opaque = {.kind = RD_XOPAQUE, .name = "opaque<>"};

static const struct rd_xfield v2_optional_f[] = {
    {"rdma_optdir", &v2_msg_type}, {"rdma_opttype", &t_u32}, {"rdma_optinfo", &t_opaque}};
static const struct rd_xtype v2_optional = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_optional", .fields = v2_optional_f, .nfields = 3};

/* A known property must carry a valid value (uiw_rpcrdma_prop_check). raw is the
 * propval's XDR: rdma_which, the data length, the data and its pad. */
static int check_propval(const uint8_t *raw, size_t len)
{
    if (len < 8)
        return UIW_E_RPCRDMA_TRUNCATED;
    uint32_t which =
        (uint32_t)raw[0] << 24 | (uint32_t)raw[1] << 16 | (uint32_t)raw[2] << 8 | raw[3];
    uint32_t n = (uint32_t)raw[4] << 24 | (uint32_t)raw[5] << 16 | (uint32_t)raw[6] << 8 | raw[7];
    if (which != UIW_RPCRDMA_PROP_RBSIZ && which != UIW_RPCRDMA_PROP_BRS)
        return 0;
    if (n == 0)
        return 0;
    if (n != 4 || len < 12)
        return UIW_E_RPCRDMA_BAD_PROP;
    uint32_t v = (uint32_t)raw[8] << 24 | (uint32_t)raw[9] << 16 | (uint32_t)raw[10] << 8 | raw[11];
    if (which == UIW_RPCRDMA_PROP_RBSIZ)
        return v >= UIW_RPCRDMA_RBSIZ_MIN ? 0 : UIW_E_RPCRDMA_BAD_PROP;
    return v <= UIW_RDMA2_BKREQSUP_GENL ? 0 : UIW_E_RPCRDMA_BAD_PROP;
}

static const struct rd_xfield v2_propval_f[] = {{"rdma_which", &t_u32}, {"rdma_data", &t_opaque}};
static const struct rd_xtype v2_propval = {.kind = RD_XSTRUCT,
                                           .name = "rpcrdma2_propval",
                                           .fields = v2_propval_f,
                                           .nfields = 2,
                                           .counter = RD_XCOUNTER_PROPS,
                                           .counter_max = UIW_RPCRDMA_MAX_PROPS,
                                           .counter_error = UIW_E_RPCRDMA_CAP_PROPS,
                                           .check = check_propval};

static const struct rd_xtype v2_propset = {
    .kind = RD_XARRAY, .name = "rpcrdma2_propset", .elem = &v2_propval};
static const struct rd_xtype v2_propsubset = {
    .kind = RD_XARRAY, .name = "rpcrdma2_propsubset", .elem = &t_u32};

static const struct rd_xfield v2_connprop_f[] = {{"rdma_start", &v2_propset},
                                                 {"rdma_nochg", &v2_propsubset}};
static const struct rd_xtype v2_connprop = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_connprop", .fields = v2_connprop_f, .nfields = 2};

static const struct rd_xfield v2_reqprop_f[] = {{"rdma_want", &v2_propset}};
static const struct rd_xtype v2_reqprop = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_reqprop", .fields = v2_reqprop_f, .nfields = 1};

static const struct rd_xfield v2_resprop_f[] = {
    {"rdma_done", &v2_propsubset}, {"rdma_rejected", &v2_propsubset}, {"rdma_other", &v2_propset}};
static const struct rd_xtype v2_resprop = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_resprop", .fields = v2_resprop_f, .nfields = 3};

static const struct rd_xfield v2_updprop_f[] = {{"rdma_now", &v2_propset}};
static const struct rd_xtype v2_updprop = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_updprop", .fields = v2_updprop_f, .nfields = 1};

static const struct rd_xenumval v2_proc_e[] = {
    {"RDMA2_MSG", 0},      {"RDMA2_NOMSG", 1},   {"RDMA2_ERROR", 4},   {"RDMA2_OPTIONAL", 5},
    {"RDMA2_CONNPROP", 6}, {"RDMA2_REQPROP", 7}, {"RDMA2_RESPROP", 8}, {"RDMA2_UPDPROP", 9}};
static const struct rd_xtype v2_proc = {.kind = RD_XENUM,
                                        .name = "rpcrdma2_proc",
                                        .enums = v2_proc_e,
                                        .nenums = N(v2_proc_e),
                                        .bad_enum_error = UIW_E_RPCRDMA_INVAL_PROC};

static const struct rd_xarm v2_body_arms[] = {
    {0, "rdma_chunks", &v2_chunk_lists, 0}, {1, "rdma_chunks", &v2_chunk_lists, 0},
    {4, "rdma_error", &v2_error, 0},        {5, "rdma_optional", &v2_optional, 0},
    {6, "rdma_connprop", &v2_connprop, 0},  {7, "rdma_reqprop", &v2_reqprop, 0},
    {8, "rdma_resprop", &v2_resprop, 0},    {9, "rdma_updprop", &v2_updprop, 0}};
static const struct rd_xtype v2_body = {.kind = RD_XUNION,
                                        .name = "rpcrdma2_body",
                                        .disc_name = "rdma_proc",
                                        .disc = &v2_proc,
                                        .arms = v2_body_arms,
                                        .narms = N(v2_body_arms)};

static const struct rd_xfield v2_hdr_f[] = {
    {"rdma_xid", &t_u32}, {"rdma_vers", &t_u32}, {"rdma_credit", &t_u32}, {"rdma_body", &v2_body}};
const struct rd_xtype rd_v2_header = {
    .kind = RD_XSTRUCT, .name = "rpcrdma2_xprt_hdr", .fields = v2_hdr_f, .nfields = 4};

/* ---------------------------------------------------------------------------------------
 * ONC RPC message header (RFC 5531 section 9), without the arguments or results
 * ------------------------------------------------------------------------------------- */

static const struct rd_xenumval auth_flavor_e[] = {
    {"AUTH_NONE", 0}, {"AUTH_SYS", 1}, {"AUTH_SHORT", 2}, {"AUTH_DH", 3}, {"RPCSEC_GSS", 6}};
static const struct rd_xtype auth_flavor = {.kind = RD_XENUM,
                                            .name = "auth_flavor",
                                            .enums = auth_flavor_e,
                                            .nenums = N(auth_flavor_e),
                                            .open = 1};

static const struct rd_xtype auth_body = {.kind = RD_XOPAQUE, .name = "opaque<400>", .max = 400};
static const struct rd_xfield opaque_auth_f[] = {{"flavor", &auth_flavor}, {"body", &auth_body}};
static const struct rd_xtype opaque_auth = {
    .kind = RD_XSTRUCT, .name = "opaque_auth", .fields = opaque_auth_f, .nfields = 2};

static const struct rd_xfield call_body_f[] = {{"rpcvers", &t_u32},    {"prog", &t_u32},
                                               {"vers", &t_u32},       {"proc", &t_u32},
                                               {"cred", &opaque_auth}, {"verf", &opaque_auth}};
static const struct rd_xtype call_body = {
    .kind = RD_XSTRUCT, .name = "call_body", .fields = call_body_f, .nfields = 6};

static const struct rd_xfield mismatch_f[] = {{"low", &t_u32}, {"high", &t_u32}};
static const struct rd_xtype mismatch_info = {
    .kind = RD_XSTRUCT, .name = "mismatch_info", .fields = mismatch_f, .nfields = 2};

static const struct rd_xenumval accept_stat_e[] = {{"SUCCESS", 0},       {"PROG_UNAVAIL", 1},
                                                   {"PROG_MISMATCH", 2}, {"PROC_UNAVAIL", 3},
                                                   {"GARBAGE_ARGS", 4},  {"SYSTEM_ERR", 5}};
static const struct rd_xtype accept_stat = {
    .kind = RD_XENUM, .name = "accept_stat", .enums = accept_stat_e, .nenums = N(accept_stat_e)};

static const struct rd_xarm reply_data_arms[] = {{2, "mismatch_info", &mismatch_info, 0}};
static const struct rd_xarm void_arm = {0, NULL, NULL, 0};
static const struct rd_xtype reply_data = {.kind = RD_XUNION,
                                           .name = "reply_data",
                                           .disc_name = "stat",
                                           .disc = &accept_stat,
                                           .arms = reply_data_arms,
                                           .narms = N(reply_data_arms),
                                           .dflt = &void_arm};

static const struct rd_xfield accepted_reply_f[] = {{"verf", &opaque_auth},
                                                    {"reply_data", &reply_data}};
static const struct rd_xtype accepted_reply = {
    .kind = RD_XSTRUCT, .name = "accepted_reply", .fields = accepted_reply_f, .nfields = 2};

static const struct rd_xenumval reject_stat_e[] = {{"RPC_MISMATCH", 0}, {"AUTH_ERROR", 1}};
static const struct rd_xtype reject_stat = {
    .kind = RD_XENUM, .name = "reject_stat", .enums = reject_stat_e, .nenums = N(reject_stat_e)};

static const struct rd_xenumval auth_stat_e[] = {{"AUTH_OK", 0},
                                                 {"AUTH_BADCRED", 1},
                                                 {"AUTH_REJECTEDCRED", 2},
                                                 {"AUTH_BADVERF", 3},
                                                 {"AUTH_REJECTEDVERF", 4},
                                                 {"AUTH_TOOWEAK", 5},
                                                 {"AUTH_INVALIDRESP", 6},
                                                 {"AUTH_FAILED", 7},
                                                 {"AUTH_KERB_GENERIC", 8},
                                                 {"AUTH_TIMEEXPIRE", 9},
                                                 {"AUTH_TKT_FILE", 10},
                                                 {"AUTH_DECODE", 11},
                                                 {"AUTH_NET_ADDR", 12},
                                                 {"RPCSEC_GSS_CREDPROBLEM", 13},
                                                 {"RPCSEC_GSS_CTXPROBLEM", 14}};
static const struct rd_xtype auth_stat = {.kind = RD_XENUM,
                                          .name = "auth_stat",
                                          .enums = auth_stat_e,
                                          .nenums = N(auth_stat_e),
                                          .open = 1};

/* RFC 5531 names this arm "stat" like the discriminant; a JSON object cannot hold the key
 * twice, so the arm is "auth_stat" here (this part of the output is an extra key). */
static const struct rd_xarm rejected_reply_arms[] = {{0, "mismatch_info", &mismatch_info, 0},
                                                     {1, "auth_stat", &auth_stat, 0}};
static const struct rd_xtype rejected_reply = {.kind = RD_XUNION,
                                               .name = "rejected_reply",
                                               .disc_name = "stat",
                                               .disc = &reject_stat,
                                               .arms = rejected_reply_arms,
                                               .narms = N(rejected_reply_arms)};

static const struct rd_xenumval reply_stat_e[] = {{"MSG_ACCEPTED", 0}, {"MSG_DENIED", 1}};
static const struct rd_xtype reply_stat = {
    .kind = RD_XENUM, .name = "reply_stat", .enums = reply_stat_e, .nenums = N(reply_stat_e)};

static const struct rd_xarm reply_body_arms[] = {{0, "areply", &accepted_reply, 0},
                                                 {1, "rreply", &rejected_reply, 0}};
static const struct rd_xtype reply_body = {.kind = RD_XUNION,
                                           .name = "reply_body",
                                           .disc_name = "stat",
                                           .disc = &reply_stat,
                                           .arms = reply_body_arms,
                                           .narms = N(reply_body_arms)};

static const struct rd_xtype rpc_msg_type = {
    .kind = RD_XENUM, .name = "msg_type", .enums = msg_type_e, .nenums = N(msg_type_e)};
static const struct rd_xarm rpc_body_arms[] = {{0, "cbody", &call_body, 0},
                                               {1, "rbody", &reply_body, 0}};
static const struct rd_xtype rpc_body = {.kind = RD_XUNION,
                                         .name = "rpc_msg body",
                                         .disc_name = "mtype",
                                         .disc = &rpc_msg_type,
                                         .arms = rpc_body_arms,
                                         .narms = N(rpc_body_arms)};

static const struct rd_xfield rpc_msg_f[] = {{"xid", &t_u32}, {"body", &rpc_body}};
const struct rd_xtype rd_rpc_header = {
    .kind = RD_XSTRUCT, .name = "rpc_msg", .fields = rpc_msg_f, .nfields = 2};
