/* adapters/conn.c - connection helpers shared by link.c and subscriber.c. */
#include <errno.h>
#include <string.h>

#include <leasewheel/error.h>

#include "conn.h"

int conn_error(const redisAsyncContext *ac, int saved_errno)
{
    if (ac->err == REDIS_ERR_OTHER && strstr(ac->errstr, "known"))
        return LW_ENOHOST; /* getaddrinfo: "Name or service not known" */
    if (saved_errno == ECONNREFUSED || strstr(ac->errstr, "refused"))
        return LW_ECONNREFUSED;
    return LW_ECONNECT;
}

uint32_t backoff_next(struct backoff *b)
{
    if (b->last_ms == 0)
        b->last_ms = b->min_ms;
    else if (b->last_ms < b->max_ms / 2)
        b->last_ms *= 2;
    else
        b->last_ms = b->max_ms;
    return b->last_ms / 2 + (uint32_t)xorshift_below(&b->rng, b->last_ms / 2 + 1);
}

int conn_is_auth_error(const char *msg)
{
    return !strncmp(msg, "NOAUTH", 6) || !strncmp(msg, "WRONGPASS", 9) ||
           strstr(msg, "AUTH") || strstr(msg, "password");
}
