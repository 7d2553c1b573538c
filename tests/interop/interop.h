/*
 * Helpers shared by the interop tests: temporary directories, running a command and
 * capturing its output (bounded by a timeout), tshark queries, a reference CRC32c and a
 * small hand-written iWARP frame builder used to check the pcap writer independently of
 * the stack's own codecs.
 */
#ifndef UIW_TESTS_INTEROP_H
#define UIW_TESTS_INTEROP_H

#include <stddef.h>
#include <stdint.h>

/* mkdtemp under $TMPDIR or /tmp; path into buf. Fails the test on error. */
void it_tmpdir(char *buf, size_t cap, const char *tag);

/* Remove a directory tree made by it_tmpdir (best effort; kept when UIW_TEST_KEEP is set). */
void it_rmtree(const char *dir);

/* Run `sh -c cmd` with stdout (and stderr when merge) collected into a malloc'd,
 * NUL-terminated string (*out), killed after timeout_s seconds. Returns the exit status
 * (0..255), 124 on timeout, -1 if it could not run. */
int it_run(const char *cmd, int merge, int timeout_s, char **out);

/* Path of tshark, or NULL if it is not installed. */
const char *it_tshark(void);

/* Extra tshark options for every later it_tshark_fields of this process (e.g. "-o
 * rpc.dissect_unknown_programs:TRUE"); NULL or "" for none. */
void it_tshark_prefs(const char *prefs);

/* Run tshark -r pcap [-Y filter] -T fields -e f1 -e f2 ... (fields separated by
 * spaces in `fields`), -E separator=| , returning its output (malloc'd). Fails the test
 * if tshark fails. */
char *it_tshark_fields(const char *pcap, const char *filter, const char *fields);

/* Number of lines of s that equal `line` exactly. */
int it_count_lines(const char *s, const char *line);

/* Number of lines in s. */
int it_nlines(const char *s);

/* Number of occurrences of needle in s. */
int it_count(const char *s, const char *needle);

/* The frames of pcap that tshark marks malformed or with an expert error, except those
 * matching the display filter `except` (NULL: none); listed on stderr. Returns their
 * count. */
int it_tshark_malformed(const char *pcap, const char *except);

/* Every ONC RPC call in pcap has a reply with its XID (a frame may carry several
 * messages); a call without one fails the test. Returns the number of calls. */
int it_rpc_calls_answered(const char *pcap);

/* Reference CRC32c (bitwise). */
uint32_t it_crc32c(const void *buf, size_t len);

/* Append one FPDU carrying hdr[0..hl) + pay[0..pl) to out at *pos (cap checked by
 * the test), CRC computed when crc. Returns the FPDU length. */
size_t it_fpdu(uint8_t *out, size_t cap, size_t *pos, const uint8_t *hdr, size_t hl,
               const uint8_t *pay, size_t pl, int crc);

/* DDP/RDMAP headers */
size_t it_tagged_hdr(uint8_t *h, int last, unsigned opcode, uint32_t stag, uint64_t to);
size_t it_untagged_hdr(uint8_t *h, int last, unsigned opcode, uint32_t inv, uint32_t qn,
                       uint32_t msn, uint32_t mo);

/* MPA Request/Reply with Rev 2 IRD/ORD words when rev == 2. */
size_t it_mpa_frame(uint8_t *out, int reply, uint8_t flags, uint8_t rev, uint16_t ird_word,
                    uint16_t ord_word, const void *pd, uint16_t pd_len);

void it_put16(uint8_t *p, uint16_t v);
void it_put32(uint8_t *p, uint32_t v);
void it_put64(uint8_t *p, uint64_t v);

#endif

/* Start `sh -c cmd` in its own process group with stdout+stderr appended to outfile.
 * Returns the pid (fails the test on error). */
int it_spawn(const char *cmd, const char *outfile);

/* Wait up to timeout_s for pid; returns the exit status as it_run does (124 after
 * killing its process group on timeout). */
int it_wait(int pid, int timeout_s);

/* Kill the process group of a spawned pid and reap it. */
void it_kill(int pid);

/* Read a whole file (malloc'd, NUL-terminated; "" when missing). */
char *it_slurp(const char *path);

/* Wait until the file contains needle (or the process pid ended, or timeout):
 * returns 1 if found. */
int it_wait_for(const char *path, const char *needle, int pid, int timeout_s);

/* The port a spawned server (iwping -p 0, iwperf -p 0) reports it listens on ("listening
 * on port N" in its output file), waiting up to timeout_s; fails the test if it reports
 * none or ends first. */
int it_server_port(const char *outfile, int pid, int timeout_s);

/* A TCP port on 127.0.0.1 that was free a moment ago: only for a listener the test cannot
 * ask (QEMU's host forwards); the project's tools bind port 0 and report theirs. */
int it_free_port(void);

/* Wait up to timeout_s for marker in a VM's console log; fails the test (showing runlog)
 * when it does not come or the VM (pid) ends first. */
void it_wait_marker(const char *console, const char *runlog, const char *marker, int pid,
                    int timeout_s);

/* Create the empty file dir/name (fails the test on error). */
void it_touch(const char *dir, const char *name);

/* The siw VM rig is usable (scripts/siwvm.sh ensure, which builds it if it may): skips
 * the test (77) where this machine cannot run the VM, fails it where the rig is broken or
 * required but not available (UIW_SIWVM_REQUIRED=1). A failure is remembered for the rest
 * of the ctest run (a file in the build tree named after ctest's pid and start time):
 * the later rig tests of the run fail at once with its log instead of building again. */
void it_siwvm_ensure(void);

/* Path of the iwping binary of this build. */
const char *it_iwping(void);
