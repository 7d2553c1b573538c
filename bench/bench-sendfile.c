/*
 * bench-sendfile: what an RDMA Write from a file region (uiw_reg_mr_file: the payload
 * handed to TCP by sendfile) saves over the way a server sends file data otherwise, pread
 * into registered memory and an RDMA Write from there.
 *
 * Both ends of one loopback connection live in this process, each in its own context
 * without a progress thread, and one thread plays both (as bench-turnaround): A writes
 * BLOCK bytes of a file into B's memory, then a 4-byte Send; B's receive of the Send says
 * the Write was placed (in order), and the next block goes. The file (SIZE bytes, in
 * $TMPDIR, read once before so that both kinds read it from the page cache) is walked
 * block by block, over and over until BYTES moved. The two kinds alternate, rounds in
 * reversed order every other round. Each measures, per GiB moved, the process's CPU time
 * (both ends), the sender's alone (all but B's polls, in which B reads the socket and
 * places: on loopback the kernel's delivery to B's socket runs in the sender's send) and
 * the time. After every run the last block's bytes at B are checked against the file's.
 *
 * Prints each round, then the medians and their ratios (file / pread): CPU per GiB of
 * both ends and of the sender (less is better) and GB/s. With --json one line instead:
 * {"bench":"sendfile","rounds":R,"block":B,"bytes":N,"pread":{"cpu_s_per_gib":X,
 * "send_cpu_s_per_gib":X,"gbytes_per_sec":Y},"file":{...},"ratio_cpu":X,
 * "ratio_send_cpu":X,"ratio_rate":Y}, each ratio the quotient of the medians printed.
 *
 * usage: bench-sendfile [-r ROUNDS] [-b BLOCK] [-s FILE_SIZE] [-n BYTES] [--json]
 *   defaults 5 rounds, blocks of 1 MiB, a file of 64 MiB, 1 GiB a kind a round.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uiw/verbs.h>

#include "bench_link.h"
#include "bench_stats.h"

static void die(const char *what, int code)
{
    fprintf(stderr, "bench-sendfile: %s: %s\n", what, uiw_strerror(code));
    exit(1);
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct end {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *cq;
    struct uiw_cm_id *id;
    struct uiw_mr *mr;
    uint8_t *buf; /* a block, then a small slot for the Send */
};

static size_t block = 1u << 20;

static void end_open(struct end *e)
{
    struct uiw_context_attr at;
    uiw_context_attr_init(&at);
    at.progress_thread = false;
    at.single_threaded = true;
    e->ctx = uiw_open_context(&at);
    if (!e->ctx)
        die("open_context", -errno);
    e->pd = uiw_alloc_pd(e->ctx);
    e->cq = uiw_create_cq(e->ctx, 64, NULL, NULL, 0);
    e->buf = aligned_alloc(4096, block + 4096);
    if (!e->pd || !e->cq || !e->buf)
        die("resources", -ENOMEM);
    memset(e->buf, 0, block + 4096);
    e->mr =
        uiw_reg_mr(e->pd, e->buf, block + 4096, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE);
    if (!e->mr)
        die("reg_mr", -errno);
}

static void post_recv(struct end *e)
{
    struct uiw_sge g = {.addr = (uintptr_t)(e->buf + block), .length = 64, .lkey = e->mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = 1, .sg_list = &g, .num_sge = 1}, *bad;
    int r = uiw_post_recv(e->id->qp, &wr, &bad);
    if (r < 0)
        die("post_recv", r);
}

struct link {
    struct bench_link l;
    struct end a, b;
};

static void link_up(struct link *k)
{
    end_open(&k->a);
    end_open(&k->b);
    struct uiw_qp_init_attr qa = {.send_cq = k->a.cq,
                                  .recv_cq = k->a.cq,
                                  .cap = {.max_send_wr = 16,
                                          .max_recv_wr = 4,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1}},
                            qb = qa;
    qb.send_cq = qb.recv_cq = k->b.cq;
    const char *what;
    int r = bench_link_up(&k->l, k->a.ctx, k->a.pd, &qa, k->b.ctx, k->b.pd, &qb, &what);
    if (r < 0)
        die(what, r);
    k->a.id = k->l.a;
    k->b.id = k->l.b;
    post_recv(&k->b);
}

static void end_close(struct end *e)
{
    uiw_dereg_mr(e->mr);
    uiw_destroy_cq(e->cq);
    uiw_dealloc_pd(e->pd);
    uiw_close_context(e->ctx);
    free(e->buf);
}

static void link_down(struct link *k)
{
    const char *what;
    int r = bench_link_down(&k->l, &what);
    if (r < 0)
        die(what, r);
    end_close(&k->a);
    end_close(&k->b);
}

static void post(struct end *e, enum uiw_wr_opcode op, uint64_t addr, uint32_t len, uint32_t lkey,
                 uint64_t raddr, uint32_t rkey, bool signaled)
{
    struct uiw_sge g = {.addr = addr, .length = len, .lkey = lkey};
    struct uiw_send_wr wr = {.wr_id = op,
                             .sg_list = &g,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = signaled ? UIW_SEND_SIGNALED : 0},
                       *bad;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    int r = uiw_post_send(e->id->qp, &wr, &bad);
    if (r < 0)
        die("post_send", r);
}

/* The thread's CPU time spent as the receiver (B's polls: its reads of the socket and
 * its placing), the rest being the sender's. */
static double recv_cpu;

/* Poll both ends until B received the Send (A's completions reaped on the way). */
static void await_placed(struct link *k)
{
    double until = clock_s(CLOCK_MONOTONIC) + 10;
    for (;;) {
        if (clock_s(CLOCK_MONOTONIC) > until)
            die("a block", -ETIMEDOUT);
        struct uiw_wc wc[4];
        int n = uiw_poll_cq(k->a.cq, 4, wc);
        for (int i = 0; i < n; i++)
            if (wc[i].status != UIW_WC_SUCCESS)
                die(uiw_wc_status_str(wc[i].status), wc[i].vendor_err);
        double r0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        n = uiw_poll_cq(k->b.cq, 4, wc);
        recv_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - r0;
        if (n < 0)
            die("poll_cq", n);
        for (int i = 0; i < n; i++) {
            if (wc[i].status != UIW_WC_SUCCESS)
                die(uiw_wc_status_str(wc[i].status), wc[i].vendor_err);
            if (wc[i].opcode == UIW_WC_RECV) {
                post_recv(&k->b);
                return;
            }
        }
    }
}

struct figures {
    double cpu_per_gib, gbps, send_cpu_per_gib; /* both ends', the rate, the sender's */
};

/* One run of a kind (file: from the file region, else pread then Write): bytes moved. */
static struct figures run(struct link *k, bool file, int fd, struct uiw_mr *fmr, size_t fsize,
                          uint64_t bytes, const uint8_t *content)
{
    size_t nblocks = fsize / block;
    uint64_t moved = 0, off = 0;
    recv_cpu = 0;
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
    while (moved < bytes) {
        off = (moved / block % nblocks) * block;
        if (file) {
            post(&k->a, UIW_WR_RDMA_WRITE, off, (uint32_t)block, fmr->lkey, (uintptr_t)k->b.buf,
                 k->b.mr->rkey, false);
        } else {
            size_t got = 0;
            while (got < block) {
                ssize_t r = pread(fd, k->a.buf + got, block - got, (off_t)(off + got));
                if (r <= 0)
                    die("pread", r < 0 ? -errno : -EIO);
                got += (size_t)r;
            }
            post(&k->a, UIW_WR_RDMA_WRITE, (uintptr_t)k->a.buf, (uint32_t)block, k->a.mr->lkey,
                 (uintptr_t)k->b.buf, k->b.mr->rkey, false);
        }
        post(&k->a, UIW_WR_SEND, (uintptr_t)(k->a.buf + block), 4, k->a.mr->lkey, 0, 0, true);
        await_placed(k);
        moved += block;
    }
    double c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, t = clock_s(CLOCK_MONOTONIC) - t0;
    if (memcmp(k->b.buf, content + off, block) != 0) {
        fprintf(stderr, "bench-sendfile: the %s run's last block arrived wrong\n",
                file ? "file" : "pread");
        exit(1);
    }
    double gib = (double)moved / (double)(1u << 30);
    return (struct figures){c / gib, (double)moved / t / 1e9, (c - recv_cpu) / gib};
}

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    uint64_t m = 1;
    if (*end == 'K' || *end == 'k')
        m = 1u << 10;
    else if (*end == 'M' || *end == 'm')
        m = 1u << 20;
    else if (*end == 'G' || *end == 'g')
        m = 1u << 30;
    else if (*end)
        return 0;
    return v > 0 ? (uint64_t)(v * (double)m) : 0;
}

int main(int argc, char **argv)
{
    int rounds = 5, json = 0;
    uint64_t fsize = 64u << 20, bytes = 1u << 30;
    static const struct option lo[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "r:b:s:n:h", lo, NULL)) != -1) {
        switch (c) {
        case 'r':
            rounds = atoi(optarg);
            break;
        case 'b':
            block = (size_t)parse_size(optarg);
            break;
        case 's':
            fsize = parse_size(optarg);
            break;
        case 'n':
            bytes = parse_size(optarg);
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            printf("usage: bench-sendfile [-r ROUNDS] [-b BLOCK] [-s FILE_SIZE] [-n BYTES] "
                   "[--json]\n");
            return 0;
        default:
            return 2;
        }
    }
    if (rounds < 1 || rounds > 99 || block < 4096 || block > (64u << 20) || fsize < block ||
        bytes < block) {
        fprintf(stderr, "bench-sendfile: bad option (1-99 rounds, a block of 4 KiB to 64 MiB, "
                        "a file and a byte count of a block at least)\n");
        return 2;
    }
    fsize -= fsize % block;
    const char *tmp = getenv("TMPDIR");
    char name[512];
    snprintf(name, sizeof(name), "%s/uiw-bench-sendfile.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(name);
    if (fd < 0)
        die("mkstemp", -errno);
    unlink(name);
    uint8_t *content = malloc(fsize);
    if (!content)
        die("file content", -ENOMEM);
    for (uint64_t i = 0; i < fsize; i++)
        content[i] = (uint8_t)(i * 31 + (i >> 12));
    if (pwrite(fd, content, fsize, 0) != (ssize_t)fsize)
        die("pwrite", -errno);

    struct link k;
    link_up(&k);
    struct uiw_mr *fmr = uiw_reg_mr_file(k.a.pd, fd, 0, fsize);
    if (!fmr)
        die("reg_mr_file", -errno);
    double pc[99], pr[99], ps[99], fc[99], fr[99], fs[99];
    for (int i = 0; i < rounds; i++) {
        struct figures p, f;
        if (i % 2 == 0) {
            p = run(&k, false, fd, fmr, fsize, bytes, content);
            f = run(&k, true, fd, fmr, fsize, bytes, content);
        } else {
            f = run(&k, true, fd, fmr, fsize, bytes, content);
            p = run(&k, false, fd, fmr, fsize, bytes, content);
        }
        pc[i] = p.cpu_per_gib, pr[i] = p.gbps, ps[i] = p.send_cpu_per_gib;
        fc[i] = f.cpu_per_gib, fr[i] = f.gbps, fs[i] = f.send_cpu_per_gib;
        if (!json)
            printf("round %d: pread+Write %.3f s/GiB (sender %.3f) %.2f GB/s, file region %.3f "
                   "s/GiB (sender %.3f) %.2f GB/s\n",
                   i + 1, p.cpu_per_gib, p.send_cpu_per_gib, p.gbps, f.cpu_per_gib,
                   f.send_cpu_per_gib, f.gbps);
    }
    struct uiw_context_stats st;
    if (uiw_query_context_stats(k.a.ctx, &st) != 0 ||
        st.file_payload_bytes < (uint64_t)rounds * bytes) {
        fprintf(stderr, "bench-sendfile: the file runs did not send from the file\n");
        return 1;
    }
    uiw_dereg_mr(fmr);
    link_down(&k);
    close(fd);
    free(content);
    size_t n = (size_t)rounds;
    double mpc = bench_median(pc, n), mpr = bench_median(pr, n), mps = bench_median(ps, n);
    double mfc = bench_median(fc, n), mfr = bench_median(fr, n), mfs = bench_median(fs, n);
    if (json) {
        printf("{\"bench\":\"sendfile\",\"rounds\":%d,\"block\":%zu,\"bytes\":%llu,"
               "\"pread\":{\"cpu_s_per_gib\":%.4f,\"send_cpu_s_per_gib\":%.4f,"
               "\"gbytes_per_sec\":%.3f},"
               "\"file\":{\"cpu_s_per_gib\":%.4f,\"send_cpu_s_per_gib\":%.4f,"
               "\"gbytes_per_sec\":%.3f},"
               "\"ratio_cpu\":%.4f,\"ratio_send_cpu\":%.4f,\"ratio_rate\":%.4f}\n",
               rounds, block, (unsigned long long)bytes, mpc, mps, mpr, mfc, mfs, mfr, mfc / mpc,
               mfs / mps, mfr / mpr);
    } else {
        printf("medians of %d rounds, %zu-byte blocks; CPU per GiB of both ends and of the "
               "sender alone:\n",
               rounds, block);
        printf("  pread + Write: %.3f s/GiB, sender %.3f s/GiB, %.2f GB/s\n", mpc, mps, mpr);
        printf("  file region:   %.3f s/GiB, sender %.3f s/GiB, %.2f GB/s\n", mfc, mfs, mfr);
        printf("ratio file region / pread + Write: CPU per GiB %.2fx, the sender's %.2fx, GB/s "
               "%.2fx\n",
               mfc / mpc, mfs / mps, mfr / mpr);
    }
    return 0;
}
