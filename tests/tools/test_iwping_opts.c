/* iwping's rping options -I (source address) and -q (a self-created QP), --stats, and
 * UIW_LOG's lines from a tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf_util.h"
#include "test.h"

#define IWPING UIW_BINARY_DIR "/tools/iwping"

/* Start an iwping server (its options, then -p 0) and return the port it prints. */
static int ping_server(struct pu_proc *s, const char *const opts[], const char *env)
{
    const char *argv[16] = {IWPING, "-s", "-p", "0"};
    int n = 4;
    for (int i = 0; opts[i]; i++)
        argv[n++] = opts[i];
    argv[n] = NULL;
    pu_start(s, argv, env);
    for (int i = 0; i < 1500; i++) { /* 30 s */
        char *out = pu_stdout(s);
        const char *m = strstr(out, "listening on port ");
        int port = m && strchr(m, '\n') ? atoi(m + strlen("listening on port ")) : 0;
        free(out);
        if (port > 0)
            return port;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    uiw_test_fail(__FILE__, __LINE__, "iwping server reported no port");
}

TEST(iwping_source_address_self_qp_stats)
{
    struct pu_proc s, c;
    const char *sopts[] = {"-q", "-V", "--stats", NULL};
    char port[16];
    snprintf(port, sizeof(port), "%d", ping_server(&s, sopts, "UIW_LOG=info"));
    const char *cargv[] = {IWPING, "-c", "-a", "127.0.0.1", "-I", "127.0.0.2", "-p",
                           port,   "-C", "5",  "-V",        "-q", "--stats",   NULL};
    pu_start(&c, cargv, NULL);
    int crc = pu_wait(&c, 60), src = pu_wait(&s, 30);
    char *cout = pu_stdout(&c), *sout = pu_stdout(&s), *serr = pu_stderr(&s);
    if (crc != 0 || src != 0)
        uiw_test_fail(__FILE__, __LINE__, "client %d, server %d\n%s\n%s\n%s", crc, src, cout, sout,
                      serr);
    /* -I: the server saw the connection come from the source address */
    if (!strstr(serr, "connection request from 127.0.0.2:"))
        uiw_test_fail(__FILE__, __LINE__, "no request from 127.0.0.2 in:\n%s", serr);
    /* UIW_LOG=info: the server's connection established and closed, with its ids */
    CHECK(strstr(serr, "qp 1: established (responder)") != NULL);
    CHECK(strstr(serr, "qp 1: connection closed") != NULL);
    CHECK(strstr(sout, "server: 5 pings") != NULL || strstr(serr, "server: 5 pings") != NULL);
    /* --stats on both sides: five pings move bytes both ways, no Terminate */
    unsigned long long tx, txf, rx, rxf;
    for (int side = 0; side < 2; side++) {
        const char *st = strstr(side ? sout : cout, "stats: ");
        CHECK(st != NULL);
        CHECK_EQ(sscanf(st, "stats: tx %llu bytes in %llu FPDUs, rx %llu bytes in %llu FPDUs", &tx,
                        &txf, &rx, &rxf),
                 4);
        CHECK(tx > 0 && rx > 0 && txf >= 10 && rxf >= 10);
        CHECK(strstr(st, "Terminates 0 sent, 0 received") != NULL);
    }
    free(cout);
    free(sout);
    free(serr);
    pu_cleanup(&c);
    pu_cleanup(&s);
}
