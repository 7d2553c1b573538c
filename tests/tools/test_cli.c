/* Every tool's command-line conventions (tools/cli.h): --help and --version exit 0 with
 * their text on stdout; an unknown option or a malformed number is a usage error (exit 2,
 * a message on stderr, nothing on stdout); a runtime failure exits 1. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uiw/version.h>

#include "run.h"
#include "test.h"

#define TOOLS UIW_BINARY_DIR "/tools/"

/* The tools every build has, then those that need optional packages, then perftest's
 * entry points (links to iwperf). */
static const char *const tools[] = {"iwperf",      "iwping",     "rpcrdma-decode", "uiw-selfcheck",
                                    "uiw-nfs",     "uiw-nfsd",   "rpcrdma-ping",   "rpcrdma-bench",
                                    "iw_write_bw", "iw_read_bw", "iw_send_bw",     "iw_write_lat",
                                    "iw_read_lat", "iw_send_lat"};
enum { CORE_TOOLS = 4 };

static void run_tool(const char *name, const char *const *args, struct tool_run *r)
{
    char path[256];
    snprintf(path, sizeof(path), TOOLS "%s", name);
    const char *argv[16] = {path};
    int n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    tool_run(path, argv, "", 0, 60, r);
}

static bool present(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), TOOLS "%s", name);
    return access(path, X_OK) == 0;
}

TEST(cli_help_and_version)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        if (!present(tools[i])) {
            /* only the NFS tools and those of the RPC layer are optional */
            CHECK(i >= CORE_TOOLS && i < CORE_TOOLS + 4);
            continue;
        }
        struct tool_run r;
        const char *help[] = {"--help", NULL};
        run_tool(tools[i], help, &r);
        if (r.status != 0 || r.outlen < 40 || r.errlen != 0)
            uiw_test_fail(__FILE__, __LINE__, "%s --help: status %d, %zu bytes out, err: %s",
                          tools[i], r.status, r.outlen, r.err);
        tool_run_free(&r);
        const char *version[] = {"--version", NULL};
        run_tool(tools[i], version, &r);
        /* "<tool> (uiw) 0.1.0", GNU's form; the first word is the tool's name */
        size_t nl = strcspn(r.out, "\n");
        char first[128];
        snprintf(first, sizeof(first), "%.*s", (int)nl, r.out);
        if (r.status != 0 || strncmp(first, tools[i], strlen(tools[i])) != 0 ||
            first[strlen(tools[i])] != ' ' || nl < strlen(UIW_VERSION_STRING) ||
            strcmp(first + nl - strlen(UIW_VERSION_STRING), UIW_VERSION_STRING) != 0)
            uiw_test_fail(__FILE__, __LINE__, "%s --version: status %d, \"%s\"", tools[i], r.status,
                          first);
        tool_run_free(&r);
    }
}

TEST(cli_unknown_option_is_usage_error)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        if (!present(tools[i]))
            continue;
        struct tool_run r;
        const char *args[] = {"--no-such-option", NULL};
        run_tool(tools[i], args, &r);
        if (r.status != 2 || r.errlen == 0 || r.outlen != 0)
            uiw_test_fail(__FILE__, __LINE__, "%s --no-such-option: status %d, out \"%s\"",
                          tools[i], r.status, r.out);
        tool_run_free(&r);
    }
}

/* Each line: the tool, then its arguments; each must be refused as a usage error. */
TEST(cli_numbers_parsed_whole)
{
    static const char *const bad[][6] = {
        {"iwperf", "-n", "12abc", NULL},
        {"iwperf", "-n", "", NULL},
        {"iwperf", "-n", "-5", NULL},
        {"iwperf", "-n", " 5", NULL},
        {"iwperf", "-n", "99999999999999999999", NULL},
        {"iwperf", "-s", "1.5K", NULL},
        {"iwperf", "-p", "65536", NULL},
        {"iwperf", "-D", "1e3", NULL},
        {"iwperf", "-D", "nan", NULL},
        {"iwperf", "--tx-depth", "0x10", NULL},
        {"iwperf", "-Q", "5x", NULL},
        {"iwperf", "--qps", "0", NULL},
        {"iwperf", "--inline", "257", NULL},
        {"iw_write_bw", "-t", "abc", NULL},
        {"iw_write_bw", "-q", "17", NULL},
        {"iw_write_bw", "-I", "9999", NULL},
        {"iw_write_bw", "-c", "UD", NULL},
        {"iw_read_bw", "-o", "0", NULL},
        {"iw_read_bw", "-I", "64", NULL},
        {"iw_write_lat", "-q", "2", NULL},
        {"iw_send_bw", "-r", "3", NULL},
        {"iwping", "-c", "-a", "127.0.0.1", "-S", "20"},
        {"iwping", "-c", "-a", "127.0.0.1", "-S", "64x"},
        {"iwping", "-c", "-a", "127.0.0.1", "-C", "-1"},
        {"iwping", "-c", "-a", "127.0.0.1", "-p", "7174x"},
        {"iwping", "-s", "--timeout", "0", NULL},
        {"iwping", "-s", "-I", "127.0.0.1", NULL},
        {"iwping", "-v", NULL},
        {"uiw-selfcheck", "now", NULL},
        {"rpcrdma-decode", "--encode", "--hex", NULL},
        {"rpcrdma-bench", "-s", "1.5K", NULL},
        {"rpcrdma-bench", "--inflight", "0", NULL},
        {"rpcrdma-bench", "-r", "5x", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!present(bad[i][0])) /* the RPC layer's, in a tree without it */
            continue;
        struct tool_run r;
        run_tool(bad[i][0], &bad[i][1], &r);
        if (r.status != 2 || r.errlen == 0)
            uiw_test_fail(__FILE__, __LINE__, "%s %s %s %s: status %d (want 2), err \"%s\"",
                          bad[i][0], bad[i][1] ? bad[i][1] : "", bad[i][2] ? bad[i][2] : "",
                          bad[i][1] && bad[i][2] && bad[i][3] ? bad[i][3] : "", r.status, r.err);
        tool_run_free(&r);
    }
}

TEST(cli_runtime_failure_is_1)
{
    struct tool_run r;
    /* a file that cannot be read */
    const char *decode[] = {"/nonexistent/uiw-message", NULL};
    run_tool("rpcrdma-decode", decode, &r);
    CHECK_EQ(r.status, 1);
    tool_run_free(&r);
    /* a refused connection, no retries */
    const char *ping[] = {"-c", "-a", "127.0.0.1", "-p", "1", "--retry", "0", NULL};
    run_tool("iwping", ping, &r);
    CHECK_EQ(r.status, 1);
    tool_run_free(&r);
}
