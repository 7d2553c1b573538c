/*
 * --stats of the RPC-over-RDMA tools (rpcrdma-ping, rpcrdma-bench, uiw-nfs, uiw-nfsd): the
 * transport's counters (uiw_rpc_xprt_stats) and the RNIC's under them, as text in
 * iwperf's layout or as one JSON object, the same in every tool.
 *
 * A server prints them when it ends (SIGINT, SIGTERM) and on SIGUSR1: rpcstats_block
 * blocks those signals before any thread starts, and rpcstats_signals starts the thread
 * that waits for them once the server is set up, so that the printing runs in no signal
 * handler.
 */
#ifndef UIW_TOOLS_RPCSTATS_H
#define UIW_TOOLS_RPCSTATS_H

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include <uiw/rpc.h>

/* Add b's counters to a (credits: the larger), e.g. over a tool's clients. */
static inline void rpcstats_add(struct uiw_rpc_xprt_stats *a, const struct uiw_rpc_xprt_stats *b)
{
#define RPCSTATS_ADD(f) a->f += b->f
    RPCSTATS_ADD(connections);
    RPCSTATS_ADD(closed);
    RPCSTATS_ADD(lost);
    RPCSTATS_ADD(calls_sent);
    RPCSTATS_ADD(replies_received);
    RPCSTATS_ADD(retransmits);
    RPCSTATS_ADD(calls_received);
    RPCSTATS_ADD(replies_sent);
    RPCSTATS_ADD(drc_hits);
    RPCSTATS_ADD(timeouts);
    RPCSTATS_ADD(remote_invalidations);
    RPCSTATS_ADD(local_invalidations);
    RPCSTATS_ADD(send_with_invalidate);
    RPCSTATS_ADD(credit_violations);
    RPCSTATS_ADD(credit_waits);
    RPCSTATS_ADD(read_chunks);
    RPCSTATS_ADD(write_chunks);
    RPCSTATS_ADD(reply_chunks);
    RPCSTATS_ADD(long_calls);
    RPCSTATS_ADD(rdma_read_bytes);
    RPCSTATS_ADD(rdma_write_bytes);
    RPCSTATS_ADD(inline_bytes_sent);
    RPCSTATS_ADD(inline_bytes_received);
    RPCSTATS_ADD(sleeps);
    RPCSTATS_ADD(spins_skipped);
    RPCSTATS_ADD(inline_buffer_bytes);
    RPCSTATS_ADD(inline_buffer_resident);
    RPCSTATS_ADD(bulk_buffer_bytes);
    for (int i = 0; i < UIW_RPC_NERR; i++) {
        RPCSTATS_ADD(errors_sent[i]);
        RPCSTATS_ADD(errors_received[i]);
    }
    RPCSTATS_ADD(rnic.tx_bytes);
    RPCSTATS_ADD(rnic.rx_bytes);
    RPCSTATS_ADD(rnic.tx_fpdus);
    RPCSTATS_ADD(rnic.rx_fpdus);
    RPCSTATS_ADD(rnic.placed_payload_bytes);
    RPCSTATS_ADD(rnic.copied_payload_bytes);
    RPCSTATS_ADD(rnic.terminates_sent);
    RPCSTATS_ADD(rnic.terminates_received);
    RPCSTATS_ADD(rnic.crc_errors);
    RPCSTATS_ADD(rnic.async_events_dropped);
#undef RPCSTATS_ADD
    if (b->credits_granted_by_peer > a->credits_granted_by_peer)
        a->credits_granted_by_peer = b->credits_granted_by_peer;
    if (b->credits_granted_to_peer > a->credits_granted_to_peer)
        a->credits_granted_to_peer = b->credits_granted_to_peer;
    if (b->credits_max_inflight > a->credits_max_inflight)
        a->credits_max_inflight = b->credits_max_inflight;
}

/* The errors of a direction as "ERR_VERS 1, BAD_XDR 2" (or "none"). */
static inline void rpcstats_errors(FILE *f, const uint64_t *e)
{
    static const char *const name[UIW_RPC_NERR] = {
        "?",     "ERR_VERS", "ERR_CHUNK/BAD_XDR", "REPLY_RESOURCE", "INVAL_PROC", "INVAL_OPTION",
        "SYSTEM"};
    bool any = false;
    for (int i = 1; i < UIW_RPC_NERR; i++)
        if (e[i]) {
            fprintf(f, "%s%s %" PRIu64, any ? ", " : "", name[i], e[i]);
            any = true;
        }
    if (!any)
        fputs("none", f);
}

/* Text: a block per layer, "who" says which side ("client", "server"). */
static inline void rpcstats_text(FILE *f, const char *who, const struct uiw_rpc_xprt_stats *s)
{
    const struct uiw_context_stats *r = &s->rnic;
    fprintf(f,
            " uiw RPC-over-RDMA counters (%s)\n"
            "   calls      : %" PRIu64 " sent, %" PRIu64 " received\n"
            "   replies    : %" PRIu64 " received, %" PRIu64 " sent\n"
            "   retransmits: %" PRIu64 "    DRC hits: %" PRIu64 "    connections: %" PRIu64
            " (%" PRIu64 " closed, %" PRIu64 " lost)\n"
            "   credits    : %u granted by the peer, %u granted to it, %u most in flight, %" PRIu64
            " waits\n"
            "   chunks     : %" PRIu64 " Read, %" PRIu64 " Write, %" PRIu64 " Reply, %" PRIu64
            " long calls\n"
            "   RDMA       : %" PRIu64 " bytes by Read, %" PRIu64 " bytes by Write\n"
            "   inline     : %" PRIu64 " bytes sent, %" PRIu64 " bytes received\n"
            "   timeouts   : %" PRIu64 "    credit violations: %" PRIu64 "\n"
            "   invalidated: %" PRIu64 " STags by the peer, %" PRIu64 " by us; %" PRIu64
            " replies with Send With Invalidate\n"
            "   pollers    : %" PRIu64 " sleeps (no completion within the spin), %" PRIu64
            " of them without a spin\n"
            "   memory     : %" PRIu64 " KiB of inline buffers (%" PRIu64 " KiB resident), %" PRIu64
            " KiB of bulk buffers\n",
            who, s->calls_sent, s->calls_received, s->replies_received, s->replies_sent,
            s->retransmits, s->drc_hits, s->connections, s->closed, s->lost,
            s->credits_granted_by_peer, s->credits_granted_to_peer, s->credits_max_inflight,
            s->credit_waits, s->read_chunks, s->write_chunks, s->reply_chunks, s->long_calls,
            s->rdma_read_bytes, s->rdma_write_bytes, s->inline_bytes_sent, s->inline_bytes_received,
            s->timeouts, s->credit_violations, s->remote_invalidations, s->local_invalidations,
            s->send_with_invalidate, s->sleeps, s->spins_skipped, s->inline_buffer_bytes >> 10,
            s->inline_buffer_resident >> 10, s->bulk_buffer_bytes >> 10);
    fputs("   errors     : sent ", f);
    rpcstats_errors(f, s->errors_sent);
    fputs("; received ", f);
    rpcstats_errors(f, s->errors_received);
    fprintf(f,
            "\n uiw stack counters (%s)\n"
            "   sent      : %" PRIu64 " bytes in %" PRIu64 " FPDUs\n"
            "   received  : %" PRIu64 " bytes in %" PRIu64 " FPDUs\n"
            "   payload   : %" PRIu64 " bytes placed, %" PRIu64 " bytes copied\n"
            "   Terminates: %" PRIu64 " sent, %" PRIu64 " received\n"
            "   CRC errors: %" PRIu64 "    async events dropped: %" PRIu64 "\n",
            who, r->tx_bytes, r->tx_fpdus, r->rx_bytes, r->rx_fpdus, r->placed_payload_bytes,
            r->copied_payload_bytes, r->terminates_sent, r->terminates_received, r->crc_errors,
            r->async_events_dropped);
}

static inline void rpcstats_json_errors(FILE *f, const uint64_t *e)
{
    for (int i = 1; i < UIW_RPC_NERR; i++)
        fprintf(f, "%s%" PRIu64, i > 1 ? "," : "[", e[i]);
    fputc(']', f);
}

/* JSON: one object (no key), the RNIC's part under "rnic" with iwperf's keys; errors_*
 * are arrays by errcode 1..6. */
static inline void rpcstats_json(FILE *f, const struct uiw_rpc_xprt_stats *s)
{
    const struct uiw_context_stats *r = &s->rnic;
    fprintf(
        f,
        "{\"connections\":%" PRIu64 ",\"calls_sent\":%" PRIu64 ",\"calls_received\":%" PRIu64
        ",\"replies_received\":%" PRIu64 ",\"replies_sent\":%" PRIu64 ",\"retransmits\":%" PRIu64
        ",\"drc_hits\":%" PRIu64 ",\"credits_granted_by_peer\":%u,\"credits_granted_to_peer\":%u"
        ",\"credits_max_inflight\":%u,\"credit_waits\":%" PRIu64 ",\"read_chunks\":%" PRIu64
        ",\"write_chunks\":%" PRIu64 ",\"reply_chunks\":%" PRIu64 ",\"long_calls\":%" PRIu64
        ",\"rdma_read_bytes\":%" PRIu64 ",\"rdma_write_bytes\":%" PRIu64
        ",\"inline_bytes_sent\":%" PRIu64 ",\"inline_bytes_received\":%" PRIu64
        ",\"closed\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"timeouts\":%" PRIu64
        ",\"remote_invalidations\":%" PRIu64 ",\"local_invalidations\":%" PRIu64
        ",\"send_with_invalidate\":%" PRIu64 ",\"credit_violations\":%" PRIu64
        ",\"sleeps\":%" PRIu64 ",\"spins_skipped\":%" PRIu64 ",\"inline_buffer_bytes\":%" PRIu64
        ",\"inline_buffer_resident\":%" PRIu64 ",\"bulk_buffer_bytes\":%" PRIu64
        ",\"errors_sent\":",
        s->connections, s->calls_sent, s->calls_received, s->replies_received, s->replies_sent,
        s->retransmits, s->drc_hits, s->credits_granted_by_peer, s->credits_granted_to_peer,
        s->credits_max_inflight, s->credit_waits, s->read_chunks, s->write_chunks, s->reply_chunks,
        s->long_calls, s->rdma_read_bytes, s->rdma_write_bytes, s->inline_bytes_sent,
        s->inline_bytes_received, s->closed, s->lost, s->timeouts, s->remote_invalidations,
        s->local_invalidations, s->send_with_invalidate, s->credit_violations, s->sleeps,
        s->spins_skipped, s->inline_buffer_bytes, s->inline_buffer_resident, s->bulk_buffer_bytes);
    rpcstats_json_errors(f, s->errors_sent);
    fputs(",\"errors_received\":", f);
    rpcstats_json_errors(f, s->errors_received);
    fprintf(f,
            ",\"rnic\":{\"tx_bytes\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_fpdus\":%" PRIu64
            ",\"rx_fpdus\":%" PRIu64 ",\"placed_payload_bytes\":%" PRIu64
            ",\"copied_payload_bytes\":%" PRIu64 ",\"terminates_sent\":%" PRIu64
            ",\"terminates_received\":%" PRIu64 ",\"crc_errors\":%" PRIu64
            ",\"async_events_dropped\":%" PRIu64 "}}",
            r->tx_bytes, r->rx_bytes, r->tx_fpdus, r->rx_fpdus, r->placed_payload_bytes,
            r->copied_payload_bytes, r->terminates_sent, r->terminates_received, r->crc_errors,
            r->async_events_dropped);
}

/* A server's counters on its signals. print(arg) prints them; on SIGINT / SIGTERM it is
 * followed by end(arg), which must make the server end (or exit itself). */
struct rpcstats_sig {
    void (*print)(void *arg);
    void (*end)(void *arg);
    void *arg;
};

/* The signals a server's counters answer: SIGUSR1, SIGINT and SIGTERM. */
static inline void rpcstats_sigset(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
}

static inline void *rpcstats_sigthread(void *p)
{
    const struct rpcstats_sig *s = p;
    sigset_t set;
    rpcstats_sigset(&set);
    for (;;) {
        int sig;
        if (sigwait(&set, &sig) != 0)
            continue;
        s->print(s->arg);
        if (sig != SIGUSR1) {
            s->end(s->arg);
            return NULL;
        }
    }
}

/* Block SIGUSR1, SIGINT and SIGTERM in this thread and the threads it creates after (they
 * stay pending until rpcstats_signals' thread takes them). Call before creating any other
 * thread. 0 or -1. */
static inline int rpcstats_block(void)
{
    sigset_t set;
    rpcstats_sigset(&set);
    return pthread_sigmask(SIG_BLOCK, &set, NULL) == 0 ? 0 : -1;
}

/* Start the thread that takes the signals rpcstats_block blocked, once everything s's
 * functions read is set (the thread starts after those writes). 0 or -1. */
static inline int rpcstats_signals(const struct rpcstats_sig *s)
{
    pthread_t t;
    if (pthread_create(&t, NULL, rpcstats_sigthread, (void *)s) != 0)
        return -1;
    pthread_detach(t);
    return 0;
}

#endif
