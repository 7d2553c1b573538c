/* Running a built program from a test: bounded, input from memory, output captured. */
#ifndef UIW_TESTS_TOOLS_RUN_H
#define UIW_TESTS_TOOLS_RUN_H

#include <stddef.h>

struct tool_run {
    char *out; /* stdout, NUL-terminated (may also contain NULs: see outlen) */
    size_t outlen;
    char *err; /* stderr, NUL-terminated */
    size_t errlen;
    int status; /* exit status; the test fails if the program did not exit normally */
};

/* Run `path` with argv (NULL-terminated, argv[0] included) and the bytes in[0..inlen) on
 * standard input; wait at most `seconds` (then kill it and fail the test). */
void tool_run(const char *path, const char *const *argv, const void *in, size_t inlen, int seconds,
              struct tool_run *r);
void tool_run_free(struct tool_run *r);

#endif
