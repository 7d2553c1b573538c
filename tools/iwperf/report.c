/* iwperf: perftest-style tables and the JSON document. */
#include "iwperf.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <errno.h>
#include <string.h>

#define RULE                                                                                       \
    "---------------------------------------------------------------------------------------"

const char *iwp_bw_columns(bool gbits)
{
    return gbits
               ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
               : " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   "
                 "MsgRate[Mpps]";
}

const char *iwp_lat_columns(void)
{
    return " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
           "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
}

static double dbl_of(uint64_t v)
{
    double d;
    memcpy(&d, &v, sizeof(d));
    return d;
}

static uint64_t u64_of(double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof(v));
    return v;
}

void iwp_result_to_ctrl(const struct iwp_result *r, struct iwp_ctrl *c)
{
    memset(c, 0, sizeof(*c));
    c->type = IWP_C_REPORT;
    c->v[0] = r->bytes;
    c->v[1] = r->iters;
    const double d[11] = {r->seconds,     r->bw_peak,   r->bw_avg,        r->msg_rate,
                          r->lat.t_min,   r->lat.t_max, r->lat.t_typical, r->lat.t_avg,
                          r->lat.t_stdev, r->lat.p99,   r->lat.p999};
    for (int i = 0; i < 11; i++)
        c->v[2 + i] = u64_of(d[i]);
    c->v[13] = (uint64_t)r->verify;
    c->v[14] = r->copied_known ? (r->copied | (1ull << 63)) : 0;
}

void iwp_result_from_ctrl(const struct iwp_ctrl *c, struct iwp_result *r)
{
    memset(r, 0, sizeof(*r));
    r->bytes = c->v[0];
    r->iters = c->v[1];
    double *d[11] = {&r->seconds,     &r->bw_peak,   &r->bw_avg,        &r->msg_rate,
                     &r->lat.t_min,   &r->lat.t_max, &r->lat.t_typical, &r->lat.t_avg,
                     &r->lat.t_stdev, &r->lat.p99,   &r->lat.p999};
    for (int i = 0; i < 11; i++)
        *d[i] = dbl_of(c->v[2 + i]);
    r->verify = c->v[13] <= IWP_VERIFY_FAIL ? (enum iwp_verify)c->v[13] : IWP_VERIFY_FAIL;
    r->copied_known = (c->v[14] >> 63) != 0;
    r->copied = c->v[14] & ~(1ull << 63);
}

void iwp_report_init(struct iwp_report *r, const struct iwp_opts *o, const char *role, FILE *out)
{
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->role = role;
    r->out = out;
    r->mpa_rev = o->mpa_rev;
    r->crc = o->crc;
    r->markers = o->markers;
}

static const char *title(const struct iwp_opts *o)
{
    static const char *const t[2][2][3] = {
        {{"RDMA_Write BW Test", "RDMA_Read BW Test", "Send BW Test"},
         {"RDMA_Write Latency Test", "RDMA_Read Latency Test", "Send Latency Test"}},
        {{"TCP Write BW Test", "TCP Read BW Test", "TCP Send BW Test"},
         {"TCP Write Latency Test", "TCP Read Latency Test", "TCP Send Latency Test"}},
    };
    return t[o->tcp][o->lat][o->test];
}

void iwp_report_header(struct iwp_report *r)
{
    const struct iwp_opts *o = r->o;
    if (o->json)
        return;
    FILE *f = r->out;
    if (!o->quiet) {
        fprintf(f, "%s\n", RULE);
        fprintf(f, "                    %s\n", title(o));
        if (o->tcp) {
            fprintf(f, " Transport       : TCP (baseline)       Role          : %s\n", r->role);
        } else {
            fprintf(f, " Transport       : uiw iWARP            Role          : %s\n", r->role);
            fprintf(f, " MPA revision    : %-2d                   CRC32c        : %s\n", r->mpa_rev,
                    r->crc ? "ON" : "OFF");
            fprintf(f, " Markers         : %-3s                  MULPDU        : %u\n",
                    r->markers ? "ON" : "OFF", r->mulpdu);
            fprintf(f, " ORD / IRD       : %u / %-14u   TX depth      : %u\n", r->ord, r->ird,
                    o->tx_depth);
            if (o->qps > 1 || o->inline_size)
                fprintf(f, " Number of qps   : %-3u                  Max inline    : %u[B]\n",
                        o->qps, o->inline_size);
        }
        if (o->duration > 0)
            fprintf(f, " Duration        : %.1f s per size\n", o->duration);
        if (o->lat && o->test == IWP_READ)
            fprintf(f, " Latency         : whole RDMA Read (request and response)\n");
        else if (o->lat)
            fprintf(f, " Latency         : half the round trip\n");
        fprintf(f, "%s\n", RULE);
    }
    fprintf(f, "%s\n", o->lat ? iwp_lat_columns() : iwp_bw_columns(o->gbits));
    fflush(f);
}

static double bw_unit(const struct iwp_opts *o, double bytes_per_s)
{
    return o->gbits ? bytes_per_s * 8.0 / 1e9 : bytes_per_s / (1024.0 * 1024.0);
}

void iwp_report_row(struct iwp_report *r, const struct iwp_result *res)
{
    const struct iwp_opts *o = r->o;
    if (r->nresults < (int)(sizeof(r->results) / sizeof(r->results[0])))
        r->results[r->nresults++] = *res;
    if (o->json || !r->out)
        return;
    FILE *f = r->out;
    if (o->lat) {
        fprintf(f,
                " %-7" PRIu64 " %-10" PRIu64 "   %-7.2f        %-7.2f      %-7.2f            "
                "%-7.2f        %-7.2f         %-7.2f                %-7.2f",
                res->bytes, res->iters, res->lat.t_min, res->lat.t_max, res->lat.t_typical,
                res->lat.t_avg, res->lat.t_stdev, res->lat.p99, res->lat.p999);
    } else {
        fprintf(f, " %-10" PRIu64 " %-10" PRIu64 "     %-10.2f          %-10.2f           %-9.6f",
                res->bytes, res->iters, bw_unit(o, res->bw_peak), bw_unit(o, res->bw_avg),
                res->msg_rate / 1e6);
    }
    if (res->verify == IWP_VERIFY_OK)
        fprintf(f, "   verify ok");
    else if (res->verify == IWP_VERIFY_FAIL)
        fprintf(f, "   VERIFY FAILED");
    fputc('\n', f);
    fflush(f);
}

static const char *verify_str(enum iwp_verify v)
{
    return v == IWP_VERIFY_OK ? "ok" : v == IWP_VERIFY_FAIL ? "fail" : "off";
}

static void stats_text(FILE *f, const struct iwp_stack_stats *s)
{
    fprintf(f,
            " uiw stack counters (this side)\n"
            "   sent      : %" PRIu64 " bytes in %" PRIu64 " FPDUs\n"
            "   received  : %" PRIu64 " bytes in %" PRIu64 " FPDUs\n"
            "   payload   : %" PRIu64 " bytes placed, %" PRIu64 " bytes copied\n"
            "   Terminates: %" PRIu64 " sent, %" PRIu64 " received\n"
            "   CRC errors: %" PRIu64 "    async events dropped: %" PRIu64 "\n",
            s->tx_bytes, s->tx_fpdus, s->rx_bytes, s->rx_fpdus, s->placed, s->copied, s->terms_sent,
            s->terms_received, s->crc_errors, s->async_dropped);
}

static void stats_json(FILE *f, const struct iwp_stack_stats *s)
{
    fprintf(f,
            "\"stats\": {\"tx_bytes\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
            ", \"tx_fpdus\": %" PRIu64 ", \"rx_fpdus\": %" PRIu64
            ", \"placed_payload_bytes\": %" PRIu64 ", \"copied_payload_bytes\": %" PRIu64
            ", \"terminates_sent\": %" PRIu64 ", \"terminates_received\": %" PRIu64
            ", \"crc_errors\": %" PRIu64 ", \"async_events_dropped\": %" PRIu64 "}, ",
            s->tx_bytes, s->rx_bytes, s->tx_fpdus, s->rx_fpdus, s->placed, s->copied, s->terms_sent,
            s->terms_received, s->crc_errors, s->async_dropped);
}

void iwp_report_finish(struct iwp_report *r)
{
    const struct iwp_opts *o = r->o;
    FILE *f = r->out;
    if (!o->json) {
        if (!o->quiet)
            fprintf(f, "%s\n", RULE);
        if (r->have_stats)
            stats_text(f, &r->stats);
        fflush(f);
        return;
    }
    fprintf(f, "{\"tool\": \"iwperf\", \"role\": \"%s\", \"transport\": \"%s\", \"test\": \"%s\", ",
            r->role, o->tcp ? "tcp" : "uiw", iwp_test_name(o->test));
    fprintf(f, "\"mode\": \"%s\", \"tx_depth\": %u, ", o->lat ? "lat" : "bw", o->tx_depth);
    if (!o->tcp)
        fprintf(f, "\"progress\": \"%s\", ",
                o->events      ? "events"
                : o->no_thread ? "inline"
                               : "thread");
    if (!o->tcp)
        fprintf(f,
                "\"mpa_rev\": %d, \"crc\": %s, \"markers\": %s, \"ird\": %u, \"ord\": %u, "
                "\"mulpdu\": %u, ",
                r->mpa_rev, r->crc ? "true" : "false", r->markers ? "true" : "false", r->ird,
                r->ord, r->mulpdu);
    if (r->have_stats)
        stats_json(f, &r->stats);
    fprintf(f, "\"results\": [");
    for (int i = 0; i < r->nresults; i++) {
        const struct iwp_result *x = &r->results[i];
        fprintf(f, "%s\n  {\"bytes\": %" PRIu64 ", \"iterations\": %" PRIu64 ", \"seconds\": %.9f",
                i ? "," : "", x->bytes, x->iters, x->seconds);
        if (o->lat)
            fprintf(f,
                    ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": %.3f, "
                    "\"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, \"p99_us\": %.3f, "
                    "\"p999_us\": %.3f",
                    x->lat.t_min, x->lat.t_max, x->lat.t_typical, x->lat.t_avg, x->lat.t_stdev,
                    x->lat.p99, x->lat.p999);
        else
            fprintf(f,
                    ", \"bw_peak_mib\": %.3f, \"bw_avg_mib\": %.3f, \"bw_peak_gbits\": %.4f, "
                    "\"bw_avg_gbits\": %.4f, \"msg_rate_mpps\": %.6f",
                    x->bw_peak / 1048576.0, x->bw_avg / 1048576.0, x->bw_peak * 8 / 1e9,
                    x->bw_avg * 8 / 1e9, x->msg_rate / 1e6);
        fprintf(f, ", \"verify\": \"%s\"", verify_str(x->verify));
        if (x->copied_known)
            fprintf(f, ", \"copied_payload_bytes\": %" PRIu64, x->copied);
        else
            fprintf(f, ", \"copied_payload_bytes\": null");
        fputc('}', f);
    }
    fprintf(f, "\n]}\n");
    fflush(f);
}

void iwp_listening(const struct iwp_opts *o, const struct sockaddr *local)
{
    unsigned port = 0;
    if (local && local->sa_family == AF_INET)
        port = ntohs(((const struct sockaddr_in *)local)->sin_port);
    else if (local && local->sa_family == AF_INET6)
        port = ntohs(((const struct sockaddr_in6 *)local)->sin6_port);
    fprintf(stderr, "%s: listening on port %u\n", o->prog ? o->prog : "iwperf", port);
    fflush(stderr);
    if (o->perftest && !o->json && !o->quiet) {
        printf("\n************************************\n"
               "* Waiting for client to connect... *\n"
               "************************************\n");
        fflush(stdout);
    }
}

/* perftest's test names: "RDMA_Write_BW_Test", "Send_Latency_Test" ... */
static const char *perftest_test(const struct iwp_opts *o)
{
    static const char *const n[2][3] = {
        {"RDMA_Write_BW_Test", "RDMA_Read_BW_Test", "Send_BW_Test"},
        {"RDMA_Write_Latency_Test", "RDMA_Read_Latency_Test", "Send_Latency_Test"}};
    return n[o->lat][o->test];
}

static void out_json_result(FILE *f, const struct iwp_opts *o, const struct iwp_result *x)
{
    if (o->lat)
        fprintf(f,
                "{\n\"MsgSize\": %" PRIu64 ",\n\"n_iterations\": %" PRIu64
                ",\n\"t_min\": %.2f,\n\"t_max\": %.2f,\n\"t_typical\": %.2f,\n"
                "\"t_avg\": %.2f,\n\"t_stdev\": %.2f,\n\"percentile_99\": %.2f,\n"
                "\"percentile_99.9\": %.2f\n}",
                x->bytes, x->iters, x->lat.t_min, x->lat.t_max, x->lat.t_typical, x->lat.t_avg,
                x->lat.t_stdev, x->lat.p99, x->lat.p999);
    else
        fprintf(f,
                "{\n\"MsgSize\": %" PRIu64 ",\n\"n_iterations\": %" PRIu64
                ",\n\"BW_peak\": %.2f,\n\"BW_average\": %.2f,\n\"MsgRate\": %.6f\n}",
                x->bytes, x->iters, bw_unit(o, x->bw_peak), bw_unit(o, x->bw_avg),
                x->msg_rate / 1e6);
}

int iwp_report_out_json(const struct iwp_report *r)
{
    const struct iwp_opts *o = r->o;
    FILE *f = fopen(o->out_json, "w");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", o->prog, o->out_json, strerror(errno));
        return -1;
    }
    fprintf(f, "{\n\"test_info\": {\n\"test\": \"%s\",\n", perftest_test(o));
    fprintf(f, "\"Dual_port\": \"OFF\",\n\"Device\": \"uiw\",\n\"Number_of_qps\": %u,\n", o->qps);
    fprintf(f, "\"Transport_type\": \"%s\",\n\"Connection_type\": \"RC\",\n",
            o->tcp ? "TCP" : "IW");
    fprintf(f, "\"Using_SRQ\": \"OFF\",\n");
    if (!o->lat)
        fprintf(f, "\"TX_depth\": %u,\n\"CQ_Moderation\": %u,\n", o->tx_depth, o->cq_mod);
    if (o->test == IWP_SEND)
        fprintf(f, "\"RX_depth\": %u,\n", o->rx_depth);
    fprintf(f, "\"Mtu\": %u,\n\"Link_type\": \"Ethernet\",\n", r->mulpdu);
    if (o->test != IWP_READ)
        fprintf(f, "\"Max_inline_data\": %u,\n", o->inline_size);
    else
        fprintf(f, "\"Outstand_reads\": %u,\n", r->ord);
    fprintf(f, "\"rdma_cm_QPs\": \"ON\",\n\"Data_ex_method\": \"rdma_cm\"\n},\n");
    /* perftest writes one size's result; with -a every size's, in an array */
    fprintf(f, "\"results\": ");
    if (r->nresults == 1) {
        out_json_result(f, o, &r->results[0]);
    } else {
        fprintf(f, "[");
        for (int i = 0; i < r->nresults; i++) {
            fprintf(f, "%s\n", i ? "," : "");
            out_json_result(f, o, &r->results[i]);
        }
        fprintf(f, "\n]");
    }
    fprintf(f, "\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: %s: %s\n", o->prog, o->out_json, strerror(errno));
        return -1;
    }
    return 0;
}
