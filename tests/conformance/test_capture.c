/*
 * A capture (UIW_PCAP_DIR) records exactly the bytes the stack sent, in order, and
 * capturing leaves the send path as it is: the raw peer's socket is the truth the
 * capture's outbound stream is held to, with the application's thread sending (inline
 * progress: the post's own send, or the doorbell's when the loop is busy).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "pcap_reader.h"
#include "test.h"

enum { NMSG = 400, BATCH = 8, GOT_CAP = 1 << 20 };

/* Every byte the raw peer has now (buffered or in its socket) appended to got. */
static size_t drain(struct rawpeer *p, uint8_t *got, size_t have)
{
    size_t n = p->in_have - p->in_off;
    CHECK(have + n <= GOT_CAP);
    memcpy(got + have, p->in + p->in_off, n);
    have += n;
    p->in_off = p->in_have = 0;
    for (;;) {
        CHECK(have < GOT_CAP);
        ssize_t r = read(p->fd, got + have, GOT_CAP - have);
        if (r > 0) {
            have += (size_t)r;
            continue;
        }
        CHECK(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        return have;
    }
}

/* The one capture file in dir, loaded, and then removed with dir. */
static void load_capture(const char *dir, struct uiw_test_pcap *cap)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    char path[1024] = "";
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        files++;
    }
    closedir(d);
    CHECK_EQ(files, 1);
    CHECK_EQ(uiw_test_pcap_load(path, cap), 0);
    unlink(path);
    rmdir(dir);
}

TEST(capture_is_what_the_stack_sent)
{
    char dir[] = "/tmp/uiw-conf-pcap-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(setenv("UIW_PCAP_DIR", dir, 1), 0);
    struct conf c;
    struct conf_opts o = {.no_progress = true, .crc = true};
    conf_open(&c, &o);
    unsetenv("UIW_PCAP_DIR");
    CHECK_EQ(rawpeer_send_write(&c.peer, 1, 0, NULL, 0), 0); /* the stack may send */
    uint8_t *src = c.region[R_RW], *got = malloc(GOT_CAP);
    CHECK(got != NULL);
    for (int i = 0; i < CONF_REGION_LEN; i++)
        src[i] = (uint8_t)(i * 13 + 5);
    size_t have = 0;
    for (int m = 0; m < NMSG; m += BATCH) {
        for (int i = m; i < m + BATCH; i++) {
            uint32_t len = (uint32_t)(1 + (i * 389) % CONF_REGION_LEN);
            struct uiw_sge sge = {.addr = (uintptr_t)(src + CONF_REGION_LEN - len),
                                  .length = len,
                                  .lkey = c.mr[R_RW]->lkey};
            struct uiw_send_wr wr = {.wr_id = (uint64_t)i,
                                     .sg_list = &sge,
                                     .num_sge = 1,
                                     .opcode = UIW_WR_SEND,
                                     .send_flags = UIW_SEND_SIGNALED};
            struct uiw_send_wr *bad = NULL;
            CHECK_EQ(uiw_post_send(c.qp, &wr, &bad), 0);
        }
        for (int i = m; i < m + BATCH; i++) {
            struct uiw_wc wc;
            conf_next_wc(&c, &wc);
            CHECK_EQ(wc.wr_id, (uint64_t)i);
            CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        }
        have = drain(&c.peer, got, have); /* all sent: on loopback, all arrived */
    }
    CHECK(have > NMSG * (size_t)UIW_DDP_UNTAGGED_HDR_LEN);
    conf_close(&c);

    struct uiw_test_pcap cap;
    load_capture(dir, &cap);
    CHECK_EQ(cap.nconns, 1);
    const struct uiw_test_tcp_stream *out = NULL;
    for (int i = 0; i < cap.nstreams; i++)
        if (cap.s[i].len >= 20 && memcmp(cap.s[i].data, "MPA ID Rep Frame", 16) == 0)
            out = &cap.s[i];
    CHECK(out != NULL);
    CHECK_EQ(out->contig, out->len);
    CHECK_EQ(out->retrans, 0);
    /* the Reply (its private data after the 20-byte header), then what the peer read */
    size_t reply = 20 + ((size_t)out->data[18] << 8 | out->data[19]);
    CHECK_EQ(out->len, reply + have);
    CHECK_MEM(out->data + reply, got, have);
    uiw_test_pcap_free(&cap);
    free(got);
}
