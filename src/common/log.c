#include "common/log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

_Atomic int uiw__log_threshold = -1;

static const char *const level_names[] = {"off", "error", "warn", "info", "debug"};
/* syslog's priorities of the levels, for the journal (sd-daemon(3)'s "<N>" prefix) */
static const char journal_prio[] = {'7', '3', '4', '6', '7'};
/* stderr goes to systemd's journal: a priority instead of a time stamp of our own */
static int journal;

int uiw__log_init(void)
{
    const char *v = getenv("UIW_LOG");
    journal = getenv("JOURNAL_STREAM") != NULL;
    int t = UIW__LOG_OFF;
    bool bad = false;
    if (v && *v) {
        bad = true;
        for (int i = UIW__LOG_OFF; i <= UIW__LOG_DEBUG; i++)
            if (strcmp(v, level_names[i]) == 0) {
                t = i;
                bad = false;
            }
    }
    int expected = -1;
    if (atomic_compare_exchange_strong(&uiw__log_threshold, &expected, t) && bad) {
        char line[160];
        int n = snprintf(line, sizeof(line),
                         "uiw: UIW_LOG=%.40s is none of error, warn, info, debug: no log\n", v);
        if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
            return UIW__LOG_OFF;
    }
    return atomic_load(&uiw__log_threshold);
}

void uiw__log_write(enum uiw__log_level level, uint32_t conn, uint32_t qpn, const char *fmt, ...)
{
    char line[512];
    size_t n = 0;
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    int lv = level <= UIW__LOG_DEBUG ? (int)level : UIW__LOG_DEBUG;
    int k = journal ? snprintf(line, sizeof(line), "<%c>uiw [%ld] %s", journal_prio[lv],
                               (long)getpid(), level_names[lv])
                    : snprintf(line, sizeof(line), "uiw %02d:%02d:%02d.%06ld [%ld] %s", tm.tm_hour,
                               tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000, (long)getpid(),
                               level_names[lv]);
    n = k > 0 ? (size_t)k : 0;
    if (conn && n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, " conn %u", conn);
        n += k > 0 ? (size_t)k : 0;
    }
    if (qpn && n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, " qp %u", qpn);
        n += k > 0 ? (size_t)k : 0;
    }
    if (n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, ": ");
        n += k > 0 ? (size_t)k : 0;
    }
    if (n < sizeof(line)) {
        va_list ap;
        va_start(ap, fmt);
        k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        va_end(ap);
        n += k > 0 ? (size_t)k : 0;
    }
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    /* one write: the line stays whole among other threads' lines */
    if (write(STDERR_FILENO, line, n) < 0)
        return;
}

const char *uiw__log_addr(const struct sockaddr *sa, char *buf, unsigned len)
{
    char host[INET6_ADDRSTRLEN];
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else {
        snprintf(buf, len, "?");
    }
    return buf;
}
