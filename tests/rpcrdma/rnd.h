/* Random RPC-over-RDMA headers for the codec's tests (deterministic, seeded). */
#ifndef UIW_TESTS_RPCRDMA_RND_H
#define UIW_TESTS_RPCRDMA_RND_H

#include <stdbool.h>
#include <stdint.h>

#include <uiw/rpcrdma.h>

#define RND_BLOB 1024

/* A header plus the storage its pointers refer to. */
struct rnd_msg {
    struct uiw_rpcrdma_hdr h;
    struct uiw_rpcrdma_space_default st;
    uint8_t blob[RND_BLOB]; /* opaque data and subset words */
};

uint64_t rnd_next(uint64_t *s);
uint32_t rnd_below(uint64_t *s, uint32_t n);

/* Fill m with a random valid header of version vers (1 or 2) and procedure proc (or a
 * random procedure of that version when proc < 0). With small, every 32-bit word of the
 * encoding stays below 2^12 (used where libtirpc would allocate `count` elements). */
void rnd_msg(struct rnd_msg *m, uint64_t *seed, uint32_t vers, int proc, bool small);

/* Field-by-field equality of two headers of the same version (what the decoder fills). */
bool rnd_hdr_equal(const struct uiw_rpcrdma_hdr *a, const struct uiw_rpcrdma_hdr *b);

#endif
