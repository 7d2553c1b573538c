/* Byte mutations of encoded headers for the differential rejection tests. */
#ifndef UIW_TESTS_RPCRDMA_MUTATE_H
#define UIW_TESTS_RPCRDMA_MUTATE_H

#include <stddef.h>
#include <stdint.h>

/* Apply 1..4 random mutations to buf[0..*len) (capacity cap): bit flips, word
 * replacement with boundary values, word insertion and deletion, truncation, appended
 * words. Every aligned 32-bit word stays below 2^12 when it was: libtirpc
 * allocates (and zeroes) count * element size before reading any element, so counts
 * are kept small to keep the oracle's allocations small. */
void mutate(uint8_t *buf, size_t *len, size_t cap, uint64_t *seed);

#endif
