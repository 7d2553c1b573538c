/*
 * The project's test harness: one runner per layer, one process per test.
 *
 *   TEST(crc32c_vectors) { CHECK_EQ(uiw_crc32c(0, "123456789", 9), 0xE3069283u); }
 *
 * `test-<layer> NAME` runs one test; `test-<layer>` with no argument runs all of them
 * in-process (handy under a debugger); `test-<layer> --list` prints the names.
 * A failed check prints file:line and the values, then exits with status 1.
 * A test may call SKIP("why") only where the environment cannot host it (the test
 * then exits 77, which ctest reports as a failure unless the test sets SKIP_RETURN_CODE:
 * tests/CMakeLists.txt sets it for the tests named siwvm_* and root_*).
 */
#ifndef UIW_TEST_H
#define UIW_TEST_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*uiw_test_fn)(void);
void uiw_test_register(const char *name, uiw_test_fn fn);
void uiw_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void uiw_test_hexdiff(const void *a, const void *b, size_t n);
/* Bring this process's loopback interface up (1) or down (0): 0 or -errno. */
int uiw_test_set_lo(int up);
/* Move this test's process into a network namespace of its own with loopback up, where
 * fixed ports (e.g. a protocol's default) collide with nothing: 0 or -errno (EPERM
 * without CAP_SYS_ADMIN). */
int uiw_test_private_net(void);
/* A size of this process from /proc/self/status, in KiB: field "VmSize" (its address
 * space now), "VmPeak" (the most it ever had), ... The test fails if there is none. */
long uiw_test_vm_kib(const char *field);
/* The voluntary context switches (sleeps, each but a thread's last ended by a wake-up) of
 * the threads of this process so far: up to max threads' ids into tid, their counts into
 * n. Returns the count of threads. */
int uiw_test_thread_sleeps(long *tid, unsigned long long *n, int max);
/* The same of another process (pid 0: this one). */
int uiw_test_proc_thread_sleeps(int pid, long *tid, unsigned long long *n, int max);
/* What the threads of process pid (0: this one) that live through the next ms
 * milliseconds wake up for meanwhile (the caller sleeps): their wake-ups in all and in
 * the busiest, and how many of them woke more than `over` times. */
struct uiw_test_wakeups {
    unsigned long long total, most;
    int busy;
};
struct uiw_test_wakeups uiw_test_wakeups_over(int pid, long ms, unsigned long long over);
/* 1 when built with ThreadSanitizer (whose background thread wakes on a timer of its
 * own in every process of the build), else 0. */
#if defined(__SANITIZE_THREAD__)
#define UIW_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UIW_TEST_TSAN 1
#endif
#endif
#ifndef UIW_TEST_TSAN
#define UIW_TEST_TSAN 0
#endif
/* The checks of a test named root_* that only root can make: not root, the test skips
 * (77), saying how to run it, or fails where root is required (UIW_ROOT_REQUIRED=1, as CI
 * sets). */
void uiw_test_require_root(void);
/* The fault tests' lossy network: root required (uiw_test_require_root), this process in a
 * network namespace of its own (uiw_test_private_net), where iptables' statistic match
 * drops that fraction of the packets loopback delivers, at random. */
void uiw_test_lossy_loopback(double p);
/* The packets that rule dropped so far. */
long uiw_test_dropped(void);

#define TEST(name)                                                                                 \
    static void test_##name(void);                                                                 \
    __attribute__((constructor)) static void test_register_##name(void)                            \
    {                                                                                              \
        uiw_test_register(#name, test_##name);                                                     \
    }                                                                                              \
    static void test_##name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            uiw_test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ != check_b_)                                                                  \
            uiw_test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %lld (0x%llx) != %lld (0x%llx)",  \
                          #a, #b, check_a_, (unsigned long long)check_a_, check_b_,                \
                          (unsigned long long)check_b_);                                           \
    } while (0)

#define CHECK_MEM(a, b, n)                                                                         \
    do {                                                                                           \
        if (memcmp((a), (b), (n)) != 0) {                                                          \
            uiw_test_hexdiff((a), (b), (n));                                                       \
            uiw_test_fail(__FILE__, __LINE__, "CHECK_MEM(%s, %s, %s) differs", #a, #b, #n);        \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (strcmp(check_a_, check_b_) != 0)                                                       \
            uiw_test_fail(__FILE__, __LINE__, "CHECK_STR(%s, %s): \"%s\" != \"%s\"", #a, #b,       \
                          check_a_, check_b_);                                                     \
    } while (0)

#define SKIP(why)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "SKIP: %s\n", (why));                                                      \
        exit(77);                                                                                  \
    } while (0)

#endif
