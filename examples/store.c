/*
 * store: an rpcgen program (store.x) served and called over RPC-over-RDMA.
 *
 *   server:  store [-p PORT]                 (serves until SIGINT or SIGTERM)
 *   client:  store -p PORT [-s SIZE] HOST
 *
 * rpcgen's output is used unchanged: the client calls its stubs put_1() and get_1() on a
 * CLIENT made by uiw_rpc_clnt_create() instead of clnt_create(); the server registers its
 * dispatch routine store_prog_1() with uiw_rpc_svc_register() instead of svc_register(),
 * and implements put_1_svc() and get_1_svc() as for any rpcgen server. A blob of SIZE
 * bytes (at least the transport's DDP threshold, 1024 by default) moves by RDMA: the
 * server pulls PUT's argument with RDMA Read, and GET's result comes back in a Reply
 * chunk that the server fills with RDMA Write.
 *
 * Build (examples/Makefile does it):
 *   rpcgen -h -o store.h store.x; rpcgen -c -o store_xdr.c store.x
 *   rpcgen -l -o store_clnt.c store.x; rpcgen -m -o store_svc.c store.x
 *   cc store.c store_xdr.c store_clnt.c store_svc.c -Dxdr_bytes=uiw_xdr_bytes \
 *      $(pkg-config --cflags --libs uiw-rpc) -o store
 * (-Dxdr_bytes=uiw_xdr_bytes is optional: the server then decodes PUT's bytes in place,
 * in the registered buffer the RDMA Read filled, instead of copying them.)
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uiw/rpc.h>

#include "store.h"

/* rpcgen -m's dispatch routine (store_svc.c); store.h does not declare it. */
void store_prog_1(struct svc_req *rq, SVCXPRT *xprt);

static uint32_t fnv1a(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static unsigned long number(const char *s, unsigned long min, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
        fprintf(stderr, "store: bad number '%s' (%lu .. %lu)\n", s, min, max);
        exit(2);
    }
    return v;
}

/* ---------------------------------------------------------------- the server's procedures */

static blob kept; /* the bytes of the last PUT */

/* rpcgen's server interface: a pointer to the result, which must outlive the call. */
u_int *put_1_svc(blob *arg, struct svc_req *rq)
{
    static u_int sum;
    (void)rq;
    char *copy = malloc(arg->blob_len ? arg->blob_len : 1);
    if (!copy)
        return NULL; /* the dispatch routine answers SYSTEM_ERR */
    memcpy(copy, arg->blob_val, arg->blob_len);
    free(kept.blob_val);
    kept.blob_val = copy;
    kept.blob_len = arg->blob_len;
    sum = fnv1a(copy, arg->blob_len);
    printf("stored %u bytes, checksum %08x\n", kept.blob_len, sum);
    fflush(stdout);
    return &sum;
}

blob *get_1_svc(void *arg, struct svc_req *rq)
{
    (void)arg;
    (void)rq;
    return &kept;
}

/* ---------------------------------------------------------------- server */

static struct uiw_rpc_svc *the_svc;

static void on_signal(int sig)
{
    (void)sig;
    uiw_rpc_svc_stop(the_svc); /* async-signal-safe */
}

static int serve(uint16_t port)
{
    struct uiw_rpc_svc_attr attr = {.port = port};
    the_svc = uiw_rpc_svc_create(&attr);
    if (!the_svc) {
        fprintf(stderr, "store: uiw_rpc_svc_create: %s\n", strerror(errno));
        return 1;
    }
    int r = uiw_rpc_svc_register(the_svc, STORE_PROG, STORE_VERS, store_prog_1);
    if (r < 0) {
        fprintf(stderr, "store: uiw_rpc_svc_register: %s\n", uiw_strerror(r));
        uiw_rpc_svc_destroy(the_svc);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("listening on port %u\n", uiw_rpc_svc_port(the_svc));
    fflush(stdout);
    r = uiw_rpc_svc_run(the_svc); /* until a signal */
    struct uiw_rpc_xprt_stats st;
    if (uiw_rpc_svc_xprt_stats(the_svc, &st) == 0)
        printf("served %llu calls on %llu connections (%llu Read chunks, %llu Reply chunks)\n",
               (unsigned long long)st.calls_received, (unsigned long long)st.connections,
               (unsigned long long)st.read_chunks, (unsigned long long)st.reply_chunks);
    uiw_rpc_svc_destroy(the_svc);
    free(kept.blob_val);
    if (r < 0)
        fprintf(stderr, "store: uiw_rpc_svc_run: %s\n", uiw_strerror(r));
    return r < 0;
}

/* ---------------------------------------------------------------- client */

static int client(const char *host, uint16_t port, size_t size)
{
    CLIENT *cl = uiw_rpc_clnt_create(host, port, STORE_PROG, STORE_VERS, NULL);
    if (!cl) {
        fprintf(stderr, "store: uiw_rpc_clnt_create %s: %s\n", host, strerror(errno));
        return 1;
    }
    int status = 1;
    blob b = {.blob_len = (u_int)size, .blob_val = malloc(size ? size : 1)};
    if (!b.blob_val)
        goto out;
    for (size_t i = 0; i < size; i++)
        b.blob_val[i] = (char)(i * 7 + 3);

    u_int *sum = put_1(&b, cl); /* rpcgen's stub: clnt_call on the uiw CLIENT */
    if (!sum) {
        clnt_perror(cl, "store: PUT");
        goto out;
    }
    if (*sum != fnv1a(b.blob_val, size)) {
        fprintf(stderr, "store: PUT: the server's checksum %08x is wrong\n", *sum);
        goto out;
    }
    blob *got = get_1(NULL, cl);
    if (!got) {
        clnt_perror(cl, "store: GET");
        goto out;
    }
    if (got->blob_len != size || memcmp(got->blob_val, b.blob_val, size) != 0) {
        fprintf(stderr, "store: GET: %u bytes that differ from those put\n", got->blob_len);
        clnt_freeres(cl, (xdrproc_t)xdr_blob, (char *)got);
        goto out;
    }
    clnt_freeres(cl, (xdrproc_t)xdr_blob, (char *)got);

    struct uiw_rpc_conn_info ci;
    struct uiw_rpc_xprt_stats st;
    if (uiw_rpc_clnt_info(cl, &ci) == 0 && uiw_rpc_clnt_xprt_stats(cl, &st) == 0)
        printf("put and got %zu bytes over RPC-over-RDMA Version %u (credits %u; %llu Read "
               "chunks, %llu Reply chunks)\n",
               size, ci.vers, ci.credits, (unsigned long long)st.read_chunks,
               (unsigned long long)st.reply_chunks);
    status = 0;
out:
    free(b.blob_val);
    clnt_destroy(cl);
    return status;
}

int main(int argc, char **argv)
{
    const char *usage = "usage: store [-p PORT]                  (server)\n"
                        "       store -p PORT [-s SIZE] HOST     (client)\n";
    unsigned long port = 0, size = 256 << 10;
    int c;
    while ((c = getopt(argc, argv, "p:s:")) != -1) {
        switch (c) {
        case 'p':
            port = number(optarg, 0, 65535);
            break;
        case 's':
            size = number(optarg, 0, 512u << 10);
            break;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (argc - optind > 1 || (optind == argc - 1 && port == 0)) {
        fputs(usage, stderr);
        return 2;
    }
    return optind == argc ? serve((uint16_t)port) : client(argv[optind], (uint16_t)port, size);
}
