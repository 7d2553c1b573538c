/*
 * XDR <-> JSON by description: a table of XDR types (struct, union, enum, uint32, uint64,
 * opaque<>, counted arrays, linked lists, optionals) drives both directions, so the JSON
 * of a message mirrors its XDR definition exactly (see man/rpcrdma-decode.1).
 *
 * Decoding is bounded: every element consumes input, counts are checked against the
 * type's cap and the bytes left, recursion follows the (finite, non-recursive) type
 * table, and counters shared by a whole message (such as properties) have limits too.
 */
#ifndef RPCRDMA_DECODE_XDR_H
#define RPCRDMA_DECODE_XDR_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

enum rd_xkind {
    RD_XU32,
    RD_XU64,
    RD_XENUM,
    RD_XOPAQUE, /* opaque<max> */
    RD_XSTRUCT,
    RD_XUNION,
    RD_XARRAY, /* T name<max> */
    RD_XLIST,  /* struct L { T entry; L *next; } *name: a JSON array of T */
    RD_XOPTION /* T *name (not a list): null or T */
};

struct rd_xtype;

struct rd_xenumval {
    const char *name;
    uint32_t value;
};

struct rd_xfield {
    const char *name;
    const struct rd_xtype *type;
};

struct rd_xarm {
    uint32_t value;
    const char *name;            /* NULL: void arm */
    const struct rd_xtype *type; /* NULL: void arm */
    int refused; /* nonzero: decoding this arm fails with this code (encoding it works) */
};

/* Counters shared by a whole message (for caps that span several arrays). */
enum { RD_XCOUNTER_NONE, RD_XCOUNTER_PROPS, RD_XCOUNTERS };

struct rd_xtype {
    enum rd_xkind kind;
    const char *name; /* the XDR type name */
    uint32_t max;     /* opaque / array: the XDR bound <max> (0: none), checked both ways */
    uint32_t cap;     /* array / list: most elements a receiver accepts (0: none), decode only */
    int cap_error;    /* error code when cap is exceeded */
    const struct rd_xtype *elem; /* array, list, option */
    const struct rd_xfield *fields;
    size_t nfields;
    const struct rd_xenumval *enums;
    size_t nenums;
    int open;              /* enum: unknown values are integers in JSON */
    int bad_enum_error;    /* enum: error code for an undefined value (decode) */
    const char *disc_name; /* union: the discriminant's name */
    const struct rd_xtype *disc;
    const struct rd_xarm *arms;
    size_t narms;
    const struct rd_xarm *dflt; /* union: default arm, or NULL */
    int counter;                /* each decoded value of this type counts against... */
    uint32_t counter_max;       /* ...this many per message */
    int counter_error;
    /* Called after a value of this type was decoded from raw[0..len); returns 0 or an
     * error code. */
    int (*check)(const uint8_t *raw, size_t len);
};

/* Decode one value of type t from buf[0..len). On success returns the number of bytes
 * used and appends the JSON to out; on failure returns a negative UIW_E_RPCRDMA_* code:
 * the type's own code where the table gives one, else UIW_E_RPCRDMA_TRUNCATED,
 * UIW_E_RPCRDMA_BAD_BOOL (optional or list discriminator neither 0 nor 1) or
 * UIW_E_RPCRDMA_BAD_PAD. out may hold partial output after a failure (or -ENOMEM). */
long rd_xdr_decode(const struct rd_xtype *t, const uint8_t *buf, size_t len, struct rd_buf *out);

/* Encode the JSON value v (of doc) as type t, appending to out. Top-level objects may
 * carry the extra keys listed in `extra` (NULL-terminated, may be NULL); they are
 * skipped. Returns 0 or -EINVAL with a message (path and reason) in err. */
int rd_xdr_encode(const struct rd_xtype *t, const struct rd_jdoc *doc, const struct rd_jval *v,
                  const char *const *extra, struct rd_buf *out, char *err, size_t errlen);

#endif
