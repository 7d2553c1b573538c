/* Helpers of the iwperf tests. */
#include "perf_util.h"

#include "test.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *pu_iwperf(void)
{
#ifdef IWPERF_BIN
    return IWPERF_BIN;
#else
    return UIW_BINARY_DIR "/tools/iwperf";
#endif
}

void pu_start(struct pu_proc *p, const char *const argv[], const char *env_kv)
{
    static int seq;
    snprintf(p->out_path, sizeof(p->out_path), "/tmp/uiw-perf-%d-%d.out", (int)getpid(), seq);
    snprintf(p->err_path, sizeof(p->err_path), "/tmp/uiw-perf-%d-%d.err", (int)getpid(), seq);
    seq++;
    /* made before the fork: the caller may read them (pu_server) before the child runs */
    int o = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(o >= 0 && e >= 0);
    fflush(NULL);
    p->pid = fork();
    CHECK(p->pid >= 0);
    if (p->pid == 0) {
        dup2(o, 1);
        dup2(e, 2);
        if (env_kv)
            putenv((char *)env_kv);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(o);
    close(e);
}

int pu_wait(struct pu_proc *p, int timeout_s)
{
    int st = 0;
    for (long i = 0; i < (long)timeout_s * 50; i++) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    fprintf(stderr, "process %d killed after %d s\n", (int)p->pid, timeout_s);
    return -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    CHECK(b != NULL);
    size_t k;
    while ((k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            cap *= 2;
            char *nb = realloc(b, cap);
            CHECK(nb != NULL);
            b = nb;
        }
    }
    fclose(f);
    b[n] = '\0';
    return b;
}

char *pu_stdout(const struct pu_proc *p)
{
    return slurp(p->out_path);
}

char *pu_stderr(const struct pu_proc *p)
{
    return slurp(p->err_path);
}

void pu_cleanup(struct pu_proc *p)
{
    unlink(p->out_path);
    unlink(p->err_path);
}

int pu_server(struct pu_proc *p, const char *const argv[], const char *env_kv)
{
    pu_start(p, argv, env_kv);
    /* "iwperf: ...", or the name it runs under (iw_write_bw ...) */
    static const char mark[] = ": listening on port ";
    for (int i = 0; i < 30 * 50; i++) { /* 30 s */
        char *e = pu_stderr(p);
        const char *m = strstr(e, mark);
        int port = 0;
        if (m && strchr(m, '\n'))
            port = atoi(m + sizeof(mark) - 1);
        free(e);
        if (port > 0)
            return port;
        int st;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            e = pu_stderr(p);
            uiw_test_fail(__FILE__, __LINE__, "iwperf server exited before listening:\n%s", e);
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    uiw_test_fail(__FILE__, __LINE__, "iwperf server reported no port within 30 s");
}

char *pu_pair(const char *const server_opts[], const char *const client_opts[],
              const char *server_env, char **server_out, int *client_rc)
{
    char port[16];
    const char *sv[32], *cv[40];
    int ns = 0, nc = 0;
    sv[ns++] = pu_iwperf();
    sv[ns++] = "-p";
    sv[ns++] = "0";
    for (int i = 0; server_opts && server_opts[i]; i++)
        sv[ns++] = server_opts[i];
    sv[ns] = NULL;
    struct pu_proc s, c;
    snprintf(port, sizeof(port), "%d", pu_server(&s, sv, server_env));
    cv[nc++] = pu_iwperf();
    cv[nc++] = "-p";
    cv[nc++] = port;
    for (int i = 0; client_opts[i]; i++)
        cv[nc++] = client_opts[i];
    cv[nc++] = "127.0.0.1";
    cv[nc] = NULL;
    pu_start(&c, cv, NULL);
    int crc = pu_wait(&c, 60);
    int src = pu_wait(&s, 15);
    char *co = pu_stdout(&c), *so = pu_stdout(&s);
    if (crc != 0 || src != 0) {
        char *ce = pu_stderr(&c), *se = pu_stderr(&s);
        fprintf(stderr, "client (%d):\n%s%s\nserver (%d):\n%s%s\n", crc, co, ce, src, so, se);
        free(ce);
        free(se);
    }
    pu_cleanup(&c);
    pu_cleanup(&s);
    if (client_rc)
        *client_rc = crc;
    else
        CHECK_EQ(crc, 0);
    CHECK_EQ(src, 0);
    if (server_out)
        *server_out = so;
    else
        free(so);
    return co;
}

/* ---- JSON ---------------------------------------------------------------------------- */

static const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *value(const char *p, int depth);

static const char *string(const char *p)
{
    if (*p != '"')
        return NULL;
    for (p++; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *number(const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (isdigit((unsigned char)*p))
        while (isdigit((unsigned char)*p))
            p++;
    else
        return NULL;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return p;
}

static const char *value(const char *p, int depth)
{
    if (depth > 64)
        return NULL;
    p = ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool obj = *p == '{';
        p = ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                p = string(ws(p));
                if (!p)
                    return NULL;
                p = ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            p = value(p, depth + 1);
            if (!p)
                return NULL;
            p = ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == close ? p + 1 : NULL;
        }
    }
    if (*p == '"')
        return string(p);
    if (strncmp(p, "true", 4) == 0)
        return p + 4;
    if (strncmp(p, "false", 5) == 0)
        return p + 5;
    if (strncmp(p, "null", 4) == 0)
        return p + 4;
    return number(p);
}

bool pu_json_valid(const char *s)
{
    const char *p = value(s, 0);
    return p && *ws(p) == '\0';
}

static const char *find_key(const char *doc, const char *key, int nth)
{
    char pat[96];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = doc;
    for (int i = 0;; i++) {
        p = strstr(p, pat);
        if (!p)
            return NULL;
        p += strlen(pat);
        if (i == nth)
            return ws(p);
    }
}

bool pu_json_num(const char *doc, const char *key, int nth, double *v)
{
    const char *p = find_key(doc, key, nth);
    if (!p || !number(p))
        return false;
    *v = strtod(p, NULL);
    return true;
}

bool pu_json_str(const char *doc, const char *key, int nth, char *buf, size_t cap)
{
    const char *p = find_key(doc, key, nth), *e;
    if (!p || *p != '"' || !(e = strchr(p + 1, '"')) || (size_t)(e - p - 1) >= cap)
        return false;
    memcpy(buf, p + 1, (size_t)(e - p - 1));
    buf[e - p - 1] = '\0';
    return true;
}

int pu_count(const char *s, const char *needle)
{
    int n = 0;
    size_t l = strlen(needle);
    for (const char *p = strstr(s, needle); p; p = strstr(p + l, needle))
        n++;
    return n;
}
