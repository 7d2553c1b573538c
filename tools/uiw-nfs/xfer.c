/*
 * get, put, cp and cat: a file moved block by block between a local file and an NFS file
 * (or two NFS files). Remote writes are UNSTABLE and end with a COMMIT whose verifier
 * must match every WRITE's (else the server restarted in between and the copy is done
 * again with FILE_SYNC writes). --verify hashes (SHA-256) what was read from the source
 * and what the destination holds afterwards, read back, and fails when they differ.
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
};

static int end_read(struct end *e, uint64_t off, void *buf, uint32_t n, int *eof)
{
    if (e->t) {
        int rc = uiw__nfs_read(e->t->c, &e->t->fh, off, n, buf, eof);
        if (rc < 0)
            fprintf(stderr, "uiw-nfs: read %s: %s\n", e->label, uiw__nfs_errtext(e->t->c, rc));
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
            rc = uiw__nfs_write(e->t->c, &e->t->fh, off + done, n - done, (const char *)buf + done,
                                how, verf);
            if (rc < 0) {
                fprintf(stderr, "uiw-nfs: write %s: %s\n", e->label, uiw__nfs_errtext(e->t->c, rc));
                return -1;
            }
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

/* The SHA-256 of what an end holds now (read back from the start). */
static int end_hash(struct end *e, void *buf, uint32_t bs, char hex[65])
{
    struct sha *h = sha_new();
    uint64_t off = 0;
    for (;;) {
        int eof = 0;
        int n = end_read(e, off, buf, bs, &eof);
        if (n < 0) {
            sha_hex(h, hex);
            return -1;
        }
        sha_update(h, buf, (size_t)n);
        off += (uint64_t)n;
        if (n == 0 || (e->t && eof))
            break;
    }
    sha_hex(h, hex);
    return 0;
}

/* Copy src to dst; total is the source's size for the progress bar (0 if unknown). */
static int copy(const struct opts *o, struct end *src, struct end *dst, uint64_t total, uint32_t bs)
{
    char *buf = malloc(bs);
    if (!buf) {
        fprintf(stderr, "uiw-nfs: out of memory\n");
        return 1;
    }
    int rc = 1;
    for (int attempt = 0; attempt < 2; attempt++) {
        stable_how how = attempt ? FILE_SYNC : UNSTABLE;
        struct sha *h = o->verify ? sha_new() : NULL;
        struct progress p;
        progress_start(&p, o, dst->label, total);
        uint64_t off = 0;
        char verf[8] = {0}, first[8] = {0};
        int have_verf = 0, changed = 0, failed = 0;
        double t0 = now_s();
        for (;;) {
            int eof = 0;
            int n = end_read(src, off, buf, bs, &eof);
            if (n < 0) {
                failed = 1;
                break;
            }
            if (n > 0) {
                if (h)
                    sha_update(h, buf, (size_t)n);
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
        char src_hex[65] = "";
        if (h)
            sha_hex(h, src_hex);
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
        if (o->verbose)
            fprintf(stderr, "uiw-nfs: %s: %llu bytes in %.3f s (%.1f MB/s)\n", dst->label,
                    (unsigned long long)off, dt, dt > 0 ? (double)off / dt / 1e6 : 0.0);
        if (o->verify) {
            char dst_hex[65];
            if (end_hash(dst, buf, bs, dst_hex) != 0)
                break;
            if (strcmp(src_hex, dst_hex) != 0) {
                fprintf(stderr, "uiw-nfs: verify FAILED: %s has sha256 %s, %s has %s\n", src->label,
                        src_hex, dst->label, dst_hex);
                break;
            }
            fprintf(stderr, "uiw-nfs: verified %s: sha256 %s\n", dst->label, dst_hex);
        }
        rc = 0;
        break;
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
            fprintf(stderr, "uiw-nfs: %s: %s\n", t->name, uiw__nfs_errtext(t->c, rc));
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
        fprintf(stderr, "uiw-nfs: %s: %s\n", t->name, uiw__nfs_errtext(t->c, rc));
        return -1;
    }
    return 0;
}

static int need_file(struct target *t, const char *url)
{
    if (!t->exists) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", url, uiw__nfs_errtext(t->c, -NFS3ERR_NOENT));
        return -1;
    }
    if (t->attr.type == NF3DIR) {
        fprintf(stderr, "uiw-nfs: %s: is a directory\n", url);
        return -1;
    }
    return 0;
}

int cmd_get(const struct opts *o, int argc, char **argv)
{
    if (argc < 1 || argc > 2) {
        fprintf(stderr, "usage: uiw-nfs get URL [LOCAL|-]\n");
        return 2;
    }
    struct target t;
    if (target_open(argv[0], o, &t) != 0)
        return 1;
    int rc = 1;
    if (need_file(&t, argv[0]) != 0)
        goto out;
    const char *local = argc == 2 ? argv[1] : t.name;
    struct stat st;
    char path[4096];
    if (strcmp(local, "-") != 0 && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(path, sizeof(path), "%s/%s", local, t.name);
        local = path;
    }
    int fd = strcmp(local, "-") == 0 ? STDOUT_FILENO
                                     : open(local, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        goto out;
    }
    struct end src = {&t, -1, argv[0]}, dst = {NULL, fd, local};
    struct opts oo = *o;
    if (fd == STDOUT_FILENO)
        oo.verify = 0; /* a pipe cannot be read back */
    rc = copy(&oo, &src, &dst, t.attr.size, block_size(o, t.c, 1));
    if (fd != STDOUT_FILENO && close(fd) != 0 && rc == 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        rc = 1;
    }
out:
    target_close(&t);
    return rc;
}

int cmd_cat(const struct opts *o, int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: uiw-nfs cat URL...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        struct target t;
        if (target_open(argv[i], o, &t) != 0) {
            rc = 1;
            continue;
        }
        if (need_file(&t, argv[i]) == 0) {
            struct end src = {&t, -1, argv[i]}, dst = {NULL, STDOUT_FILENO, "standard output"};
            struct opts oo = *o;
            oo.verify = 0;
            oo.progress = 0;
            if (copy(&oo, &src, &dst, t.attr.size, block_size(o, t.c, 1)) != 0)
                rc = 1;
        } else {
            rc = 1;
        }
        target_close(&t);
    }
    return rc;
}

int cmd_put(const struct opts *o, int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: uiw-nfs put LOCAL URL\n");
        return 2;
    }
    const char *local = argv[0];
    int fd = strcmp(local, "-") == 0 ? STDIN_FILENO : open(local, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local, strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        fprintf(stderr, "uiw-nfs: %s: %s\n", local,
                S_ISDIR(st.st_mode) ? "is a directory" : strerror(errno));
        if (fd != STDIN_FILENO)
            close(fd);
        return 1;
    }
    struct target t;
    if (target_open(argv[1], o, &t) != 0) {
        if (fd != STDIN_FILENO)
            close(fd);
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", local);
    int rc = 1;
    if (open_dst(&t, strcmp(local, "-") == 0 ? "stdin" : basename(tmp)) == 0) {
        struct end src = {NULL, fd, local}, dst = {&t, -1, argv[1]};
        rc = copy(o, &src, &dst, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0,
                  block_size(o, t.c, 0));
    }
    if (fd != STDIN_FILENO)
        close(fd);
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
    if (target_open(argv[0], o, &s) != 0)
        return 1;
    int rc = 1;
    if (need_file(&s, argv[0]) != 0) {
        target_close(&s);
        return 1;
    }
    if (target_open(argv[1], o, &d) != 0) {
        target_close(&s);
        return 1;
    }
    if (open_dst(&d, s.name) == 0) {
        struct end src = {&s, -1, argv[0]}, dst = {&d, -1, argv[1]};
        uint32_t bs = block_size(o, s.c, 1), bw = block_size(o, d.c, 0);
        rc = copy(o, &src, &dst, s.attr.size, bs < bw ? bs : bw);
    }
    target_close(&d);
    target_close(&s);
    return rc;
}
