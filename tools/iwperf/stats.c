/* iwperf: statistics, data pattern, checksum and the control message codec. */
#include "iwperf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t iwp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* square root by Newton's method (no libm needed) */
static double sqrt_pos(double x)
{
    if (!(x > 0))
        return 0;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 200; i++) {
        double nr = 0.5 * (r + x / r);
        if (nr >= r)
            break;
        r = nr;
    }
    return r;
}

uint64_t iwp_percentile(const uint64_t *sorted, size_t n, double p)
{
    /* nearest rank: the smallest value with at least p% of the samples at or below it,
     * rank = ceil(p/100 * n) computed in thousandths of a percent to stay exact */
    uint64_t pm = (uint64_t)(p * 1000.0 + 0.5);
    uint64_t rank = (pm * (uint64_t)n + 99999) / 100000;
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    if (i >= n)
        i = n - 1;
    return sorted[i];
}

void iwp_lat_summarise(uint64_t *samples, size_t n, double scale, struct iwp_lat_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (n == 0)
        return;
    qsort(samples, n, sizeof(samples[0]), cmp_u64);
    double k = scale / 1000.0; /* ns -> us */
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)samples[i];
    double mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)samples[i] - mean;
        ss += d * d;
    }
    out->t_min = (double)samples[0] * k;
    out->t_max = (double)samples[n - 1] * k;
    /* median: the middle sample, or the mean of the two middle ones */
    if (n % 2)
        out->t_typical = (double)samples[n / 2] * k;
    else
        out->t_typical = ((double)samples[n / 2 - 1] + (double)samples[n / 2]) / 2.0 * k;
    out->t_avg = mean * k;
    out->t_stdev = n > 1 ? sqrt_pos(ss / (double)(n - 1)) * k : 0.0;
    out->p99 = (double)iwp_percentile(samples, n, 99.0) * k;
    out->p999 = (double)iwp_percentile(samples, n, 99.9) * k;
}

void iwp_bw_start(struct iwp_bw_meter *m, uint64_t now_ns, uint64_t win_ns)
{
    m->win_ns = win_ns ? win_ns : 1;
    m->t_last = now_ns;
    m->bytes_last = 0;
    m->peak = 0;
}

void iwp_bw_update(struct iwp_bw_meter *m, uint64_t now_ns, uint64_t bytes_done)
{
    uint64_t dt = now_ns - m->t_last;
    if (dt < m->win_ns)
        return;
    double bw = (double)(bytes_done - m->bytes_last) * 1e9 / (double)dt;
    if (bw > m->peak)
        m->peak = bw;
    m->t_last = now_ns;
    m->bytes_last = bytes_done;
}

int iwp_samples_reserve(struct iwp_samples *s, size_t cap)
{
    if (cap <= s->cap)
        return 0;
    uint64_t *v = realloc(s->v, cap * sizeof(*v));
    if (!v)
        return -ENOMEM;
    s->v = v;
    s->cap = cap;
    return 0;
}

int iwp_samples_push(struct iwp_samples *s, uint64_t x)
{
    if (s->n == s->cap && iwp_samples_reserve(s, s->cap ? s->cap * 2 : 4096) < 0)
        return -ENOMEM;
    s->v[s->n++] = x;
    return 0;
}

void iwp_samples_free(struct iwp_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

void iwp_fill_pattern(void *buf, size_t len, uint32_t seed)
{
    uint8_t *p = buf;
    uint32_t x = seed * 2654435761u + 0x9E3779B9u;
    for (size_t i = 0; i < len; i++) {
        /* depends on the offset only (plus seed): position-sensitive, not periodic at
         * powers of two */
        uint32_t v = (uint32_t)i * 0x9E3779B1u + x;
        p[i] = (uint8_t)((v >> 24) ^ (v >> 13) ^ (uint32_t)(i >> 12));
    }
}

uint64_t iwp_checksum(const void *buf, size_t len)
{
    /* FNV-1a style over 8-byte words, then the tail; mixing with the length */
    const uint8_t *p = buf;
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 32;
    return h;
}

/* The first word of message msg's pattern (splitmix64 of seed and msg); word k of the
 * message is this plus k times an odd constant, so every word differs within a message
 * and from the same word of any other message. */
static uint64_t msg_base(uint32_t seed, uint64_t msg)
{
    uint64_t z = ((uint64_t)seed << 40 ^ msg) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#define MSG_STEP 0xD6E8FEB86659FD93ull

static uint64_t selftest_msg = UINT64_MAX;

void iwp_verify_selftest(uint64_t msg)
{
    selftest_msg = msg;
}

void iwp_fill_msg(void *buf, size_t len, uint32_t seed, uint64_t msg)
{
    uint8_t *p = buf;
    if (msg == selftest_msg)
        msg++; /* the next message's pattern: --verify must catch it */
    uint64_t w = msg_base(seed, msg);
    size_t i = 0;
    for (; i + 8 <= len; i += 8, w += MSG_STEP)
        memcpy(p + i, &w, 8);
    if (i < len)
        memcpy(p + i, &w, len - i);
}

bool iwp_check_msg(const void *buf, size_t len, uint32_t seed, uint64_t msg)
{
    const uint8_t *p = buf;
    uint64_t w = msg_base(seed, msg), diff = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8, w += MSG_STEP) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        diff |= v ^ w;
    }
    return diff == 0 && (i == len || memcmp(p + i, &w, len - i) == 0);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

void iwp_ctrl_encode(const struct iwp_ctrl *c, uint8_t out[IWP_CTRL_LEN])
{
    memset(out, 0, IWP_CTRL_LEN);
    put32(out, IWP_MAGIC);
    put32(out + 4, c->type);
    for (int i = 0; i < IWP_CTRL_NV; i++)
        put64(out + 8 + 8 * i, c->v[i]);
}

int iwp_ctrl_decode(const uint8_t in[IWP_CTRL_LEN], struct iwp_ctrl *c)
{
    if (get32(in) != IWP_MAGIC)
        return -1;
    c->type = get32(in + 4);
    for (int i = 0; i < IWP_CTRL_NV; i++)
        c->v[i] = get64(in + 8 + 8 * i);
    return 0;
}

void iwp_pd_encode(const struct iwp_pd *p, uint8_t out[IWP_PD_LEN])
{
    memset(out, 0, IWP_PD_LEN);
    put32(out, IWP_MAGIC);
    put32(out + 4, p->test);
    put32(out + 8, p->flags);
    put64(out + 12, p->max_size);
    put64(out + 20, p->addr);
    put32(out + 28, p->rkey);
    put32(out + 32, p->credits);
    put32(out + 36, p->qps);
    put32(out + 40, p->index);
}

int iwp_pd_decode(const void *in, size_t len, struct iwp_pd *p)
{
    const uint8_t *b = in;
    if (!in || len < IWP_PD_LEN || get32(b) != IWP_MAGIC)
        return -1;
    p->test = get32(b + 4);
    p->flags = get32(b + 8);
    p->max_size = get64(b + 12);
    p->addr = get64(b + 20);
    p->rkey = get32(b + 28);
    p->credits = get32(b + 32);
    p->qps = get32(b + 36);
    p->index = get32(b + 40);
    return 0;
}
