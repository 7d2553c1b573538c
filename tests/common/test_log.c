/* The stack's log (common/log.h): UIW_LOG's levels, the line format, one write per line. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "test.h"

/* stderr into a temporary file from here on; log_taken() returns what was written. */
static int saved_fd = -1;
static FILE *capture;

static void log_capture(const char *uiw_log)
{
    if (uiw_log)
        setenv("UIW_LOG", uiw_log, 1);
    else
        unsetenv("UIW_LOG");
    capture = tmpfile();
    CHECK(capture != NULL);
    fflush(stderr);
    saved_fd = dup(STDERR_FILENO);
    CHECK(saved_fd >= 0);
    CHECK(dup2(fileno(capture), STDERR_FILENO) >= 0);
}

static char *log_taken(void)
{
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    long n = ftell(capture);
    CHECK(n >= 0);
    char *text = calloc(1, (size_t)n + 1);
    CHECK(text != NULL);
    rewind(capture);
    CHECK_EQ(fread(text, 1, (size_t)n, capture), (size_t)n);
    fclose(capture);
    return text;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

TEST(log_off_unless_asked)
{
    log_capture(NULL);
    UIW__LOG(UIW__LOG_ERROR, 1, 2, "an error nobody asked to see");
    char *t = log_taken();
    CHECK_STR(t, "");
    free(t);
}

TEST(log_levels_and_line_format)
{
    log_capture("warn");
    UIW__LOG(UIW__LOG_ERROR, 3, 7, "first %d", 1);
    UIW__LOG(UIW__LOG_WARN, 3, 0, "second");
    UIW__LOG(UIW__LOG_INFO, 3, 7, "not shown");
    UIW__LOG(UIW__LOG_DEBUG, 0, 0, "not shown either");
    UIW__LOG(UIW__LOG_WARN, 0, 9, "third");
    char *t = log_taken();
    CHECK_EQ(count_lines(t), 3);
    CHECK(strstr(t, "not shown") == NULL);
    char pat[256];
    snprintf(pat, sizeof(pat),
             "^uiw [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} \\[%ld\\] error conn 3 qp 7: first 1\n"
             "uiw [0-9:.]{15} \\[%ld\\] warn conn 3: second\n"
             "uiw [0-9:.]{15} \\[%ld\\] warn qp 9: third\n$",
             (long)getpid(), (long)getpid(), (long)getpid());
    regex_t re;
    CHECK_EQ(regcomp(&re, pat, REG_EXTENDED), 0);
    if (regexec(&re, t, 0, NULL, 0) != 0)
        uiw_test_fail(__FILE__, __LINE__, "log lines do not match:\n%s", t);
    regfree(&re);
    free(t);
}

TEST(log_debug_shows_everything)
{
    log_capture("debug");
    for (int l = UIW__LOG_ERROR; l <= UIW__LOG_DEBUG; l++)
        UIW__LOG((enum uiw__log_level)l, 1, 1, "level %d", l);
    char *t = log_taken();
    CHECK_EQ(count_lines(t), 4);
    CHECK(strstr(t, " debug conn 1 qp 1: level 4\n") != NULL);
    free(t);
}

TEST(log_unknown_level_said_once)
{
    log_capture("verbose");
    UIW__LOG(UIW__LOG_ERROR, 1, 1, "hidden");
    UIW__LOG(UIW__LOG_ERROR, 1, 1, "hidden");
    char *t = log_taken();
    CHECK_STR(t, "uiw: UIW_LOG=verbose is none of error, warn, info, debug: no log\n");
    free(t);
}

TEST(log_long_text_cut_to_one_line)
{
    log_capture("info");
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    UIW__LOG(UIW__LOG_INFO, 1, 1, "%s", big);
    char *t = log_taken();
    CHECK_EQ(count_lines(t), 1);
    CHECK(strlen(t) <= 512);
    CHECK(t[strlen(t) - 1] == '\n');
    free(t);
}

TEST(log_addresses)
{
    char buf[64];
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(4791)};
    inet_pton(AF_INET, "192.0.2.7", &in.sin_addr);
    CHECK_STR(uiw__log_addr((struct sockaddr *)&in, buf, sizeof(buf)), "192.0.2.7:4791");
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(20049)};
    inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr);
    CHECK_STR(uiw__log_addr((struct sockaddr *)&in6, buf, sizeof(buf)), "[2001:db8::1]:20049");
    CHECK_STR(uiw__log_addr(NULL, buf, sizeof(buf)), "?");
}
