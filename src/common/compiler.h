/* Compiler hints shared by the layers. */
#ifndef UIW_COMMON_COMPILER_H
#define UIW_COMMON_COMPILER_H

/* A function on the data path: posting, polling, one small message in and out. These are
 * placed together (.text.hot), so that a busy poller touches few code pages after each
 * system call; on a kernel with page-table isolation and no PCID every system call
 * empties the TLB, and each page touched afterwards costs a page walk on the critical
 * path of the message. */
#if defined(__GNUC__)
#define UIW__DATAPATH __attribute__((hot))
#else
#define UIW__DATAPATH
#endif

/* The rarer half of a data path function, out of line so that its common half stays
 * small: no registers to save, no frame. */
#if defined(__GNUC__)
#define UIW__NOINLINE __attribute__((noinline))
#else
#define UIW__NOINLINE
#endif

/* An error or teardown path: kept out of the data path's pages and frames. */
#if defined(__GNUC__)
#define UIW__COLD __attribute__((cold, noinline))
#else
#define UIW__COLD
#endif

#endif
