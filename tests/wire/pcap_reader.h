/*
 * Test-only reader of packet captures (pcap and pcapng, Ethernet / Linux cooked / raw IP /
 * BSD loopback) with per-direction TCP payload reassembly by sequence number.
 */
#ifndef UIW_TEST_PCAP_READER_H
#define UIW_TEST_PCAP_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UIW_TEST_PCAP_MAX_STREAMS 16

/* One direction of one TCP connection: the bytes in sequence order from the first byte
 * after the SYN (or the first segment seen when the SYN was not captured). */
struct uiw_test_tcp_stream {
    uint8_t src[16], dst[16]; /* addresses (IPv4 in the first 4 bytes) */
    bool v6;
    uint16_t sport, dport;
    bool syn_seen;
    uint32_t base;     /* sequence number of data[0] */
    uint8_t *data;     /* reassembled payload */
    uint8_t *have;     /* have[i]: byte i was captured */
    size_t len;        /* highest offset captured + 1 */
    size_t contig;     /* bytes from 0 without a hole */
    unsigned segments; /* TCP segments with payload */
    unsigned retrans;  /* segments that overlapped bytes already captured */
    int conn;          /* index of the connection (both directions share it) */
};

struct uiw_test_pcap {
    unsigned packets; /* link-layer records read */
    unsigned tcp_packets;
    unsigned linktype;
    bool pcapng;
    int nstreams;
    int nconns;
    struct uiw_test_tcp_stream s[UIW_TEST_PCAP_MAX_STREAMS];
};

/* Read a capture file and reassemble every TCP direction. Returns 0 or a negative errno
 * (-ENOENT for a missing file, -EPROTO for a malformed capture, -ENOTSUP for an unknown
 * link type, -ENOSPC for too many streams). Free with uiw_test_pcap_free. */
int uiw_test_pcap_load(const char *path, struct uiw_test_pcap *p);
void uiw_test_pcap_free(struct uiw_test_pcap *p);

/* The stream in the opposite direction of s (same connection), or NULL. */
struct uiw_test_tcp_stream *uiw_test_pcap_peer(struct uiw_test_pcap *p,
                                               const struct uiw_test_tcp_stream *s);

#endif
