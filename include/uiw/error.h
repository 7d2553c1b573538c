/*
 * uiw error codes.
 *
 * Every uiw function that can fail returns 0 (or a count) on success and a negative
 * number on failure. A negative number is either a negated errno value (-EINVAL,
 * -ENOMEM, -EAGAIN, ...), or one of the project's own protocol codes below, which all
 * lie at or below UIW_E_BASE so they never collide with errno values. Constructors
 * return NULL and set errno, as libibverbs does.
 *
 * Each layer owns a block of codes, listed in its own file of rows
 * UIW_ERR(NAME, value, fatal, "text") included below:
 *   -1100 .. -1199  MPA Request/Reply frames        (err_wire.def)
 *   -1200 .. -1299  MPA FPDU framing and markers    (err_wire.def)
 *   -1300 .. -1399  DDP headers                     (err_wire.def)
 *   -1400 .. -1499  RDMAP headers and Terminate     (err_wire.def)
 *   -1500 .. -1599  RNIC engine and verbs           (err_rnic.def)
 *   -2000 .. -2099  RPC-over-RDMA header codec      (err_rpcrdma.def)
 *   -2100 .. -2199  RPC-over-RDMA transport         (err_rpcrdma.def)
 * `fatal` is 1 when the condition ends the stream it occurred on.
 */
#ifndef UIW_ERROR_H
#define UIW_ERROR_H

#include <uiw/export.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UIW_E_BASE (-1000)

enum uiw_errcode {
#define UIW_ERR(name, value, fatal, text) name = (value),
#include <uiw/err_wire.def>
#include <uiw/err_rnic.def>
#include <uiw/err_rpcrdma.def>
#undef UIW_ERR
    UIW_E_UNKNOWN = -9999
};

/* Text for any uiw return code: "Success" for 0 and positive values, strerror() text for
 * errno values, the protocol error's description otherwise. Never NULL. */
UIW_EXTERN const char *uiw_strerror(int code);

/* The symbolic name of a code ("UIW_E_MPA_BAD_KEY", "EINVAL", "OK"). Never NULL. */
UIW_EXTERN const char *uiw_errname(int code);

/* Nonzero if the error ends the connection or stream it occurred on (every protocol
 * violation by a peer does); zero for conditions the caller may retry or handle
 * (-EAGAIN, a truncated frame that only needs more bytes, a full queue). */
UIW_EXTERN int uiw_error_is_fatal(int code);

#ifdef __cplusplus
}
#endif
#endif
