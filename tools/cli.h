/*
 * The command-line conventions every uiw tool follows, as users of the GNU tools, perftest
 * and rping expect:
 *   --help     the usage on standard output, exit status 0;
 *   --version  "<tool> (uiw) <version>" on standard output, exit status 0;
 *   exit status 0 on success, 1 on a runtime failure, 2 on a usage error (an unknown
 *   option, a missing or malformed argument: the message goes to standard error);
 *   numbers parsed whole: leading blanks, a sign where none belongs, trailing characters,
 *   an overflow or a value outside the option's range is a usage error, never 0.
 */
#ifndef UIW_TOOLS_CLI_H
#define UIW_TOOLS_CLI_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <uiw/version.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Print the version line of `tool`; returns the exit status. */
static inline int cli_version(const char *tool)
{
    printf("%s (uiw) %s\n", tool, UIW_VERSION_STRING);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}

/* A whole unsigned decimal number in [min, max]: 0 and *out, or -1. */
static inline int cli_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* cli_u64 for an int-sized option. */
static inline int cli_int(const char *s, int min, int max, int *out)
{
    uint64_t v;
    if (min < 0 || cli_u64(s, (uint64_t)min, (uint64_t)max, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A whole non-negative decimal number with an optional fraction ("2", "0.5") in
 * [min, max]: 0 and *out, or -1. */
static inline int cli_seconds(const char *s, double min, double max, double *out)
{
    if (!s || ((*s < '0' || *s > '9') && *s != '.'))
        return -1;
    for (const char *p = s; *p; p++)
        if ((*p < '0' || *p > '9') && *p != '.')
            return -1; /* no exponents, infinities or hexadecimal floats */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= min) || !(v <= max))
        return -1;
    *out = v;
    return 0;
}

#endif
