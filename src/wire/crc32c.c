/*
 * CRC32c (Castagnoli) as MPA (RFC 5044) and iSCSI (RFC 3720) use it: reflected polynomial
 * 0x82F63B78, initial value and final xor 0xFFFFFFFF.
 *
 * The fast path is ISA-L's crc32_iscsi (which itself dispatches to the best code for the
 * CPU). crc32_iscsi(buf, len, init) runs the register without the final inversion, so
 * the finished CRC of a buffer continuing from a finished CRC `seed` is
 * ~crc32_iscsi(buf, len, ~seed). Without ISA-L the SSE4.2 crc32 instruction is used when
 * the CPU has it (three interleaved streams hide its latency), else slice-by-8 tables.
 * Short buffers (under CRC_SHORT bytes) go through a plain inline crc32 loop when the CPU
 * has SSE4.2: ISA-L's entry costs more than the whole computation there.
 */
#include <limits.h>
#include <stdbool.h>
#include <pthread.h>
#include <string.h>

#include <uiw/wire.h>

#include "wire/mpa_crc32c.h"

#if defined(UIW_HAVE_ISAL) && UIW_HAVE_ISAL
#include <isa-l/crc.h>
#define CRC_ISAL 1
#else
#define CRC_ISAL 0
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC_SSE42 1
#else
#define CRC_SSE42 0
#endif

#define POLY 0x82F63B78u

/* ---- slice-by-8 tables, built once ---- */

static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            tab[t][i] = (tab[t - 1][i] >> 8) ^ tab[0][tab[t - 1][i] & 0xFF];
}

static void tab_init(void)
{
    pthread_once(&tab_once, tab_build);
}

uint32_t uiw__crc32c_bytewise(uint32_t seed, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~seed;
    tab_init();
    while (len--)
        c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xFF];
    return ~c;
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint32_t uiw__crc32c_slice8(uint32_t seed, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~seed;
    tab_init();
    while (len && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xFF];
        len--;
    }
    while (len >= 8) {
        uint64_t v = load_le64(p) ^ c;
        c = tab[7][v & 0xFF] ^ tab[6][(v >> 8) & 0xFF] ^ tab[5][(v >> 16) & 0xFF] ^
            tab[4][(v >> 24) & 0xFF] ^ tab[3][(v >> 32) & 0xFF] ^ tab[2][(v >> 40) & 0xFF] ^
            tab[1][(v >> 48) & 0xFF] ^ tab[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xFF];
    return ~c;
}

/* ---- SSE4.2 crc32 instruction ---- */

#if CRC_SSE42
/* Combining interleaved streams: shift[s][k][b] is the CRC register after byte b in
 * position k of the register is followed by stride[s] zero bytes (a linear map, so a
 * register is advanced over a stride by xoring four lookups). Built once. */
static const size_t stride[2] = {1024, 128};
static uint32_t shift_tab[2][4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static uint32_t zeros_bytewise(uint32_t c, size_t n)
{
    while (n--)
        c = (c >> 8) ^ tab[0][c & 0xFF];
    return c;
}

/* Advancing the register over zero bytes is linear: the 32 registers of a single bit,
 * advanced, give every entry as the xor of those of its bits (32 runs over a stride, not
 * 1024: building the tables byte by byte took milliseconds of every process's start). */
static void shift_build(void)
{
    tab_init();
    for (int s = 0; s < 2; s++) {
        uint32_t bit[32];
        for (int i = 0; i < 32; i++)
            bit[i] = zeros_bytewise(1u << i, stride[s]);
        for (uint32_t k = 0; k < 4; k++) {
            shift_tab[s][k][0] = 0;
            for (uint32_t b = 1; b < 256; b++)
                shift_tab[s][k][b] =
                    shift_tab[s][k][b & (b - 1)] ^ bit[8 * k + (uint32_t)__builtin_ctz(b)];
        }
    }
}

static inline uint32_t shift_stride(int s, uint32_t c)
{
    return shift_tab[s][0][c & 0xFF] ^ shift_tab[s][1][(c >> 8) & 0xFF] ^
           shift_tab[s][2][(c >> 16) & 0xFF] ^ shift_tab[s][3][c >> 24];
}

/* Three streams of `len` bytes at p, p + len, p + 2 len, folded into c. */
__attribute__((target("sse4.2"))) static inline uint64_t crc3(int s, uint64_t c, const uint8_t *p)
{
    size_t n = stride[s];
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *p1 = p + n, *p2 = p + 2 * n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t a, b, d;
        memcpy(&a, p + i, 8);
        memcpy(&b, p1 + i, 8);
        memcpy(&d, p2 + i, 8);
        c = __builtin_ia32_crc32di(c, a);
        c1 = __builtin_ia32_crc32di(c1, b);
        c2 = __builtin_ia32_crc32di(c2, d);
    }
    c = shift_stride(s, (uint32_t)c) ^ c1;
    return shift_stride(s, (uint32_t)c) ^ c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t seed, const void *buf,
                                                            size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = (uint32_t)~seed;
    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    for (int s = 0; s < 2; s++)
        while (len >= 3 * stride[s]) {
            c = crc3(s, c, p);
            p += 3 * stride[s];
            len -= 3 * stride[s];
        }
    while (len >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = __builtin_ia32_crc32di(c, a);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

/* Short buffers (framing fields, markers, small ULPDUs): one crc32 per 8 bytes, no setup.
 * ISA-L's entry has a fixed cost of tens of ns on some CPUs, more than this whole loop. */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42_short(uint32_t seed, const void *buf,
                                                                  size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = (uint32_t)~seed;
    while (len >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = __builtin_ia32_crc32di(c, a);
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        uint32_t a;
        memcpy(&a, p, 4);
        c = __builtin_ia32_crc32si((uint32_t)c, a);
        p += 4;
        len -= 4;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

static uint32_t uiw__crc32c_sse42(uint32_t seed, const void *buf, size_t len)
{
    pthread_once(&shift_once, shift_build);
    return crc_sse42(seed, buf, len);
}

static int have_sse42(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}
#endif

/* ---- ISA-L ---- */

#if CRC_ISAL
static uint32_t uiw__crc32c_isal(uint32_t seed, const void *buf, size_t len)
{
    unsigned char *p = (unsigned char *)(uintptr_t)buf;
    uint32_t c = ~seed;
    while (len > (size_t)INT_MAX) {
        c = crc32_iscsi(p, INT_MAX & ~63, c);
        p += INT_MAX & ~63;
        len -= INT_MAX & ~63;
    }
    return ~crc32_iscsi(p, (int)len, c);
}
#endif

/* ---- dispatch ---- */

static struct uiw__crc32c_impl impl_list[4];
static size_t impl_count;
static pthread_once_t impl_once = PTHREAD_ONCE_INIT;

static void impl_build(void)
{
    size_t k = 0;
#if CRC_ISAL
    impl_list[k++] = (struct uiw__crc32c_impl){"isa-l", uiw__crc32c_isal};
#endif
#if CRC_SSE42
    if (have_sse42()) /* its tables built at its first call */
        impl_list[k++] = (struct uiw__crc32c_impl){"sse4.2", uiw__crc32c_sse42};
#endif
    tab_init();
    impl_list[k++] = (struct uiw__crc32c_impl){"table", uiw__crc32c_slice8};
    impl_list[k++] = (struct uiw__crc32c_impl){"bytewise", uiw__crc32c_bytewise};
    impl_count = k;
}

size_t uiw__crc32c_impls(const struct uiw__crc32c_impl **impls)
{
    pthread_once(&impl_once, impl_build);
    *impls = impl_list;
    return impl_count;
}

/* Chosen once at load time (before any thread of the program can call in). */
#if !CRC_ISAL
static uiw__crc32c_fn crc_best = uiw__crc32c_slice8;
#endif
#if CRC_SSE42
#define CRC_SHORT 128 /* below this, the inline crc32 loop beats any library call */
static bool crc_short_hw;
#endif

__attribute__((constructor)) static void crc_select(void)
{
    pthread_once(&impl_once, impl_build);
#if !CRC_ISAL
    crc_best = impl_list[0].fn;
#endif
#if CRC_SSE42
    crc_short_hw = have_sse42() != 0;
#endif
}

uint32_t uiw_crc32c(uint32_t seed, const void *buf, size_t len)
{
#if CRC_SSE42
    if (len < CRC_SHORT && crc_short_hw)
        return crc_sse42_short(seed, buf, len);
#endif
#if CRC_ISAL
    if (len <= (size_t)INT_MAX)
        return ~crc32_iscsi((unsigned char *)(uintptr_t)buf, (int)len, ~seed);
    return uiw__crc32c_isal(seed, buf, len);
#else
    return crc_best(seed, buf, len);
#endif
}

const char *uiw_crc32c_impl(void)
{
#if CRC_ISAL
    return "isa-l";
#else
    pthread_once(&impl_once, impl_build);
    return impl_list[0].name;
#endif
}
