/* File regions (uiw_reg_mr_file) between two engine QPs in memory: Writes and Sends whose
 * payload the engine hands io as a file's bytes (the pump reads them as sendfile would),
 * what past the file's end sends, what such a region refuses, and a region deregistered
 * with FPDUs of it still to send. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pair.h"
#include "test.h"

#define RW (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)
#define LW UIW_ACCESS_LOCAL_WRITE

/* Two QPs, a temporary file of size bytes of a pattern (its bytes in data), unlinked,
 * and side d's region over [off, off + rlen) of it (f; NULL once the test deregistered
 * it, fd -1 once it closed the file). */
struct fx {
    struct pair p;
    uint8_t *data;
    int fd;
    struct uiw_mr *f;
};

static void fx_init(struct fx *x, const struct pair_opts *o, size_t size, int d, uint64_t off,
                    size_t rlen)
{
    pair_init(&x->p, o, true);
    char name[] = "/tmp/uiw-file-mr-XXXXXX";
    x->fd = mkstemp(name);
    CHECK(x->fd >= 0);
    CHECK_EQ(unlink(name), 0);
    x->data = malloc(size);
    CHECK(x->data != NULL);
    for (size_t i = 0; i < size; i++)
        x->data[i] = (uint8_t)(i * 13 + size + (i >> 9));
    CHECK_EQ(pwrite(x->fd, x->data, size, 0), (ssize_t)size);
    x->f = uiw_reg_mr_file(x->p.s[d].pd, x->fd, off, rlen);
    CHECK(x->f != NULL);
}

static void fx_free(struct fx *x)
{
    if (x->f)
        CHECK_EQ(uiw_dereg_mr(x->f), 0);
    if (x->fd >= 0)
        CHECK_EQ(close(x->fd), 0);
    free(x->data);
    pair_free(&x->p);
}

static struct pair_opts opts(uint16_t mulpdu, bool crc)
{
    struct pair_opts o;
    pair_opts_default(&o);
    if (mulpdu)
        o.mulpdu = mulpdu;
    o.crc = crc;
    return o;
}

static uint64_t file_bytes(struct pair *p, int d)
{
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p->s[d].ctx, &st), 0);
    return st.file_payload_bytes;
}

/* A Write of many FPDUs from the middle of a region that starts inside the file, the pump
 * cutting the stream at random places: the bytes of the file land, the Write completes,
 * and every payload byte went as a file's. */
TEST(file_mr_write)
{
    struct fx x;
    struct pair_opts o = opts(0, false);
    size_t len = 150000;
    fx_init(&x, &o, 300000, 0, 1000, 200000);
    CHECK(x.f->addr == NULL);
    CHECK_EQ(x.f->length, 200000);
    CHECK_EQ(close(x.fd), 0); /* the region holds its own */
    x.fd = -1;
    struct uiw_mr *dst = pair_mr(&x.p, 1, len + 64, RW, 0xEE);
    CHECK_EQ(pair_post(&x.p, 0, 7, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, x.f, 5000, (uint32_t)len,
                       (uintptr_t)dst->addr + 32, dst->rkey),
             0);
    CHECK(pair_pump(&x.p) > len);
    struct uiw_wc wc = pair_wc(&x.p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_MEM((uint8_t *)dst->addr + 32, x.data + 6000, len);
    CHECK_EQ(((uint8_t *)dst->addr)[31], 0xEE);
    CHECK_EQ(((uint8_t *)dst->addr)[32 + len], 0xEE);
    CHECK_EQ(file_bytes(&x.p, 0), len);
    pair_mr_free(dst);
    fx_free(&x);
}

/* Sends from a file region, a small one (which a memory region's would copy whole behind
 * its header) and one of several segments, into posted receives. */
TEST(file_mr_send)
{
    struct fx x;
    struct pair_opts o = opts(1000, false);
    fx_init(&x, &o, 10000, 0, 0, 10000);
    struct uiw_mr *dst = pair_mr(&x.p, 1, 8192, LW, 0);
    pair_post_recv(&x.p, 1, 1, dst, 0, 4096);
    pair_post_recv(&x.p, 1, 2, dst, 4096, 4096);
    CHECK_EQ(pair_post(&x.p, 0, 11, UIW_WR_SEND, UIW_SEND_SIGNALED, x.f, 17, 40, 0, 0), 0);
    CHECK_EQ(pair_post(&x.p, 0, 12, UIW_WR_SEND, UIW_SEND_SIGNALED, x.f, 100, 3500, 0, 0), 0);
    pair_pump(&x.p);
    CHECK_EQ(pair_wc(&x.p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&x.p, 0, true).status, UIW_WC_SUCCESS);
    struct uiw_wc wc = pair_wc(&x.p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 40);
    wc = pair_wc(&x.p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 3500);
    CHECK_MEM(dst->addr, x.data + 17, 40);
    CHECK_MEM((uint8_t *)dst->addr + 4096, x.data + 100, 3500);
    CHECK_EQ(file_bytes(&x.p, 0), 3540);
    pair_mr_free(dst);
    fx_free(&x);
}

/* A region longer than its file (or a file truncated since): the bytes past the end go
 * as zeros, and the Write completes. */
TEST(file_mr_past_end_sends_zeros)
{
    struct fx x;
    struct pair_opts o = opts(0, false);
    fx_init(&x, &o, 30000, 0, 0, 100000);
    CHECK_EQ(ftruncate(x.fd, 20000), 0);
    struct uiw_mr *dst = pair_mr(&x.p, 1, 50000, RW, 0xEE);
    CHECK_EQ(pair_post(&x.p, 0, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, x.f, 10000, 40000,
                       (uintptr_t)dst->addr, dst->rkey),
             0);
    pair_pump(&x.p);
    CHECK_EQ(pair_wc(&x.p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(dst->addr, x.data + 10000, 10000);
    static const uint8_t zeros[30000];
    CHECK_MEM((uint8_t *)dst->addr + 10000, zeros, 30000);
    CHECK_EQ(((uint8_t *)dst->addr)[40000], 0xEE);
    pair_mr_free(dst);
    fx_free(&x);
}

/* FPDUs built from a region whose deregistration and file's close come before TCP takes
 * them: they hold the file, and the Write lands whole. */
TEST(file_mr_deregistered_with_fpdus_built)
{
    struct fx x;
    struct pair_opts o = opts(0, false);
    size_t len = 20000;
    fx_init(&x, &o, len, 0, 0, len);
    CHECK_EQ(close(x.fd), 0);
    x.fd = -1;
    struct uiw_mr *dst = pair_mr(&x.p, 1, len, RW, 0);
    CHECK_EQ(pair_post(&x.p, 0, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, x.f, 0, (uint32_t)len,
                       (uintptr_t)dst->addr, dst->rkey),
             0);
    CHECK(pair_tx_pending(&x.p, 0) > 0);
    CHECK_EQ(file_bytes(&x.p, 0), len); /* every FPDU of it built (counted as built) */
    CHECK_EQ(uiw_dereg_mr(x.f), 0);
    x.f = NULL;
    /* descriptors opened now take numbers other than the region's, which it still holds */
    int other = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    CHECK(other >= 0);
    pair_pump(&x.p);
    CHECK_EQ(pair_wc(&x.p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(dst->addr, x.data, len);
    CHECK_EQ(close(other), 0);
    pair_mr_free(dst);
    fx_free(&x);
}

/* What a file region is not: a source on a connection with CRC (the Write fails with a
 * local protection error), a source beside another SGE, a Read's sink. */
static void refused(int how)
{
    struct fx x;
    struct pair_opts o = opts(0, how == 0);
    fx_init(&x, &o, 4096, 0, 0, 4096);
    struct uiw_mr *mem = pair_mr(&x.p, 0, 4096, RW, 0);
    struct uiw_mr *dst = pair_mr(&x.p, 1, 4096, RW, 0);
    struct uiw_sge sge[2] = {{0, 100, x.f->lkey}, {(uintptr_t)mem->addr, 100, mem->lkey}};
    struct uiw_send_wr wr = {.wr_id = 1,
                             .sg_list = sge,
                             .num_sge = how == 1 ? 2 : 1,
                             .opcode = how == 2 ? UIW_WR_RDMA_READ : UIW_WR_RDMA_WRITE,
                             .send_flags = UIW_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
    wr.wr.rdma.rkey = dst->rkey;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(x.p.s[0].qp, &wr, &bad), 0);
    pair_pump(&x.p);
    struct uiw_wc wc = pair_wc(&x.p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
    CHECK_EQ(file_bytes(&x.p, 0), 0);
    pair_mr_free(mem);
    pair_mr_free(dst);
    fx_free(&x);
}

TEST(file_mr_refused_with_crc)
{
    refused(0);
}

TEST(file_mr_refused_beside_another_sge)
{
    refused(1);
}

TEST(file_mr_refused_as_read_sink)
{
    refused(2);
}

/* A peer's Write or Read naming a file region's STag finds no access (the Terminate of
 * an access violation), and a receive in one fails, nothing written into the file. */
TEST(file_mr_unreachable_by_peer)
{
    for (int how = 0; how <= 2; how++) {
        struct fx x;
        struct pair_opts o = opts(0, false);
        fx_init(&x, &o, 4096, 1, 0, 4096);
        struct uiw_mr *mem = pair_mr(&x.p, 0, 4096, RW, 1);
        if (how < 2) {
            CHECK_EQ(pair_post(&x.p, 0, 1, how ? UIW_WR_RDMA_READ : UIW_WR_RDMA_WRITE,
                               UIW_SEND_SIGNALED, mem, 0, 64, 0, x.f->rkey),
                     0);
            pair_pump(&x.p);
            struct uiw_qp_attr a;
            CHECK_EQ(uiw_query_qp(x.p.s[1].qp, &a), 0);
            CHECK_EQ(a.state, UIW_QPS_ERROR);
            CHECK(a.term_sent);
            CHECK_EQ(a.term_layer, UIW_TERM_LAYER_RDMAP);
            CHECK_EQ(a.term_code, UIW_TERM_RP_ACCESS_RIGHTS);
        } else {
            pair_post_recv(&x.p, 1, 5, x.f, 0, 4096);
            CHECK_EQ(pair_post(&x.p, 0, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, mem, 0, 64, 0, 0), 0);
            pair_pump(&x.p);
            struct uiw_wc wc = pair_wc(&x.p, 1, false);
            CHECK_EQ(wc.wr_id, 5);
            CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
        }
        uint8_t back[4096];
        CHECK_EQ(pread(x.fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
        CHECK_MEM(back, x.data, sizeof(back));
        pair_mr_free(mem);
        fx_free(&x);
    }
}

TEST(file_mr_registration_errors)
{
    struct fx x;
    struct pair_opts o = opts(0, false);
    fx_init(&x, &o, 16, 0, 0, 16);
    struct uiw_pd *pd = x.p.s[0].pd;
    errno = 0;
    CHECK(uiw_reg_mr_file(NULL, x.fd, 0, 1) == NULL);
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(uiw_reg_mr_file(pd, -1, 0, 1) == NULL);
    CHECK_EQ(errno, EBADF);
    int wo = open("/dev/null", O_WRONLY | O_CLOEXEC);
    CHECK(wo >= 0);
    errno = 0;
    CHECK(uiw_reg_mr_file(pd, wo, 0, 1) == NULL);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(close(wo), 0);
    errno = 0;
    CHECK(uiw_reg_mr_file(pd, x.fd, (uint64_t)INT64_MAX, 2) == NULL);
    CHECK_EQ(errno, EINVAL);
    int dev = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(dev >= 0);
    errno = 0;
    CHECK(uiw_reg_mr_file(pd, dev, 0, 1) == NULL); /* sendfile reads regular files */
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(close(dev), 0);
    fx_free(&x);
}
