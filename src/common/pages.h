/* Zeroed memory straight from the kernel, for large arrays of which little may ever be
 * used (a queue's ring, a connection's call slots): pages cost resident memory only once
 * written, and go back to the system when freed (malloc may instead serve such a size
 * from memory it already touched, and calloc then writes all of it). */
#ifndef UIW_COMMON_PAGES_H
#define UIW_COMMON_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* n bytes, zeroed, page-aligned; NULL when there is no memory. */
static inline void *uiw__pages_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* What uiw__pages_alloc(n) returned (NULL: nothing). */
static inline void uiw__pages_free(void *p, size_t n)
{
    if (p)
        munmap(p, n ? n : 1);
}

/* The whole pages within [p, p + n) of private anonymous memory go back to the system
 * (their contents are lost: zeros when next read); the memory stays mapped. Returns the
 * bytes given back. */
static inline size_t uiw__pages_discard(void *p, size_t n)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p;
    uintptr_t lo = (a + pg - 1) & ~(pg - 1), hi = (a + n) & ~(pg - 1);
    if (hi <= lo || madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        return 0;
    return hi - lo;
}

#endif
