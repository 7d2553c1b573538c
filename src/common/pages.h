/* Zeroed memory straight from the kernel, for large arrays of which little may ever be
 * used (a queue's ring, a connection's call slots): pages cost resident memory only once
 * written, and go back to the system when freed (malloc may instead serve such a size
 * from memory it already touched, and calloc then writes all of it). */
#ifndef UIW_COMMON_PAGES_H
#define UIW_COMMON_PAGES_H

#include <stddef.h>
#include <sys/mman.h>

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

#endif
