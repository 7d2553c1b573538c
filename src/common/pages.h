/* Zeroed memory straight from the kernel, for large arrays of which little may ever be
 * used (a queue's ring, a connection's call slots): pages cost resident memory only once
 * written, and go back to the system when freed (malloc may instead serve such a size
 * from memory it already touched, and calloc then writes all of it). Or, for memory that
 * is to be used at once and often (a client's receive buffers), resident from the start.
 *
 * Under AddressSanitizer these pages are scanned for pointers as the heap is: what they
 * alone point to (a call slot's Read chunk buffer, an object named by a posted work
 * request's wr_id) is in use, and a leak check made meanwhile (libFuzzer makes one after
 * an input) would otherwise take it for leaked. */
#ifndef UIW_COMMON_PAGES_H
#define UIW_COMMON_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(UIW__ASAN) || defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define UIW__PAGES_SCAN(p, n)   __lsan_register_root_region((p), (n))
#define UIW__PAGES_UNSCAN(p, n) __lsan_unregister_root_region((p), (n))
#else
#define UIW__PAGES_SCAN(p, n)   ((void)0)
#define UIW__PAGES_UNSCAN(p, n) ((void)0)
#endif

static inline void *uiw__pages_map(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* n bytes, zeroed, page-aligned; NULL when there is no memory. */
static inline void *uiw__pages_alloc(size_t n)
{
    void *p = uiw__pages_map(n ? n : 1);
    if (p)
        UIW__PAGES_SCAN(p, n ? n : 1);
    return p;
}

/* Bytes uiw__pages_alloc_resident(n) maps: n rounded up to 2 MiB. */
static inline size_t uiw__pages_resident_len(size_t n)
{
    size_t h = (size_t)2 << 20;
    return n ? (n + h - 1) & ~(h - 1) : h;
}

/* uiw__pages_resident_len(n) bytes, zeroed, aligned to 2 MiB, written once a page so that
 * they are resident now (a first access later would be a page fault), backed by huge
 * pages where the system offers them for the asking (transparent huge pages: one fault a
 * 2 MiB block instead of 512); free with uiw__pages_free(p, uiw__pages_resident_len(n)).
 * NULL when there is no memory. */
static inline void *uiw__pages_alloc_resident(size_t n)
{
    size_t len = uiw__pages_resident_len(n), h = (size_t)2 << 20;
    uint8_t *raw = uiw__pages_map(len + h);
    if (!raw)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + h - 1) & ~(uintptr_t)(h - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + len < raw + len + h)
        munmap(p + len, (size_t)(raw + len + h - (p + len)));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE); /* a hint: without it, 4 KiB pages */
#endif
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < len; i += pg)
        ((volatile uint8_t *)p)[i] = 0;
    UIW__PAGES_SCAN(p, len);
    return p;
}

/* What uiw__pages_alloc(n) returned (NULL: nothing). */
static inline void uiw__pages_free(void *p, size_t n)
{
    if (!p)
        return;
    UIW__PAGES_UNSCAN(p, n ? n : 1);
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
