/* Allocations the project's code makes (malloc, calloc, realloc), counted: the nfs test
 * runner is linked with --wrap for each (tests.cmake), so that the calls of the code
 * linked into it (the library, client and server alike) come here first, and libc's own
 * and a checker's (AddressSanitizer, valgrind) allocator still serve them. */
#include <stdatomic.h>
#include <stddef.h>

#include "alloc_count.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static atomic_ulong n_allocs;

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    return __real_realloc(p, n);
}

unsigned long alloc_count(void)
{
    return atomic_load_explicit(&n_allocs, memory_order_relaxed);
}
