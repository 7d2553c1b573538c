/*
 * get, put, cp and cat: the files named become jobs (copy.c), which move each file
 * between a local file and an NFS file (or two NFS files), --parallel of them at once.
 * put and get take many files; --json prints one object per file and, for more than one,
 * a total: bytes, seconds (the checksums' time left out; the sum of the files'), MB/s,
 * the median and 99th percentile latency of the READ or WRITE calls, and the time from
 * the first file's start to the last one's end with the files per second over it. A
 * file that fails is said so and the others go on; the exit status is 1 when any failed.
 * With -r, a directory named is copied with what it holds: its directories made on the
 * other side first, each before what it holds (MKDIR, or mkdir here), then its files run
 * as jobs together.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nfs.h"

static char *dup_or_die(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        exit(1);
    }
    return d;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        exit(1);
    }
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* The URL of name in the directory a URL names: the name before the parameters. */
static char *url_in(const char *url, const char *name)
{
    size_t q = strcspn(url, "?"), n = q;
    while (n > 0 && url[n - 1] == '/')
        n--;
    size_t len = n + strlen(name) + strlen(url + q) + 2;
    char *p = malloc(len);
    if (!p) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        exit(1);
    }
    snprintf(p, len, "%.*s/%s%s", (int)n, url, name, url + q);
    return p;
}

/* A list of jobs growing. */
struct jobs {
    struct job *v;
    size_t n, cap;
};

static struct job *job_add(struct jobs *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct job *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            fprintf(stderr, "uiw-nfs: out of memory\n");
            exit(1);
        }
        l->v = v;
        l->cap = cap;
    }
    struct job *j = &l->v[l->n++];
    memset(j, 0, sizeof(*j));
    j->src.fd = j->dst.fd = -1;
    return j;
}

/* An earlier job to the same local path or remote name makes this one wait for it (the
 * last one named wins, as when they ran one after the other). */
static void order_after_same(struct jobs *l)
{
    struct job *j = &l->v[l->n - 1];
    for (size_t i = l->n - 1; i-- > 0;) {
        struct job *k = &l->v[i];
        int same = j->dst.c ? k->dst.c == j->dst.c && k->dst.dir == j->dst.dir && k->dst.name &&
                                  j->dst.name && strcmp(k->dst.name, j->dst.name) == 0
                            : !k->dst.c && k->dst.path && j->dst.path &&
                                  strcmp(k->dst.path, j->dst.path) == 0;
        if (same) {
            j->after = i + 1;
            return;
        }
    }
}

/* The handles of the directories a tree's jobs go into (or come from), each allocated
 * once and freed after the jobs ran. */
struct handles {
    struct uiw__nfs_fh **v;
    size_t n, cap;
};

static const struct uiw__nfs_fh *handle_keep(struct handles *h, const struct uiw__nfs_fh *fh)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        struct uiw__nfs_fh **v = realloc(h->v, cap * sizeof(*v));
        if (!v) {
            fprintf(stderr, "uiw-nfs: out of memory\n");
            exit(1);
        }
        h->v = v;
        h->cap = cap;
    }
    struct uiw__nfs_fh *k = malloc(sizeof(*k));
    if (!k) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        exit(1);
    }
    *k = *fh;
    h->v[h->n++] = k;
    return k;
}

static void handles_free(struct handles *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i]);
    free(h->v);
    memset(h, 0, sizeof(*h));
}

/* What -r leaves: neither a regular file nor a directory. */
static int not_copied(const char *what)
{
    fprintf(stderr, "uiw-nfs: %s: not a regular file or directory: not copied\n", what);
    return 1;
}

/* Run the jobs and free them: how many failed. */
static int run_jobs(const struct opts *o, const char *op, struct jobs *l, struct totals *tt)
{
    int failed = l->n ? copy_run(o, op, l->v, l->n, tt) : 0;
    for (size_t i = 0; i < l->n; i++)
        job_free(&l->v[i]);
    l->n = 0;
    return failed;
}

/* A job getting the file name in t's directory (its URL: url) to local: a file, a
 * directory to put it in, - for standard output, or NULL for the current directory. */
static void get_job(struct jobs *l, struct target *t, const char *url, const char *local,
                    const struct opts *o)
{
    struct job *j = job_add(l);
    j->src.c = t->c;
    j->src.dir = &t->dir;
    j->src.name = dup_or_die(t->name);
    j->src.label = dup_or_die(url);
    struct stat st;
    if (!local)
        j->dst.path = dup_or_die(t->name);
    else if (strcmp(local, "-") == 0)
        j->dst.path = NULL;
    else if (stat(local, &st) == 0 && S_ISDIR(st.st_mode))
        j->dst.path = join(local, t->name);
    else
        j->dst.path = dup_or_die(local);
    j->dst.label = dup_or_die(j->dst.path ? j->dst.path : "-");
    j->bs = block_size(o, t->c, 1);
    order_after_same(l);
}

/* An entry of a remote directory (READDIRPLUS). */
struct entry {
    char *name;
    int has_attr, has_fh;
    fattr3 attr;
    struct uiw__nfs_fh fh;
};

struct entries {
    struct entry *v;
    size_t n, cap;
};

static int entry_add(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
                     const struct uiw__nfs_fh *fh)
{
    (void)fileid;
    struct entries *e = arg;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        struct entry *v = realloc(e->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        e->v = v;
        e->cap = cap;
    }
    struct entry *x = &e->v[e->n];
    memset(x, 0, sizeof(*x));
    if (!(x->name = strdup(name)))
        return -ENOMEM;
    e->n++;
    if (attr) {
        x->has_attr = 1;
        x->attr = *attr;
    }
    if (fh) {
        x->has_fh = 1;
        x->fh = *fh;
    }
    return 0;
}

static int entry_by_name(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* get -r: the remote directory dir (a handle kept; its URL: url) becomes the local
 * directory local (made, or taken when there is one), with what it holds in the order
 * of its names: directories made here (each before what it holds), files as jobs. 0, or
 * 1 when something was not copied (said). */
static int get_tree(struct jobs *l, struct handles *hs, struct uiw__nfs_client *c,
                    const struct uiw__nfs_fh *dir, const char *url, const char *local,
                    const struct opts *o)
{
    struct stat st;
    if (mkdir(local, 0777) != 0 &&
        (errno != EEXIST || stat(local, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local,
                errno == EEXIST ? "not a directory" : strerror(errno));
        return 1;
    }
    struct entries es = {0};
    int r = uiw__nfs_readdir(c, dir, entry_add, &es), rc = 0;
    if (r != 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", url,
                r == -ENOMEM ? strerror(ENOMEM) : uiw__nfs_errtext(c, r));
        rc = 1;
    } else if (es.n) {
        qsort(es.v, es.n, sizeof(*es.v), entry_by_name);
    }
    for (size_t i = 0; i < es.n; i++) {
        struct entry *e = &es.v[i];
        char *path = join(local, e->name), *u = url_in(url, e->name);
        if (!e->has_attr || !e->has_fh) /* the server sent neither: ask */
            r = uiw__nfs_lookup(c, dir, e->name, &e->fh, &e->attr);
        else
            r = 0;
        if (r != 0) {
            fprintf(stderr, "uiw-nfs: %s: %s\n", u, uiw__nfs_errtext(c, r));
            rc = 1;
        } else if (e->attr.type == NF3DIR) {
            rc |= get_tree(l, hs, c, handle_keep(hs, &e->fh), u, path, o);
        } else if (e->attr.type == NF3REG) {
            *job_add(l) = (struct job){
                .src = {.c = c, .fh = e->fh, .size = e->attr.size, .label = u, .fd = -1},
                .dst = {.path = path, .label = dup_or_die(path), .fd = -1},
                .bs = block_size(o, c, 1)};
            path = u = NULL; /* the job's */
        } else {
            rc |= not_copied(u);
        }
        free(path);
        free(u);
        free(e->name);
    }
    free(es.v);
    return rc;
}

/* get -r of one URL, a directory or a file, as jobs: into local (a directory, or where
 * nothing is yet the copy itself; NULL: the current directory) under its own name (the
 * export's root: its contents into local). 0, or 1 when something was not copied (said). */
static int get_url_tree(struct jobs *l, struct handles *hs, struct target *t, const char *url,
                        const char *local, const struct opts *o)
{
    if (t->attr.type != NF3DIR) {
        get_job(l, t, url, local, o);
        return 0;
    }
    struct stat st;
    char *to;
    if (local && strcmp(local, "-") == 0) {
        fprintf(stderr, "uiw-nfs: get -r: %s is a directory: not to standard output\n", url);
        return 1;
    } else if (!local && !t->name[0]) {
        fprintf(stderr, "uiw-nfs: get -r: the export's root goes into a directory: name one\n");
        return 1;
    } else if (!local) {
        to = dup_or_die(t->name);
    } else if (stat(local, &st) == 0 && S_ISDIR(st.st_mode) && t->name[0]) {
        to = join(local, t->name);
    } else {
        to = dup_or_die(local);
    }
    int rc = get_tree(l, hs, t->c, &t->fh, url, to, o);
    free(to);
    return rc;
}

/* get URL [LOCAL|-], get URL... LOCAL_DIR, get URL... (into the current directory). The
 * URLs of one directory one after the other share a client, and run as jobs together;
 * with -r each URL's files run together. */
int cmd_get(const struct opts *o, int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: uiw-nfs get URL [LOCAL|-] | URL... [LOCAL_DIR]\n");
        return 2;
    }
    int nurl = argc == 1 || is_url(argv[argc - 1]) ? argc : argc - 1;
    const char *local = nurl < argc ? argv[argc - 1] : NULL;
    struct stat st;
    if (nurl == 0 || (nurl > 1 && local && (stat(local, &st) != 0 || !S_ISDIR(st.st_mode)))) {
        fprintf(stderr, "uiw-nfs: get: %s\n",
                nurl == 0 ? "no URL" : "more than one URL goes into a directory");
        return 2;
    }
    if (o->json && local && strcmp(local, "-") == 0) {
        fprintf(stderr, "uiw-nfs: get: --json writes on standard output: give a file\n");
        return 2;
    }
    struct opts oo = *o;
    if (local && strcmp(local, "-") == 0) {
        targets_data_on_stdout();
        oo.verify = 0; /* a pipe cannot be read back */
    }
    int rc = 0;
    struct totals tt = {0};
    struct jobs l = {0};
    for (int i = 0; o->recursive && i < nurl; i++) {
        struct target t;
        struct handles hs = {0};
        if (target_open_existing(argv[i], o, &t) != 0) {
            rc = 1;
            continue;
        }
        rc |= get_url_tree(&l, &hs, &t, argv[i], local, o);
        if (run_jobs(&oo, "get", &l, &tt))
            rc = 1;
        handles_free(&hs);
        target_close(&t);
    }
    for (int i = 0; !o->recursive && i < nurl;) {
        struct target t;
        if (target_open_dir(argv[i], o, &t) != 0) {
            rc = 1;
            i++;
            continue;
        }
        for (;;) {
            if (!t.name[0]) {
                fprintf(stderr, "uiw-nfs: %s: is a directory\n", argv[i]);
                rc = 1;
            } else {
                get_job(&l, &t, argv[i], local, o);
            }
            if (++i >= nurl || target_next(&t, argv[i]) != 0)
                break;
        }
        if (run_jobs(&oo, "get", &l, &tt))
            rc = 1;
        target_close(&t);
    }
    free(l.v);
    totals_end(o, &tt, "get");
    return rc;
}

int cmd_cat(const struct opts *o, int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: uiw-nfs cat URL...\n");
        return 2;
    }
    targets_data_on_stdout();
    int rc = 0;
    struct opts oo = *o;
    oo.verify = 0;
    oo.progress = 0;
    oo.json = 0;
    oo.parallel = 1;
    struct jobs l = {0};
    for (int i = 0; i < argc; i++) {
        struct target t;
        if (target_open_existing(argv[i], o, &t) != 0) {
            rc = 1;
            continue;
        }
        if (t.attr.type == NF3DIR) {
            fprintf(stderr, "uiw-nfs: %s: is a directory\n", argv[i]);
            rc = 1;
        } else {
            struct job *j = job_add(&l);
            j->src.c = t.c;
            j->src.fh = t.fh;
            j->src.size = t.attr.size;
            j->src.label = dup_or_die(argv[i]);
            j->dst.label = dup_or_die("standard output");
            j->bs = block_size(o, t.c, 1);
            if (run_jobs(&oo, "cat", &l, NULL))
                rc = 1;
        }
        target_close(&t);
    }
    free(l.v);
    return rc;
}

/* A job putting local (a file, or - for standard input) into the open remote target: the
 * URL's file, or a file of the local file's name in the directory it names. */
static int put_job(struct jobs *l, const struct target *t, const char *url, const char *local,
                   const struct opts *o)
{
    int into_dir = t->exists && t->attr.type == NF3DIR;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", local);
    const char *name = into_dir ? strcmp(local, "-") == 0 ? "stdin" : basename(tmp) : t->name;
    if (!name[0]) {
        fprintf(stderr, "uiw-nfs: the export's root is a directory\n");
        return 1;
    }
    struct job *j = job_add(l);
    j->src.path = strcmp(local, "-") == 0 ? NULL : dup_or_die(local);
    j->src.label = dup_or_die(local);
    struct stat st;
    if (j->src.path && stat(local, &st) == 0 && S_ISREG(st.st_mode))
        j->src.size = (uint64_t)st.st_size;
    j->dst.c = t->c;
    j->dst.dir = into_dir ? &t->fh : &t->dir;
    j->dst.name = dup_or_die(name);
    j->dst.label = into_dir ? url_in(url, name) : dup_or_die(url);
    j->bs = block_size(o, t->c, 0);
    order_after_same(l);
    return 0;
}

static int put_into(struct jobs *l, struct handles *hs, struct uiw__nfs_client *c,
                    const struct uiw__nfs_fh *dir, const char *local, const char *url,
                    const struct opts *o);

/* put -r: the local directory becomes the directory name in dir (made, or taken when
 * there is one), with what it holds; url is its URL. 0, or 1 when something was not
 * copied (said). */
static int put_dir(struct jobs *l, struct handles *hs, struct uiw__nfs_client *c,
                   const struct uiw__nfs_fh *dir, const char *name, const char *local,
                   const char *url, const struct opts *o)
{
    struct uiw__nfs_fh fh;
    int r = uiw__nfs_mkdir(c, dir, name, 0755, &fh);
    if (r == -NFS3ERR_EXIST) {
        fattr3 a;
        r = uiw__nfs_lookup(c, dir, name, &fh, &a);
        if (r == 0 && a.type != NF3DIR) {
            fprintf(stderr, "uiw-nfs: %s: not a directory\n", url);
            return 1;
        }
    }
    if (r != 0) {
        fprintf(stderr, "uiw-nfs: mkdir %s: %s\n", url, uiw__nfs_errtext(c, r));
        return 1;
    }
    return put_into(l, hs, c, handle_keep(hs, &fh), local, url, o);
}

/* What the local directory holds, in the order of its names: directories made there
 * (each before what it holds), files as jobs into dir (a handle kept). */
static int put_into(struct jobs *l, struct handles *hs, struct uiw__nfs_client *c,
                    const struct uiw__nfs_fh *dir, const char *local, const char *url,
                    const struct opts *o)
{
    struct dirent **ents;
    int n = scandir(local, &ents, NULL, alphasort), rc = 0;
    if (n < 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        struct stat st;
        char *path = join(local, name), *u = url_in(url, name);
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        } else if (lstat(path, &st) != 0) {
            fprintf(stderr, "uiw-nfs: %s: %s\n", path, strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rc |= put_dir(l, hs, c, dir, name, path, u, o);
        } else if (S_ISREG(st.st_mode)) {
            *job_add(l) = (struct job){
                .src = {.path = path,
                        .label = dup_or_die(path),
                        .size = (uint64_t)st.st_size,
                        .fd = -1},
                .dst = {.c = c, .dir = dir, .name = dup_or_die(name), .label = u, .fd = -1},
                .bs = block_size(o, c, 0)};
            path = u = NULL; /* the job's */
        } else {
            rc |= not_copied(path);
        }
        free(path);
        free(u);
        free(ents[i]);
    }
    free(ents);
    return rc;
}

/* put -r of a local directory into the open target: into the directory the URL names
 * under the local one's name (its contents when that is . or ..), or, for one directory
 * put where nothing is yet, as the URL itself. */
static int put_tree(struct jobs *l, struct handles *hs, const struct target *t, const char *url,
                    const char *local, int alone, const struct opts *o)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", local);
    const char *base = basename(tmp);
    if (t->exists && t->attr.type == NF3DIR) {
        if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(base, "/") == 0)
            return put_into(l, hs, t->c, &t->fh, local, url, o);
        char *u = url_in(url, base);
        int rc = put_dir(l, hs, t->c, &t->fh, base, local, u, o);
        free(u);
        return rc;
    }
    if (t->exists || !alone || !t->name[0]) {
        fprintf(stderr, "uiw-nfs: put: %s is not a directory\n", url);
        return 1;
    }
    return put_dir(l, hs, t->c, &t->dir, t->name, local, url, o);
}

/* put LOCAL|- URL, put LOCAL... DIR_URL (-r: directories too). */
int cmd_put(const struct opts *o, int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: uiw-nfs put LOCAL|- URL | LOCAL... DIR_URL\n");
        return 2;
    }
    const char *url = argv[argc - 1];
    struct target t;
    if (target_open(url, o, &t) != 0)
        return 1;
    if (argc > 2 && !(t.exists && t.attr.type == NF3DIR)) {
        fprintf(stderr, "uiw-nfs: put: %s is not a directory (more than one file)\n", url);
        target_close(&t);
        return 1;
    }
    int rc = 0;
    struct totals tt = {0};
    struct jobs l = {0};
    struct handles hs = {0};
    for (int i = 0; i < argc - 1; i++) {
        struct stat st;
        if (o->recursive && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            rc |= put_tree(&l, &hs, &t, url, argv[i], argc == 2, o);
        else if (put_job(&l, &t, url, argv[i], o) != 0)
            rc = 1;
    }
    if (run_jobs(o, "put", &l, &tt))
        rc = 1;
    free(l.v);
    handles_free(&hs);
    totals_end(o, &tt, "put");
    target_close(&t);
    return rc;
}

/* cp within one NFSv4.2 server: the destination made (or emptied) through d's client,
 * then COPY of the source into it, on the server. 0 done, 1 failed (said why), -1 the
 * server does not serve COPY (the caller reads and writes). */
static int copy_on_server(const struct opts *o, const struct target *s, struct target *d,
                          const struct uiw__nfs_fh *dir, const char *name, const char *label)
{
    struct uiw__nfs_fh fh;
    int r = uiw__nfs_create(d->c, dir, name, 0644, 0, &fh);
    if (r == 0)
        r = uiw__nfs_truncate(d->c, &fh, 0);
    if (r != 0) {
        say_nfs(d, label, r);
        return 1;
    }
    double t0 = now_s();
    int64_t n = uiw__nfs_copy(d->c, &s->fh, &fh, s->attr.size);
    if (n == -NFS3ERR_NOTSUPP)
        return -1;
    if (n < 0) {
        say_nfs(d, label, (int)n);
        return 1;
    }
    if ((uint64_t)n != s->attr.size) {
        fprintf(stderr, "uiw-nfs: cp: COPY of %" PRIu64 " bytes copied %" PRId64 "\n", s->attr.size,
                n);
        return 1;
    }
    if (o->verbose)
        fprintf(stderr, "uiw-nfs: cp: %" PRId64 " bytes by COPY on the server in %.3f s\n", n,
                now_s() - t0);
    return 0;
}

static int same_server(const struct uiw__nfs_url *a, const struct uiw__nfs_url *b)
{
    return strcmp(a->host, b->host) == 0 && a->port == b->port && a->transport == b->transport;
}

int cmd_cp(const struct opts *o, int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: uiw-nfs cp SRC DST (a URL on either side or both)\n");
        return 2;
    }
    int su = is_url(argv[0]), du = is_url(argv[1]);
    if (!su && !du) {
        fprintf(stderr, "uiw-nfs: cp: neither %s nor %s is an nfs:// URL\n", argv[0], argv[1]);
        return 2;
    }
    if (!su)
        return cmd_put(o, argc, argv);
    if (!du)
        return cmd_get(o, argc, argv);
    struct target s, d;
    if (target_open_existing(argv[0], o, &s) != 0)
        return 1;
    if (s.attr.type == NF3DIR) {
        fprintf(stderr, "uiw-nfs: %s: is a directory\n", argv[0]);
        target_close(&s);
        return 1;
    }
    if (target_open(argv[1], o, &d) != 0) {
        target_close(&s);
        return 1;
    }
    int into_dir = d.exists && d.attr.type == NF3DIR, rc = 1;
    const char *name = into_dir ? s.name : d.name;
    int copied = -1;
    if (name[0] && same_server(&s.url, &d.url) && strcmp(uiw__nfs_client_version(d.c), "4.2") == 0)
        copied = copy_on_server(o, &s, &d, into_dir ? &d.fh : &d.dir, name, argv[1]);
    if (copied >= 0) {
        rc = copied;
    } else if (!name[0]) {
        fprintf(stderr, "uiw-nfs: the export's root is a directory\n");
    } else {
        struct jobs l = {0};
        struct job *j = job_add(&l);
        j->src.c = s.c;
        j->src.fh = s.fh;
        j->src.size = s.attr.size;
        j->src.label = dup_or_die(argv[0]);
        j->dst.c = d.c;
        j->dst.dir = into_dir ? &d.fh : &d.dir;
        j->dst.name = dup_or_die(name);
        j->dst.label = dup_or_die(argv[1]);
        uint32_t bs = block_size(o, s.c, 1), bw = block_size(o, d.c, 0);
        j->bs = bs < bw ? bs : bw;
        rc = run_jobs(o, "cp", &l, NULL) != 0;
        free(l.v);
    }
    target_close(&d);
    target_close(&s);
    return rc;
}
