/* A fault-injecting TCP relay for the fault tests: it listens on a free loopback port and
 * forwards every connection it accepts to a target port, byte for byte, until told to
 * break one: reset it (both ends, abortively) after so many bytes from the server, or in
 * the middle of the first ONC RPC record (TCP record marking) that starts after them; or
 * to capture one connection for tshark; or to stop reading one direction; or to forward
 * only part of an FPDU (RPC-over-RDMA: MPA framing) and then nothing more. */
#ifndef UIW_TESTS_NFS_RELAY_H
#define UIW_TESTS_NFS_RELAY_H

#include <stdint.h>

struct relay;

struct relay *relay_start(int target_port);
int relay_port(const struct relay *r);
enum { RELAY_S2C, RELAY_C2S };
/* Reset the connection whose bytes in direction dir (counted over every connection of the
 * relay) reach `at`; with mid_record (server to client only), not there but a few bytes
 * into the record that starts next (a reply the client then never gets whole). Once. */
void relay_cut_at(struct relay *r, int dir, uint64_t at, int mid_record);
/* Reset every connection open now (the next ones are relayed as before). */
void relay_cut_all(struct relay *r);
/* Stop reading the bytes of direction dir (on), as a peer that stops reading would, or
 * go on relaying them (off); every connection of the relay. */
void relay_hold(struct relay *r, int dir, int on);
/* Client to server, on an MPA stream (iWARP: the MPA Request, then FPDUs; markers off):
 * of the next FPDU that starts from now on, forward only its first half (its first byte
 * at least, never all of it), drop the rest of what was read with it and read no more
 * (relay_hold(RELAY_C2S) on): a peer that stops in the middle of a message and keeps its
 * connection open. Once. */
void relay_half_fpdu(struct relay *r);
/* Follow the ONC RPC calls and replies (TCP record marking) of the connections accepted
 * from now on: which calls are outstanding (forwarded, their replies not yet), and the
 * most WRITEs of different files (file handles) outstanding at once. With hold_secs > 0,
 * the reply to the first WRITE is set aside (the replies after it go on, as a server may
 * answer in any order) until a WRITE of another file has been forwarded, or hold_secs
 * have passed: a client that keeps several files in flight shows two at once whatever the
 * timing, one that moves one file at a time shows one. */
void relay_watch_rpc(struct relay *r, double hold_secs);
/* The most WRITEs of different files outstanding at once so far; calls and replies
 * followed. */
unsigned relay_most_writes(struct relay *r);
/* The most calls of any kind outstanding at once so far. */
unsigned relay_most_calls(struct relay *r);
unsigned relay_rpc_calls(struct relay *r);
unsigned relay_rpc_replies(struct relay *r);
/* Connections reset so far; bytes forwarded in direction dir. */
unsigned relay_cuts(struct relay *r);
uint64_t relay_bytes(struct relay *r, int dir);
/* The next connection the relay accepts is written to a pcap capture at path (the stack's
 * own writer, src/io/pcap.c: the client's and the server's real addresses and ports),
 * complete once that connection closed and relay_stop returned. */
void relay_capture(struct relay *r, const char *path);
void relay_stop(struct relay *r);

#endif
