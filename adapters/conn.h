/*
 * adapters/conn.h - what the engine's connection (link.c) and the
 * subscriber's (subscriber.c) share: why a connect failed, and the
 * reconnect back-off.
 */
#ifndef LW_ADAPTERS_CONN_H
#define LW_ADAPTERS_CONN_H

#include <stdint.h>

#include <hiredis/async.h>

#include "xorshift.h"

/* Reconnect delays: doubling from min_ms to max_ms, with "equal jitter". */
struct backoff {
    uint32_t min_ms;
    uint32_t max_ms;
    uint32_t last_ms;   /* the last delay before jitter, 0 after a success */
    struct xorshift rng;
};

/* Start connecting (hiredis, non-blocking), the socket close-on-exec.
 * NULL when out of memory; check ac->err. */
redisAsyncContext *conn_start(const char *host, int port, const char *unix_path);

/* The reason a connection attempt failed (LW_ENOHOST, LW_ECONNREFUSED,
 * LW_ECONNECT), from hiredis's error and the errno saved right after it. */
int conn_error(const redisAsyncContext *ac, int saved_errno);

/* The next delay in ms: half of it fixed, half random, so that many
 * clients cut off together do not come back together. */
uint32_t backoff_next(struct backoff *b);

/* The connection is up: the next failure starts again from min_ms. */
static inline void backoff_reset(struct backoff *b)
{
    b->last_ms = 0;
}

/* Reply errors that mean the password is wrong or missing. */
int conn_is_auth_error(const char *msg);

#endif
