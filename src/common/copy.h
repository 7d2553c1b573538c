/* Copies on the data path of the stack's small-message paths (a staged payload into its
 * receive buffer, a work request's SGEs). */
#ifndef UIW_COMMON_COPY_H
#define UIW_COMMON_COPY_H

#include <stddef.h>
#include <string.h>

/* memcpy, inline: on x86-64 one `rep movsb` (fast for short copies on CPUs with FSRM /
 * ERMS), so that a message's path runs no libc code page (each page touched after a
 * system call is a TLB miss on a kernel with page-table isolation). Under AddressSanitizer
 * and ThreadSanitizer memcpy itself, so that the copies stay checked. */
static inline void uiw__copy(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(UIW__ASAN) &&                \
    !defined(UIW__TSAN)
    __asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
    memcpy(dst, src, n);
#endif
}

#endif
