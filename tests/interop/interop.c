#include "interop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

void it_tmpdir(char *buf, size_t cap, const char *tag)
{
    const char *t = getenv("TMPDIR");
    int n = snprintf(buf, cap, "%s/uiw-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    CHECK(n > 0 && (size_t)n < cap);
    CHECK(mkdtemp(buf) != NULL);
}

void it_rmtree(const char *dir)
{
    if (getenv("UIW_TEST_KEEP")) {
        fprintf(stderr, "kept %s\n", dir);
        return;
    }
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    char *out = NULL;
    it_run(cmd, 1, 30, &out);
    free(out);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int it_run(const char *cmd, int merge, int timeout_s, char **out)
{
    int fds[2];
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    int status = 0, timed_out = 0;

    *out = NULL;
    if (!buf || pipe2(fds, O_CLOEXEC) != 0) {
        free(buf);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        free(buf);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(fds[1], 1);
        if (merge)
            dup2(fds[1], 2);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    double deadline = now_s() + timeout_s;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int r = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        if (len + 4096 + 1 > cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb)
                break;
            buf = nb;
        }
        ssize_t k = read(fds[0], buf + len, cap - len - 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    close(fds[0]);
    buf[len] = 0;
    /* The output pipe is closed; the process (group) ends soon or is killed. */
    for (int i = 0;; i++) {
        pid_t w = waitpid(pid, &status, timed_out ? 0 : WNOHANG);
        if (w == pid)
            break;
        if (w < 0) {
            status = -1;
            break;
        }
        if (now_s() > deadline) {
            timed_out = 1;
            kill(-pid, SIGKILL);
        } else {
            usleep(i < 100 ? 10000 : 100000);
        }
    }
    *out = buf;
    if (timed_out)
        return 124;
    if (status == -1)
        return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

const char *it_tshark(void)
{
    static const char *paths[] = {"/usr/bin/tshark", "/usr/local/bin/tshark"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

static const char *tshark_prefs = "";

void it_tshark_prefs(const char *prefs)
{
    tshark_prefs = prefs ? prefs : "";
}

char *it_tshark_fields(const char *pcap, const char *filter, const char *fields)
{
    char cmd[4096], ef[2048];
    size_t o = 0;
    const char *ts = it_tshark();
    CHECK(ts != NULL);
    /* turn "a b c" into "-e a -e b -e c" */
    const char *p = fields;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if (e > p) {
            int n = snprintf(ef + o, sizeof(ef) - o, " -e %.*s", (int)(e - p), p);
            CHECK(n > 0 && (size_t)n < sizeof(ef) - o);
            o += (size_t)n;
        }
        p = e;
    }
    ef[o] = 0;
    int n = snprintf(cmd, sizeof(cmd),
                     "%s -n -r '%s' -o tcp.check_checksum:TRUE -o ip.check_checksum:TRUE %s "
                     "%s%s%s -T fields -E separator='|' %s 2>/dev/null",
                     ts, pcap, tshark_prefs, filter ? "-Y '" : "", filter ? filter : "",
                     filter ? "'" : "", ef);
    CHECK(n > 0 && (size_t)n < sizeof(cmd));
    char *out = NULL;
    int rc = it_run(cmd, 0, 120, &out);
    if (rc != 0)
        uiw_test_fail(__FILE__, __LINE__, "tshark failed (%d): %s\n%s", rc, cmd, out ? out : "");
    return out;
}

int it_count_lines(const char *s, const char *line)
{
    int n = 0;
    size_t ll = strlen(line);
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == ll && memcmp(s, line, ll) == 0)
            n++;
        if (!e)
            break;
        s = e + 1;
    }
    return n;
}

int it_nlines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        if (*s == '\n')
            n++;
    return n;
}

int it_count(const char *s, const char *needle)
{
    int n = 0;
    size_t l = strlen(needle);
    for (const char *p = strstr(s, needle); p; p = strstr(p + l, needle))
        n++;
    return n;
}

int it_tshark_malformed(const char *pcap, const char *except)
{
    const char *bad = "_ws.malformed || _ws.expert.severity >= 8388608";
    char filter[1024];
    int n = except ? snprintf(filter, sizeof(filter), "(%s) && !(%s)", bad, except)
                   : snprintf(filter, sizeof(filter), "%s", bad);
    CHECK(n > 0 && (size_t)n < sizeof(filter));
    char *o = it_tshark_fields(pcap, filter, "frame.number");
    n = it_nlines(o);
    if (n)
        fprintf(stderr, "malformed frames in %s:\n%s", pcap, o);
    free(o);
    return n;
}

int it_rpc_calls_answered(const char *pcap)
{
    char *o = it_tshark_fields(pcap, "rpc", "rpc.msgtyp rpc.xid");
    enum { MAX = 4096 };
    static unsigned type[MAX];
    static unsigned long xid[MAX];
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(o, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *x = strchr(l, '|');
        CHECK(x != NULL);
        *x++ = 0;
        for (char *t = l; *t && n < MAX; n++) {
            char *end;
            type[n] = (unsigned)strtoul(t, &end, 10);
            xid[n] = strtoul(x, &x, 16);
            t = *end == ',' ? end + 1 : end;
            if (*x == ',')
                x++;
        }
    }
    free(o);
    int calls = 0;
    for (int i = 0; i < n; i++) {
        if (type[i] != 0)
            continue;
        calls++;
        int answered = 0;
        for (int k = 0; k < n && !answered; k++)
            answered = type[k] == 1 && xid[k] == xid[i];
        if (!answered)
            uiw_test_fail(__FILE__, __LINE__, "call %#lx not answered in %s", xid[i], pcap);
    }
    return calls;
}

uint32_t it_crc32c(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

void it_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

void it_put32(uint8_t *p, uint32_t v)
{
    it_put16(p, (uint16_t)(v >> 16));
    it_put16(p + 2, (uint16_t)v);
}

void it_put64(uint8_t *p, uint64_t v)
{
    it_put32(p, (uint32_t)(v >> 32));
    it_put32(p + 4, (uint32_t)v);
}

size_t it_fpdu(uint8_t *out, size_t cap, size_t *pos, const uint8_t *hdr, size_t hl,
               const uint8_t *pay, size_t pl, int crc)
{
    size_t ulpdu = hl + pl;
    size_t pad = (4 - ((2 + ulpdu) & 3)) & 3;
    size_t total = 2 + ulpdu + pad + 4;
    CHECK(*pos + total <= cap);
    uint8_t *f = out + *pos;
    it_put16(f, (uint16_t)ulpdu);
    memcpy(f + 2, hdr, hl);
    if (pl)
        memcpy(f + 2 + hl, pay, pl);
    memset(f + 2 + ulpdu, 0, pad);
    uint32_t c = crc ? it_crc32c(f, 2 + ulpdu + pad) : 0;
    f[2 + ulpdu + pad + 0] = (uint8_t)c;
    f[2 + ulpdu + pad + 1] = (uint8_t)(c >> 8);
    f[2 + ulpdu + pad + 2] = (uint8_t)(c >> 16);
    f[2 + ulpdu + pad + 3] = (uint8_t)(c >> 24);
    *pos += total;
    return total;
}

size_t it_tagged_hdr(uint8_t *h, int last, unsigned opcode, uint32_t stag, uint64_t to)
{
    h[0] = (uint8_t)(0x80 | (last ? 0x40 : 0) | 1);
    h[1] = (uint8_t)(0x40 | opcode);
    it_put32(h + 2, stag);
    it_put64(h + 6, to);
    return 14;
}

size_t it_untagged_hdr(uint8_t *h, int last, unsigned opcode, uint32_t inv, uint32_t qn,
                       uint32_t msn, uint32_t mo)
{
    h[0] = (uint8_t)((last ? 0x40 : 0) | 1);
    h[1] = (uint8_t)(0x40 | opcode);
    it_put32(h + 2, inv);
    it_put32(h + 6, qn);
    it_put32(h + 10, msn);
    it_put32(h + 14, mo);
    return 18;
}

size_t it_mpa_frame(uint8_t *out, int reply, uint8_t flags, uint8_t rev, uint16_t ird_word,
                    uint16_t ord_word, const void *pd, uint16_t pd_len)
{
    size_t o = 20;
    memcpy(out, reply ? "MPA ID Rep Frame" : "MPA ID Req Frame", 16);
    out[16] = flags;
    out[17] = rev;
    if (rev == 2) {
        it_put16(out + 20, ird_word);
        it_put16(out + 22, ord_word);
        o += 4;
    }
    if (pd_len)
        memcpy(out + o, pd, pd_len);
    o += pd_len;
    it_put16(out + 18, (uint16_t)(o - 20));
    return o;
}

/* Spawned process groups still running, ended at exit (a failed check exits at once). */
enum { MAX_SPAWNED = 16 };
static int spawned[MAX_SPAWNED];

static void forget(int pid)
{
    for (int i = 0; i < MAX_SPAWNED; i++)
        if (spawned[i] == pid)
            spawned[i] = 0;
}

/* SIGTERM first (the VM rig's run.sh then stops its QEMU, which `timeout` keeps in a
 * process group of its own), SIGKILL after 5 s. */
static void stop_group(int pid)
{
    int status;
    kill(-pid, SIGTERM);
    for (int i = 0; i < 50; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        usleep(100000);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &status, WNOHANG);
    forget(pid);
}

static void stop_all(void)
{
    for (int i = 0; i < MAX_SPAWNED; i++)
        if (spawned[i])
            stop_group(spawned[i]);
}

int it_spawn(const char *cmd, const char *outfile)
{
    static int registered;
    if (!registered) {
        atexit(stop_all);
        registered = 1;
    }
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(outfile, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    for (int i = 0; i < MAX_SPAWNED; i++)
        if (!spawned[i]) {
            spawned[i] = (int)pid;
            break;
        }
    return (int)pid;
}

int it_wait(int pid, int timeout_s)
{
    double deadline = now_s() + timeout_s;
    int status;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0)
            return -1;
        if (now_s() > deadline) {
            stop_group(pid);
            return 124;
        }
        usleep(20000);
    }
    forget(pid);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

void it_kill(int pid)
{
    stop_group(pid);
}

char *it_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    CHECK(buf != NULL);
    if (f) {
        size_t k;
        while ((k = fread(buf + len, 1, cap - len - 1, f)) > 0) {
            len += k;
            if (cap - len - 1 == 0) {
                cap *= 2;
                char *nb = realloc(buf, cap);
                CHECK(nb != NULL);
                buf = nb;
            }
        }
        fclose(f);
    }
    buf[len] = 0;
    return buf;
}

int it_wait_for(const char *path, const char *needle, int pid, int timeout_s)
{
    double deadline = now_s() + timeout_s;
    for (;;) {
        char *s = it_slurp(path);
        int found = strstr(s, needle) != NULL;
        free(s);
        if (found)
            return 1;
        if (now_s() > deadline)
            return 0;
        if (pid > 0) {
            /* the process ended: one last look */
            siginfo_t si;
            memset(&si, 0, sizeof(si));
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid) {
                s = it_slurp(path);
                found = strstr(s, needle) != NULL;
                free(s);
                return found;
            }
        }
        usleep(100000);
    }
}

int it_server_port(const char *outfile, int pid, int timeout_s)
{
    static const char mark[] = "listening on port ";
    if (!it_wait_for(outfile, mark, pid, timeout_s)) {
        char *s = it_slurp(outfile);
        uiw_test_fail(__FILE__, __LINE__, "server reported no port:\n%s", s);
    }
    /* the line is written whole (one printf, flushed) */
    char *s = it_slurp(outfile);
    int port = atoi(strstr(s, mark) + sizeof(mark) - 1);
    free(s);
    CHECK(port > 0 && port < 65536);
    return port;
}

int it_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    CHECK(fd >= 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

void it_wait_marker(const char *console, const char *runlog, const char *marker, int pid,
                    int timeout_s)
{
    if (!it_wait_for(console, marker, pid, timeout_s)) {
        char *log = it_slurp(runlog);
        uiw_test_fail(__FILE__, __LINE__, "no %s from the guest:\n%s", marker, log);
    }
}

void it_touch(const char *dir, const char *name)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    fclose(f);
}

/* The ctest run this test is part of, as "<ctest's pid>-<its start time>" (its start time
 * in clock ticks since boot, /proc/PID/stat field 22: a pid used again is another run):
 * false when the test's parent is not ctest (run by hand: nothing is remembered). */
static bool ctest_run_key(char *key, size_t cap)
{
    char path[64], buf[1024] = "";
    int pp = (int)getppid();
    snprintf(path, sizeof(path), "/proc/%d/comm", pp);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool is_ctest = fgets(buf, sizeof(buf), f) && strcmp(buf, "ctest\n") == 0;
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%d/stat", pp);
    f = is_ctest ? fopen(path, "r") : NULL;
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the fields after the command's name */
    unsigned long long start = 0;
    if (!p || sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                     "%*d %*d %llu",
                     &start) != 1)
        return false;
    snprintf(key, cap, "%d-%llu", pp, start);
    return true;
}

void it_siwvm_ensure(void)
{
    /* A rig that could not be made is not tried again in the same ctest run (a build takes
     * minutes to fail): the failure and its log are remembered in the build tree. */
    char key[64], marker[1024], cmd[1024], *out = NULL;
    bool keyed = ctest_run_key(key, sizeof(key));
    if (keyed) {
        snprintf(marker, sizeof(marker), "%s/siwvm-rig-failed.%s", UIW_BINARY_DIR, key);
        if (access(marker, F_OK) == 0)
            uiw_test_fail(__FILE__, __LINE__,
                          "siw VM rig not usable, found so earlier in this test run (%s); not "
                          "tried again:\n%s",
                          marker, it_slurp(marker));
    }
    snprintf(cmd, sizeof(cmd), "'%s/scripts/siwvm.sh' ensure", UIW_SOURCE_DIR);
    int rc = it_run(cmd, 1, 540, &out);
    if (rc == 77) {
        fprintf(stderr, "%s", out);
        free(out);
        SKIP("the siw VM rig cannot run on this machine (scripts/siwvm/README.md)");
    }
    if (rc != 0) {
        FILE *f = keyed ? fopen(marker, "w") : NULL;
        if (f) {
            fprintf(f, "scripts/siwvm.sh ensure: status %d\n%s", rc, out);
            fclose(f);
        }
        uiw_test_fail(__FILE__, __LINE__, "siw VM rig not usable (status %d):\n%s", rc, out);
    }
    free(out);
}

const char *it_iwping(void)
{
#ifdef UIW_IWPING
    return UIW_IWPING;
#else
    return UIW_BINARY_DIR "/tools/iwping";
#endif
}
