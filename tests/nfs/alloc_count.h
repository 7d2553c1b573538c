/* The allocations the code linked into the nfs test runner has made so far (malloc,
 * calloc and realloc calls, every thread's). */
#ifndef UIW_TESTS_NFS_ALLOC_COUNT_H
#define UIW_TESTS_NFS_ALLOC_COUNT_H

unsigned long alloc_count(void);

#endif
