/* Two ends of one loopback RDMA connection in one process, both driven by the calling
 * thread: the connection manager's part of the benchmarks that measure the stack alone.
 * Each function that can fail returns 0, or a negative errno with *what naming the step
 * that failed. */
#ifndef UIW_BENCH_LINK_H
#define UIW_BENCH_LINK_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

struct bench_link {
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid; /* listening on 127.0.0.1, on a free port */
    struct uiw_cm_id *a;   /* the end that connected */
    struct uiw_cm_id *b;   /* the end accepted */
};

/* The next event of ch, which must be t: acknowledged, or handed to the caller (who
 * acknowledges it) when ev is not NULL. Another event fails with its status (-EPROTO if
 * none), *what then naming it. */
static inline int bench_link_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type t,
                                   struct uiw_cm_event **ev, const char **what)
{
    struct uiw_cm_event *e = NULL;
    int r = uiw_cm_get_event(ch, &e, 10000);
    if (r < 0) {
        *what = "cm event";
        return r;
    }
    if (e->event != t) {
        *what = uiw_cm_event_str(e->event);
        r = e->status ? e->status : -EPROTO;
        uiw_cm_ack_event(e);
        return r;
    }
    if (ev)
        *ev = e;
    else
        uiw_cm_ack_event(e);
    return 0;
}

/* Connect: a listener of context cb on loopback, an end of context ca connecting to it,
 * the QPs made in pa with qa and in pb with qb; both ends established. */
static inline int bench_link_up(struct bench_link *k, struct uiw_context *ca, struct uiw_pd *pa,
                                struct uiw_qp_init_attr *qa, struct uiw_context *cb,
                                struct uiw_pd *pb, struct uiw_qp_init_attr *qb, const char **what)
{
    memset(k, 0, sizeof(*k));
    *what = "cm channel";
    k->ch = uiw_cm_create_channel();
    if (!k->ch)
        return -errno;
    *what = "listen";
    k->lid = uiw_cm_create_id(k->ch, cb, NULL);
    if (!k->lid)
        return -errno;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int r = uiw_cm_bind_addr(k->lid, (struct sockaddr *)&sa);
    if (r == 0)
        r = uiw_cm_listen(k->lid, 4, NULL);
    if (r < 0)
        return r;
    memcpy(&sa, uiw_cm_get_local_addr(k->lid), sizeof(sa));
    *what = "connect";
    k->a = uiw_cm_create_id(k->ch, ca, NULL);
    if (!k->a)
        return -errno;
    if ((r = uiw_cm_create_qp(k->a, pa, qa)) < 0 ||
        (r = uiw_cm_connect(k->a, (struct sockaddr *)&sa, NULL)) < 0)
        return r;
    struct uiw_cm_event *ev;
    if ((r = bench_link_event(k->ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev, what)) < 0)
        return r;
    k->b = ev->id;
    uiw_cm_ack_event(ev);
    *what = "accept";
    if ((r = uiw_cm_create_qp(k->b, pb, qb)) < 0 || (r = uiw_cm_accept(k->b, NULL)) < 0)
        return r;
    for (int i = 0; i < 2; i++)
        if ((r = bench_link_event(k->ch, UIW_CM_EVENT_ESTABLISHED, NULL, what)) < 0)
            return r;
    return 0;
}

/* Disconnect, take both ends' DISCONNECTED events, and destroy the QPs, the ids and the
 * channel (before the PDs, CQs and contexts they use): all of them even when a step
 * failed, whose error is returned. */
static inline int bench_link_down(struct bench_link *k, const char **what)
{
    int r = uiw_cm_disconnect(k->a);
    if (r < 0)
        *what = "disconnect";
    for (int i = 0; i < 2 && r == 0; i++)
        r = bench_link_event(k->ch, UIW_CM_EVENT_DISCONNECTED, NULL, what);
    struct uiw_cm_id *ids[] = {k->a, k->b};
    for (int i = 0; i < 2; i++) {
        if (!ids[i])
            continue;
        if (ids[i]->qp)
            uiw_cm_destroy_qp(ids[i]);
        uiw_cm_destroy_id(ids[i]);
    }
    if (k->lid)
        uiw_cm_destroy_id(k->lid);
    if (k->ch)
        uiw_cm_destroy_channel(k->ch);
    memset(k, 0, sizeof(*k));
    return r;
}

#endif
