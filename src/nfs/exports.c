/* The exports file (exports.h says its syntax and what each option means). */
#include "nfs/exports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (4u << 20)

void uiw__nfs_xopts_default(struct uiw__nfs_xopts *o)
{
    memset(o, 0, sizeof(*o));
    o->flags = UIW__X_ROOT_SQUASH | UIW__X_SECURE | UIW__X_SEC_SYS | UIW__X_SEC_NONE;
    o->anonuid = o->anongid = 65534;
}

static void xclient_free(struct uiw__nfs_xclient *c)
{
    free(c->text);
    free(c->addrs);
}

void uiw__nfs_xtable_free(struct uiw__nfs_xtable *t)
{
    for (unsigned i = 0; i < t->n; i++) {
        for (unsigned k = 0; k < t->e[i].nclients; k++)
            xclient_free(&t->e[i].clients[k]);
        free(t->e[i].clients);
        free(t->e[i].path);
    }
    free(t->e);
    t->e = NULL;
    t->n = 0;
}

struct parser {
    const char *name;
    unsigned line;
    char *err;
    size_t errlen;
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%u: %s", p->name, p->line, what);
    return -1;
}

static int parse_u32(const char *s, uint32_t *v)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || end == s || *end || x > 0xffffffffu || *s == '-' || *s == '+')
        return -1;
    *v = (uint32_t)x;
    return 0;
}

/* One option into o. */
static int option(struct parser *p, const char *opt, struct uiw__nfs_xopts *o)
{
    static const struct {
        const char *name;
        uint32_t set, clear;
    } flags[] = {
        {"ro", 0, UIW__X_RW},
        {"rw", UIW__X_RW, 0},
        {"root_squash", UIW__X_ROOT_SQUASH, 0},
        {"no_root_squash", 0, UIW__X_ROOT_SQUASH},
        {"all_squash", UIW__X_ALL_SQUASH, 0},
        {"no_all_squash", 0, UIW__X_ALL_SQUASH},
        {"secure", UIW__X_SECURE, 0},
        {"insecure", 0, UIW__X_SECURE},
        {"sync", 0, UIW__X_ASYNC},
        {"async", UIW__X_ASYNC, 0},
        {"crossmnt", UIW__X_CROSSMNT, 0},
        {"nohide", UIW__X_NOHIDE, 0},
        {"hide", 0, UIW__X_NOHIDE},
        {"subtree_check", UIW__X_SUBTREE_CHECK, 0},
        {"no_subtree_check", 0, UIW__X_SUBTREE_CHECK},
        {"wdelay", 0, 0},
        {"no_wdelay", 0, 0},
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (strcmp(opt, flags[i].name) == 0) {
            o->flags = (o->flags | flags[i].set) & ~flags[i].clear;
            return 0;
        }
    const char *eq = strchr(opt, '=');
    if (!eq)
        return fail(p, "unknown option '%s'", opt);
    size_t kl = (size_t)(eq - opt);
    const char *v = eq + 1;
    if (kl == 7 && strncmp(opt, "anonuid", 7) == 0) {
        if (parse_u32(v, &o->anonuid) != 0)
            return fail(p, "anonuid takes a number, not '%s'", v);
        return 0;
    }
    if (kl == 7 && strncmp(opt, "anongid", 7) == 0) {
        if (parse_u32(v, &o->anongid) != 0)
            return fail(p, "anongid takes a number, not '%s'", v);
        return 0;
    }
    if (kl == 4 && strncmp(opt, "fsid", 4) == 0) {
        o->flags |= UIW__X_FSID;
        o->flags &= ~UIW__X_FSID_ROOT;
        if (strcmp(v, "root") == 0) {
            o->flags |= UIW__X_FSID_ROOT;
            o->fsid = 0;
            return 0;
        }
        if (parse_u32(v, &o->fsid) != 0)
            return fail(p, "fsid takes a number or 'root', not '%s'", v);
        if (o->fsid == 0)
            o->flags |= UIW__X_FSID_ROOT;
        return 0;
    }
    if (kl == 3 && strncmp(opt, "sec", 3) == 0) {
        uint32_t sec = 0;
        char list[64];
        snprintf(list, sizeof(list), "%s", v);
        for (char *save = NULL, *f = strtok_r(list, ":", &save); f;
             f = strtok_r(NULL, ":", &save)) {
            if (strcmp(f, "sys") == 0)
                sec |= UIW__X_SEC_SYS;
            else if (strcmp(f, "none") == 0)
                sec |= UIW__X_SEC_NONE;
            else
                return fail(p, "sec=%s: flavor '%s' is not served (sys, none)", v, f);
        }
        if (!sec)
            return fail(p, "sec= names no flavor");
        o->flags = (o->flags & ~(UIW__X_SEC_SYS | UIW__X_SEC_NONE)) | sec;
        return 0;
    }
    return fail(p, "unknown option '%s'", opt);
}

/* A comma-separated list of options into o. */
static int options(struct parser *p, const char *list, struct uiw__nfs_xopts *o)
{
    char *copy = strdup(list);
    if (!copy)
        return fail(p, "out of memory");
    int rc = 0;
    if (!*copy)
        rc = fail(p, "empty option list");
    for (char *save = NULL, *opt = strtok_r(copy, ",", &save); opt && rc == 0;
         opt = strtok_r(NULL, ",", &save))
        rc = option(p, opt, o);
    free(copy);
    return rc;
}

/* An address (numeric, either family) into ss. */
static int numeric(const char *s, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, s, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        return 0;
    }
    return -1;
}

static unsigned bits_of_mask(uint32_t m, int *ok)
{
    unsigned b = 0;
    while (b < 32 && (m & (0x80000000u >> b)))
        b++;
    *ok = b == 32 || (m << b) == 0;
    return b;
}

/* A client ("name" or "name(options)") of a line whose clients start from base. */
static int client(struct parser *p, const char *tok, const struct uiw__nfs_xopts *base,
                  struct uiw__nfs_xclient *c)
{
    memset(c, 0, sizeof(*c));
    c->o = *base;
    const char *paren = strchr(tok, '(');
    size_t nl = paren ? (size_t)(paren - tok) : strlen(tok);
    if (paren) {
        size_t tl = strlen(tok);
        if (tok[tl - 1] != ')' || strchr(paren + 1, '(') || strchr(paren, ')') != tok + tl - 1)
            return fail(p, "'%s': options go in one pair of parentheses", tok);
        char *list = strndup(paren + 1, tl - nl - 2);
        if (!list)
            return fail(p, "out of memory");
        int rc = options(p, list, &c->o);
        free(list);
        if (rc != 0)
            return rc;
    } else if (strchr(tok, ')')) {
        return fail(p, "'%s': a ')' without '('", tok);
    }
    c->text = strndup(tok, nl);
    if (!c->text)
        return fail(p, "out of memory");
    const char *name = c->text;
    if (strcmp(name, "*") == 0) {
        c->kind = UIW__XC_ANY;
        return 0;
    }
    if (name[0] == '@')
        return fail(p, "'%s': netgroups are not supported", name);
    if (strpbrk(name, "*?[") != NULL)
        return fail(p, "'%s': wildcard host names are not supported (use a network)", name);
    const char *slash = strchr(name, '/');
    if (slash) {
        char addr[64];
        snprintf(addr, sizeof(addr), "%.*s", (int)(slash - name), name);
        c->addrs = calloc(1, sizeof(*c->addrs));
        if (!c->addrs)
            return fail(p, "out of memory");
        c->naddrs = 1;
        c->kind = UIW__XC_NET;
        if (numeric(addr, c->addrs) != 0)
            return fail(p, "'%s': not a network", name);
        unsigned max = c->addrs->ss_family == AF_INET ? 32 : 128;
        uint32_t bits;
        struct in_addr mask;
        if (parse_u32(slash + 1, &bits) == 0 && bits <= max) {
            c->prefix = bits;
        } else if (c->addrs->ss_family == AF_INET && inet_pton(AF_INET, slash + 1, &mask) == 1) {
            int ok;
            c->prefix = bits_of_mask(ntohl(mask.s_addr), &ok);
            if (!ok)
                return fail(p, "'%s': the netmask is not contiguous", name);
        } else {
            return fail(p, "'%s': the prefix is not 0 to %u", name, max);
        }
        return 0;
    }
    c->kind = UIW__XC_HOST;
    struct sockaddr_storage one;
    if (numeric(name, &one) == 0) {
        c->addrs = malloc(sizeof(*c->addrs));
        if (!c->addrs)
            return fail(p, "out of memory");
        *c->addrs = one;
        c->naddrs = 1;
        return 0;
    }
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(name, NULL, &hints, &ai);
    if (rc != 0)
        return fail(p, "host '%s' cannot be resolved: %s", name, gai_strerror(rc));
    unsigned n = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next)
        n++;
    c->addrs = calloc(n ? n : 1, sizeof(*c->addrs));
    if (!c->addrs) {
        freeaddrinfo(ai);
        return fail(p, "out of memory");
    }
    for (struct addrinfo *a = ai; a; a = a->ai_next)
        if (a->ai_addrlen <= sizeof(*c->addrs))
            memcpy(&c->addrs[c->naddrs++], a->ai_addr, a->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

/* The next token of s (words, or a double-quoted string with octal escapes), into tok;
 * NULL at the end of the line. */
static const char *token(struct parser *p, const char *s, char *tok, size_t cap, int *bad)
{
    *bad = 0;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '#')
        return NULL;
    size_t n = 0;
    int quoted = 0;
    while (*s && (quoted || (*s != ' ' && *s != '\t'))) {
        char ch = *s++;
        if (ch == '"') {
            quoted = !quoted;
            continue;
        }
        if (ch == '#' && !quoted) {
            s--;
            break;
        }
        if (ch == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' &&
            s[2] <= '7') {
            ch = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
            s += 3;
        }
        if (n + 1 >= cap) {
            *bad = fail(p, "a word longer than %zu bytes", cap - 1);
            return NULL;
        }
        tok[n++] = ch;
    }
    if (quoted) {
        *bad = fail(p, "a quote that does not end");
        return NULL;
    }
    tok[n] = 0;
    return s;
}

static int entry(struct parser *p, const char *text, struct uiw__nfs_xtable *t)
{
    char tok[4096];
    int bad;
    const char *s = token(p, text, tok, sizeof(tok), &bad);
    if (bad)
        return bad;
    if (!s)
        return 0; /* blank or comment */
    if (tok[0] != '/')
        return fail(p, "'%s' is not an absolute path", tok);
    for (unsigned i = 0; i < t->n; i++)
        if (strcmp(t->e[i].path, tok) == 0)
            return fail(p, "%s is exported on line %u already", tok, t->e[i].line);
    struct uiw__nfs_xentry e;
    memset(&e, 0, sizeof(e));
    e.line = p->line;
    e.path = strdup(tok);
    if (!e.path)
        return fail(p, "out of memory");
    struct uiw__nfs_xopts base;
    uiw__nfs_xopts_default(&base);
    int rc = 0, first = 1;
    while (rc == 0 && (s = token(p, s, tok, sizeof(tok), &bad)) != NULL) {
        if (tok[0] == '-' && first) {
            rc = options(p, tok + 1, &base);
        } else if (tok[0] == '(') {
            rc = fail(p,
                      "'%s': a space before '(' (write host(options); '(options)' alone "
                      "would be for every host)",
                      tok);
        } else {
            struct uiw__nfs_xclient *nc = realloc(e.clients, (e.nclients + 1) * sizeof(*e.clients));
            if (!nc) {
                rc = fail(p, "out of memory");
                break;
            }
            e.clients = nc;
            rc = client(p, tok, &base, &e.clients[e.nclients]);
            e.nclients++;
        }
        first = 0;
    }
    if (rc == 0 && bad)
        rc = bad;
    if (rc == 0 && e.nclients == 0) {
        /* no client: every host, with the line's options (as exportfs takes it) */
        e.clients = calloc(1, sizeof(*e.clients));
        if (!e.clients || !(e.clients[0].text = strdup("*"))) {
            rc = fail(p, "out of memory");
        } else {
            e.clients[0].kind = UIW__XC_ANY;
            e.clients[0].o = base;
            e.nclients = 1;
        }
    }
    struct uiw__nfs_xentry *ne = rc == 0 ? realloc(t->e, (t->n + 1) * sizeof(*t->e)) : NULL;
    if (rc == 0 && !ne)
        rc = fail(p, "out of memory");
    if (rc != 0) {
        for (unsigned k = 0; k < e.nclients; k++)
            xclient_free(&e.clients[k]);
        free(e.clients);
        free(e.path);
        return rc;
    }
    t->e = ne;
    t->e[t->n++] = e;
    return 0;
}

int uiw__nfs_exports_parse(const char *text, const char *name, struct uiw__nfs_xtable *t, char *err,
                           size_t errlen)
{
    memset(t, 0, sizeof(*t));
    struct parser p = {name, 0, err, errlen};
    size_t len = strlen(text);
    char *logical = malloc(len + 1);
    if (!logical) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    unsigned lineno = 1;
    const char *s = text;
    int rc = 0;
    while (*s && rc == 0) {
        /* a logical line: physical ones joined where they end with a backslash */
        size_t n = 0;
        p.line = lineno;
        for (;;) {
            const char *nl = strchr(s, '\n');
            size_t l = nl ? (size_t)(nl - s) : strlen(s);
            int cont = l > 0 && s[l - 1] == '\\';
            memcpy(logical + n, s, cont ? l - 1 : l);
            n += cont ? l - 1 : l;
            if (cont)
                logical[n++] = ' ';
            s += l + (nl ? 1 : 0);
            lineno++;
            if (!cont || !*s)
                break;
        }
        logical[n] = 0;
        if (memchr(logical, 0, n))
            rc = fail(&p, "a NUL byte");
        else
            rc = entry(&p, logical, t);
    }
    free(logical);
    if (rc != 0)
        uiw__nfs_xtable_free(t);
    return rc;
}

int uiw__nfs_exports_load(const char *path, struct uiw__nfs_xtable *t, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)MAX_FILE) {
        snprintf(err, errlen, "%s: not a regular file of at most %u bytes", path, MAX_FILE);
        close(fd);
        return -1;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (text && got < (size_t)st.st_size) {
        ssize_t k = read(fd, text + got, (size_t)st.st_size - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    text[got] = 0;
    if (strlen(text) != got) {
        snprintf(err, errlen, "%s: a NUL byte in the file", path);
        free(text);
        return -1;
    }
    int rc = uiw__nfs_exports_parse(text, path, t, err, errlen);
    free(text);
    return rc;
}

/* The peer's address as IPv4 when it is an IPv4-mapped IPv6 one (a dual-stack listener). */
static void plain(const struct sockaddr *peer, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (peer->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)peer;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            struct sockaddr_in *in = (struct sockaddr_in *)out;
            in->sin_family = AF_INET;
            memcpy(&in->sin_addr, in6->sin6_addr.s6_addr + 12, 4);
            return;
        }
        memcpy(out, peer, sizeof(struct sockaddr_in6));
    } else if (peer->sa_family == AF_INET) {
        memcpy(out, peer, sizeof(struct sockaddr_in));
    }
}

/* Whether the first `bits` bits of a and b agree (same family). */
static int same_bits(const struct sockaddr_storage *a, const struct sockaddr_storage *b,
                     unsigned bits)
{
    if (a->ss_family != b->ss_family)
        return 0;
    const uint8_t *x, *y;
    if (a->ss_family == AF_INET) {
        x = (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
        y = (const uint8_t *)&((const struct sockaddr_in *)b)->sin_addr;
    } else {
        x = ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
        y = ((const struct sockaddr_in6 *)b)->sin6_addr.s6_addr;
    }
    unsigned full = bits / 8, rest = bits % 8;
    if (memcmp(x, y, full) != 0)
        return 0;
    return rest == 0 || ((x[full] ^ y[full]) & (0xff00u >> rest)) == 0;
}

const struct uiw__nfs_xopts *uiw__nfs_xentry_match(const struct uiw__nfs_xentry *e,
                                                   const struct sockaddr *peer)
{
    struct sockaddr_storage a;
    plain(peer, &a);
    static const enum uiw__nfs_xkind order[] = {UIW__XC_HOST, UIW__XC_NET, UIW__XC_ANY};
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
        for (unsigned i = 0; i < e->nclients; i++) {
            const struct uiw__nfs_xclient *c = &e->clients[i];
            if (c->kind != order[k])
                continue;
            if (c->kind == UIW__XC_ANY)
                return &c->o;
            if (c->kind == UIW__XC_NET && same_bits(&a, &c->addrs[0], c->prefix))
                return &c->o;
            if (c->kind == UIW__XC_HOST)
                for (unsigned j = 0; j < c->naddrs; j++) {
                    struct sockaddr_storage h;
                    plain((const struct sockaddr *)&c->addrs[j], &h);
                    if (same_bits(&a, &h, a.ss_family == AF_INET ? 32 : 128))
                        return &c->o;
                }
        }
    return NULL;
}

void uiw__nfs_xopts_text(const struct uiw__nfs_xopts *o, char *buf, size_t n)
{
    uint32_t f = o->flags;
    char fsid[32] = "";
    if (f & UIW__X_FSID) {
        if (f & UIW__X_FSID_ROOT)
            snprintf(fsid, sizeof(fsid), ",fsid=root");
        else
            snprintf(fsid, sizeof(fsid), ",fsid=%u", o->fsid);
    }
    const char *sec = (f & UIW__X_SEC_SYS) && (f & UIW__X_SEC_NONE) ? "sys:none"
                      : (f & UIW__X_SEC_SYS)                        ? "sys"
                                                                    : "none";
    snprintf(buf, n, "%s,%s,%s,anonuid=%u,anongid=%u,%s,%s%s%s,%s,sec=%s%s",
             f & UIW__X_RW ? "rw" : "ro", f & UIW__X_ROOT_SQUASH ? "root_squash" : "no_root_squash",
             f & UIW__X_ALL_SQUASH ? "all_squash" : "no_all_squash", o->anonuid, o->anongid,
             f & UIW__X_SECURE ? "secure" : "insecure", f & UIW__X_ASYNC ? "async" : "sync",
             f & UIW__X_CROSSMNT ? ",crossmnt" : "", f & UIW__X_NOHIDE ? ",nohide" : "",
             f & UIW__X_SUBTREE_CHECK ? "subtree_check" : "no_subtree_check", sec, fsid);
}

void uiw__nfs_exports_print(FILE *f, const struct uiw__nfs_xtable *t)
{
    for (unsigned i = 0; i < t->n; i++) {
        const struct uiw__nfs_xentry *e = &t->e[i];
        /* the path as the file would spell it: blanks and the like in octal */
        for (const unsigned char *c = (const unsigned char *)e->path; *c; c++) {
            if (*c <= ' ' || *c == '"' || *c == '\\' || *c == '#' || *c >= 0x7f)
                fprintf(f, "\\%03o", *c);
            else
                fputc(*c, f);
        }
        for (unsigned k = 0; k < e->nclients; k++) {
            char o[256];
            uiw__nfs_xopts_text(&e->clients[k].o, o, sizeof(o));
            fprintf(f, " %s(%s)", e->clients[k].text, o);
        }
        fputc('\n', f);
    }
}
