/*
 * A small strict JSON reader and an append-only output buffer for rpcrdma-decode.
 *
 * The reader accepts exactly one JSON value (RFC 8259) surrounded by optional white space:
 * objects, arrays, strings (all escapes, \u surrogate pairs turned into UTF-8), true, false,
 * null and integers. Integers are kept exactly (magnitude up to 2^64-1 plus a sign); numbers
 * with a fraction or an exponent are refused, as are leading zeros, control characters in
 * strings, invalid UTF-8 escapes, nesting deeper than RD_JSON_MAX_DEPTH and trailing bytes.
 * Duplicate object keys are refused, and so are objects of more than RD_JSON_MAX_MEMBERS
 * members (which keeps the duplicate check cheap; arrays have no such limit).
 *
 * Values live in a reusable document: parsing resets it and reuses its memory, so a
 * program that parses many lines allocates only while its largest line grows.
 */
#ifndef RPCRDMA_DECODE_JSON_H
#define RPCRDMA_DECODE_JSON_H

#include <stddef.h>
#include <stdint.h>

#define RD_JSON_MAX_DEPTH   64
#define RD_JSON_MAX_MEMBERS 256

enum rd_jtype { RD_JNULL, RD_JFALSE, RD_JTRUE, RD_JINT, RD_JSTR, RD_JARR, RD_JOBJ };

/* A value. Indices refer to rd_jdoc.v (-1: none) and offsets to rd_jdoc.s. */
struct rd_jval {
    enum rd_jtype type;
    int neg;          /* RD_JINT: 1 if negative (u is the magnitude) */
    uint64_t u;       /* RD_JINT: magnitude */
    size_t str, len;  /* RD_JSTR: offset and length of the decoded, NUL-terminated text */
    size_t key, klen; /* member of an object: its key (offset and length in s) */
    int32_t child;    /* RD_JARR / RD_JOBJ: first element or member */
    int32_t next;     /* next element or member of the parent */
    size_t count;     /* RD_JARR / RD_JOBJ: number of elements or members */
};

struct rd_jdoc {
    struct rd_jval *v;
    size_t nv, capv;
    char *s;
    size_t ns, caps;
    int32_t root;
    char err[96];  /* why the last parse failed */
    size_t errpos; /* byte offset of the failure */
};

/* Parse text[0..len) into doc (its previous content is dropped). Returns 0 or -EINVAL
 * (syntax; doc->err says why) or -ENOMEM. */
int rd_json_parse(struct rd_jdoc *doc, const char *text, size_t len);
void rd_json_free(struct rd_jdoc *doc);

/* Helpers over a parsed document. */
const struct rd_jval *rd_json_at(const struct rd_jdoc *doc, int32_t i); /* NULL for -1 */
const char *rd_json_str(const struct rd_jdoc *doc, const struct rd_jval *v);
const char *rd_json_keyname(const struct rd_jdoc *doc, const struct rd_jval *member);
/* The member of object `obj` named `key`, or NULL. */
const struct rd_jval *rd_json_get(const struct rd_jdoc *doc, const struct rd_jval *obj,
                                  const char *key);

/* Append-only byte buffer; `oom` sticks once an allocation failed. */
struct rd_buf {
    unsigned char *p;
    size_t len, cap;
    int oom;
};

/* Append n bytes to b and return where they start (for the caller to fill), or NULL
 * once out of memory. */
void *rd_buf_reserve(struct rd_buf *b, size_t n);
void rd_buf_put(struct rd_buf *b, const void *data, size_t n);
void rd_buf_puts(struct rd_buf *b, const char *s);
void rd_buf_u64(struct rd_buf *b, uint64_t v);                 /* decimal */
void rd_buf_hex(struct rd_buf *b, const void *data, size_t n); /* lowercase hex */
void rd_buf_free(struct rd_buf *b);

/* Decode hex text (pairs of [0-9a-fA-F]; white space between pairs is ignored when
 * `allow_space`; lowercase only when `lower_only`) and append the bytes to b.
 * Returns 0 or -EINVAL. */
int rd_hex_decode(struct rd_buf *b, const char *text, size_t len, int allow_space, int lower_only);

/* Decode exactly len characters of lowercase hex (no white space) into dst[0..len/2);
 * dst == NULL only checks the text. Returns 0 or -EINVAL. */
int rd_hex_to(uint8_t *dst, const char *text, size_t len);

#endif
