/* bench/cli_util.c - see cli_util.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
