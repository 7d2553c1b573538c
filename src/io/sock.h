/* Internal: TCP socket helpers of the io layer (non-blocking, options, addresses). */
#ifndef UIW_IO_SOCK_H
#define UIW_IO_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uiw/cm.h>

/* Length of an AF_INET / AF_INET6 address, 0 for any other family. */
socklen_t uiw__sock_addrlen(const struct sockaddr *sa);

/* A non-blocking, close-on-exec TCP socket of sa's family. Returns the fd or -errno. */
int uiw__sock_tcp(const struct sockaddr *sa);

/* TCP_NODELAY on, and the liveness settings of p (keepalive, TCP_USER_TIMEOUT) where
 * nonzero. Returns 0 or -errno. */
int uiw__sock_setup(int fd, const struct uiw_conn_param *p);

/* Effective MSS of a connected socket: TCP_MAXSEG, or the route's advertised MSS when
 * larger (TCP_MAXSEG is bounded by half the initial window right after the handshake);
 * 536 if unknown. */
uint32_t uiw__sock_emss(int fd);

/* Write all n bytes of buf to a non-blocking socket, waiting (poll) at most timeout_ms
 * for room. Returns 0, -ETIMEDOUT or -errno. */
int uiw__sock_write_all(int fd, const void *buf, size_t n, int timeout_ms);

/* Monotonic clock in milliseconds. */
uint64_t uiw__now_ms(void);

#endif
