/* The exports file (src/nfs/exports.c): exports(5)'s syntax, its errors with their line
 * numbers, and which client's options a call from an address gets. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs/exports.h"
#include "test.h"

static struct sockaddr_storage addr(const char *s)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, s, &in->sin_addr) == 1)
        in->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1)
        in6->sin6_family = AF_INET6;
    else
        uiw_test_fail(__FILE__, __LINE__, "bad address %s", s);
    return ss;
}

/* The flags a call from `from` gets on entry i, or ~0 when it gets none. */
static uint32_t flags_for(const struct uiw__nfs_xtable *t, unsigned i, const char *from)
{
    struct sockaddr_storage a = addr(from);
    const struct uiw__nfs_xopts *o = uiw__nfs_xentry_match(&t->e[i], (struct sockaddr *)&a);
    return o ? o->flags : ~0u;
}

static void parse_ok(const char *text, struct uiw__nfs_xtable *t)
{
    char err[512];
    if (uiw__nfs_exports_parse(text, "exports", t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "refused: %s", err);
}

TEST(exports_syntax_and_defaults)
{
    struct uiw__nfs_xtable t;
    parse_ok("# a comment\n"
             "\n"
             "/srv/a   192.0.2.7(rw,no_root_squash) 198.51.100.0/24(ro) *(insecure)\n"
             "\"/srv/with space\" -rw,async 10.0.0.0/255.255.0.0 2001:db8::/32(ro,sync)\n"
             "/srv/b\\040c  localhost(rw,anonuid=1000,anongid=100,fsid=7) \\\n"
             "       203.0.113.5(sec=sys,all_squash)   # trailing comment\n"
             "/srv/everyone\n",
             &t);
    CHECK_EQ(t.n, 4);
    CHECK_STR(t.e[0].path, "/srv/a");
    CHECK_EQ(t.e[0].line, 3);
    CHECK_EQ(t.e[0].nclients, 3);
    /* knfsd's defaults: ro, root_squash, secure, sync, no_subtree_check */
    uint32_t d = t.e[0].clients[2].o.flags;
    CHECK(!(d & UIW__X_RW) && (d & UIW__X_ROOT_SQUASH) && !(d & UIW__X_SECURE) &&
          !(d & UIW__X_ASYNC) && !(d & UIW__X_SUBTREE_CHECK));
    uint32_t a = t.e[0].clients[0].o.flags;
    CHECK((a & UIW__X_RW) && !(a & UIW__X_ROOT_SQUASH) && (a & UIW__X_SECURE));
    CHECK_STR(t.e[1].path, "/srv/with space");
    CHECK_EQ(t.e[1].nclients, 2);
    CHECK_EQ(t.e[1].clients[0].kind, UIW__XC_NET);
    CHECK_EQ(t.e[1].clients[0].prefix, 16);
    CHECK(t.e[1].clients[0].o.flags & UIW__X_RW); /* the line's -rw */
    CHECK(t.e[1].clients[0].o.flags & UIW__X_ASYNC);
    CHECK(!(t.e[1].clients[1].o.flags & UIW__X_RW)); /* its own ro */
    CHECK(!(t.e[1].clients[1].o.flags & UIW__X_ASYNC));
    CHECK_STR(t.e[2].path, "/srv/b c");
    CHECK_EQ(t.e[2].line, 5);
    CHECK_EQ(t.e[2].nclients, 2);
    CHECK_EQ(t.e[2].clients[0].o.anonuid, 1000);
    CHECK_EQ(t.e[2].clients[0].o.anongid, 100);
    CHECK_EQ(t.e[2].clients[0].o.fsid, 7);
    CHECK(t.e[2].clients[1].o.flags & UIW__X_ALL_SQUASH);
    CHECK(!(t.e[2].clients[1].o.flags & UIW__X_SEC_NONE));
    CHECK_EQ(t.e[3].line, 7);
    CHECK_EQ(t.e[3].nclients, 1);
    CHECK_EQ(t.e[3].clients[0].kind, UIW__XC_ANY);
    /* printed as the server takes it, and read back the same */
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    CHECK(f != NULL);
    uiw__nfs_exports_print(f, &t);
    fclose(f);
    struct uiw__nfs_xtable u;
    parse_ok(out, &u);
    CHECK_EQ(u.n, t.n);
    for (unsigned i = 0; i < t.n; i++) {
        CHECK_STR(u.e[i].path, t.e[i].path);
        CHECK_EQ(u.e[i].nclients, t.e[i].nclients);
        for (unsigned k = 0; k < t.e[i].nclients; k++) {
            CHECK_STR(u.e[i].clients[k].text, t.e[i].clients[k].text);
            CHECK_MEM(&u.e[i].clients[k].o, &t.e[i].clients[k].o, sizeof(t.e[i].clients[k].o));
        }
    }
    free(out);
    uiw__nfs_xtable_free(&u);
    uiw__nfs_xtable_free(&t);
}

TEST(exports_match_order)
{
    struct uiw__nfs_xtable t;
    /* '*' first, a network, then the host: the host wins, then the network, then '*' */
    parse_ok("/x *(ro) 192.0.2.0/24(rw,insecure) 192.0.2.9(rw,no_root_squash) "
             "2001:db8::/48(rw) ::1(ro,all_squash)\n"
             "/y 192.0.2.0/25(rw) 192.0.2.0/24(ro)\n"
             "/z 10.1.2.3\n",
             &t);
    CHECK(!(flags_for(&t, 0, "192.0.2.9") & UIW__X_ROOT_SQUASH));
    CHECK(flags_for(&t, 0, "192.0.2.10") & UIW__X_RW);
    CHECK(!(flags_for(&t, 0, "192.0.2.10") & UIW__X_SECURE));
    CHECK(!(flags_for(&t, 0, "192.0.3.1") & UIW__X_RW));
    CHECK(flags_for(&t, 0, "2001:db8:0:1::5") & UIW__X_RW);
    CHECK(!(flags_for(&t, 0, "2001:db8:1::5") & UIW__X_RW));
    CHECK(flags_for(&t, 0, "::1") & UIW__X_ALL_SQUASH);
    /* an IPv4 peer on a dual-stack listener */
    CHECK(!(flags_for(&t, 0, "::ffff:192.0.2.9") & UIW__X_ROOT_SQUASH));
    /* two networks: the first on the line */
    CHECK(flags_for(&t, 1, "192.0.2.1") & UIW__X_RW);
    CHECK(!(flags_for(&t, 1, "192.0.2.200") & UIW__X_RW));
    CHECK_EQ(flags_for(&t, 1, "192.0.3.1"), ~0u);
    /* one host, nobody else */
    CHECK(flags_for(&t, 2, "10.1.2.3") != ~0u);
    CHECK_EQ(flags_for(&t, 2, "10.1.2.4"), ~0u);
    uiw__nfs_xtable_free(&t);
    /* a host name, resolved when read */
    parse_ok("/h localhost(rw)\n", &t);
    CHECK(flags_for(&t, 0, "127.0.0.1") & UIW__X_RW);
    CHECK_EQ(flags_for(&t, 0, "127.0.0.2"), ~0u);
    uiw__nfs_xtable_free(&t);
}

/* Every error names its line; nothing is guessed. */
TEST(exports_errors)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"/a *(rw)\n/b *(rw,bogus)\n", "exports:2: unknown option 'bogus'"},
        {"/a localhost (rw)\n", "exports:1: '(rw)': a space before '('"},
        {"relative *(rw)\n", "exports:1: 'relative' is not an absolute path"},
        {"/a *(rw\n", "exports:1: '*(rw': options go in one pair of parentheses"},
        {"/a @group(rw)\n", "exports:1: '@group': netgroups are not supported"},
        {"/a *.example.com(rw)\n", "exports:1: '*.example.com': wildcard host names"},
        {"/a 192.0.2.0/33(rw)\n", "exports:1: '192.0.2.0/33': the prefix is not 0 to 32"},
        {"/a 192.0.2.0/255.0.255.0(rw)\n", "exports:1: '192.0.2.0/255.0.255.0': the netmask"},
        {"/a *(anonuid=-1)\n", "exports:1: anonuid takes a number"},
        {"/a *(fsid=x)\n", "exports:1: fsid takes a number or 'root'"},
        {"/a *(sec=krb5)\n", "exports:1: sec=krb5: flavor 'krb5' is not served"},
        {"/a *()\n", "exports:1: empty option list"},
        {"/a *(ro)\n\n/a *(rw)\n", "exports:3: /a is exported on line 1 already"},
        {"/a \\\n \"b *(rw)\n", "exports:1: a quote that does not end"},
        {"/a no-such-host.invalid(rw)\n", "exports:1: host 'no-such-host.invalid' cannot"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct uiw__nfs_xtable t;
        char err[512];
        if (uiw__nfs_exports_parse(bad[i].text, "exports", &t, err, sizeof(err)) == 0)
            uiw_test_fail(__FILE__, __LINE__, "taken: %s", bad[i].text);
        if (strncmp(err, bad[i].want, strlen(bad[i].want)) != 0)
            uiw_test_fail(__FILE__, __LINE__, "'%s': said '%s', not '%s'", bad[i].text, err,
                          bad[i].want);
        CHECK_EQ(t.n, 0);
    }
}
