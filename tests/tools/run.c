#include "run.h"

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

#include "test.h"

static int temp_file(char *name, size_t n)
{
    snprintf(name, n, "/tmp/uiw-tool-XXXXXX");
    int fd = mkstemp(name);
    if (fd < 0)
        uiw_test_fail(__FILE__, __LINE__, "mkstemp: %s", strerror(errno));
    unlink(name);
    return fd;
}

static char *slurp(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        uiw_test_fail(__FILE__, __LINE__, "fstat/lseek: %s", strerror(errno));
    size_t n = (size_t)st.st_size;
    char *p = malloc(n + 1);
    if (!p)
        uiw_test_fail(__FILE__, __LINE__, "out of memory");
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k <= 0)
            uiw_test_fail(__FILE__, __LINE__, "read: %s", strerror(errno));
        got += (size_t)k;
    }
    p[n] = '\0';
    *len = n;
    return p;
}

void tool_run(const char *path, const char *const *argv, const void *in, size_t inlen, int seconds,
              struct tool_run *r)
{
    char name[64];
    int fin = temp_file(name, sizeof name);
    int fout = temp_file(name, sizeof name);
    int ferr = temp_file(name, sizeof name);
    const char *p = in;
    size_t done = 0;
    while (done < inlen) {
        ssize_t k = write(fin, p + done, inlen - done);
        if (k <= 0)
            uiw_test_fail(__FILE__, __LINE__, "write: %s", strerror(errno));
        done += (size_t)k;
    }
    if (lseek(fin, 0, SEEK_SET) != 0)
        uiw_test_fail(__FILE__, __LINE__, "lseek: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        uiw_test_fail(__FILE__, __LINE__, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fin, 0);
        dup2(fout, 1);
        dup2(ferr, 2);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    struct timespec tick = {0, 5 * 1000 * 1000};
    long waited = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            uiw_test_fail(__FILE__, __LINE__, "waitpid: %s", strerror(errno));
        if (waited >= (long)seconds * 200) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            uiw_test_fail(__FILE__, __LINE__, "%s did not finish within %d s", path, seconds);
        }
        nanosleep(&tick, NULL);
        waited++;
    }
    memset(r, 0, sizeof *r);
    r->out = slurp(fout, &r->outlen);
    r->err = slurp(ferr, &r->errlen);
    close(fin);
    close(fout);
    close(ferr);
    if (!WIFEXITED(status))
        uiw_test_fail(__FILE__, __LINE__, "%s died (signal %d); stderr:\n%s", path,
                      WIFSIGNALED(status) ? WTERMSIG(status) : 0, r->err);
    r->status = WEXITSTATUS(status);
    if (r->status == 127)
        uiw_test_fail(__FILE__, __LINE__, "could not run %s", path);
}

void tool_run_free(struct tool_run *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}
