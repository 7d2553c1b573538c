/* Helpers of the RPC layer's tests: a loopback server with a test program, clients. */
#ifndef UIW_TESTS_RPC_UTIL_H
#define UIW_TESTS_RPC_UTIL_H

#include <uiw/rpc.h>

#include "test.h"

#define TPROG 0x20000777u
#define TVERS 1u

enum {
    TP_NULL = 0,
    TP_ECHO = 1,       /* opaque<> -> the same opaque<> */
    TP_COUNT = 2,      /* void -> u_int: calls of TP_COUNT executed so far (DRC tests) */
    TP_ADD = 3,        /* u_int, u_int -> u_int */
    TP_GEN = 4,        /* u_int n -> opaque<> of n bytes, byte i = (uint8_t)(i * 7 + n) */
    TP_SINK = 5,       /* opaque<> -> u_int: CRC32c of the bytes */
    TP_DROP = 6,       /* u_int -> u_int: runs, then drops the connection before replying the
                        * first time (counted like COUNT) */
    TP_SLEEP = 7,      /* u_int ms -> void */
    TP_CALLBACK = 8,   /* u_int -> u_int: calls the client back (program TCBPROG) */
    TP_INFO = 9,       /* void -> struct tinfo: the server's view of the connection */
    TP_CONC = 10,      /* u_int ms -> u_int: sleeps; the most calls seen running at once */
    TP_CONC_SINK = 11, /* opaque<> -> u_int: holds it 100 ms; the most calls seen running at
                        * once (with TP_CONC's) */
    TP_SPIN = 12,      /* u_int us, u_int b -> us + b, after a busy wait of us (at most 1000)
                        * microseconds: a call that keeps its thread on the CPU */
    TP_WHERE = 13      /* struct twhere -> struct tpair: a = CRC32c of the bytes, b = 1 when
                        * uiw_xdr_bytes left them in the transport's buffers (no copy), | 2
                        * when the word after them is TWHERE_TAIL */
};

struct tinfo {
    u_int vers, peer_brs, peer_rbsiz, credits;
};
bool_t xdr_tinfo(XDR *x, struct tinfo *i);

#define TCBPROG 0x20000778u

struct tsrv {
    struct uiw_rpc_svc *svc;
    uint16_t port;
};

/* Start a server with the test program (attr NULL: defaults with port 0). */
void tsrv_start(struct tsrv *t, const struct uiw_rpc_svc_attr *attr);
/* The same, with the procedures the duplicate-reply cache keeps (uiw__rpc_svc_cached). */
void tsrv_start_cached(struct tsrv *t, const struct uiw_rpc_svc_attr *attr,
                       bool (*cached)(rpcproc_t proc));
void tsrv_stop(struct tsrv *t);
/* The count of executions (TP_COUNT, TP_DROP). */
unsigned tsrv_count(void);

CLIENT *tclnt(uint16_t port, const struct uiw_rpc_clnt_attr *attr);

/* xdr of a counted opaque with buffer pointer and length. */
struct tbuf {
    u_int len;
    char *val;
};
bool_t xdr_tbuf(XDR *x, struct tbuf *b);
/* xdr_void with the xdrproc_t signature (libtirpc declares it without arguments) */
bool_t xdr_none(XDR *x, void *p);
bool_t xdr_tbuf_borrow(XDR *x, struct tbuf *b);
struct tpair {
    u_int a, b;
};
bool_t xdr_tpair(XDR *x, struct tpair *p);
/* TP_WHERE's argument: an opaque, then a word */
#define TWHERE_TAIL 0x5eed7a11u
struct twhere {
    struct tbuf b;
    u_int tail;
};
bool_t xdr_twhere(XDR *x, struct twhere *w);

extern const struct timeval TMO;

#endif
