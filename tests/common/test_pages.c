/* uiw__pages_alloc: zeroed, page-aligned memory of its own; under AddressSanitizer, memory
 * a leak check scans for pointers, so that what only it points to is not taken for leaked
 * (a connection's call slot holding a Read chunk's buffer while a leak check runs). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/pages.h"
#include "test.h"

#if defined(UIW__ASAN) || defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define SCANNED 1
#else
#define SCANNED 0
#endif

enum { BYTES = 3 * 4096 + 100 };

/* The object's address, hidden from a leak check's scan (a plain copy would keep it). */
static const uintptr_t MASK = (uintptr_t)0x5a5a5a5a5a5a5a5aull;
static uintptr_t hidden;

/* On a thread of its own, gone before the check: its registers and stack point to nothing
 * (the test's thread never reads the slot, so that its own stack holds no copy). */
static void *put_object(void *arg)
{
    void **slot = arg;
    void *o = malloc(48);
    hidden = o ? (uintptr_t)o ^ MASK : 0;
    *slot = o;
    return NULL;
}

/* The only pointer to a new heap object, written into *slot: a leak check finds it used. */
static void hold_object(void **slot)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, put_object, slot), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK(hidden != 0);
#if SCANNED
    CHECK_EQ(__lsan_do_recoverable_leak_check(), 0);
#endif
}

/* The pages that held it gone, nothing points to it: the same check finds it (so it can
 * see a leak); then it is freed. */
static void object_leaked(void)
{
#if SCANNED
    CHECK(__lsan_do_recoverable_leak_check() != 0);
#endif
    free((void *)(hidden ^ MASK));
}

TEST(pages_are_zeroed_and_scanned_for_pointers)
{
    uint8_t *p = uiw__pages_alloc(BYTES);
    CHECK(p != NULL);
    CHECK_EQ((uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE), 0u);
    for (size_t i = 0; i < BYTES; i++)
        CHECK_EQ(p[i], 0);
    hold_object((void **)(void *)(p + 3 * 4096 + 8)); /* in the last page */
    uiw__pages_free(p, BYTES);
    object_leaked();
}

TEST(resident_pages_are_scanned_for_pointers)
{
    size_t len = uiw__pages_resident_len(5000);
    uint8_t *p = uiw__pages_alloc_resident(5000);
    CHECK(p != NULL);
    CHECK_EQ((uintptr_t)p % ((uintptr_t)2 << 20), 0u);
    hold_object((void **)(void *)(p + len - 64));
    uiw__pages_free(p, len);
    object_leaked();
}
