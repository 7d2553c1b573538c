/* Byte mutations of encoded headers for the differential rejection tests. */
#include <string.h>

#include "mutate.h"
#include "rnd.h"

static uint32_t small_value(uint64_t *seed)
{
    static const uint32_t vals[] = {0, 1,  2,  3,  4,  5,    6,    7,    8,
                                    9, 10, 15, 16, 17, 1023, 1024, 0xFFF};
    if (rnd_below(seed, 3) == 0)
        return (uint32_t)rnd_next(seed) & 0xFFF;
    return vals[rnd_below(seed, sizeof(vals) / sizeof(vals[0]))];
}

static void put_word(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void mutate(uint8_t *buf, size_t *len, size_t cap, uint64_t *seed)
{
    unsigned n = 1 + rnd_below(seed, 4);
    for (unsigned k = 0; k < n; k++) {
        size_t words = *len / 4;
        switch (rnd_below(seed, 7)) {
        case 0:
        case 1: /* flip one of the low 12 bits of a word */
            if (words) {
                size_t w = rnd_below(seed, (uint32_t)words);
                uint32_t bit = rnd_below(seed, 12);
                buf[4 * w + 3 - bit / 8] ^= (uint8_t)(1u << (bit % 8));
            }
            break;
        case 2:
        case 3: /* replace a word */
            if (words)
                put_word(buf + 4 * rnd_below(seed, (uint32_t)words), small_value(seed));
            break;
        case 4: /* insert a word */
            if (*len + 4 <= cap) {
                size_t w = rnd_below(seed, (uint32_t)words + 1);
                memmove(buf + 4 * w + 4, buf + 4 * w, *len - 4 * w);
                put_word(buf + 4 * w, small_value(seed));
                *len += 4;
            }
            break;
        case 5: /* delete a word */
            if (words) {
                size_t w = rnd_below(seed, (uint32_t)words);
                memmove(buf + 4 * w, buf + 4 * w + 4, *len - 4 * w - 4);
                *len -= 4;
            }
            break;
        default: /* truncate anywhere */
            *len = rnd_below(seed, (uint32_t)*len + 1);
            break;
        }
    }
}
