/*
 * Internal: write one connection's TCP byte stream as a pcap capture.
 *
 * The stack sees a byte stream, not packets, so the writer synthesises the packets:
 * Ethernet + IPv4/IPv6 + TCP headers with the connection's real addresses and ports,
 * consistent sequence and acknowledgement numbers, valid IP and TCP checksums, a TCP
 * 3-way handshake before the first byte (so Wireshark sees the stream start and its
 * MPA heuristic finds the MPA Request) and a FIN exchange on close.
 *
 * Packets follow the stream's framing, however the socket code split its reads and
 * writes, because Wireshark's MPA dissector only finds a frame at the start of a TCP
 * segment: the MPA Request / Reply is one packet, then every packet starts at an FPDU
 * boundary and carries whole FPDUs (at most UIW__PCAP_MAX_SEG bytes, unless one FPDU is
 * larger; one FPDU per packet when markers are on, found from the M bits of the MPA
 * frames). A direction whose first bytes are not an MPA frame is written as it comes.
 *
 * The side that sends the first byte is taken as the TCP client (its SYN comes first):
 * the MPA initiator always speaks first, so this matches the real connection.
 *
 * Files are pcap (not pcapng), link type Ethernet, microsecond timestamps from the
 * real-time clock. All functions are thread-safe per writer (one mutex each). Writing
 * is buffered; I/O errors are sticky and make later calls no-ops (never fatal to the
 * connection). uiw__pcap_data allocates nothing; it copies the bytes into the stdio
 * buffer, and the bytes of an FPDU not yet complete into a per-direction holding buffer
 * (allocated at open: the writer costs about 400 KiB per connection).
 *
 * Enabling: the connection code opens a writer when the application asks (API toggle)
 * or when the environment variable UIW_PCAP_DIR names a directory; uiw__pcap_open_env
 * does the latter (file name from uiw__pcap_name).
 */
#ifndef UIW_IO_PCAP_H
#define UIW_IO_PCAP_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct uiw__pcap;

/* Largest TCP payload put in one synthetic packet. */
#define UIW__PCAP_MAX_SEG 16384

/* Open `path` (created or truncated, mode 0644) for the connection local <-> remote.
 * Both addresses must be AF_INET or both AF_INET6 (an IPv4-mapped IPv6 pair is written
 * as IPv6). Returns NULL and sets errno on error (EAFNOSUPPORT for other families). */
struct uiw__pcap *uiw__pcap_open(const char *path, const struct sockaddr *local,
                                 const struct sockaddr *remote);

/* Record the first nbytes of iov[0..n) as stream bytes sent (outbound != 0, local ->
 * remote) or received (remote -> local). nbytes 0 or p NULL does nothing. */
void uiw__pcap_data(struct uiw__pcap *p, int outbound, const struct iovec *iov, int n,
                    size_t nbytes);

/* Write the FIN exchange (if any byte was recorded), flush and free. NULL is fine. */
void uiw__pcap_close(struct uiw__pcap *p);

/* Nonzero once a write to the file failed (the capture is incomplete). */
int uiw__pcap_failed(const struct uiw__pcap *p);

/* File name for a capture: "<dir>/uiw-<pid>-<seq>-<local>_<lport>-<remote>_<rport>.pcap"
 * (addresses in text form, seq a per-process counter). Returns the length or -ENAMETOOLONG
 * / -EAFNOSUPPORT. */
int uiw__pcap_name(char *buf, size_t cap, const char *dir, const struct sockaddr *local,
                   const struct sockaddr *remote);

/* When the environment variable UIW_PCAP_DIR is set and not empty, open a capture file
 * in that directory (uiw__pcap_name) and return it; else, or on error (then a line on
 * stderr, once per process), return NULL. */
struct uiw__pcap *uiw__pcap_open_env(const struct sockaddr *local, const struct sockaddr *remote);

#endif
