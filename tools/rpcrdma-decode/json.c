#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    struct rd_jdoc *doc;
    const char *t;
    size_t len, pos;
    int nomem;
};

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->doc->err, sizeof ps->doc->err, fmt, ap);
    va_end(ap);
    ps->doc->errpos = ps->pos;
    return -EINVAL;
}

static int32_t new_val(struct parser *ps, enum rd_jtype type)
{
    struct rd_jdoc *d = ps->doc;
    if (d->nv == d->capv) {
        size_t cap = d->capv ? d->capv * 2 : 64;
        if (cap > INT32_MAX)
            return -1;
        struct rd_jval *v = realloc(d->v, cap * sizeof *v);
        if (!v)
            return -1;
        d->v = v;
        d->capv = cap;
    }
    struct rd_jval *v = &d->v[d->nv];
    memset(v, 0, sizeof *v);
    v->type = type;
    v->child = -1;
    v->next = -1;
    return (int32_t)d->nv++;
}

static int put_char(struct parser *ps, char c)
{
    struct rd_jdoc *d = ps->doc;
    if (d->ns == d->caps) {
        size_t cap = d->caps ? d->caps * 2 : 256;
        char *s = realloc(d->s, cap);
        if (!s)
            return -1;
        d->s = s;
        d->caps = cap;
    }
    d->s[d->ns++] = c;
    return 0;
}

static void skip_ws(struct parser *ps)
{
    while (ps->pos < ps->len) {
        char c = ps->t[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        ps->pos++;
    }
}

static int hex4(struct parser *ps, unsigned *out)
{
    unsigned v = 0;
    if (ps->len - ps->pos < 4)
        return fail(ps, "truncated \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = ps->t[ps->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(ps, "bad \\u escape");
    }
    *out = v;
    return 0;
}

static int put_utf8(struct parser *ps, unsigned cp)
{
    int r = 0;
    if (cp < 0x80) {
        r |= put_char(ps, (char)cp);
    } else if (cp < 0x800) {
        r |= put_char(ps, (char)(0xC0 | (cp >> 6)));
        r |= put_char(ps, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        r |= put_char(ps, (char)(0xE0 | (cp >> 12)));
        r |= put_char(ps, (char)(0x80 | ((cp >> 6) & 0x3F)));
        r |= put_char(ps, (char)(0x80 | (cp & 0x3F)));
    } else {
        r |= put_char(ps, (char)(0xF0 | (cp >> 18)));
        r |= put_char(ps, (char)(0x80 | ((cp >> 12) & 0x3F)));
        r |= put_char(ps, (char)(0x80 | ((cp >> 6) & 0x3F)));
        r |= put_char(ps, (char)(0x80 | (cp & 0x3F)));
    }
    return r;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k;
    unsigned cp, min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2;
        cp = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        cp = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

/* Parses a string at ps->pos (on the opening quote); stores offset/length of its text. */
static int parse_string(struct parser *ps, size_t *off, size_t *len)
{
    ps->pos++; /* opening quote */
    *off = ps->doc->ns;
    for (;;) {
        if (ps->pos >= ps->len)
            return fail(ps, "unterminated string");
        unsigned char c = (unsigned char)ps->t[ps->pos];
        if (c == '"') {
            ps->pos++;
            break;
        }
        if (c < 0x20)
            return fail(ps, "control character in string");
        if (c == '\\') {
            ps->pos++;
            if (ps->pos >= ps->len)
                return fail(ps, "unterminated string");
            char e = ps->t[ps->pos++];
            unsigned cp;
            int r;
            switch (e) {
            case '"':
            case '\\':
            case '/':
                r = put_char(ps, e);
                break;
            case 'b':
                r = put_char(ps, '\b');
                break;
            case 'f':
                r = put_char(ps, '\f');
                break;
            case 'n':
                r = put_char(ps, '\n');
                break;
            case 'r':
                r = put_char(ps, '\r');
                break;
            case 't':
                r = put_char(ps, '\t');
                break;
            case 'u':
                if (hex4(ps, &cp) != 0)
                    return -EINVAL;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return fail(ps, "lone low surrogate");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (ps->len - ps->pos < 2 || ps->t[ps->pos] != '\\' ||
                        ps->t[ps->pos + 1] != 'u')
                        return fail(ps, "lone high surrogate");
                    ps->pos += 2;
                    if (hex4(ps, &lo) != 0)
                        return -EINVAL;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return fail(ps, "bad surrogate pair");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                r = put_utf8(ps, cp);
                break;
            default:
                return fail(ps, "bad escape \\%c", e);
            }
            if (r != 0) {
                ps->nomem = 1;
                return -ENOMEM;
            }
            continue;
        }
        size_t k = utf8_len((const unsigned char *)ps->t + ps->pos, ps->len - ps->pos);
        if (k == 0)
            return fail(ps, "invalid UTF-8");
        for (size_t i = 0; i < k; i++) {
            if (put_char(ps, ps->t[ps->pos + i]) != 0) {
                ps->nomem = 1;
                return -ENOMEM;
            }
        }
        ps->pos += k;
    }
    *len = ps->doc->ns - *off;
    if (put_char(ps, '\0') != 0) {
        ps->nomem = 1;
        return -ENOMEM;
    }
    return 0;
}

static int parse_number(struct parser *ps, int32_t *out)
{
    int neg = 0;
    uint64_t u = 0;
    if (ps->t[ps->pos] == '-') {
        neg = 1;
        ps->pos++;
    }
    size_t start = ps->pos;
    while (ps->pos < ps->len && ps->t[ps->pos] >= '0' && ps->t[ps->pos] <= '9') {
        unsigned d = (unsigned)(ps->t[ps->pos] - '0');
        if (u > (UINT64_MAX - d) / 10)
            return fail(ps, "integer out of range");
        u = u * 10 + d;
        ps->pos++;
    }
    size_t ndig = ps->pos - start;
    if (ndig == 0)
        return fail(ps, "bad number");
    if (ndig > 1 && ps->t[start] == '0')
        return fail(ps, "leading zero");
    if (ps->pos < ps->len &&
        (ps->t[ps->pos] == '.' || ps->t[ps->pos] == 'e' || ps->t[ps->pos] == 'E'))
        return fail(ps, "only integers are accepted");
    if (neg && u == 0)
        neg = 0;
    int32_t i = new_val(ps, RD_JINT);
    if (i < 0) {
        ps->nomem = 1;
        return -ENOMEM;
    }
    ps->doc->v[i].neg = neg;
    ps->doc->v[i].u = u;
    *out = i;
    return 0;
}

static int literal(struct parser *ps, const char *word, enum rd_jtype type, int32_t *out)
{
    size_t n = strlen(word);
    if (ps->len - ps->pos < n || memcmp(ps->t + ps->pos, word, n) != 0)
        return fail(ps, "unexpected character");
    ps->pos += n;
    int32_t i = new_val(ps, type);
    if (i < 0) {
        ps->nomem = 1;
        return -ENOMEM;
    }
    *out = i;
    return 0;
}

static int parse_value(struct parser *ps, int depth, int32_t *out);

static int key_seen(const struct rd_jdoc *d, int32_t first, size_t key, size_t klen)
{
    for (int32_t m = first; m >= 0; m = d->v[m].next) {
        if (d->v[m].klen == klen && memcmp(d->s + d->v[m].key, d->s + key, klen) == 0)
            return 1;
    }
    return 0;
}

static int parse_container(struct parser *ps, int depth, int32_t *out)
{
    int obj = ps->t[ps->pos] == '{';
    char close = obj ? '}' : ']';
    if (depth >= RD_JSON_MAX_DEPTH)
        return fail(ps, "nesting too deep");
    int32_t self = new_val(ps, obj ? RD_JOBJ : RD_JARR);
    if (self < 0) {
        ps->nomem = 1;
        return -ENOMEM;
    }
    ps->pos++;
    skip_ws(ps);
    int32_t last = -1;
    size_t count = 0;
    if (ps->pos < ps->len && ps->t[ps->pos] == close) {
        ps->pos++;
        *out = self;
        return 0;
    }
    for (;;) {
        size_t key = 0, klen = 0;
        int r;
        if (obj) {
            skip_ws(ps);
            if (ps->pos >= ps->len || ps->t[ps->pos] != '"')
                return fail(ps, "expected a key");
            r = parse_string(ps, &key, &klen);
            if (r != 0)
                return r;
            if (count == RD_JSON_MAX_MEMBERS)
                return fail(ps, "more than %d members in an object", RD_JSON_MAX_MEMBERS);
            if (key_seen(ps->doc, ps->doc->v[self].child, key, klen))
                return fail(ps, "duplicate key \"%s\"", ps->doc->s + key);
            skip_ws(ps);
            if (ps->pos >= ps->len || ps->t[ps->pos] != ':')
                return fail(ps, "expected ':'");
            ps->pos++;
        }
        int32_t child;
        r = parse_value(ps, depth + 1, &child);
        if (r != 0)
            return r;
        ps->doc->v[child].key = key;
        ps->doc->v[child].klen = klen;
        if (last < 0)
            ps->doc->v[self].child = child;
        else
            ps->doc->v[last].next = child;
        last = child;
        count++;
        skip_ws(ps);
        if (ps->pos >= ps->len)
            return fail(ps, "unterminated %s", obj ? "object" : "array");
        char c = ps->t[ps->pos++];
        if (c == close)
            break;
        if (c != ',')
            return fail(ps, "expected ',' or '%c'", close);
    }
    ps->doc->v[self].count = count;
    *out = self;
    return 0;
}

static int parse_value(struct parser *ps, int depth, int32_t *out)
{
    skip_ws(ps);
    if (ps->pos >= ps->len)
        return fail(ps, "expected a value");
    char c = ps->t[ps->pos];
    switch (c) {
    case '{':
    case '[':
        return parse_container(ps, depth, out);
    case '"': {
        int32_t i = new_val(ps, RD_JSTR);
        if (i < 0) {
            ps->nomem = 1;
            return -ENOMEM;
        }
        size_t off, len;
        int r = parse_string(ps, &off, &len);
        if (r != 0)
            return r;
        ps->doc->v[i].str = off;
        ps->doc->v[i].len = len;
        *out = i;
        return 0;
    }
    case 't':
        return literal(ps, "true", RD_JTRUE, out);
    case 'f':
        return literal(ps, "false", RD_JFALSE, out);
    case 'n':
        return literal(ps, "null", RD_JNULL, out);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(ps, out);
        return fail(ps, "unexpected character");
    }
}

int rd_json_parse(struct rd_jdoc *doc, const char *text, size_t len)
{
    struct parser ps = {.doc = doc, .t = text, .len = len};
    doc->nv = 0;
    doc->ns = 0;
    doc->root = -1;
    doc->err[0] = '\0';
    doc->errpos = 0;
    int32_t root;
    int r = parse_value(&ps, 0, &root);
    if (r != 0) {
        if (ps.nomem) {
            snprintf(doc->err, sizeof doc->err, "out of memory");
            return -ENOMEM;
        }
        return r;
    }
    skip_ws(&ps);
    if (ps.pos != len)
        return fail(&ps, "trailing characters");
    doc->root = root;
    return 0;
}

void rd_json_free(struct rd_jdoc *doc)
{
    free(doc->v);
    free(doc->s);
    memset(doc, 0, sizeof *doc);
    doc->root = -1;
}

const struct rd_jval *rd_json_at(const struct rd_jdoc *doc, int32_t i)
{
    if (i < 0 || (size_t)i >= doc->nv)
        return NULL;
    return &doc->v[i];
}

const char *rd_json_str(const struct rd_jdoc *doc, const struct rd_jval *v)
{
    return doc->s + v->str;
}

const char *rd_json_keyname(const struct rd_jdoc *doc, const struct rd_jval *member)
{
    return doc->s + member->key;
}

const struct rd_jval *rd_json_get(const struct rd_jdoc *doc, const struct rd_jval *obj,
                                  const char *key)
{
    if (!obj || obj->type != RD_JOBJ)
        return NULL;
    size_t klen = strlen(key);
    for (const struct rd_jval *m = rd_json_at(doc, obj->child); m; m = rd_json_at(doc, m->next))
        if (m->klen == klen && memcmp(doc->s + m->key, key, klen) == 0)
            return m;
    return NULL;
}

void *rd_buf_reserve(struct rd_buf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return NULL;
            }
            cap *= 2;
        }
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    unsigned char *at = b->p + b->len;
    b->len += n;
    return at;
}

void rd_buf_put(struct rd_buf *b, const void *data, size_t n)
{
    if (n == 0)
        return;
    unsigned char *at = rd_buf_reserve(b, n);
    if (at)
        memcpy(at, data, n);
}

void rd_buf_puts(struct rd_buf *b, const char *s)
{
    rd_buf_put(b, s, strlen(s));
}

void rd_buf_u64(struct rd_buf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    rd_buf_put(b, tmp + i, sizeof tmp - i);
}

void rd_buf_hex(struct rd_buf *b, const void *data, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = data;
    char tmp[128];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        tmp[k++] = digits[p[i] >> 4];
        tmp[k++] = digits[p[i] & 15];
        if (k == sizeof tmp) {
            rd_buf_put(b, tmp, k);
            k = 0;
        }
    }
    rd_buf_put(b, tmp, k);
}

void rd_buf_free(struct rd_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int hexval(char c, int lower_only)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (!lower_only && c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int rd_hex_decode(struct rd_buf *b, const char *text, size_t len, int allow_space, int lower_only)
{
    size_t i = 0;
    for (;;) {
        while (allow_space && i < len &&
               (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
            i++;
        if (i == len)
            break;
        if (len - i < 2)
            return -EINVAL;
        int hi = hexval(text[i], lower_only), lo = hexval(text[i + 1], lower_only);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        unsigned char byte = (unsigned char)(hi << 4 | lo);
        rd_buf_put(b, &byte, 1);
        i += 2;
    }
    return b->oom ? -ENOMEM : 0;
}

int rd_hex_to(uint8_t *dst, const char *text, size_t len)
{
    if (len % 2 != 0)
        return -EINVAL;
    for (size_t i = 0; i < len; i += 2) {
        int hi = hexval(text[i], 1), lo = hexval(text[i + 1], 1);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        if (dst)
            dst[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}
