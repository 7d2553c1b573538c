/* Helpers of the iwperf tests: run iwperf processes with bounded waits, parse JSON. */
#ifndef PERF_UTIL_H
#define PERF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A started process whose stdout and stderr go to files. */
struct pu_proc {
    pid_t pid;
    char out_path[64], err_path[64];
};

/* Start prog with argv (NULL-terminated, argv[0] included); env_kv is "NAME=value" or NULL. */
void pu_start(struct pu_proc *p, const char *const argv[], const char *env_kv);
/* Wait up to timeout_s for it; kill it when it overstays. Returns the exit status, or -1
 * when it was killed or died of a signal. */
int pu_wait(struct pu_proc *p, int timeout_s);
/* The captured stdout / stderr (malloc'd, NUL-terminated); the files are removed by
 * pu_cleanup. */
char *pu_stdout(const struct pu_proc *p);
char *pu_stderr(const struct pu_proc *p);
void pu_cleanup(struct pu_proc *p);

/* Start an iwperf server (argv as pu_start, with "-p", "0" among the options) and wait
 * (bounded) for the port it reports on stderr; fails the test if it reports none. */
int pu_server(struct pu_proc *p, const char *const argv[], const char *env_kv);

/* The iwperf binary. */
const char *pu_iwperf(void);

/* Run an iwperf server and client with the given client options (NULL-terminated) and
 * server options; both must exit 0 (client status in *client_rc if not NULL, else checked).
 * Returns the client's stdout; *server_out gets the server's stdout (both malloc'd). */
char *pu_pair(const char *const server_opts[], const char *const client_opts[],
              const char *server_env, char **server_out, int *client_rc);

/* Whole-document JSON syntax check (RFC 8259 grammar, no duplicates check). */
bool pu_json_valid(const char *s);
/* The number after the n-th (0-based) occurrence of "key": in doc; false if absent/null. */
bool pu_json_num(const char *doc, const char *key, int nth, double *v);
/* The string value after the n-th "key": (copied into buf). */
bool pu_json_str(const char *doc, const char *key, int nth, char *buf, size_t cap);
/* Occurrences of needle in s. */
int pu_count(const char *s, const char *needle);

#endif
