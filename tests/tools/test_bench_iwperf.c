/* bench-iwperf against a stand-in iwperf (-i) that reports fixed figures and logs its
 * command lines: the RDMA figures printed are the ones iwperf reported, each RDMA
 * bandwidth figure is printed over both TCP baselines (the one-way stream and
 * request/response with 16 in flight), each ratio is the quotient of the figures on its
 * row and swapping the sides inverts it, and the RDMA side runs as a user runs iwperf (no
 * progress option with -m auto: iwperf's own default; the bench's duration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"
#include "test.h"

/* bench-iwperf's path, where the benchmarks are built (UIW_BENCH=ON) */
#ifdef UIW_BENCH_IWPERF
#define HAVE_BENCH_IWPERF 1
#else
#define HAVE_BENCH_IWPERF 0
#define UIW_BENCH_IWPERF  ""
#endif

/* The figures a stand-in reports: RDMA Write and Read, TCP one-way stream with 64 KiB and
 * 1 MiB send() calls, TCP request/response likewise (MiB/s); 64 B half round trips of RDMA,
 * busy-polled TCP and blocking TCP (usec). */
struct figures {
    const char *wr, *rr, *w64, *w1m, *r64, *r1m, *lr, *lt, *lb;
};

/* Write the stand-in into dir/name; its command lines go to dir/log. */
static void write_fake(const char *dir, const char *name, const struct figures *f, char *path,
                       size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *o = fopen(path, "w");
    CHECK(o != NULL);
    fprintf(o,
            "#!/bin/sh\n"
            "echo \"$*\" >> '%s/log'\n"

            "host= tcp= lat= bp= t= w= prev=\n"
            "for a; do\n"
            "  case \"$prev\" in -t) t=$a ;; --tcp-write) w=$a ;; esac\n"
            "  case \"$a\" in 127.0.0.1) host=1 ;; --tcp) tcp=1 ;; --lat) lat=1 ;; "
            "--busy-poll) bp=1 ;; esac\n"
            "  prev=$a\n"
            "done\n"
            "if [ -z \"$host\" ]; then echo 'iwperf: listening on port 4242' >&2; exit 0; fi\n"
            "c=\"$0.n$tcp$t$w$lat$bp\"; n=$(cat \"$c\" 2>/dev/null || echo 0)\n"
            "echo $((n + 1)) > \"$c\"\n"
            "if [ -n \"$lat\" ]; then\n"
            "  if [ -z \"$tcp\" ]; then v=%s; elif [ -n \"$bp\" ]; then v=%s; else v=%s; fi\n"
            "  k=t_typical_us\n"
            "else\n"
            "  k=bw_avg_mib\n"
            "  case \"$tcp$t$w\" in\n"
            "    write) v=%s ;; read) v=%s ;;\n"
            "    1write64K) v=%s ;; 1write1M) v=%s ;; 1read64K) v=%s ;; 1read1M) v=%s ;;\n"
            "    *) exit 3 ;;\n"
            "  esac\n"
            "fi\n"
            "p=; [ -z \"$tcp\" ] && p='\"progress\": \"inline\", '\n"
            "echo \"{\\\"tool\\\": \\\"iwperf\\\", $p\\\"results\\\": [\"\n"
            "echo \"  {\\\"bytes\\\": 1048576, \\\"$k\\\": $v, \\\"copied_payload_bytes\\\": 0}\"\n"
            "echo ']}'\n",
            dir, f->lr, f->lt, f->lb, f->wr, f->rr, f->w64, f->w1m, f->r64, f->r1m);
    CHECK(fclose(o) == 0);
    CHECK(chmod(path, 0755) == 0);
}

/* The row of out that starts with label: its figures (uiw, TCP) and ratio. */
static void row(const char *out, const char *label, double *uiw, double *tcp, double *ratio)
{
    const char *l = strstr(out, label);
    if (!l)
        uiw_test_fail(__FILE__, __LINE__, "no row \"%s\" in:\n%s", label, out);
    char *e;
    *uiw = strtod(l + strlen(label), &e);
    *tcp = strtod(e, &e);
    *ratio = strtod(e, NULL);
}

/* A row's figures are expected ones and its ratio is their quotient (to the printed
 * precision). */
static void check_row(const char *out, const char *label, double uiw, double tcp)
{
    double u, t, q;
    row(out, label, &u, &t, &q);
    if (u != uiw || t != tcp || q < uiw / tcp - 0.0006 || q > uiw / tcp + 0.0006)
        uiw_test_fail(__FILE__, __LINE__,
                      "%s: %.2f / %.2f, ratio %.3f; expected %.2f / %.2f = %.3f", label, u, t, q,
                      uiw, tcp, uiw / tcp);
}

static void run_bench(const char *fake, const char *mode, struct tool_run *r)
{
    tool_run(
        UIW_BENCH_IWPERF,
        (const char *[]){"bench-iwperf", "-r", "3", "-D", "0.25", "-m", mode, "-i", fake, NULL}, "",
        0, 60, r);
    if (r->status != 0)
        uiw_test_fail(__FILE__, __LINE__, "bench-iwperf: %d\n%s%s", r->status, r->out, r->err);
}

TEST(bench_iwperf_both_baselines)
{
    if (!HAVE_BENCH_IWPERF)
        SKIP("built without the benchmarks (UIW_BENCH=OFF)");
    char dir[] = "/tmp/uiw-bench-iwperf.XXXXXX", fake[256], log[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(log, sizeof(log), "%s/log", dir);
    /* the stronger write size is each baseline's: 1M for the stream, 64K for the requests */
    const struct figures f = {"6000", "5000", "6500", "7000", "4000", "3000", "5", "4", "10"};
    write_fake(dir, "iwperf", &f, fake, sizeof(fake));
    struct tool_run r;
    run_bench(fake, "auto", &r);
    check_row(r.out, "RDMA Write / TCP one-way stream [MiB/s]", 6000, 7000);
    check_row(r.out, "RDMA Write / TCP request/response [MiB/s]", 6000, 4000);
    check_row(r.out, "RDMA Read / TCP one-way stream [MiB/s]", 5000, 7000);
    check_row(r.out, "RDMA Read / TCP request/response [MiB/s]", 5000, 4000);
    check_row(r.out, "Send ping-pong 64 B, half RTT [usec]", 5, 4);
    CHECK(strstr(r.out, "one-way stream: -t write, 1M send() calls") != NULL);
    CHECK(strstr(r.out, "request/response: -t read, 16 requests in flight, 64K send() calls") !=
          NULL);
    CHECK(strstr(r.out, "inline progress (iwperf's default here)") != NULL);
    tool_run_free(&r);

    /* the RDMA runs are a user's: the bench's duration, and with -m auto no progress
     * option (iwperf chooses by the CPUs) */
    FILE *l = fopen(log, "r");
    CHECK(l != NULL);
    char line[512];
    int rdma = 0;
    while (fgets(line, sizeof(line), l)) {
        if (!strstr(line, "127.0.0.1") || strstr(line, "--tcp"))
            continue;
        rdma++;
        CHECK(strstr(line, "-thread") == NULL && strstr(line, "--events") == NULL);
        CHECK(strstr(line, "--lat") || strstr(line, "-D 0.25 "));
    }
    fclose(l);
    CHECK_EQ(rdma, 3 * 3); /* write, read and ping-pong in each of 3 rounds */
    CHECK(unlink(log) == 0);

    /* -m thread asks for the progress thread whatever iwperf's default */
    run_bench(fake, "thread", &r);
    tool_run_free(&r);
    l = fopen(log, "r");
    CHECK(l != NULL);
    for (rdma = 0; fgets(line, sizeof(line), l);) {
        if (!strstr(line, "--tcp")) {
            rdma++;
            CHECK(strstr(line, "--thread") != NULL);
        }
    }
    fclose(l);
    CHECK_EQ(rdma, 2 * 3 * 3); /* servers and clients */
    CHECK(unlink(log) == 0);

    /* without -D, the bandwidth runs last 3 s, as iwperf -D 3 by hand */
    tool_run(UIW_BENCH_IWPERF, (const char *[]){"bench-iwperf", "-r", "1", "-i", fake, NULL}, "", 0,
             60, &r);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    l = fopen(log, "r");
    CHECK(l != NULL);
    for (rdma = 0; fgets(line, sizeof(line), l);) {
        if (strstr(line, "127.0.0.1") && !strstr(line, "--lat")) {
            rdma++;
            CHECK(strstr(line, "-D 3 ") != NULL);
        }
    }
    fclose(l);
    CHECK_EQ(rdma, 6); /* RDMA and TCP 64K and 1M, write and read */
    CHECK(unlink(log) == 0);

    /* figures that change from round to round (n: the stand-in's runs of that kind so
     * far), so that the median of the rounds' ratios differs from the quotient of the
     * medians: each ratio printed is still the quotient of its row's figures */
    const struct figures h = {"$((6000 + 1500 * (n * 2 % 3)))",
                              "$((5000 + 1000 * n))",
                              "4000",
                              "$((7000 - 1000 * n))",
                              "4000",
                              "$((3000 + 2000 * (n * 2 % 3)))",
                              "5",
                              "4",
                              "10"};
    write_fake(dir, "iwperf3", &h, fake, sizeof(fake));
    run_bench(fake, "auto", &r);
    check_row(r.out, "RDMA Write / TCP one-way stream [MiB/s]", 7500, 6000);
    check_row(r.out, "RDMA Read / TCP request/response [MiB/s]", 6000, 5000);
    static const char *const rows[] = {
        "RDMA Write / TCP one-way stream [MiB/s]", "RDMA Write / TCP request/response [MiB/s]",
        "RDMA Read / TCP one-way stream [MiB/s]", "RDMA Read / TCP request/response [MiB/s]"};
    for (int i = 0; i < 4; i++) {
        double u, t, q;
        row(r.out, rows[i], &u, &t, &q);
        check_row(r.out, rows[i], u, t);
    }
    tool_run_free(&r);
    unlink(fake);

    /* the sides swapped: every ratio inverts */
    const struct figures g = {"7000", "4000", "6500", "6000", "3000", "5000", "4", "5", "10"};
    write_fake(dir, "iwperf2", &g, fake, sizeof(fake));
    run_bench(fake, "auto", &r);
    check_row(r.out, "RDMA Write / TCP one-way stream [MiB/s]", 7000, 6500);
    check_row(r.out, "RDMA Read / TCP request/response [MiB/s]", 4000, 5000);
    check_row(r.out, "Send ping-pong 64 B, half RTT [usec]", 4, 5);
    double u, t, q1, q2;
    row(r.out, "RDMA Write / TCP one-way stream [MiB/s]", &u, &t, &q1);
    CHECK(q1 > 1.0);
    row(r.out, "RDMA Read / TCP request/response [MiB/s]", &u, &t, &q2);
    CHECK(q2 < 1.0);
    tool_run_free(&r);
    char rm[320];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
    CHECK_EQ(system(rm), 0);
}
