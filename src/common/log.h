/*
 * The stack's log: one line on stderr per event (a connection set up or torn down, a
 * Terminate sent or received, an error), never per message on the data path.
 *
 * UIW_LOG=error|warn|info|debug in the environment chooses the least severe level shown
 * (read once, on the first event); unset or empty, nothing is written. A line:
 *
 *   uiw 12:34:56.789012 [4242] warn conn 3 qp 7: Terminate sent: ...
 *
 * with the local time, the process id, the level, then the connection's id (the
 * connection manager numbers its ids from 1 in each process) and the QP number where the
 * event has them. Each line is one write(2): lines of different threads never mix.
 */
#ifndef UIW_COMMON_LOG_H
#define UIW_COMMON_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum uiw__log_level {
    UIW__LOG_OFF = 0,
    UIW__LOG_ERROR = 1,
    UIW__LOG_WARN = 2,
    UIW__LOG_INFO = 3,
    UIW__LOG_DEBUG = 4,
};

/* The level UIW_LOG asks for; -1 until it has been read. */
extern _Atomic int uiw__log_threshold;

/* Reads UIW_LOG (an unknown value is reported once and shows nothing) and returns the
 * level. */
int uiw__log_init(void);

static inline bool uiw__log_on(enum uiw__log_level level)
{
    int t = atomic_load_explicit(&uiw__log_threshold, memory_order_relaxed);
    if (t < 0)
        t = uiw__log_init();
    return (int)level <= t;
}

/* Write one line (conn or qpn 0: not shown). Use UIW__LOG, which formats nothing when
 * the level is off. */
void uiw__log_write(enum uiw__log_level level, uint32_t conn, uint32_t qpn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define UIW__LOG(level, conn, qpn, ...)                                                            \
    do {                                                                                           \
        if (uiw__log_on(level))                                                                    \
            uiw__log_write(level, conn, qpn, __VA_ARGS__);                                         \
    } while (0)

/* "127.0.0.1:4791" or "[::1]:4791" of a socket address, into buf (at least 64 bytes). */
struct sockaddr;
const char *uiw__log_addr(const struct sockaddr *sa, char *buf, unsigned len);

#endif
