/*
 * uiw-nfs: NFS versions 4.2, 4.1 and 3 from the command line, over TCP or RPC-over-RDMA.
 *
 *   uiw-nfs [options] ls|stat|cat|get|put|cp|mv|rm|mkdir|rmdir|lock|bench ARGS...
 *
 * URLs are libnfs's: nfs://HOST[:PORT]/EXPORT/PATH[?transport=rdma|tcp&rpcrdma=1|2
 * &mountport=N&uid=N&gid=N&version=3|4|4.1|4.2&owner=NAME]. Version 4.2 is tried first,
 * then 4.1, then 3 (unless ?version= names one): over NFSv4 the path is walked from the
 * server's root; over NFSv3 the export is found with MOUNT (over TCP) as the longest of
 * the server's exports that is a prefix of the path. Exit status 0 on success, 1 when an
 * operation fails, 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfs.h"

static const char usage[] =
    "usage: uiw-nfs [options] COMMAND ARGS...\n"
    "  ls URL...            list directories (ls -l style) or files\n"
    "  stat URL...          attributes\n"
    "  cat URL...           files to standard output\n"
    "  get URL [LOCAL|-]    copy a file here (LOCAL: a file or directory; default: its name)\n"
    "  get URL... [DIR]     copy files into a directory (default: the current one)\n"
    "  put LOCAL|- URL      copy a file there (URL: a file, or a directory to put it in)\n"
    "  put LOCAL... URL     copy files into the directory URL names\n"
    "  get -r, put -r       directories too, with what they hold\n"
    "  cp SRC DST           copy; either or both may be URLs\n"
    "  mv URL URL           rename on one server\n"
    "  rm URL...            remove files\n"
    "  mkdir URL...         make directories\n"
    "  rmdir URL...         remove empty directories\n"
    "  lock URL [OFF LEN]   take a write lock of LEN bytes at OFF (default: the whole\n"
    "                       file; NFSv4), waiting while another holds it, and hold it\n"
    "                       until SIGINT or SIGTERM\n"
    "  bench URL            sequential WRITE and READ of a file, a GETATTR rate and a\n"
    "                       CREATE rate\n"
    "URL: nfs://HOST[:PORT]/EXPORT/PATH[?transport=rdma|tcp&rpcrdma=1|2&mountport=N&uid=N&gid=N\n"
    "     &version=3|4|4.1|4.2&owner=NAME]  (version: default 4.2, falling back to 4.1\n"
    "     and 3; owner: NFSv4's client owner, default one of this host and run)\n"
    "options:\n"
    "  -v, --verbose        say what happens (version, session or mount, transport,\n"
    "                       rates)\n"
    "  -r, --recursive      get/put: a directory named is copied with what it holds\n"
    "      --verify         get/put/cp: read both ends again, compare sizes and SHA-256\n"
    "      --progress / --no-progress   force the progress bar on or off (default: on a\n"
    "                       terminal, for transfers longer than a second)\n"
    "  -b, --block BYTES    transfer block (default: the server's maximum, at most 1 MiB)\n"
    "  -P, --parallel N     get/put: files in flight at once, their calls interleaved on\n"
    "                       the one connection (default 8: enough to keep the calls of\n"
    "                       small files going out back to back; 1: one file at a time)\n"
    "  -s, --size BYTES     bench: file size (default 64M; K, M, G suffixes)\n"
    "      --inflight N     get/put/cp/cat: a file's READs or WRITEs in flight at once\n"
    "                       (default 4, at most 64; 1: one call at a time); bench:\n"
    "                       calls in flight (default 1)\n"
    "  -D, --seconds S      bench: GETATTR and CREATE durations (default 2)\n"
    "      --cpu-of PID     bench: also the CPU time process PID (a server on this host)\n"
    "                       used during each test, beside uiw-nfs's own\n"
    "      --json           bench, get, put: one JSON object per line (get and put: per\n"
    "                       file, and a total for several: MB/s, call latency p50, p99,\n"
    "                       NFS version, the CPU time uiw-nfs has used so far)\n"
    "      --inline-size BYTES  RPC-over-RDMA receive buffers (advertised to the server)\n"
    "                       and largest message sent inline, 1024 to 262144, a multiple\n"
    "                       of 1024 (default 32768: with a server that offers as much\n"
    "                       over Version Two, READ and WRITE data up to some 31 KiB go\n"
    "                       inline; 4096 with rpcrdma=1)\n"
    "      --ddp-threshold BYTES  RPC-over-RDMA: WRITE data of at least this many bytes\n"
    "                       goes in a Read chunk (the server pulls it by RDMA Read),\n"
    "                       shorter data inline (default 1024; over Version Two with\n"
    "                       larger buffers agreed: what does not fit them)\n"
    "      --stats          at the end, the RPC-over-RDMA counters of the connections (calls,\n"
    "                       retransmissions, credits, chunks, bytes by RDMA and inline,\n"
    "                       errors, the memory its buffers hold) and the RNIC's (bytes,\n"
    "                       FPDUs, CRC errors, Terminates, copies); with --json as one\n"
    "                       more line {\"stats\": ...}; on standard error when cat or\n"
    "                       get - writes data on standard output\n"
    "  -h, --help, --version\n";

static int parse_size(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno)
        return -1;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1024ull * 1024 * 1024, end++;
    if (*end || x > max / mul)
        return -1;
    *v = x * mul;
    return 0;
}

static void mode_string(const fattr3 *a, char out[11])
{
    static const char types[] = "?-dbclsp";
    out[0] = a->type <= NF3FIFO ? types[a->type] : '?';
    const char *rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; i++)
        out[1 + i] = (a->mode & (1u << (8 - i))) ? rwx[i] : '-';
    if (a->mode & 04000)
        out[3] = (a->mode & 0100) ? 's' : 'S';
    if (a->mode & 02000)
        out[6] = (a->mode & 010) ? 's' : 'S';
    if (a->mode & 01000)
        out[9] = (a->mode & 01) ? 't' : 'T';
    out[10] = 0;
}

static void print_long(const char *name, const fattr3 *a)
{
    char m[11], when[32];
    mode_string(a, m);
    time_t t = (time_t)a->mtime.seconds;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
    printf("%s %3u %5u %5u %12" PRIu64 " %s %s\n", m, a->nlink, a->uid, a->gid, a->size, when,
           name);
}

struct ent {
    char *name;
    fattr3 attr;
    int has_attr;
};

struct list {
    struct ent *v;
    size_t n, cap;
};

static int collect(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
                   const struct uiw__nfs_fh *fh)
{
    (void)fileid;
    (void)fh;
    struct list *l = arg;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        struct ent *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    struct ent *e = &l->v[l->n++];
    e->name = strdup(name);
    e->has_attr = attr != NULL;
    if (attr)
        e->attr = *attr;
    return e->name ? 0 : -ENOMEM;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* ls of one URL (argc: how many were given, to head each listing when several). */
static int ls_one(struct target *t, const char *url, int argc)
{
    if (t->attr.type != NF3DIR) {
        print_long(t->name, &t->attr);
        return 0;
    }
    struct list l = {0};
    int r = uiw__nfs_readdir(t->c, &t->fh, collect, &l);
    if (r != 0) {
        say_nfs(t, url, r);
    } else {
        if (argc > 1)
            printf("%s:\n", url);
        if (l.n)
            qsort(l.v, l.n, sizeof(*l.v), by_name);
        for (size_t k = 0; k < l.n; k++) {
            if (l.v[k].has_attr)
                print_long(l.v[k].name, &l.v[k].attr);
            else
                printf("?????????? %s\n", l.v[k].name);
        }
    }
    for (size_t k = 0; k < l.n; k++)
        free(l.v[k].name);
    free(l.v);
    return r != 0;
}

static int stat_one(struct target *t, const char *url)
{
    static const char *types[] = {
        "?",      "regular file", "directory", "block device", "character device", "symbolic link",
        "socket", "fifo"};
    const fattr3 *a = &t->attr;
    char m[11];
    mode_string(a, m);
    printf("  File: %s\n  Type: %s\n  Size: %" PRIu64 "\tUsed: %" PRIu64
           "\n  Mode: (%04o/%s)\tLinks: %u\tUid: %u\tGid: %u\n"
           "Fileid: %" PRIu64 "\tFsid: %016" PRIx64 "\n",
           url, a->type <= NF3FIFO ? types[a->type] : "?", a->size, a->used, a->mode & 07777, m,
           a->nlink, a->uid, a->gid, a->fileid, a->fsid);
    printf("Access: %u.%09u\nModify: %u.%09u\nChange: %u.%09u\n", a->atime.seconds,
           a->atime.nseconds, a->mtime.seconds, a->mtime.nseconds, a->ctime.seconds,
           a->ctime.nseconds);
    return 0;
}

/* rm, mkdir, rmdir: one call on the URL's directory and name. */
static int simple_one(struct target *t, const char *url, const char *cmd)
{
    int r;
    if (!t->name[0])
        r = -NFS3ERR_ACCES; /* the mounted directory itself */
    else if (strcmp(cmd, "mkdir") == 0)
        r = uiw__nfs_mkdir(t->c, &t->dir, t->name, 0755, NULL);
    else if (strcmp(cmd, "rmdir") == 0)
        r = uiw__nfs_rmdir(t->c, &t->dir, t->name);
    else
        r = uiw__nfs_remove(t->c, &t->dir, t->name);
    if (r != 0) {
        char what[1100];
        snprintf(what, sizeof(what), "%s %s", cmd, url);
        say_nfs(t, what, r);
    }
    return r != 0;
}

/* ls, stat, rm, mkdir, rmdir: each URL opened in turn (ls and stat need it to exist);
 * the exit status. */
static int cmd_each(const struct opts *o, const char *cmd, int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: uiw-nfs %s URL...\n", cmd);
        return 2;
    }
    int ls = strcmp(cmd, "ls") == 0, st = strcmp(cmd, "stat") == 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        struct target t;
        if ((ls || st ? target_open_existing(argv[i], o, &t) : target_open(argv[i], o, &t)) != 0) {
            rc = 1;
            continue;
        }
        if (ls   ? ls_one(&t, argv[i], argc)
            : st ? stat_one(&t, argv[i])
                 : simple_one(&t, argv[i], cmd))
            rc = 1;
        target_close(&t);
    }
    return rc;
}

static int cmd_mv(const struct opts *o, int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: uiw-nfs mv URL URL\n");
        return 2;
    }
    struct target s, d;
    if (target_open(argv[0], o, &s) != 0)
        return 1;
    if (target_open(argv[1], o, &d) != 0) {
        target_close(&s);
        return 1;
    }
    int rc = 1;
    if (strcmp(s.url.host, d.url.host) != 0 || s.url.port != d.url.port) {
        fprintf(stderr, "uiw-nfs: mv: both URLs must name one server\n");
    } else if (!s.name[0] || !d.name[0]) {
        fprintf(stderr, "uiw-nfs: mv: cannot move an export's root\n");
    } else {
        const char *to = d.name;
        struct uiw__nfs_fh *tdir = &d.dir;
        if (d.exists && d.attr.type == NF3DIR && s.attr.type != NF3DIR) {
            tdir = &d.fh; /* into the directory, keeping the name */
            to = s.name;
        }
        int r = uiw__nfs_rename(s.c, &s.dir, s.name, tdir, to);
        if (r != 0)
            fprintf(stderr, "uiw-nfs: mv: %s\n", uiw__nfs_errtext(s.c, r));
        else
            rc = 0;
    }
    target_close(&d);
    target_close(&s);
    return rc;
}

static volatile sig_atomic_t lock_stop;

static void lock_signal(int sig)
{
    (void)sig;
    lock_stop = 1;
}

static void lock_held(void *arg)
{
    printf("uiw-nfs: holding the lock on %s (SIGINT or SIGTERM releases it)\n", (const char *)arg);
    fflush(stdout);
}

/* lock URL [OFF LEN]: NFSv4's LOCK, held until a signal; 0 once released. */
static int cmd_lock(const struct opts *o, int argc, char **argv)
{
    uint64_t off = 0, len = 0;
    if (argc != 1 && argc != 3) {
        fprintf(stderr, "usage: uiw-nfs lock URL [OFFSET LENGTH]\n");
        return 2;
    }
    if (argc == 3 && (parse_size(argv[1], UINT64_MAX, &off) != 0 ||
                      parse_size(argv[2], UINT64_MAX, &len) != 0)) {
        fprintf(stderr, "uiw-nfs: lock: bad offset or length\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = lock_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct target t;
    if (target_open_existing(argv[0], o, &t) != 0)
        return 1;
    int r = uiw__nfs_lock(t.c, &t.fh, off, len, &lock_stop, lock_held, argv[0]);
    if (r == -EINTR)
        fprintf(stderr, "uiw-nfs: lock %s: interrupted before it was held\n", argv[0]);
    else if (r != 0)
        say_nfs(&t, argv[0], r);
    else if (o->verbose)
        fprintf(stderr, "uiw-nfs: lock on %s released\n", argv[0]);
    target_close(&t);
    return r != 0;
}

/* The command's exit status. */
static int run(const struct opts *o, const char *cmd, int n, char **args)
{
    static const struct {
        const char *name;
        int (*fn)(const struct opts *o, int argc, char **argv);
    } cmds[] = {
        {"cat", cmd_cat}, {"get", cmd_get},     {"put", cmd_put},   {"cp", cmd_cp},
        {"mv", cmd_mv},   {"bench", cmd_bench}, {"lock", cmd_lock},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(cmd, cmds[i].name) == 0)
            return cmds[i].fn(o, n, args);
    static const char *each[] = {"ls", "stat", "rm", "mkdir", "rmdir"};
    for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++)
        if (strcmp(cmd, each[i]) == 0)
            return cmd_each(o, cmd, n, args);
    fprintf(stderr, "uiw-nfs: unknown command '%s'\n", cmd);
    fputs(usage, stderr);
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = {.progress = -1, .size = 64ull << 20, .parallel = 8, .seconds = 2};
    enum {
        O_VERIFY = 256,
        O_PROG,
        O_NOPROG,
        O_INFLIGHT,
        O_JSON,
        O_VERSION,
        O_STATS,
        O_CPUOF,
        O_INLINE,
        O_DDP
    };
    static const struct option lo[] = {
        {"verbose", no_argument, NULL, 'v'},
        {"verify", no_argument, NULL, O_VERIFY},
        {"progress", no_argument, NULL, O_PROG},
        {"no-progress", no_argument, NULL, O_NOPROG},
        {"block", required_argument, NULL, 'b'},
        {"size", required_argument, NULL, 's'},
        {"inflight", required_argument, NULL, O_INFLIGHT},
        {"parallel", required_argument, NULL, 'P'},
        {"recursive", no_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 'D'},
        {"json", no_argument, NULL, O_JSON},
        {"stats", no_argument, NULL, O_STATS},
        {"cpu-of", required_argument, NULL, O_CPUOF},
        {"inline-size", required_argument, NULL, O_INLINE},
        {"ddp-threshold", required_argument, NULL, O_DDP},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    int ch;
    uint64_t v;
    /* Options may come before or after the command (getopt permutes). */
    while ((ch = getopt_long(argc, argv, "vrb:s:P:D:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'v':
            o.verbose++;
            break;
        case O_VERIFY:
            o.verify = 1;
            break;
        case O_PROG:
            o.progress = 1;
            break;
        case O_NOPROG:
            o.progress = 0;
            break;
        case 'b':
            if (parse_size(optarg, 64u << 20, &v) != 0 || v < 512) {
                fprintf(stderr, "uiw-nfs: bad block size '%s'\n", optarg);
                return 2;
            }
            o.block = (uint32_t)v;
            break;
        case 's':
            if (parse_size(optarg, 1ull << 40, &v) != 0) {
                fprintf(stderr, "uiw-nfs: bad size '%s'\n", optarg);
                return 2;
            }
            o.size = v;
            break;
        case O_INFLIGHT:
            if (parse_size(optarg, 1024, &v) != 0 || v == 0) {
                fprintf(stderr, "uiw-nfs: bad --inflight '%s'\n", optarg);
                return 2;
            }
            o.inflight = (unsigned)v;
            break;
        case 'r':
            o.recursive = 1;
            break;
        case 'P':
            if (parse_size(optarg, 1024, &v) != 0 || v == 0) {
                fprintf(stderr, "uiw-nfs: bad --parallel '%s'\n", optarg);
                return 2;
            }
            o.parallel = (unsigned)v;
            break;
        case 'D': {
            char *end;
            errno = 0;
            o.seconds = strtod(optarg, &end);
            if (errno || *end || !(o.seconds > 0 && o.seconds <= 3600)) {
                fprintf(stderr, "uiw-nfs: bad --seconds '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case O_JSON:
            o.json = 1;
            break;
        case O_STATS:
            o.stats = 1;
            break;
        case O_CPUOF:
            if (parse_size(optarg, 1u << 30, &v) != 0 || v == 0) {
                fprintf(stderr, "uiw-nfs: bad --cpu-of '%s'\n", optarg);
                return 2;
            }
            o.cpu_of = (int)v;
            break;
        case O_INLINE:
            if (parse_size(optarg, 262144, &v) != 0 || v < 1024 || v % 1024) {
                fprintf(stderr, "uiw-nfs: bad --inline-size '%s'\n", optarg);
                return 2;
            }
            o.inline_size = (uint32_t)v;
            break;
        case O_DDP:
            if (parse_size(optarg, 1u << 30, &v) != 0 || v < 64) {
                fprintf(stderr, "uiw-nfs: bad --ddp-threshold '%s'\n", optarg);
                return 2;
            }
            o.ddp_threshold = (uint32_t)v;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case O_VERSION:
            printf("uiw-nfs %s\n", UIW_VERSION);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
        return 2;
    }
    if (!o.inflight) /* copies: a file's calls; bench: one at a time unless asked */
        o.inflight = strcmp(argv[optind], "bench") == 0 ? 1 : 4;
    signal(SIGPIPE, SIG_IGN);
    int rc = run(&o, argv[optind], argc - optind - 1, argv + optind + 1);
    targets_release();
    if (o.stats)
        targets_print_stats(&o);
    return rc;
}
