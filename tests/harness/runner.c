#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_TESTS = 4096 };

static struct {
    const char *name;
    uiw_test_fn fn;
} tests[MAX_TESTS];
static int ntests;

void uiw_test_register(const char *name, uiw_test_fn fn)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        abort();
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
}

void uiw_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(NULL);
    exit(1);
}

void uiw_test_hexdiff(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            fprintf(stderr, "  byte %zu: %02x != %02x\n", i, x[i], y[i]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < ntests; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    int ran = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        if (argc == 1)
            fprintf(stderr, "== %s\n", tests[i].name);
        tests[i].fn();
        ran++;
    }
    if (argc > 1 && ran == 0) {
        fprintf(stderr, "no test named %s\n", argv[1]);
        return 2;
    }
    return 0;
}

int uiw_test_set_lo(int up)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    int r = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (r == 0) {
        if (up)
            ifr.ifr_flags |= IFF_UP;
        else
            ifr.ifr_flags &= ~IFF_UP;
        r = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    r = r < 0 ? -errno : 0;
    close(s);
    return r;
}

long uiw_test_vm_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        uiw_test_fail(__FILE__, __LINE__, "/proc/self/status: %s", strerror(errno));
    char line[256];
    size_t n = strlen(field);
    long kib = -1;
    while (kib < 0 && fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kib = strtol(line + n + 1, NULL, 10);
    fclose(f);
    if (kib < 0)
        uiw_test_fail(__FILE__, __LINE__, "no %s in /proc/self/status", field);
    return kib;
}

int uiw_test_thread_sleeps(long *tid, unsigned long long *n, int max)
{
    return uiw_test_proc_thread_sleeps(0, tid, n, max);
}

int uiw_test_proc_thread_sleeps(int pid, long *tid, unsigned long long *n, int max)
{
    char dir[64];
    if (pid)
        snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
    else
        snprintf(dir, sizeof(dir), "/proc/self/task");
    DIR *d = opendir(dir);
    if (!d)
        uiw_test_fail(__FILE__, __LINE__, "%s: %s", dir, strerror(errno));
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < max) {
        if (e->d_name[0] == '.')
            continue;
        char path[400], line[128];
        snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* a thread that ended meanwhile */
        unsigned long long v;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1) {
                tid[k] = atol(e->d_name);
                n[k++] = v;
            }
        fclose(f);
    }
    closedir(d);
    return k;
}

struct uiw_test_wakeups uiw_test_wakeups_over(int pid, long ms, unsigned long long over)
{
    enum { MAXT = 256 };
    long tid0[MAXT], tid1[MAXT];
    unsigned long long n0[MAXT], n1[MAXT];
    int k0 = uiw_test_proc_thread_sleeps(pid, tid0, n0, MAXT);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
    int k1 = uiw_test_proc_thread_sleeps(pid, tid1, n1, MAXT);
    struct uiw_test_wakeups r = {0};
    for (int i = 0; i < k1; i++)
        for (int j = 0; j < k0; j++)
            if (tid1[i] == tid0[j]) {
                unsigned long long w = n1[i] - n0[j];
                r.total += w;
                r.most = w > r.most ? w : r.most;
                r.busy += w > over;
            }
    return r;
}

int uiw_test_private_net(void)
{
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    return uiw_test_set_lo(1);
}

void uiw_test_require_root(void)
{
    if (geteuid() == 0)
        return;
    const char *req = getenv("UIW_ROOT_REQUIRED");
    if (req && strcmp(req, "1") == 0)
        uiw_test_fail(__FILE__, __LINE__,
                      "needs root, and root is required here (UIW_ROOT_REQUIRED=1)");
    SKIP("needs root: run as root (sudo scripts/test.sh), as CI does");
}

long uiw_test_dropped(void)
{
    FILE *f = popen("iptables -L INPUT -v -x -n 2>/dev/null", "r");
    if (!f)
        uiw_test_fail(__FILE__, __LINE__, "iptables: %s", strerror(errno));
    char line[512];
    long n = -1;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "statistic"))
            n = atol(line);
    pclose(f);
    return n;
}

void uiw_test_lossy_loopback(double p)
{
    uiw_test_require_root();
    int r = uiw_test_private_net();
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "a network namespace: %s", strerror(-r));
    char cmd[160];
    snprintf(cmd, sizeof(cmd),
             "iptables -A INPUT -m statistic --mode random --probability %.4f -j DROP", p);
    if (system(cmd) != 0)
        uiw_test_fail(__FILE__, __LINE__, "iptables (scripts/deps.sh installs it) cannot drop");
    if (uiw_test_dropped() != 0)
        uiw_test_fail(__FILE__, __LINE__, "the drop rule is not there");
}
