/*
 * adapters/backoff.h - the one back-off of the transport: how long to wait
 * before trying again, for a connection (conn.c), a round of cluster seeds
 * or sentinels (cluster.c, sentinel.c) and a request the cluster told to
 * come back later (cluster.c's unsettled retries).
 *
 * The delay doubles from min_ms with each attempt, up to max_ms, and is
 * "equally jittered": half of it fixed, half random.  Many clients cut off
 * together (a Redis restart, a failover) then do not come back together,
 * yet none waits less than half the nominal delay.
 */
#ifndef LW_ADAPTERS_BACKOFF_H
#define LW_ADAPTERS_BACKOFF_H

#include <stdint.h>

#include "xorshift.h"

/* The delay in ms before attempt `attempt` (0: the first retry), at least
 * min_ms / 2, at most max_ms. */
static inline uint32_t backoff_delay_ms(uint32_t min_ms, uint32_t max_ms, unsigned attempt,
                                        struct xorshift *rng)
{
    uint64_t ms = (uint64_t)min_ms << (attempt < 32 ? attempt : 32);

    if (ms > max_ms)
        ms = max_ms;
    return (uint32_t)(ms / 2 + xorshift_below(rng, ms / 2 + 1));
}

/* A back-off with its own count of attempts, for one thing that retries. */
struct backoff {
    uint32_t min_ms;
    uint32_t max_ms;
    unsigned attempt; /* retries since the last success */
    struct xorshift rng;
};

static inline void backoff_init(struct backoff *b, uint32_t min_ms, uint32_t max_ms,
                                uint64_t seed)
{
    b->min_ms = min_ms;
    b->max_ms = max_ms;
    b->attempt = 0;
    b->rng = xorshift_seed(seed);
}

/* The next delay, in ms; each call doubles the one after. */
static inline uint32_t backoff_next(struct backoff *b)
{
    uint32_t ms = backoff_delay_ms(b->min_ms, b->max_ms, b->attempt, &b->rng);

    if (b->attempt < 32)
        b->attempt++;
    return ms;
}

/* A success: the next failure starts again from min_ms. */
static inline void backoff_reset(struct backoff *b)
{
    b->attempt = 0;
}

#endif
