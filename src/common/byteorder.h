/* Internal: big-endian and little-endian loads and stores on unaligned bytes. */
#ifndef UIW_COMMON_BYTEORDER_H
#define UIW_COMMON_BYTEORDER_H

#include <stdint.h>
#include <string.h>

static inline uint16_t uiw__get_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t uiw__get_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t uiw__get_be64(const uint8_t *p)
{
    return ((uint64_t)uiw__get_be32(p) << 32) | uiw__get_be32(p + 4);
}
static inline uint32_t uiw__get_le32(const uint8_t *p)
{
    return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[1] << 8) | p[0];
}
static inline void uiw__put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void uiw__put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void uiw__put_be64(uint8_t *p, uint64_t v)
{
    uiw__put_be32(p, (uint32_t)(v >> 32));
    uiw__put_be32(p + 4, (uint32_t)v);
}
static inline void uiw__put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#endif
