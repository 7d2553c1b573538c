/*
 * get, put, cp and cat: a file moved block by block between a local file and an NFS file
 * (or two NFS files). Remote writes are UNSTABLE and end with a COMMIT whose verifier
 * must match every WRITE's (else the server restarted in between and the copy is done
 * again with FILE_SYNC writes). --verify reads the source and the destination again
 * afterwards, each in a pass of its own (a local file opened anew by its name, a remote
 * one with new READ calls), and fails unless both hold as many bytes as their sizes say
 * and as were copied, with the same SHA-256: not the bytes the copy moved, which a short
 * write or a short read would leave matching themselves.
 * put and get take many files; --json prints one object per file and, for more than
 * one, a total: bytes, seconds (the checksums' time left out), MB/s, and the median and
 * 99th percentile latency of the READ or WRITE calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs.h"

/* One end of a copy. */
struct end {
    struct target *t; /* remote, or NULL */
    int fd;           /* local */
    const char *label;
    struct xstats *st; /* the remote calls' latencies, or NULL */
};

static int end_read(struct end *e, uint64_t off, void *buf, uint32_t n, int *eof)
{
    if (e->t) {
        double t0 = now_s();
        int rc = uiw__nfs_read(e->t->c, &e->t->fh, off, n, buf, eof);
        if (rc < 0) {
            fprintf(stderr, "uiw-nfs: read %s: %s\n", e->label, uiw__nfs_errtext(e->t->c, rc));
            return rc;
        }
        if (e->st)
            xstats_lat(e->st, now_s() - t0);
        return rc;
    }
    ssize_t k;
    do
        k = pread(e->fd, buf, n, (off_t)off);
    while (k < 0 && errno == EINTR);
    if (k < 0 && errno == ESPIPE) /* a pipe: sequential */
        k = read(e->fd, buf, n);
    if (k < 0) {
        fprintf(stderr, "uiw-nfs: read %s: %s\n", e->label, strerror(errno));
        return -1;
    }
    *eof = k == 0;
    return (int)k;
}

static int end_write(struct end *e, uint64_t off, const void *buf, uint32_t n, stable_how how,
                     char verf[8])
{
    uint32_t done = 0;
    while (done < n) {
        int rc;
        if (e->t) {
            double t0 = now_s();
            rc = uiw__nfs_write(e->t->c, &e->t->fh, off + done, n - done, (const char *)buf + done,
                                how, verf);
            if (rc < 0) {
                fprintf(stderr, "uiw-nfs: write %s: %s\n", e->label, uiw__nfs_errtext(e->t->c, rc));
                return -1;
            }
            if (e->st)
                xstats_lat(e->st, now_s() - t0);
        } else {
            ssize_t k = pwrite(e->fd, (const char *)buf + done, n - done, (off_t)(off + done));
            if (k < 0 && errno == ESPIPE)
                k = write(e->fd, (const char *)buf + done, n - done);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                fprintf(stderr, "uiw-nfs: write %s: %s\n", e->label, strerror(errno));
                return -1;
            }
            rc = (int)k;
        }
        if (rc == 0) {
            fprintf(stderr, "uiw-nfs: write %s: no progress\n", e->label);
            return -1;
        }
        done += (uint32_t)rc;
    }
    return 0;
}

/* The SHA-256 of what an end holds now, read again from the start in a pass of its own
 * (a local file opened again by its name, not through the descriptor the copy used; a
 * remote one with new READ calls), its length in *len; and the size the end reports for
 * itself afterwards (fstat, GETATTR) in *size. */
static int end_hash(struct end *e, void *buf, uint32_t bs, char hex[65], uint64_t *len,
                    uint64_t *size)
{
    struct end again = *e;
    again.st = NULL;
    if (!e->t) {
        again.fd = open(e->label, O_RDONLY | O_CLOEXEC);
        if (again.fd < 0) {
            fprintf(stderr, "uiw-nfs: verify: %s: %s\n", e->label, strerror(errno));
            return -1;
        }
    }
    struct sha *h = sha_new();
    uint64_t off = 0;
    int rc = 0;
    for (;;) {
        int eof = 0;
        int n = end_read(&again, off, buf, bs, &eof);
        if (n < 0) {
            rc = -1;
            break;
        }
        sha_update(h, buf, (size_t)n);
        off += (uint64_t)n;
        if (n == 0 || (e->t && eof))
            break;
    }
    sha_hex(h, hex);
    *len = off;
    if (rc == 0 && e->t) {
        fattr3 a;
        int g = uiw__nfs_getattr(e->t->c, &e->t->fh, &a);
        if (g != 0) {
            fprintf(stderr, "uiw-nfs: verify: getattr %s: %s\n", e->label,
                    uiw__nfs_errtext(e->t->c, g));
            rc = -1;
        }
        *size = a.size;
    } else if (rc == 0) {
        struct stat st;
        if (fstat(again.fd, &st) != 0) {
            fprintf(stderr, "uiw-nfs: verify: %s: %s\n", e->label, strerror(errno));
            rc = -1;
        }
        *size = (uint64_t)st.st_size;
    }
    if (!e->t)
        close(again.fd);
    return rc;
}

/* --verify: the source and the destination each read again in a pass of its own (not
 * the bytes the copy moved), the same length as each one's size and as the copy, and the
 * same SHA-256; dst_hex gets the destination's. */
static int verify(struct end *src, struct end *dst, uint64_t copied, void *buf, uint32_t bs,
                  char dst_hex[65])
{
    char src_hex[65];
    uint64_t slen, ssize, dlen, dsize;
    if (end_hash(src, buf, bs, src_hex, &slen, &ssize) != 0 ||
        end_hash(dst, buf, bs, dst_hex, &dlen, &dsize) != 0)
        return -1;
    if (slen != ssize || dlen != dsize || slen != dlen || dlen != copied) {
        fprintf(stderr,
                "uiw-nfs: verify FAILED: %s holds %llu bytes (size %llu), %s %llu (size "
                "%llu), %llu copied\n",
                src->label, (unsigned long long)slen, (unsigned long long)ssize, dst->label,
                (unsigned long long)dlen, (unsigned long long)dsize, (unsigned long long)copied);
        return -1;
    }
    if (strcmp(src_hex, dst_hex) != 0) {
        fprintf(stderr, "uiw-nfs: verify FAILED: %s has sha256 %s, %s has %s\n", src->label,
                src_hex, dst->label, dst_hex);
        return -1;
    }
    fprintf(stderr, "uiw-nfs: verified %s: sha256 %s, %llu bytes\n", dst->label, dst_hex,
            (unsigned long long)dlen);
    return 0;
}

/* Print a transfer's figures as one JSON object (what: "file":NAME or "files":N). */
static void report(const char *op, const char *what_key, const char *what, unsigned files,
                   const char *transport, struct xstats *st, const char *sha)
{
    lat_sort(st->lat, st->n);
    printf("{\"op\":\"%s\",", op);
    if (what) {
        printf("\"%s\":", what_key);
        json_str(stdout, what);
    } else {
        printf("\"files\":%u", files);
    }
    printf(",\"transport\":\"%s\",\"bytes\":%llu,\"secs\":%.6f,\"mbytes_per_sec\":%.2f,"
           "\"calls\":%zu,\"p50_us\":%.1f,\"p99_us\":%.1f",
           transport, (unsigned long long)st->bytes, st->secs,
           st->secs > 0 ? (double)st->bytes / st->secs / 1e6 : 0.0, st->n,
           lat_pct(st->lat, st->n, 0.50) * 1e6, lat_pct(st->lat, st->n, 0.99) * 1e6);
    if (sha)
        printf(",\"sha256\":\"%s\"", sha);
    printf("}\n");
    fflush(stdout);
}

/* Copy src to dst; total is the source's size for the progress bar (0 if unknown). On
 * success *st (which starts empty) has the bytes, the seconds without the checksums' and
 * the remote end's call latencies. */
static int copy(const struct opts *o, struct end *src, struct end *dst, uint64_t total, uint32_t bs,
                struct xstats *st)
{
    char *buf = malloc(bs);
    if (!buf) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        return 1;
    }
    int rc = 1;
    char dst_hex[65] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        stable_how how = attempt ? FILE_SYNC : UNSTABLE;
        struct progress p;
        progress_start(&p, o, dst->label, total);
        uint64_t off = 0;
        char verf[8] = {0}, first[8] = {0};
        int have_verf = 0, changed = 0, failed = 0;
        xstats_free(st);
        src->st = src->t ? st : NULL;
        dst->st = dst->t ? st : NULL;
        double t0 = now_s();
        for (;;) {
            int eof = 0;
            int n = end_read(src, off, buf, bs, &eof);
            if (n < 0) {
                failed = 1;
                break;
            }
            if (n > 0) {
                if (end_write(dst, off, buf, (uint32_t)n, how, verf) != 0) {
                    failed = 1;
                    break;
                }
                if (dst->t) {
                    if (!have_verf)
                        memcpy(first, verf, 8);
                    else if (memcmp(first, verf, 8) != 0)
                        changed = 1;
                    have_verf = 1;
                }
                off += (uint64_t)n;
                progress_update(&p, off);
            }
            if (n == 0 || (src->t && eof))
                break;
        }
        if (!failed && dst->t && how == UNSTABLE && off > 0) {
            int c = uiw__nfs_commit(dst->t->c, &dst->t->fh, verf);
            if (c != 0) {
                fprintf(stderr, "uiw-nfs: commit %s: %s\n", dst->label,
                        uiw__nfs_errtext(dst->t->c, c));
                failed = 1;
            } else if (memcmp(first, verf, 8) != 0) {
                changed = 1;
            }
        }
        if (!failed && !dst->t && dst->fd >= 0 && fsync(dst->fd) != 0 && errno != EINVAL) {
            fprintf(stderr, "uiw-nfs: %s: %s\n", dst->label, strerror(errno));
            failed = 1;
        }
        progress_end(&p);
        if (failed)
            break;
        if (changed) {
            fprintf(stderr,
                    "uiw-nfs: %s: the server restarted during the copy (write "
                    "verifier changed): copying again with FILE_SYNC\n",
                    dst->label);
            continue;
        }
        double dt = now_s() - t0;
        st->files = 1;
        st->bytes = off;
        st->secs = dt;
        src->st = dst->st = NULL;
        if (o->verbose)
            fprintf(stderr, "uiw-nfs: %s: %llu bytes in %.3f s (%.1f MB/s)\n", dst->label,
                    (unsigned long long)off, dt, dt > 0 ? (double)off / dt / 1e6 : 0.0);
        if (o->verify && verify(src, dst, off, buf, bs, dst_hex) != 0)
            break;
        rc = 0;
        break;
    }
    src->st = dst->st = NULL;
    if (rc == 0 && o->json) {
        struct target *t = src->t ? src->t : dst->t;
        report(src->t && dst->t ? "cp"
               : src->t         ? "get"
                                : "put",
               "file", dst->label, 1, t ? uiw__nfs_client_transport(t->c) : "local", st,
               dst_hex[0] ? dst_hex : NULL);
    }
    free(buf);
    return rc;
}

/* The remote destination of a put or cp: the URL's file (created, or truncated), or a
 * file of name `base` in it when the URL names a directory. */
static int open_dst(struct target *t, const char *base)
{
    if (t->exists && t->attr.type == NF3DIR) {
        t->dir = t->fh;
        snprintf(t->name, sizeof(t->name), "%s", base);
        fattr3 a;
        int rc = uiw__nfs_lookup(t->c, &t->dir, t->name, &t->fh, &a);
        t->exists = rc == 0;
        if (rc == 0)
            t->attr = a;
        else if (rc != -NFS3ERR_NOENT) {
            say_nfs(t, t->name, rc);
            return -1;
        }
    }
    if (!t->name[0]) {
        fprintf(stderr, "uiw-nfs: the export's root is a directory\n");
        return -1;
    }
    if (t->exists && t->attr.type == NF3DIR) {
        fprintf(stderr, "uiw-nfs: %s is a directory\n", t->name);
        return -1;
    }
    int rc;
    if (t->exists)
        rc = uiw__nfs_truncate(t->c, &t->fh, 0);
    else
        rc = uiw__nfs_create(t->c, &t->dir, t->name, 0644, 0, &t->fh);
    if (rc != 0) {
        say_nfs(t, t->name, rc);
        return -1;
    }
    return 0;
}

/* Open a URL that must name a file (not a directory); 0, or 1 after saying why. */
static int open_file(const char *url, const struct opts *o, struct target *t)
{
    if (target_open_existing(url, o, t) != 0)
        return 1;
    if (t->attr.type == NF3DIR) {
        fprintf(stderr, "uiw-nfs: %s: is a directory\n", url);
        target_close(t);
        return 1;
    }
    return 0;
}

/* Figures of several transfers: each one's added to the total, printed at the end when
 * there was more than one. */
struct totals {
    struct xstats all;
    char transport[16];
};

static void totals_add(struct totals *tt, struct xstats *st, const struct target *t)
{
    if (!tt->all.files)
        snprintf(tt->transport, sizeof(tt->transport), "%s", uiw__nfs_client_transport(t->c));
    xstats_add(&tt->all, st);
    xstats_free(st);
}

static void totals_end(const struct opts *o, struct totals *tt, const char *op)
{
    if (o->json && tt->all.files > 1)
        report(op, NULL, NULL, tt->all.files, tt->transport, &tt->all, NULL);
    xstats_free(&tt->all);
}

/* One remote file to a local path (a file, a directory to put it in, or - for standard
 * output). */
static int get_one(const struct opts *o, const char *url, const char *local, struct totals *tt)
{
    struct target t;
    if (open_file(url, o, &t) != 0)
        return 1;
    struct stat st;
    char path[4096];
    if (!local)
        local = t.name;
    if (strcmp(local, "-") != 0 && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(path, sizeof(path), "%s/%s", local, t.name);
        local = path;
    }
    int rc = 1;
    int fd = strcmp(local, "-") == 0 ? STDOUT_FILENO
                                     : open(local, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        target_close(&t);
        return 1;
    }
    struct end src = {&t, -1, url, NULL}, dst = {NULL, fd, local, NULL};
    struct opts oo = *o;
    if (fd == STDOUT_FILENO)
        oo.verify = 0; /* a pipe cannot be read back */
    struct xstats xs = {0};
    rc = copy(&oo, &src, &dst, t.attr.size, block_size(o, t.c, 1), &xs);
    if (fd != STDOUT_FILENO && close(fd) != 0 && rc == 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        rc = 1;
    }
    totals_add(tt, &xs, &t);
    target_close(&t);
    return rc;
}

/* get URL [LOCAL|-], get URL... LOCAL_DIR, get URL... (into the current directory). */
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
    if (local && strcmp(local, "-") == 0)
        targets_data_on_stdout();
    int rc = 0;
    struct totals tt = {0};
    for (int i = 0; i < nurl; i++)
        if (get_one(o, argv[i], local, &tt) != 0)
            rc = 1;
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
    for (int i = 0; i < argc; i++) {
        struct target t;
        if (open_file(argv[i], o, &t) != 0) {
            rc = 1;
            continue;
        }
        struct end src = {&t, -1, argv[i], NULL},
                   dst = {NULL, STDOUT_FILENO, "standard output", NULL};
        struct xstats xs = {0};
        if (copy(&oo, &src, &dst, t.attr.size, block_size(o, t.c, 1), &xs) != 0)
            rc = 1;
        xstats_free(&xs);
        target_close(&t);
    }
    return rc;
}

/* One local file (or - for standard input) to an open remote target. */
static int put_one(const struct opts *o, const char *local, struct target *t, const char *url,
                   struct totals *tt)
{
    int fd = strcmp(local, "-") == 0 ? STDIN_FILENO : open(local, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        return 1;
    }
    struct stat st;
    int bad = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (bad) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(bad));
        if (fd != STDIN_FILENO)
            close(fd);
        return 1;
    }
    char tmp[4096], label[4096 + 300];
    snprintf(tmp, sizeof(tmp), "%s", local);
    int rc = 1, into_dir = t->exists && t->attr.type == NF3DIR;
    if (open_dst(t, strcmp(local, "-") == 0 ? "stdin" : basename(tmp)) == 0) {
        /* The file's own URL: the directory's with the name before the parameters. */
        size_t q = strcspn(url, "?"), n = q;
        while (into_dir && n > 0 && url[n - 1] == '/')
            n--;
        if (into_dir)
            snprintf(label, sizeof(label), "%.*s/%s%s", (int)n, url, t->name, url + q);
        else
            snprintf(label, sizeof(label), "%s", url);
        struct end src = {NULL, fd, local, NULL}, dst = {t, -1, label, NULL};
        struct xstats xs = {0};
        rc = copy(o, &src, &dst, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0,
                  block_size(o, t->c, 0), &xs);
        totals_add(tt, &xs, t);
    }
    if (fd != STDIN_FILENO)
        close(fd);
    return rc;
}

/* put LOCAL|- URL, put LOCAL... DIR_URL. */
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
    int rc = 0;
    if (argc > 2 && !(t.exists && t.attr.type == NF3DIR)) {
        fprintf(stderr, "uiw-nfs: put: %s is not a directory (more than one file)\n", url);
        rc = 1;
    }
    struct totals tt = {0};
    for (int i = 0; i < argc - 1 && rc == 0; i++) {
        struct target d = t; /* the directory, or the URL's file, anew for each */
        if (put_one(o, argv[i], &d, url, &tt) != 0)
            rc = 1;
    }
    totals_end(o, &tt, "put");
    target_close(&t);
    return rc;
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
    if (open_file(argv[0], o, &s) != 0)
        return 1;
    if (target_open(argv[1], o, &d) != 0) {
        target_close(&s);
        return 1;
    }
    int rc = 1;
    if (open_dst(&d, s.name) == 0) {
        struct end src = {&s, -1, argv[0], NULL}, dst = {&d, -1, argv[1], NULL};
        uint32_t bs = block_size(o, s.c, 1), bw = block_size(o, d.c, 0);
        struct xstats xs = {0};
        rc = copy(o, &src, &dst, s.attr.size, bs < bw ? bs : bw, &xs);
        xstats_free(&xs);
    }
    target_close(&d);
    target_close(&s);
    return rc;
}
