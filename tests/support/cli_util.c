/* tests/support/cli_util.c - see cli_util.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"

int cli_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int cli_parse_seconds(const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_host_port(const char *s, char *host, size_t hlen, int *port)
{
    const char *colon = strrchr(s, ':');
    char *end;
    long p;

    if (!colon || colon == s || (size_t)(colon - s) >= hlen)
        return -1;
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || p < 1 || p > 65535)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    *port = (int)p;
    return 0;
}

redisContext *cli_connect(const char *host, int port)
{
    redisContext *rc = redisConnectWithTimeout(host, port, (struct timeval){5, 0});

    if (rc && !rc->err && redisSetTimeout(rc, (struct timeval){30, 0}) == REDIS_OK)
        return rc;
    if (rc)
        redisFree(rc);
    return NULL;
}

int cli_reachable(const char *host, int port)
{
    redisContext *rc = cli_connect(host, port);
    redisReply *r = rc ? redisCommand(rc, "PING") : NULL;
    int ok = r && r->type == REDIS_REPLY_STATUS;

    if (r)
        freeReplyObject(r);
    if (rc)
        redisFree(rc);
    return ok;
}

double cli_rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

uint64_t cli_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double cli_process_cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double cli_redis_cpu_s(redisContext *rc)
{
    redisReply *r = rc ? redisCommand(rc, "INFO cpu") : NULL;
    double s = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        const char *sys = strstr(r->str, "used_cpu_sys:");
        const char *user = strstr(r->str, "used_cpu_user:");

        if (sys && user)
            s = strtod(sys + 13, NULL) + strtod(user + 14, NULL);
    }
    if (r)
        freeReplyObject(r);
    return s;
}

int cli_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

uint64_t cli_quantile(const uint64_t *v, size_t n, double q)
{
    size_t k = (size_t)(q * (double)n + 0.999999);

    if (n == 0)
        return 0;
    if (k == 0)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

const char *cli_fmt_count(char *buf, size_t n, uint64_t v)
{
    char digits[32];
    size_t len, k = 0;

    snprintf(digits, sizeof digits, "%" PRIu64, v);
    len = strlen(digits);
    for (size_t i = 0; i < len && k + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = 0;
    return buf;
}

const char *cli_fmt_ms(char *buf, size_t n, uint64_t ns)
{
    double ms = (double)ns / 1e6;
    char c[24];

    if (ms < 10)
        snprintf(buf, n, "%.2f ms", ms);
    else if (ms < 100)
        snprintf(buf, n, "%.1f ms", ms);
    else
        snprintf(buf, n, "%s ms", cli_fmt_count(c, sizeof c, (uint64_t)(ms + 0.5)));
    return buf;
}

void cli_load_average(char *buf, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");

    snprintf(buf, n, "?");
    if (!f)
        return;
    if (fgets(buf, (int)n, f)) {
        char *s = buf;

        for (int fields = 0; *s; s++)
            if ((*s == ' ' && ++fields == 3) || *s == '\n') {
                *s = 0;
                break;
            }
    } else {
        snprintf(buf, n, "?");
    }
    fclose(f);
}
