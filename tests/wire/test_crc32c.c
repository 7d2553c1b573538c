/* CRC32c: RFC 3720 B.4 known answers, chaining, every implementation against the others. */
#include <stdint.h>
#include <string.h>

#include <uiw/wire.h>

#include "test.h"
#include "wire/mpa_crc32c.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* Bit-at-a-time reference, independent of every table. */
static uint32_t crc_ref(uint32_t seed, const uint8_t *p, size_t n)
{
    uint32_t c = ~seed;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static void check_vectors(uiw__crc32c_fn fn)
{
    uint8_t b[32];
    memset(b, 0, sizeof b);
    CHECK_EQ(fn(0, b, 32), 0x8A9136AAu);
    memset(b, 0xFF, sizeof b);
    CHECK_EQ(fn(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    CHECK_EQ(fn(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    CHECK_EQ(fn(0, b, 32), 0x113FDB5Cu);
    CHECK_EQ(fn(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ(fn(0, "", 0), 0u);
    CHECK_EQ(fn(0x12345678u, "", 0), 0x12345678u);
}

TEST(crc32c_vectors)
{
    check_vectors(uiw_crc32c);
    const char *impl = uiw_crc32c_impl();
    CHECK(strcmp(impl, "isa-l") == 0 || strcmp(impl, "sse4.2") == 0 || strcmp(impl, "table") == 0);
}

TEST(crc32c_vectors_every_impl)
{
    const struct uiw__crc32c_impl *im;
    size_t n = uiw__crc32c_impls(&im);
    CHECK(n >= 2);
    CHECK_STR(im[n - 1].name, "bytewise");
    CHECK_STR(im[n - 2].name, "table");
    CHECK_STR(im[0].name, uiw_crc32c_impl());
#ifdef __x86_64__
    /* this machine (x86-64 with SSE4.2) must offer the hardware path without ISA-L too */
    int have_hw = 0;
    for (size_t i = 0; i < n; i++)
        have_hw |= strcmp(im[i].name, "sse4.2") == 0;
    if (__builtin_cpu_supports("sse4.2"))
        CHECK(have_hw);
#endif
    for (size_t i = 0; i < n; i++)
        check_vectors(im[i].fn);
}

TEST(crc32c_chaining)
{
    const char *s = "123456789";
    for (size_t cut = 0; cut <= 9; cut++)
        CHECK_EQ(uiw_crc32c(uiw_crc32c(0, s, cut), s + cut, 9 - cut), 0xE3069283u);
}

/* Random buffers, lengths, alignments and splits: every implementation agrees with the
 * bit-serial reference, whole and chained over a random split. */
TEST(crc32c_random_impls_agree)
{
    enum { MAX = 20000 };
    static uint8_t buf[MAX + 16];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rnd();
    const struct uiw__crc32c_impl *im;
    size_t n = uiw__crc32c_impls(&im);
    for (int iter = 0; iter < 400; iter++) {
        size_t len = iter < 100 ? (size_t)iter : rnd() % MAX;
        if (iter % 50 == 49)
            len = 3 * 1024 * 3 + rnd() % 5000; /* several interleaved blocks */
        if (len > MAX)
            len = MAX;
        size_t off = rnd() % 16;
        uint32_t seed = (iter & 1) ? rnd() : 0;
        uint32_t want = crc_ref(seed, buf + off, len);
        size_t cut = len ? rnd() % (len + 1) : 0;
        for (size_t i = 0; i < n; i++) {
            CHECK_EQ(im[i].fn(seed, buf + off, len), want);
            CHECK_EQ(im[i].fn(im[i].fn(seed, buf + off, cut), buf + off + cut, len - cut), want);
        }
        CHECK_EQ(uiw_crc32c(seed, buf + off, len), want);
    }
}

/* Mixing implementations across a chain works too (the seed is the finished CRC). */
TEST(crc32c_mixed_chain)
{
    uint8_t buf[4096];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rnd();
    const struct uiw__crc32c_impl *im;
    size_t n = uiw__crc32c_impls(&im);
    uint32_t want = crc_ref(0, buf, sizeof buf);
    uint32_t c = 0;
    size_t pos = 0, k = 0;
    while (pos < sizeof buf) {
        size_t step = 1 + rnd() % 700;
        if (step > sizeof buf - pos)
            step = sizeof buf - pos;
        c = im[k++ % n].fn(c, buf + pos, step);
        pos += step;
    }
    CHECK_EQ(c, want);
}
