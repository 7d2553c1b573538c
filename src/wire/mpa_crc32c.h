/* Internal: the CRC32c implementations behind uiw_crc32c(), exposed for tests and benchmarks. */
#ifndef UIW_WIRE_MPA_CRC32C_H
#define UIW_WIRE_MPA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Every implementation has uiw_crc32c()'s contract: CRC32c of buf[0..len) continuing from
 * `seed` (the CRC of the bytes before, 0 to start). */
typedef uint32_t (*uiw__crc32c_fn)(uint32_t seed, const void *buf, size_t len);

struct uiw__crc32c_impl {
    const char *name; /* "isa-l", "sse4.2", "table" (slice-by-8), "bytewise" */
    uiw__crc32c_fn fn;
};

/* The implementations usable on this machine and build (ISA-L only when built with it,
 * SSE4.2 only when the CPU has it; the portable ones always). Returns their count. */
size_t uiw__crc32c_impls(const struct uiw__crc32c_impl **impls);

/* Portable fallbacks, always available. */
uint32_t uiw__crc32c_slice8(uint32_t seed, const void *buf, size_t len);
uint32_t uiw__crc32c_bytewise(uint32_t seed, const void *buf, size_t len);

#endif
